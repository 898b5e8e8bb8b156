"""ml_dtypes is imported only for bfloat16 work, and bfloat16 works whichever is imported first.

Each case runs in a fresh interpreter: which modules are loaded, and in what order, is the point.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.support import REPOSITORY

_OTHER_TYPES = ("float32", "float64", "float16", "int8", "int16", "int32", "int64")


def run_fresh(code: str, *args: str) -> str:
    """Run ``code`` in a fresh interpreter; its standard output (it must exit 0)."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_relu_on_every_other_type_never_imports_ml_dtypes():
    out = run_fresh(
        f"""
        import sys
        import numpy as np
        import onnx_relu
        from onnx_relu import relu, relu_ufunc, check_dtype
        for name in {_OTHER_TYPES!r}:
            x = np.array([-2, -0.0, 3], dtype=name)
            assert relu(x).tolist() == [0, 0, 3], name
            assert relu_ufunc(x).tolist() == [0, 0, 3], name
            assert relu(x, out=np.empty_like(x)).tolist() == [0, 0, 3], name
            assert relu(x.astype(x.dtype.newbyteorder())).tolist() == [0, 0, 3], name
            check_dtype(name, opset=14)
        relu(np.ones((3, 1024), np.float32)[:, ::2])  # strided
        relu(np.float32(-1.0))  # a scalar
        relu([1, -2])
        for opset in (1, 6, 13, 14):
            relu(np.ones(3, np.float32), opset=opset)
        # refusals name the allowed types, bfloat16 among them, without loading it
        try:
            relu(np.ones(3, np.uint8))
        except TypeError as exc:
            assert "tensor(bfloat16)" in str(exc) and "tensor(uint8)" in str(exc), exc
        onnx_relu.tuning.kernel_tuning(); onnx_relu.get_num_threads()
        onnx_relu.dtypes.describe_dtype(np.dtype(">f4"))
        print("ml_dtypes" in sys.modules)
        """
    )
    assert out.split() == ["False"]


def test_the_check_can_fail():
    """The probe above sees ml_dtypes when something loads it (bfloat16 asked for by name)."""
    out = run_fresh(
        """
        import sys
        from onnx_relu.dtypes import RELU_TYPE_BY_NAME
        print("ml_dtypes" in sys.modules, RELU_TYPE_BY_NAME["bfloat16"].dtype.name,
              "ml_dtypes" in sys.modules)
        """
    )
    assert out.split() == ["False", "bfloat16", "True"]


_BFLOAT16_WORK = """
x = np.array([-1.5, -0.0, 2.0, float("nan")], dtype=ml_dtypes.bfloat16)
bits = lambda a: a.view(np.uint16).tolist()
expected = [0, 0, bits(x)[2], bits(x)[3]]
assert bits(relu_ufunc(x)) == expected, bits(relu_ufunc(x))
assert bits(relu(x)) == expected
assert bits(relu(x, opset=13)) == expected
y = np.empty_like(x); relu(x, out=y); assert bits(y) == expected
assert bits(relu(x.astype(x.dtype.newbyteorder())).astype(x.dtype)) == expected  # swapped
assert str(check_dtype("bfloat16", opset=13)) == "bfloat16"
try:
    relu(x, opset=12)
except TypeError as exc:
    assert "does not allow tensor(bfloat16)" in str(exc), exc
else:
    raise AssertionError("bfloat16 at opset 12 passed")
from onnx_relu.dtypes import RELU_TYPE_BY_DTYPE, describe_dtype, onnx_type_name
assert RELU_TYPE_BY_DTYPE[x.dtype].name == "bfloat16"
assert onnx_type_name(np.dtype(ml_dtypes.float8_e4m3fn)) == "tensor(float8e4m3fn)"
try:
    relu(np.zeros(2, ml_dtypes.float8_e4m3fn))
except TypeError as exc:
    assert "tensor(float8e4m3fn)" in str(exc), exc
print("ok")
"""

