"""Open built pages of the documentation in headless Chromium and check that they render.

Usage: python tools/check_docs.py BUILD_DIR

For each page checked (the index and the Python API) it saves a screenshot next to the pages
(BUILD_DIR/screenshot-<page>.png), checks that the screenshot has the window's size and is not
blank (enough pixels differ from the background), and that the DOM Chromium rendered holds the
headings and names the page must show. Exit status 0 when every page passes, 1 otherwise, 2 when
Chromium or the built pages are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1280, 1600

#: page -> strings its rendered DOM must contain.
PAGES: dict[str, tuple[str, ...]] = {
    "index": (
        "<h1>onnx-relu",
        "Getting started",
        "Python API",
        "Command line",
        "ONNX and onnxruntime",
        "Files and Dask",
        "Performance",
        "Reliability",
        "Changelog",
    ),
    "api": (
        "<h1>Python API",
        'id="onnx_relu.relu"',
        'id="onnx_relu.onnx.check_model"',
        'id="onnx_relu.files.relu_file"',
        'id="onnx_relu.UnsupportedTypeError"',
    ),
}


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("check_docs: no chromium found (Debian: apt-get install chromium)")


def run_chromium(browser: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    # A profile of its own (no state from other runs); no sandbox, as CI containers run as root.
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def blank_fraction(png: Path) -> tuple[tuple[int, int], float]:
    """The image's size and the fraction of its pixels that differ from its corner pixel."""
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
        background = rgb.getpixel((0, 0))
        total = rgb.size[0] * rgb.size[1]
        counts = {color: count for count, color in rgb.getcolors(maxcolors=total) or []}
    return rgb.size, 1 - counts.get(background, 0) / total


def check_page(browser: str, build: Path, page: str, expected: tuple[str, ...]) -> list[str]:
    html = build / f"{page}.html"
    if not html.is_file():
        return [f"{html} does not exist (build the docs first: make docs)"]
    url = html.resolve().as_uri()
    screenshot = build / f"screenshot-{page}.png"
    screenshot.unlink(missing_ok=True)
    problems = []
    with tempfile.TemporaryDirectory(prefix="onnx-relu-chromium-") as profile:
        shot = run_chromium(browser, profile, f"--screenshot={screenshot}", url)
        if not screenshot.is_file():
            return [
                f"{page}: chromium wrote no screenshot (exit {shot.returncode}): "
                f"{shot.stderr.strip().splitlines()[-1:]}"
            ]
        dom = run_chromium(browser, profile, "--dump-dom", url).stdout
    size, inked = blank_fraction(screenshot)
    if size != (WIDTH, HEIGHT):
        problems.append(f"{page}: screenshot is {size}, not {(WIDTH, HEIGHT)}")
    if inked < 0.02:
        problems.append(f"{page}: screenshot is blank ({inked:.1%} of its pixels drawn)")
    for text in expected:
        if text not in dom:
            problems.append(f"{page}: the rendered page does not contain {text!r}")
    print(
        f"check_docs: {page}: {len(dom)} characters of DOM, {inked:.1%} of the screenshot "
        f"drawn, {screenshot}"
    )
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build = Path(argv[0])
    if not (build / "index.html").is_file():
        print(f"check_docs: {build}/index.html does not exist (make docs first)", file=sys.stderr)
        return 2
    browser = chromium()
    os.environ.setdefault("DBUS_SESSION_BUS_ADDRESS", "disabled:")
    problems = [
        p for page, expected in PAGES.items() for p in check_page(browser, build, page, expected)
    ]
    for problem in problems:
        print(f"check_docs: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
