"""The page (nn/serve/static/) driven in a real browser: headless Chromium through Playwright,
digits drawn with mouse strokes. Used by tests/test_serve_page.py, and as a command that writes
the screenshot committed under the curriculum's results:

    python -m nn.serve.screenshot --checkpoint runs/lenet5-mnist-5ep/best.npz --stage 3 \
        --digit 7 --out curriculum/results/serve-page.png

Debian's `chromium` is the browser (CHROMIUM: its path); Playwright's own download is not needed.
"""

import argparse
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Strokes of each digit drawn here: lists of points, as fractions of the pad's width and height.
STROKES = {
    "1": [[(0.5, 0.15), (0.5, 0.85)]],
    "7": [[(0.25, 0.2), (0.72, 0.2), (0.42, 0.85)]],
    "4": [[(0.55, 0.15), (0.25, 0.6), (0.75, 0.6)], [(0.6, 0.35), (0.6, 0.88)]],
}
STEPS = 12  # mouse moves per segment: the page sees a stroke, not a jump


def launch(playwright):
    """Headless Chromium (Debian's) for Playwright."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=["--no-sandbox"])  # fmt: skip


def draw(page, digit):
    """Draw `digit` (a key of STROKES) on the page's pad with the mouse."""
    box = page.locator("#pad").bounding_box()
    for stroke in STROKES[digit]:
        points = [(box["x"] + x * box["width"], box["y"] + y * box["height"]) for x, y in stroke]
        page.mouse.move(*points[0])
        page.mouse.down()
        for point in points[1:]:
            page.mouse.move(*point, steps=STEPS)
        page.mouse.up()


def shown_bars(page, timeout_ms=15000):
    """[(class, probability)] of the bars the page shows once it has answered the drawing as it
    stands (an earlier answer may show while the last is under way), top first."""
    page.wait_for_function("() => document.body.dataset.settled === 'yes' "
                           "&& document.querySelector('#bars li') !== null", timeout=timeout_ms)
    return page.eval_on_selector_all(
        "#bars li", "rows => rows.map(row => [row.dataset.class, Number(row.dataset.probability)])")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nn.serve.screenshot",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--checkpoint", action="append", required=True)
    parser.add_argument("--stage", type=int, default=3)
    parser.add_argument("--digit", choices=list(STROKES), default="7")
    parser.add_argument("--explain", action="store_true", help="tick the Grad-CAM box first")
    parser.add_argument("--width", type=int, default=760)
    parser.add_argument("--height", type=int, default=620)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from nn.serve.launch import running_service

    flags = [flag for path in args.checkpoint for flag in ("--checkpoint", path)]
    with running_service([*flags, "--stage", str(args.stage)]) as url, \
            sync_playwright() as playwright:  # fmt: skip
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(url)
        page.wait_for_selector("#model option", state="attached")
        if args.explain:
            page.check("#explain")
        draw(page, args.digit)
        bars = shown_bars(page)
        page.wait_for_timeout(500)  # the last debounced answer
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=args.out)
        browser.close()
    print(f"drew a {args.digit}: the page shows {bars[0][0]} first "
          f"({bars[0][1]:.3f}); screenshot {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