# Each order in which ml_dtypes, onnx_relu, the kernel and the first float call can come.
_ORDERS = {
    "ml_dtypes first": "import ml_dtypes\nimport numpy as np\n"
    "from onnx_relu import relu, relu_ufunc, check_dtype",
    "onnx_relu imported, then ml_dtypes, then the kernel": "import onnx_relu\nimport ml_dtypes\n"
    "import numpy as np\nfrom onnx_relu import relu, relu_ufunc, check_dtype",
    "the kernel first, ml_dtypes after": "import numpy as np\n"
    "from onnx_relu import relu, relu_ufunc, check_dtype\nimport ml_dtypes",
    "float work first, ml_dtypes after": "import numpy as np\n"
    "from onnx_relu import relu, relu_ufunc, check_dtype\n"
    "relu(np.ones(4, np.float32)); relu_ufunc(np.ones(4, np.int8))\nimport ml_dtypes",
    "the compiled module alone first": "import numpy as np\nfrom onnx_relu._relu import relu\n"
    "import ml_dtypes\nassert relu(np.ones(2, ml_dtypes.bfloat16)).tolist() == [1, 1]\n"
    "from onnx_relu import relu, relu_ufunc, check_dtype",
    "the tables first, the kernel last": "import numpy as np\nimport onnx_relu.versions\n"
    "import ml_dtypes\nfrom onnx_relu import relu, relu_ufunc, check_dtype",
    "ml_dtypes imported by onnx": "import numpy as np\n"
    "from onnx_relu import relu, relu_ufunc, check_dtype\n"
    "import onnx\nimport ml_dtypes\nassert 'ml_dtypes' in dir()",
}


@pytest.mark.parametrize("order", list(_ORDERS))
def test_bfloat16_works_whatever_the_import_order(order):
    if "onnx" in order:
        pytest.importorskip("onnx")
    assert run_fresh(_ORDERS[order] + "\n" + _BFLOAT16_WORK).split() == ["ok"]


def test_bfloat16_works_when_the_import_hook_did_not_see_ml_dtypes():
    """An import of ml_dtypes the hook missed (it was taken off sys.meta_path, as a tool that
    rebuilds sys.meta_path would): the first bfloat16 array a Python entry point sees catches
    up, and relu_ufunc works from then on."""
    code_relu_first = (
        "import sys\nimport numpy as np\nfrom onnx_relu import relu, relu_ufunc, check_dtype\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'MlDtypes' not in repr(f)]\n"
        "import ml_dtypes\n"
        "x = np.array([-1, 2], ml_dtypes.bfloat16)\n"
        "assert relu(x).tolist() == [0, 2]\n"
        "assert relu_ufunc(x).tolist() == [0, 2]\n"
    )
    assert run_fresh(code_relu_first + _BFLOAT16_WORK).split() == ["ok"]


def test_bfloat16_files_load_ml_dtypes_when_read(tmp_path):
    """A bfloat16 .npy file ('<V2') read before anything imported ml_dtypes: read_tensor
    imports it, and relu then has its bfloat16 loop."""
    import ml_dtypes

    path = tmp_path / "x.npy"
    np.save(path, np.array([-1.0, 3.0], dtype=ml_dtypes.bfloat16))
    out = run_fresh(
        """
        import sys
        from onnx_relu import read_tensor, relu, relu_ufunc
        assert "ml_dtypes" not in sys.modules
        x = read_tensor(sys.argv[1])
        print(x.dtype.name, relu(x).tolist(), relu_ufunc(x).tolist())
        """,
        str(path),
    )
    assert out.split() == ["bfloat16", "[0.0,", "3.0]", "[0.0,", "3.0]"]


@pytest.mark.parametrize(
    "args", [["--version"], ["--help"], ["apply", "--help"], ["run", "--help"], ["apply"]]
)
def test_the_command_line_parses_before_it_imports_numpy_or_the_kernel(args):
    """--version, --help and usage errors import neither numpy, the kernel nor the optional
    packages: the command parses its arguments first (issue 27)."""
    heavy = ("numpy", "ml_dtypes", "onnx", "onnxruntime", "dask", "onnx_relu._relu")
    out = run_fresh(
        f"""
        import contextlib, io, sys
        from onnx_relu.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = main(sys.argv[1:])
        print(status, sorted(m for m in sys.modules if m in {heavy!r}))
        """,
        *args,
    )
    assert out.split() == (["2", "[]"] if args == ["apply"] else ["0", "[]"])


#: What the standard library's argparse imports, in this interpreter, to print the help of a
#: parser with a subcommand and a version option: from 3.14 on that includes _colorize and with
#: it dataclasses (and typing where _colorize imports it), which no command could avoid.
_ARGPARSE_BASELINE = """
import contextlib, io, sys
before = set(sys.modules)
import argparse
parser = argparse.ArgumentParser(prog="p", description="d", epilog="e")
parser.add_argument("--version", action="version", version="1")
parser.add_subparsers(title="c", metavar="C").add_parser("a", help="h", description="d")
parser.print_help()
with contextlib.suppress(SystemExit):
    parser.parse_args(["--version"])
print(sorted(set(sys.modules) - before))
"""

_HEAVY_FOR_START_UP = ("typing", "dataclasses", "inspect", "ast", "dis", "tokenize")


