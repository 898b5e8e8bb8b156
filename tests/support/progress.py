"""``--progress=files``: one line per test file as it finishes, instead of pytest's dots.

What ``make test`` and ``make test-quick`` print: with pytest-xdist (``--dist loadfile``, every
file on one worker) the dots say nothing a person can read in a run of ten minutes or more. Each
line names the file, its outcome counts and seconds, and how far the run is::

    [ 12/104 files,  1:05] tests/core/test_types.py: 212 passed (9.4 s)

The controller learns each worker's test ids when it has collected them
(``pytest_xdist_node_collection_finished``); a file is done when every test of it has sent its
teardown report. Without xdist (``-n 0``) the ids come from the session's own collection.
Failures and errors are still reported in full by pytest at the end (and ``-ra`` lists them).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import pytest

_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--progress",
        choices=("dots", "files"),
        default="dots",
        help="files: a line per test file as it finishes (make test) instead of dots",
    )


class FileProgress:
    """Counts each file's tests and prints its line when the last one is torn down."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.monotonic()
        self.expected: Counter[str] = Counter()  # file -> tests collected
        self.seen: Counter[str] = Counter()  # file -> tests torn down
        self.outcomes: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.first: dict[str, float] = {}
        self.done = 0
        self.collected_ids: set[str] = set()

    @staticmethod
    def _file(nodeid: str) -> str:
        return nodeid.split("::", 1)[0]

    def _expect(self, nodeids: list[str]) -> None:
        for nodeid in nodeids:
            if nodeid not in self.collected_ids:  # each worker collects every file
                self.collected_ids.add(nodeid)
                self.expected[self._file(nodeid)] += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self._expect(ids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect([item.nodeid for item in session.items])

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        # The category pytest counts for its summary, without the dot (or letter) per test.
        if report.when == "call" or report.outcome != "passed":
            if hasattr(report, "wasxfail"):
                category = "xfailed" if report.skipped else "xpassed"
            elif report.when != "call" and report.failed:
                category = "error"
            else:
                category = report.outcome
            return category, "", category.upper()
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = self._file(report.nodeid)
        self.first.setdefault(path, time.monotonic())
        if report.when == "call" or report.outcome != "passed":
            if hasattr(report, "wasxfail"):
                self.outcomes[path]["xfailed" if report.skipped else "xpassed"] += 1
            elif report.when != "call" and report.failed:
                self.outcomes[path]["error"] += 1
            else:
                self.outcomes[path][report.outcome] += 1
        if report.when != "teardown":
            return
        self.seen[path] += 1
        if self.seen[path] == self.expected.get(path, -1):
            self.done += 1
            self._line(path)

    def _line(self, path: str) -> None:
        now = time.monotonic()
        elapsed = int(now - self.start)
        counts = self.outcomes[path]
        text = ", ".join(f"{counts[o]} {o}" for o in _OUTCOMES if counts[o]) or "no tests"
        total = len(self.expected)
        width = len(str(total))
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        line = (
            f"[{self.done:>{width}}/{total} files, {elapsed // 60:2d}:{elapsed % 60:02d}]"
            f" {path}: {text} ({now - self.first.get(path, now):.1f} s)"
        )
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line, red=bool(counts["failed"] or counts["error"]))


def pytest_configure(config: pytest.Config) -> None:
    # Only in the process that reports (the xdist controller, or a run without xdist).
    if config.getoption("progress") == "files" and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileProgress(config), "onnx-relu-file-progress")
