"""The draw-a-digit page in a real browser: headless Chromium (Debian's), driven by Playwright,
draws digits with mouse strokes on the pad; the page must show the service's answer for what it
sent (bars summing to 1, the top class the one the service gives for the same 28x28 input), the
28x28 input drawn, and work on a phone-sized screen."""

import os

import httpx
import pytest
from serving import drawn_seven, lenet5_checkpoint, png

from nn.serve.launch import running_service
from nn.serve.screenshot import CHROMIUM, draw, launch, shown_bars

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no Chromium at {CHROMIUM} (Debian's chromium package)", allow_module_level=True)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    checkpoint = lenet5_checkpoint(tmp_path_factory.mktemp("page") / "lenet5.npz")
    flags = ["--checkpoint", str(checkpoint), "--checkpoint", str(checkpoint), "--stage", "2"]
    with running_service(flags) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def open_page(browser, url, width=900, height=700):
    page = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("#model option", state="attached")
    return page, errors


def input_pixels(page):
    """The 28x28 preview canvas's red channel, as the page drew it."""
    return page.evaluate("""() => {
        const view = document.getElementById("input");
        const data = view.getContext("2d").getImageData(0, 0, view.width, view.height).data;
        return {width: view.width, height: view.height,
                red: Array.from(data.filter((_, i) => i % 4 === 0))};
    }""")


@pytest.mark.parametrize("digit", ["1", "7"])
def test_a_drawn_digit_shows_the_services_answer_and_its_input(browser, url, digit):
    page, errors = open_page(browser, url)
    draw(page, digit)
    bars = shown_bars(page)
    page.wait_for_function("() => document.getElementById('status').textContent.includes(' ms')")
    assert len(bars) == 10 and sum(p for _, p in bars) == pytest.approx(1, abs=1e-3)
    assert [p for _, p in bars] == sorted((p for _, p in bars), reverse=True)
    preview = input_pixels(page)
    assert (preview["width"], preview["height"]) == (28, 28)
    assert max(preview["red"]) > 200 and min(preview["red"]) == 0  # ink on black, drawn
    # the same 28x28 input sent as JSON gets the top class the page shows
    pixels = [[value / 255 for value in preview["red"][row * 28:(row + 1) * 28]]
              for row in range(28)]  # fmt: skip
    direct = httpx.post(f"{url}/classify", json={"pixels": pixels}).json()
    assert direct["top"][0]["class"] == bars[0][0]
    assert not errors
    page.close()


def test_the_model_switcher_and_a_phone_sized_screen(browser, url):
    page, errors = open_page(browser, url, width=390, height=844)
    names = page.eval_on_selector_all("#model option", "options => options.map(o => o.value)")
    assert names == ["lenet5-mnist", "lenet5-mnist-2"]
    page.select_option("#model", "lenet5-mnist-2")
    draw(page, "4")
    shown_bars(page)
    page.wait_for_function("() => document.getElementById('status').textContent"
                           ".startsWith('lenet5-mnist-2 ')")  # fmt: skip
    pad = page.locator("#pad").bounding_box()
    assert pad["x"] >= 0 and pad["x"] + pad["width"] <= 390  # the pad fits the screen
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
    page.click("#clear")
    assert page.locator("#bars li").count() == 0
    assert not errors
    page.close()


def test_a_chosen_image_file_is_sent_as_it_is(browser, url, tmp_path):
    path = tmp_path / "seven.png"
    path.write_bytes(png(drawn_seven(200)))  # dark on light: the service inverts it
    page, errors = open_page(browser, url)
    page.set_input_files("#file", str(path))
    bars = shown_bars(page)
    direct = httpx.post(f"{url}/classify?top_k=10", files={
        "image": ("seven.png", path.read_bytes(), "image/png")}).json()  # fmt: skip
    assert [name for name, _ in bars] == [entry["class"] for entry in direct["top"]]
    assert max(input_pixels(page)["red"]) > 200  # the preview is the inverted digit
    assert not errors
    page.close()
