"""The package as installed: import cost, the demo, docstring and README examples."""

import doctest
import subprocess
import sys

import numpy as np
import pytest

import onnx_relu
from tests.support import REPOSITORY
from tests.support.optional import missing_optional_package

README = REPOSITORY / "README.md"


def run_python(*args, **kwargs):
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, **kwargs
    )


def modules_loaded_by(statement: str, top_levels: tuple[str, ...]) -> list[str]:
    """The modules under ``top_levels`` (and the compiled kernel) that ``statement`` loads in a
    fresh interpreter."""
    code = (
        f"import sys; {statement}; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {top_levels!r}"
        " or m == 'onnx_relu._relu'))"
    )
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    return eval(result.stdout)  # a printed list of str


def test_import_does_not_pull_heavy_packages():
    heavy = ("onnx", "onnxruntime", "dask", "distributed", "zarr", "torch", "matplotlib")
    heavy += ("tqdm", "hypothesis", "pytest")
    assert modules_loaded_by("import onnx_relu", heavy) == []


@pytest.mark.parametrize("module", ["onnx_relu", "onnx_relu.cli"])
def test_import_loads_neither_numpy_nor_the_kernel(module):
    """So that the command handles Ctrl-C from the first line of its main (the console script
    and ``python -m onnx_relu`` import both before main runs), and so that a program pays for
    numpy and the kernel only when it uses them."""
    assert modules_loaded_by(f"import {module}", ("numpy", "ml_dtypes")) == []
    loaded = modules_loaded_by("from onnx_relu import relu", ("numpy", "ml_dtypes"))
    assert {"numpy", "onnx_relu._relu"} <= set(loaded)  # the check can fail
    assert "ml_dtypes" not in loaded  # only bfloat16 work imports it (test_ml_dtypes_import)


@pytest.mark.parametrize(
    ("face", "name"),
    [("onnx_relu", "relu"), ("onnx_relu.files", "read_tensor"), ("onnx_relu.onnx", "legalize")],
)
def test_every_exported_name_resolves_and_is_listed(face, name):
    """Each face's ``__all__`` names what ``from FACE import *`` gives, loaded on first use or
    not, ``dir()`` lists them all before they are loaded, and an unknown name is an
    ``AttributeError`` naming it (the layers' faces: ``_lazy.lazy_face``'s hooks)."""
    if face == "onnx_relu.onnx":
        pytest.importorskip("onnx")  # (star-importing the ONNX layer imports onnx)
    code = (
        f"import importlib; face = importlib.import_module({face!r}); "
        "unlisted = [n for n in face.__all__ if n not in dir(face)]; ns = {}; "
        f"exec('from {face} import *', ns); "
        "missing = [n for n in face.__all__ if n not in ns]; "
        f"print(len(face.__all__) > 0, missing, unlisted, ns[{name!r}] is face.{name})"
    )
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True [] [] True"
    module = __import__(face, fromlist=["__all__"])
    with pytest.raises(AttributeError, match=f"module '{face}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018 - the attribute access is the test


def test_tests_use_the_installed_build_not_src():
    assert "site-packages" in onnx_relu.__file__


def test_ufunc_identity():
    assert isinstance(onnx_relu.relu_ufunc, np.ufunc)
    assert onnx_relu.relu_ufunc.__name__ == "relu"
    assert (onnx_relu.relu_ufunc.nin, onnx_relu.relu_ufunc.nout) == (1, 1)


def test_the_demo_runs_the_spec_examples():
    result = run_python("-m", "onnx_relu")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("  ok   test_cc_relu") for line in lines) == 9
    assert "9 of 9 spec examples match exactly" in result.stdout and len(lines) == 14
    full = run_python("-m", "onnx_relu", "demo", "--full")
    assert full.returncode == 0, full.stderr
    assert full.stdout.count("=> matches the spec") == 9
    assert "Relu(X) -> (Y)" in full.stdout and "dtype=bfloat16" in full.stdout