def argparse_baseline() -> set[str]:
    """The modules the standard library's own argparse imports to print help here."""
    import ast

    return set(ast.literal_eval(run_fresh(_ARGPARSE_BASELINE).splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["apply", "--help"]])
def test_version_and_help_import_neither_typing_nor_dataclasses(args):
    """``onnx-relu --version`` (the fast path) writes its line through
    ``onnx_relu.io.streams.write_all``, and ``--help`` builds its parser from
    ``onnx_relu.files.formats``' and ``onnx_relu.files.jobs``' tables: those imports stay as light
    as that, since typing and dataclasses (with inspect, ast, dis, tokenize; the endpoint is a
    dataclass) would cost ``--version`` about a third more CPU time than argparse and the
    command's own modules do, and ``--help`` a fifth. What argparse itself imports to print
    help in this interpreter (from 3.14 on, _colorize and dataclasses) is measured here and not
    held against the command."""
    out = run_fresh(
        f"""
        import sys
        before = set(sys.modules)
        from onnx_relu.cli import main
        status = main(sys.argv[1:])
        new = sorted(m for m in set(sys.modules) - before if m in {_HEAVY_FOR_START_UP!r})
        print(status, new)
        """,
        *args,
    )
    assert out.startswith("onnx-relu ") if args == ["--version"] else out.startswith("usage: ")
    status, _, imported = out.splitlines()[-1].partition(" ")
    import ast

    added = set(ast.literal_eval(imported)) - argparse_baseline()
    assert (status, sorted(added)) == ("0", [])


def test_the_argparse_baseline_is_measured_not_assumed():
    """The baseline holds argparse itself and nothing of onnx-relu's; where this Python's
    argparse imports none of the heavy modules (3.11-3.13), the test above holds the command
    to none at all."""
    baseline = argparse_baseline()
    assert "argparse" in baseline and not any(m.startswith("onnx_relu") for m in baseline)
    if sys.version_info < (3, 14):
        assert not baseline & set(_HEAVY_FOR_START_UP)


def test_float_files_and_the_command_never_import_ml_dtypes(tmp_path):
    """``onnx-relu --version``, ``--help`` and ``apply`` on float32 data (the command's own
    modules, as the console script imports them)."""
    src = tmp_path / "x.npy"
    np.save(src, np.linspace(-1, 1, 1024, dtype=np.float32))
    probe = """
        import sys
        from onnx_relu.cli import main
        status = main(sys.argv[1:])
        print("ml_dtypes" in sys.modules, status, file=sys.stderr)
        """
    for args in (["--version"], ["--help"], ["apply", str(src), str(tmp_path / "y.npy")]):
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(probe), *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=REPOSITORY,
        )
        assert result.stderr.split()[-2:] in (["False", "0"], ["False", "None"]), (
            args,
            result.stderr,
        )
    y = np.load(tmp_path / "y.npy")
    assert (y == np.maximum(np.load(src), 0)).all()


# ---- the import hook: one, whatever is reloaded or imported again (issue 35) -----------------

_COUNT_HOOKS = (
    "hooks = lambda: sum(bool(getattr(f, '_onnx_relu_ml_dtypes_watcher', False))"
    " for f in sys.meta_path)\n"
)


def test_reloading_the_types_module_before_ml_dtypes_keeps_one_hook():
    """importlib.reload(onnx_relu.dtypes) (twice) before ml_dtypes is imported: one watcher in
    sys.meta_path, ``import ml_dtypes`` does not recurse, and bfloat16 works through the
    functions imported before the reload and after it."""
    code = (
        "import importlib, sys\nimport numpy as np\n"
        + _COUNT_HOOKS
        + "from onnx_relu import relu, relu_ufunc, check_dtype\n"
        "import onnx_relu.dtypes\n"
        "assert hooks() == 1, hooks()\n"
        "importlib.reload(onnx_relu.dtypes); importlib.reload(onnx_relu.dtypes)\n"
        "assert hooks() == 1, hooks()\n"
        "assert 'ml_dtypes' not in sys.modules\n"
        "import ml_dtypes\n"
        "assert hooks() == 0, hooks()\n"
        "assert onnx_relu.dtypes.RELU_TYPE_BY_NAME['bfloat16'].dtype == ml_dtypes.bfloat16\n"
    )
    assert run_fresh(code + _BFLOAT16_WORK).split() == ["ok"]


