"""The network drawn (nn/draw.py): the figure holds every layer of the model it was drawn from, its
output shape and parameters, and the committed LeNet-5 figure is what the command draws today."""

import html
import re
from pathlib import Path

from conftest import load_tier

from nn import draw, exits
from nn.layers import Conv2d, Flatten, Linear, ReLU, Residual, Sequential
from nn.network import Model

COMMITTED = Path(__file__).resolve().parent.parent / "curriculum/results/network-lenet5.svg"


def texts(svg_path):
    """The text elements of an SVG (nn.draw keeps text as text), unescaped, in order."""
    return [html.unescape(text)
            for text in re.findall(r"<text[^>]*>([^<]*)</text>", svg_path.read_text())]


def test_every_layer_is_drawn_with_its_shape_and_parameters(tmp_path):
    body = Sequential(Conv2d(3, 3, 3, padding=1), ReLU())
    net = Sequential(Conv2d(1, 3, 3), Residual(body), Flatten(), Linear(3 * 5 * 5, 4))
    model = Model("made_up", net, (1, 7, 7), 4, "cross_entropy").build(load_tier("numpy"), 0)
    path = tmp_path / "made_up.svg"
    draw.draw(model, path)
    found = texts(path)
    assert found[:3] == ["made_up: 418 parameters", "input", "(1, 7, 7)"]
    expected = [
        ("Conv2d(1->3, k=3)", "(3, 5, 5)", "30 parameters"),
        ("Residual(identity)", "(3, 5, 5)", "84 parameters"),
        ("Sequential(2 layers)", "(3, 5, 5)", "84 parameters"),
        ("Conv2d(3->3, k=3, padding=1)", "(3, 5, 5)", "84 parameters"),
        ("ReLU()", "(3, 5, 5)", ""),
        ("Flatten()", "(75,)", ""),
        ("Linear(75->4)", "(4,)", "304 parameters"),
    ]
    drawn = found[3:]
    for name, shape, parameters in expected:
        row = drawn[:3 if parameters else 2]
        assert row == [name, shape, parameters][:len(row)], row
        drawn = drawn[len(row):]
    assert drawn == []


def test_the_committed_lenet5_figure_is_what_the_command_draws(tmp_path, capsys):
    load_tier("numpy")
    path = tmp_path / "network-lenet5.svg"
    assert draw.main(["--model", "lenet5", "--out", str(path)]) == 0
    assert "lenet5 (12 layers, 61,706 parameters)" in capsys.readouterr().out
    assert texts(path) == texts(COMMITTED), "rerun: python -m nn.draw --model lenet5 --out " \
        "curriculum/results/network-lenet5.svg"
    assert draw.main(["--model", "lenet5", "--out", str(tmp_path / "lenet5.png")]) == 0
    assert (tmp_path / "lenet5.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_file_of_another_kind_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert draw.main(["--model", "lenet5", "--out", str(tmp_path / "lenet5.pdf")]) == exits.USAGE
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: --out must end in .svg or .png, got '{tmp_path / 'lenet5.pdf'}'"]
    assert not (tmp_path / "lenet5.pdf").exists()


def test_the_figure_goes_into_a_folder_made_for_it(tmp_path, capsys):
    out = tmp_path / "runs" / "figures" / "lenet5.svg"
    assert draw.main(["--model", "lenet5", "--out", str(out)]) == 0
    assert out.is_file() and str(out) in capsys.readouterr().out