def test_cli_version_and_usage_error():
    result = run_python("-m", "onnx_relu", "--version")
    assert result.returncode == 0 and onnx_relu.__version__ in result.stdout
    result = run_python("-m", "onnx_relu", "--no-such-flag")
    assert result.returncode == 2 and "usage:" in result.stderr


@pytest.mark.parametrize(
    "module", ["onnx_relu", "onnx_relu._api", "onnx_relu.versions", "onnx_relu.dtypes"]
)
def test_docstring_examples_run(module):
    mod = __import__(module, fromlist=["_"])
    failures, attempted = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failures == 0


#: The README and every page of the documentation site that shows ``>>>`` examples.
DOCUMENTS = [README] + sorted(
    path for path in (REPOSITORY / "docs").glob("*.md") if ">>> " in path.read_text("utf-8")
)


class _NotingMissingPackages(doctest.DocTestRunner):
    """A doctest runner that also notes the optional packages its examples found missing."""

    def __init__(self, **options):
        super().__init__(**options)
        self.missing = set()

    def report_unexpected_exception(self, out, test, example, exc_info):
        package = missing_optional_package(exc_info[1])
        if package is not None:
            self.missing.add(package)
        super().report_unexpected_exception(out, test, example, exc_info)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.name)
def test_readme_and_docs_examples_run(path):
    """Every page's examples; a page whose examples need an optional package that is not
    installed here (no wheel for this Python yet, or `make test-extras`' venvs) is skipped,
    naming it: none of its examples is counted as run."""
    text = path.read_text("utf-8")
    test = doctest.DocTestParser().get_doctest(
        text, {"__name__": "__main__"}, path.name, str(path), 0
    )
    runner = _NotingMissingPackages(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    runner.run(test)
    if runner.missing:
        pytest.skip(
            f"{path.name}'s examples need {', '.join(sorted(runner.missing))}, not installed"
        )
    assert runner.tries > 0 and runner.failures == 0


def test_the_examples_moved_to_the_docs_are_all_found():
    # The README's doctests (37 examples) moved to the site's pages with its text;
    # the README keeps five short examples. Every page's examples are found above, and together
    # they are at least as many as before the move.
    total = 0
    for path in DOCUMENTS:
        parser = doctest.DocTestParser()
        total += len(parser.get_examples(path.read_text("utf-8")))
    assert {"README.md", "getting-started.md", "files-and-dask.md"} <= {p.name for p in DOCUMENTS}
    assert total >= 37


def test_the_version_is_written_once():
    """meson.build's project version is the one source: the installed metadata (meson-python's
    dynamic version), ``onnx_relu.__version__`` (generated) and the CHANGELOG's newest entry
    agree with it, and pyproject.toml declares no version of its own."""
    import importlib.metadata
    import re

    meson = (REPOSITORY / "meson.build").read_text()
    declared = re.search(r"project\('onnx-relu', 'c',\s*version: '([^']+)'", meson)
    assert declared is not None, "meson.build's project() has no version"
    version = declared[1]
    assert onnx_relu.__version__ == version
    assert importlib.metadata.version("onnx-relu") == version
    pyproject = (REPOSITORY / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', pyproject, flags=re.MULTILINE)
    assert not re.search(r"^version\s*=", pyproject, flags=re.MULTILINE)
    changelog = (REPOSITORY / "CHANGELOG.md").read_text()
    # "## Unreleased" (changes not yet in a version) may stand above the newest version.
    newest = re.search(r"^## (?!Unreleased\b)(\S+)", changelog, flags=re.MULTILINE)
    assert newest is not None and newest[1] == version


def test_metadata_names_the_authors_and_keywords_and_no_guessed_urls():
    from importlib.metadata import metadata

    meta = metadata("onnx-relu")
    # No public address exists yet (pyproject.toml says why): no Project-URL may be made up.
    assert not meta.get_all("Project-URL")
    assert meta["Author"] and "onnx" in meta["Keywords"].split(",")