def test_importing_the_package_again_before_ml_dtypes_keeps_one_hook():
    """onnx_relu* removed from sys.modules and imported again (what autoreloaders and plugin
    hosts do), twice, before ml_dtypes: one watcher, no recursion, and both the first
    incarnation's relu (held by the caller) and the last one's compute bfloat16."""
    code = (
        "import sys\nimport numpy as np\n"
        + _COUNT_HOOKS
        + "from onnx_relu import relu as first_relu\n"
        "first_relu(np.ones(2, np.float32))\n"
        "for _ in range(2):\n"
        "    for name in [m for m in sys.modules if m.split('.')[0] == 'onnx_relu']:\n"
        "        del sys.modules[name]\n"
        "    from onnx_relu import relu, relu_ufunc, check_dtype\n"
        "    relu(np.ones(2, np.float32))\n"
        "assert relu is not first_relu\n"
        "assert hooks() == 1, hooks()\n"
        "import ml_dtypes\n"
        "assert hooks() == 0, hooks()\n"
        "x = np.array([-1, 2], ml_dtypes.bfloat16)\n"
        "assert first_relu(x).tolist() == [0, 2]\n"
    )
    assert run_fresh(code + _BFLOAT16_WORK).split() == ["ok"]


def test_a_second_marked_finder_does_not_make_the_import_recurse():
    """Two watchers in sys.meta_path (what reloads did before): each skips the other, so
    ``import ml_dtypes`` neither recurses nor fails, and bfloat16 still works."""
    code = (
        "import sys\nimport numpy as np\n"
        "from onnx_relu import relu, relu_ufunc, check_dtype\n"
        "watcher = next(f for f in sys.meta_path if 'MlDtypes' in repr(f))\n"
        "sys.meta_path.insert(0, type(watcher)())\n"
        "import ml_dtypes\n"
    )
    assert run_fresh(code + _BFLOAT16_WORK).split() == ["ok"]


_SHADOW_CHECKS = """
import numpy as np
from onnx_relu import UnsupportedTypeError, check_dtype, relu
assert relu(np.array([-1.0, 2.0], np.float32)).tolist() == [0.0, 2.0]
try:
    relu(np.array([1], np.uint8))
except UnsupportedTypeError as exc:
    assert "tensor(uint8)" in str(exc), exc
    print("uint8:", exc)
for name in ("bfloat16", "float8_e4m3fn"):
    try:
        check_dtype(name)
    except UnsupportedTypeError as exc:
        assert "shadows the package" in str(exc) and "\\n" not in str(exc), exc
        print(name + ":", exc)
"""


@pytest.mark.parametrize("first", ["the shadow", "onnx_relu"])
def test_a_module_named_ml_dtypes_without_bfloat16_is_refused_clearly(tmp_path, first):
    """A file ml_dtypes.py without bfloat16 earlier on sys.path, imported before onnx_relu or
    through the hook after it: a uint8 array is refused as always (UnsupportedTypeError naming
    tensor(uint8), not an AttributeError), and asking for bfloat16 by name says what shadows
    ml_dtypes, in one line."""
    (tmp_path / "ml_dtypes.py").write_text("SHADOW = True\n")
    imports = "import ml_dtypes\nimport onnx_relu\n"
    if first == "onnx_relu":
        imports = "import onnx_relu\nonnx_relu.relu([1.0])\nimport ml_dtypes\n"
    code = "import sys\nsys.path.insert(0, sys.argv[1])\n" + imports + _SHADOW_CHECKS
    out = run_fresh(code, str(tmp_path))
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["uint8", "bfloat16", "float8_e4m3fn"]
    assert "does not allow tensor(uint8)" in lines[0]
    assert str(tmp_path / "ml_dtypes.py") in lines[1]


def test_check_dtype_gives_the_same_answer_for_ml_dtypes_names_before_and_after_the_import():
    """check_dtype("bfloat16") (and the name of a refused ml_dtypes type) loads ml_dtypes, so
    the answer is the same before ``import ml_dtypes`` and after it."""
    code = """
    import sys
    import numpy as np
    from onnx_relu import check_dtype, relu

    def answers():  # check_dtype's and relu's answers for ml_dtypes' and numpy's names
        found = []
        for name in ("bfloat16", "float8_e4m3fn", "uint8", "float32"):
            for opset in (None, 12, 13):
                try:
                    found.append(str(check_dtype(name, opset=opset)))
                except TypeError as exc:
                    found.append(f"{type(exc).__name__}: {exc}")
        try:
            relu(np.array([1], np.uint8))
        except TypeError as exc:
            found.append(f"{type(exc).__name__}: {exc}")
        return found

    assert "ml_dtypes" not in sys.modules
    before = answers()
    import ml_dtypes
    after = answers()
    assert before == after, (before, after)
    print(before[0], before[1].split(":")[0])
    """
    assert run_fresh(code).split() == ["bfloat16", "UnsupportedTypeError"]
