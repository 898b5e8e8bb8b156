"""Open built pages of the documentation in headless Chromium and check that they render.

Usage: python tools/check_docs.py BUILD_DIR

For each page checked (the index, the Python API, the command line, the reliability table and
the benchmarks), at a 1280 px window and some at a phone's 390 px, it saves a screenshot next to
the pages (BUILD_DIR/screenshot-<page>[-phone].png), checks that the screenshot has the window's
size and is not blank (enough pixels differ from the background), that the page is no wider
than the window (wide tables and code scroll inside themselves, never the page), and that the
DOM Chromium rendered holds the headings and names the page must show. Exit status 0 when every
page passes, 1 otherwise, 2 when Chromium or the built pages are missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1280, 1600
PHONE = (390, 1600)

#: (page, window size, suffix of the screenshot's name) of every screenshot taken.
SHOTS: tuple[tuple[str, tuple[int, int], str], ...] = (
    ("index", (WIDTH, HEIGHT), ""),
    ("index", PHONE, "-phone"),
    ("api", (WIDTH, HEIGHT), ""),
    ("cli", PHONE, "-phone"),
    ("reliability", (WIDTH, HEIGHT), ""),
    ("benchmarks", (WIDTH, HEIGHT), ""),
)

#: page -> strings its rendered DOM must contain.
PAGES: dict[str, tuple[str, ...]] = {
    "index": (
        "<h1>onnx-relu",
        "Quick start",
        "https://onnx.ai/onnx/operators/onnx__Relu.html",
        "onnx-relu-copy.js",
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
        "numpy.ndarray or scalar",
    ),
    "cli": ("<h1>Command line", "usage: onnx-relu apply"),
    "reliability": ("<h1>Reliability",),
    "benchmarks": ("Machine and conditions",),
}

#: Written into a temporary copy of each page: the page's own width and the window's (the
#: viewport Chromium lays the page out in), for the DOM to show.
MEASURE = (
    "<script>addEventListener('load', () => document.body.setAttribute("
    "'data-onnx-relu-page-width', document.documentElement.scrollWidth + ' '"
    " + document.documentElement.clientWidth));</script>"
)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("check_docs: no chromium found (Debian: apt-get install chromium)")


def run_chromium(
    browser: str, profile: str, *args: str, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> subprocess.CompletedProcess[str]:
    # A profile of its own (no state from other runs); no sandbox, as CI containers run as root.
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={size[0]},{size[1]}",
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


def check_page(
    browser: str,
    build: Path,
    page: str,
    expected: tuple[str, ...],
    window: tuple[int, int] = (WIDTH, HEIGHT),
    suffix: str = "",
) -> list[str]:
    html = build / f"{page}.html"
    if not html.is_file():
        return [f"{html} does not exist (build the docs first: make docs)"]
    url = html.resolve().as_uri()
    name = f"{page}{suffix}"
    screenshot = build / f"screenshot-{name}.png"
    screenshot.unlink(missing_ok=True)
    measured = build / f".check-{name}.html"  # beside the page: its links resolve the same
    measured.write_text(
        html.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    problems = []
    try:
        with tempfile.TemporaryDirectory(prefix="onnx-relu-chromium-") as profile:
            shot = run_chromium(browser, profile, f"--screenshot={screenshot}", url, size=window)
            if not screenshot.is_file():
                return [
                    f"{name}: chromium wrote no screenshot (exit {shot.returncode}): "
                    f"{shot.stderr.strip().splitlines()[-1:]}"
                ]
            dom = run_chromium(
                browser, profile, "--dump-dom", measured.resolve().as_uri(), size=window
            ).stdout
    finally:
        measured.unlink(missing_ok=True)
    size, inked = blank_fraction(screenshot)
    if size != window:
        problems.append(f"{name}: screenshot is {size}, not {window}")
    if inked < 0.02:
        problems.append(f"{name}: screenshot is blank ({inked:.1%} of its pixels drawn)")
    for text in expected:
        if text not in dom:
            problems.append(f"{name}: the rendered page does not contain {text!r}")
    found = re.search(r'data-onnx-relu-page-width="(\d+) (\d+)"', dom)
    if found is None:
        problems.append(f"{name}: the page's width could not be measured")
    elif int(found.group(1)) > int(found.group(2)):
        problems.append(
            f"{name}: the page is {found.group(1)} px wide in a {found.group(2)} px viewport"
            " (something that should scroll inside itself widens the page)"
        )
    print(
        f"check_docs: {name}: {window[0]}x{window[1]}, page width"
        f" {'/'.join(found.groups()) + ' (page/viewport)' if found else '?'} px,"
        f" {inked:.1%} of the screenshot drawn, {screenshot}"
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
        problem
        for page, window, suffix in SHOTS
        for problem in check_page(browser, build, page, PAGES[page], window, suffix)
    ]
    for problem in problems:
        print(f"check_docs: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
