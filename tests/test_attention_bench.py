"""bench/attention_ladder.py's record, rendered without a GPU: its table, its verdicts on the
targets and memory, its plot and the section of the ladder's README it writes. The numbers here
are made up for the rendering (the record itself comes from a GPU run)."""

import pytest

from bench import attention_ladder as bench


def made_up_record():
    def rows(scale, n):
        names = ["naive", "online", "flash1", "flash2", "backward", "torch sdpa",
                 "torch sdpa backward"]  # fmt: skip
        seconds = [10, 6, 4, 1, 3, 0.9, 2]
        peaks = [n * n, n * n, n, n, 3 * n, n, 3 * n]
        return [
            {"name": name, "seconds": scale * s / 1e3, "tflops": 1.0, "peak_bytes": p * 4096,
             "check": "ok (0.1)"}
            for name, s, p in zip(names, seconds, peaks, strict=True)
        ]  # fmt: skip

    cases = [
        {"n": n, "heads": 8, "shape": [1, 8, n, 64], "causal": causal, "rows": rows(n / 1024, n)}
        for n in (1024, 4096)
        for causal in (False, True)
    ]
    return {"measured": "2026-01-01T00:00:00Z", "device": "a made-up GPU", "multiprocessors": 1,
            "torch": "0", "seed": 0, "rungs": ["naive", "online", "flash1", "flash2"],
            "cases": cases}  # fmt: skip


def test_the_table_and_the_targets_are_generated_from_the_record():
    text = bench.render(made_up_record())
    assert "| 4096 | yes | flash2 | 4 |" in text
    assert "best forward (flash2) 1.11x PyTorch's time; target <= 1.5x: met." in text
    assert "best forward 10.0x faster than naive; target >= 3.0x: met." in text
    assert "backward 1.50x PyTorch's time; target <= 2.0x: met." in text
    assert "- naive: 512 MiB a head at N = 1024, 8.19e+03 at N = 4096: grows as N^2.00." in text
    assert "- flash2: 0.5 MiB a head at N = 1024, 2 at N = 4096: grows as N^1.00." in text


def test_the_readme_section_and_the_plot_are_regenerated(tmp_path):
    pytest.importorskip("matplotlib")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{bench.README_BEGIN}\nold\n{bench.README_END}\nafter\n")
    bench.write_readme(made_up_record(), readme)
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("after\n")
    assert "| 1024 | no | naive |" in text and "(attention-ladder.png)" in text
    assert (tmp_path / "attention-ladder.png").stat().st_size > 10_000


def test_the_committed_readme_has_the_generated_section():
    text = bench.README.read_text()
    assert text.count(bench.README_BEGIN) == 1 and text.count(bench.README_END) == 1
