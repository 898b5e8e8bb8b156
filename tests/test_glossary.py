"""chunk, block, job and plan keep the one meaning docs/glossary.md gives each.

The second meanings each had (the kernel pool's jobs, chunks and plans; a Dask job's blocks; a
``.npy`` job's chunks) got words of their own; these checks fail when the old word comes back
where it meant the other thing. The public names spelled before the glossary (``chunk_bytes``,
``min_chunk``, ``ChunkError``) are listed there and allowed where they are defined and used.
"""

from __future__ import annotations

import re

import pytest

from tests.support import REPOSITORY

SRC = REPOSITORY / "src"
GLOSSARY = REPOSITORY / "docs" / "glossary.md"


def _hits(paths, word: str) -> list[str]:
    pattern = re.compile(rf"\b{word}\b", re.IGNORECASE)
    return [
        f"{path.relative_to(REPOSITORY)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


#: The kernel's C (its pool, the ufunc module, the onnxruntime library and the kernel's own
#: test driver): a large call is cut into parts by a split, never chunks, jobs or plans.
_KERNEL_C = sorted(
    path
    for folder in ("src/kernel", "src/ort", "src/onnx_relu", "tests/kernel")
    for path in (REPOSITORY / folder).glob("*.[ch]")
)


@pytest.mark.parametrize("word", ["chunks?", "jobs?", "plan", "planned", "relu_job\\w*"])
def test_the_kernel_says_call_part_and_split(word):
    assert len(_KERNEL_C) > 10, "the kernel's C sources were not found"
    assert not _hits(_KERNEL_C, word), "\n".join(_hits(_KERNEL_C, word))


def test_a_dask_job_says_region_and_task_not_block():
    """In the Zarr job a block was a region run by a task; "block" is the output cache's
    (Python's ``with`` block and the verb aside)."""
    module = SRC / "onnx_relu" / "files" / "jobs" / "zarr_dask.py"
    nouns = [
        hit
        for hit in _hits([module], "blocks?")
        if not re.search(
            r"``with`` block|the block (runs|ends)|block=False|Block SIGINT|blocks it", hit
        )
    ]
    assert not nouns, "\n".join(nouns)


def test_the_window_of_a_npy_job_is_chunk_bytes_only_in_the_public_signatures():
    """``chunk_bytes`` is the public parameter of ``relu_file`` and ``plan_apply``; inside
    the jobs a window's size is ``window_bytes``."""
    jobs = sorted((SRC / "onnx_relu" / "files" / "jobs").glob("*.py"))
    assert not _hits(jobs, "chunk_bytes"), "\n".join(_hits(jobs, "chunk_bytes"))
    assert _hits(jobs, "window_bytes")


def test_the_glossary_defines_each_word_once():
    text = GLOSSARY.read_text(encoding="utf-8")
    for word in (
        "block",
        "chunk",
        "exact",
        "job",
        "plan",
        "window",
        "call",
        "part",
        "split",
        "region",
    ):
        rows = re.findall(rf"^\| \*\*{word}\*\* \|", text, flags=re.MULTILINE)
        assert len(rows) == 1, f"docs/glossary.md defines {word!r} {len(rows)} times"
    for public in ("chunk_bytes", "DEFAULT_CHUNK_BYTES", "min_chunk", "ChunkError"):
        assert f"`{public}`" in text, f"docs/glossary.md does not list the public {public}"
