"""The one rule for a missing optional package (``onnx_relu._extras``), and every extra really
optional.

A package is made missing in a child interpreter (``sys.modules[name] = None``: Python then
reports it as it reports one that is not installed), so these tests run in every environment;
``make test-extras`` also runs this file in venvs where the packages are really absent (the core
alone; the core and onnxruntime without onnx). A test that needs a package that is absent there
skips, naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from onnx_relu import _extras
from onnx_relu.errors import MissingExtraError
from tests.support import REPOSITORY
from tests.support.cli import assert_cli_error, folder_state
from tests.support.optional import requires

#: Every optional package a module of onnx-relu imports (onnxruntime's and onnx's too).
EXTRA_MODULES = ("onnx", "onnxruntime", "dask", "distributed", "zarr", "tqdm", "matplotlib")


def run_without(blocked, code, *args, cwd=None):
    """Run ``code`` (with ``args`` as ``sys.argv[1:]``) in a child interpreter in which the
    modules ``blocked`` cannot be imported."""
    prelude = f"import sys\nfor _name in {tuple(blocked)!r}:\n    sys.modules[_name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def child_result(done):
    """What the child printed last as JSON; its stderr in the failure message."""
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module, extra",
    [
        ("onnx", "onnx"),
        ("onnx.numpy_helper", "onnx"),
        ("onnxruntime", "ort"),
        ("dask", "dask"),
        ("dask.array", "dask"),
        ("distributed", "dask"),
        ("zarr", "dask"),
        ("tqdm", "cli"),
        ("matplotlib.pyplot", "bench"),
    ],
)
def test_each_optional_package_is_named_with_its_extra(module, extra):
    error = ModuleNotFoundError(f"No module named {module!r}", name=module)
    rule = _extras.missing_extra_error(error, "the job")
    assert isinstance(rule, MissingExtraError) and isinstance(rule, ModuleNotFoundError)
    assert (rule.name, rule.extra, rule.needed_for) == (module, extra, "the job")
    top = module.partition(".")[0]
    assert rule.requirement.startswith(top.replace("dask", "dask[array]"))  # pyproject's
    message = str(rule)
    assert message.startswith(f"the job needs {top} (No module named {module!r}): ")
    assert f'onnx-relu\'s "{extra}" extra ({rule.requirement}); install it with: ' in message
    assert message.endswith(_extras.install_command(extra)) and "\n" not in message
    assert "python_version" not in message and ";" not in rule.requirement  # no marker


@pytest.mark.parametrize("module", ["numpy", "ml_dtypes", "no_such_package", "onnx_relu._x"])
def test_other_missing_modules_are_left_as_they_are(module):
    error = ModuleNotFoundError(f"No module named {module!r}", name=module)
    assert _extras.missing_extra_error(error) is None
    with pytest.raises(ModuleNotFoundError) as raised, _extras.extra_needed("x"):
        raise error
    assert raised.value is error
    with pytest.raises(ValueError, match="not an import"), _extras.extra_needed("x"):
        raise ValueError("not an import")


def test_the_innermost_label_is_kept_and_the_command_line_drops_the_librarys():
    error = ModuleNotFoundError("No module named 'onnx'", name="onnx")
    with pytest.raises(MissingExtraError) as raised, _extras.extra_needed("outer"):
        with _extras.extra_needed("onnx_relu.check_model"):
            raise error
    assert raised.value.needed_for == "onnx_relu.check_model"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    line = _extras.command_line_message(raised.value)
    assert line.startswith("No module named 'onnx': it comes with onnx-relu's \"onnx\" extra")
    pb = _extras.missing_extra_error(error, "a .pb tensor file")
    assert _extras.command_line_message(pb).startswith("a .pb tensor file needs onnx (")
    assert _extras.command_line_message(ValueError("x")) is None


def test_the_error_survives_pickling():
    """(a Dask worker sends its errors back pickled)"""
    import pickle

    error = ModuleNotFoundError("No module named 'zarr'", name="zarr")
    rule = _extras.missing_extra_error(error, "Zarr on Dask")
    again = pickle.loads(pickle.dumps(rule))
    assert type(again) is MissingExtraError and str(again) == str(rule)
    assert (again.name, again.extra, again.needed_for) == ("zarr", "dask", "Zarr on Dask")


# --- the install command, for each way onnx-relu can have been installed --------------------


@pytest.fixture
def installed_from(monkeypatch, tmp_path):
    """Set where onnx-relu came from (PEP 610's direct_url.json) and the environment's prefix."""

    def set_origin(origin, prefix=tmp_path / "env", have_pip=True):
        monkeypatch.setattr(_extras, "_direct_url", lambda: origin)
        monkeypatch.setattr(sys, "prefix", str(prefix))
        import importlib.util
        import shutil

        real = importlib.util.find_spec
        pip = real("json") if have_pip else None  # (any spec: pip is found)
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: pip if name == "pip" else real(name)
        )
        monkeypatch.setattr(shutil, "which", lambda name: None)  # no uv on PATH

    return set_origin


def test_from_the_clone_into_its_venv_the_command_is_make_install(installed_from, monkeypatch):
    clone = REPOSITORY
    installed_from({"url": clone.as_uri(), "dir_info": {"editable": False}}, clone / ".venv")
    monkeypatch.chdir(clone)
    assert _extras.install_command("onnx") == "make install EXTRAS=onnx"
    monkeypatch.chdir(clone / "docs")
    assert _extras.install_command("ort") == f"make -C {clone} install EXTRAS=ort"


def test_from_a_wheel_the_command_installs_that_wheel_with_the_extra(
    installed_from, monkeypatch, tmp_path
):
    wheel = tmp_path / "dist" / "onnx_relu-0.2.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    installed_from({"url": wheel.as_uri(), "archive_info": {}})
    monkeypatch.chdir(tmp_path)
    assert _extras.install_command("dask") == f'pip install "dist/{wheel.name}[dask]"'
    installed_from({"url": wheel.as_uri(), "archive_info": {}}, have_pip=False)
    command = _extras.install_command("dask")
    assert command == f'uv pip install --python {sys.executable} "dist/{wheel.name}[dask]"'


def test_without_pip_the_command_is_the_clones_own_uv(installed_from, monkeypatch, tmp_path):
    source = tmp_path / "source"
    uv = source / ".venv-tools" / "bin" / "uv"
    uv.parent.mkdir(parents=True)
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    installed_from({"url": source.as_uri(), "dir_info": {}}, have_pip=False)
    monkeypatch.chdir(tmp_path)
    assert _extras.install_command("cli") == (
        f'source/.venv-tools/bin/uv pip install --python {sys.executable} "source[cli]"'
    )


def test_from_an_index_the_command_names_the_distribution(installed_from):
    installed_from({})
    assert _extras.install_command("onnx") == 'pip install "onnx-relu[onnx]"'


def test_in_this_environment_the_command_is_one_that_exists_here():
    command = _extras.install_command("onnx")
    if sys.prefix == str(REPOSITORY / ".venv"):  # make test: the clone's own venv
        assert command == "make install EXTRAS=onnx" or command.startswith("make -C ")
    else:  # make test-extras' venvs, make pythons' and make test-latest's
        assert command.endswith('[onnx]"') and "pip install" in command


# --- each extra really optional ----------------------------------------------------------


def test_every_module_imports_or_raises_the_rule_without_any_extra():
    """Every module of the installed package, imported with no optional package installed:
    the core, the file layer, the command line and the benchmark import; the ONNX layer's
    modules (but the package itself and the library's) and the Zarr store raise
    MissingExtraError, naming the module and the extra."""
    code = """
        import importlib, json, pkgutil
        import onnx_relu
        from onnx_relu.errors import MissingExtraError
        names = sorted(m.name for m in pkgutil.walk_packages(onnx_relu.__path__, "onnx_relu."))
        result = {}
        for name in names:
            if name.endswith("__main__"):  # (runs the command)
                continue
            try:
                importlib.import_module(name)
            except MissingExtraError as error:
                result[name] = f"{error.name.partition('.')[0]} {error.extra}"
            except ImportError as error:
                result[name] = repr(error)
            else:
                result[name] = "ok"
        print(json.dumps(result))
    """
    result = child_result(run_without(EXTRA_MODULES, code, *EXTRA_MODULES))
    # (_rules imports onnx for type annotations only)
    onnx_free = {
        "onnx_relu.onnx.ort_library",
        "onnx_relu.onnx._rules",
        "onnx_relu.onnx._graph",
        "onnx_relu.onnx._ir",
        "onnx_relu.onnx.feeds",
    }
    needs_onnx = {
        name
        for name in result
        if name == "onnx_relu.backend"
        or (name.startswith("onnx_relu.onnx.") and name not in onnx_free)
    }
    expected = {name: "ok" for name in result}
    expected.update({name: "onnx onnx" for name in needs_onnx})
    expected["onnx_relu.onnx.ort"] = "onnxruntime ort"
    expected["onnx_relu.files.jobs._zarr_store"] = "zarr dask"
    assert result == expected
    assert {"onnx_relu.tuning", "onnx_relu.files.plan", "onnx_relu.cli.apply_command"} <= set(
        result
    )


def test_star_import_and_the_core_names_without_any_extra():
    """``from onnx_relu import *`` gives every name of ``__all__`` (the ONNX layer's
    check_model, Finding and legalize are attributes, not in ``__all__``), imports no optional
    package, and the core works."""
    code = """
        import json
        import numpy
        import onnx_relu
        ns = {}
        exec("from onnx_relu import *", ns)
        x = ns["relu"](numpy.array([-1.0, 2.0]))
        print(json.dumps({
            "missing": sorted(set(onnx_relu.__all__) - set(ns)),
            "relu": x.tolist(),
            "path": ns["ort_library_path"]().endswith("libonnx_relu_ort.so"),
            "heavy": sorted(m for m, v in sys.modules.items()
                            if v is not None and m.split(".")[0] in sys.argv[1:]),
        }))
    """
    result = child_result(run_without(EXTRA_MODULES, code, *EXTRA_MODULES))
    assert result == {"missing": [], "relu": [0.0, 2.0], "path": True, "heavy": []}


#: What needs onnx, and what the error says needed it.
NEEDS_ONNX = {
    "onnx_relu.check_model": "onnx_relu.check_model",
    "onnx_relu.Finding": "onnx_relu.Finding",
    "onnx_relu.legalize": "onnx_relu.legalize",
    "from onnx_relu import backend": "onnx_relu.backend",
    "onnx_relu.onnx.check_model": "onnx_relu.onnx.check_model",
    "from onnx_relu.onnx import legalize": "onnx_relu.onnx.legalize",
    "import onnx_relu.onnx.reference": None,
    "onnx_relu.ort_session(b'')": "onnx_relu.ort_session",
    "onnx_relu.read_tensor('x.pb')": "a .pb tensor file",
    "onnx_relu.write_tensor('y.pb', numpy.zeros(2))": "a .pb tensor file",
}


def test_every_name_that_needs_onnx_raises_the_rule_without_it(tmp_path):
    (tmp_path / "x.pb").write_bytes(b"\x08\x01")
    code = """
        import json
        import numpy
        import onnx_relu, onnx_relu.onnx
        found = {}
        for statement in sys.argv[1:]:
            try:
                exec(statement)
            except ImportError as error:
                found[statement] = [type(error).__name__, error.name, error.extra,
                                    error.needed_for, str(error)]
        print(json.dumps(found))
    """
    found = child_result(run_without(["onnx"], code, *NEEDS_ONNX, cwd=tmp_path))
    assert set(found) == set(NEEDS_ONNX)
    for statement, (kind, name, extra, label, message) in found.items():
        assert (kind, name, extra) == ("MissingExtraError", "onnx", "onnx"), statement
        assert label == NEEDS_ONNX[statement], statement
        assert '"onnx" extra (onnx>=' in message and "install it with: " in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.pb"]  # nothing written


@requires("onnxruntime")
def test_with_onnxruntime_but_no_onnx_the_library_and_its_options_work():
    code = """
        import json
        import onnx_relu
        path = onnx_relu.ort_library_path()
        options = onnx_relu.ort_session_options()
        print(json.dumps([options.get_session_config_entry("onnx_relu.ort_library") == path,
                          sys.modules.get("onnx") is not None]))
    """
    assert child_result(run_without(["onnx"], code)) == [True, False]


def test_without_onnxruntime_the_session_options_raise_the_rule():
    code = """
        import json
        import onnx_relu
        try:
            onnx_relu.ort_session_options()
        except ImportError as error:
            print(json.dumps([type(error).__name__, error.name, error.extra, error.needed_for]))
    """
    assert child_result(run_without(["onnxruntime"], code)) == [
        "MissingExtraError",
        "onnxruntime",
        "ort",
        "onnx_relu.ort_session_options",
    ]


def test_the_benchmark_says_which_extra_a_missing_peer_or_plot_needs(tmp_path):
    code = """
        import json
        from onnx_relu.bench import _plot
        from onnx_relu.bench.peers import Peers
        status = _plot({}, "x.png")
        print(json.dumps(Peers(["onnxruntime"]).missing | {"status": status}))
    """
    done = run_without(["onnxruntime", "matplotlib"], code, cwd=tmp_path)
    result = child_result(done)
    assert result["status"] == 0 and not (tmp_path / "x.png").exists()
    assert result["onnxruntime"].startswith("the onnxruntime peer needs onnxruntime (")
    assert '"ort" extra' in result["onnxruntime"]
    assert done.stderr.startswith("no plot: the plot needs matplotlib (No module named")
    assert '"bench" extra' in done.stderr and len(done.stderr.splitlines()) == 1


def test_without_tqdm_a_job_that_would_show_a_bar_says_why_once():
    from onnx_relu.cli._progress_bar import _note_instead

    class Terminal:
        def __init__(self):
            self.lines = []

        def write(self, text):
            self.lines.append(text)

        def flush(self):
            pass

    terminal = Terminal()
    error = ModuleNotFoundError("No module named 'tqdm'", name="tqdm")
    update = _note_instead(error, terminal, delay=0)
    for done in range(3):
        update(done, 3)
    text = "".join(terminal.lines)
    assert text.startswith("no progress bar: the progress bar needs tqdm (No module named")
    assert text.count("\n") == 1 and '"cli" extra (tqdm>=' in text
    silent = Terminal()
    late = _note_instead(error, silent, delay=3600)  # a short run: no line at all
    late(1, 1)
    assert silent.lines == []


# --- the command line: one line, exit status 1, nothing written ---------------------------

CLI = "from onnx_relu.cli import main\nsys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize(
    "argv, blocked, lead",
    [
        (["check", "m.onnx"], ["onnx"], "check needs onnx (No module named 'onnx'): "),
        (["legalize", "m.onnx", "out.onnx"], ["onnx"], "legalize needs onnx (No module named"),
        (["run", "m.onnx", "-i", "x.npy", "-o", "out"], ["onnx"], "run needs onnx (No module"),
        (["apply", "x.npy", "out.pb"], ["onnx"], "a .pb tensor file needs onnx ("),
        (
            ["run", "m.onnx", "-i", "x.npy", "-o", "out", "--engine", "onnxruntime"],
            ["onnxruntime"],
            "run --engine onnxruntime needs onnxruntime (",
        ),
        (["apply", "in.zarr", "out.zarr", "--dask"], ["dask"], "Zarr on Dask needs dask ("),
    ],
    ids=["check", "legalize", "run", "apply-pb", "run-onnxruntime", "apply-dask"],
)
def test_a_command_without_its_extra_prints_one_line_and_exits_1(argv, blocked, lead, tmp_path):
    """One package missing: the line names it (with every other package the command needs
    also missing, the line names them all: the test below)."""
    import importlib.util

    needs = {"legalize": ["onnx", "onnxruntime"]}.get(argv[0], [])
    if "--engine" in argv:
        needs = ["onnx", "onnxruntime"]
    absent = [m for m in needs if m not in blocked and importlib.util.find_spec(m) is None]
    if absent:
        pytest.skip(f"{argv[0]} also needs {', '.join(absent)}, absent here: one line names all")
    np.save(tmp_path / "x.npy", np.array([-1.0, 2.0], np.float32))
    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")  # never read: the import fails first
    (tmp_path / "in.zarr").mkdir()
    (tmp_path / "in.zarr" / "zarr.json").write_text("{}")
    before = folder_state(tmp_path)
    done = run_without(blocked, CLI, *argv, cwd=tmp_path)
    line = assert_cli_error(done, 1, f"onnx-relu {argv[0]}: error: {lead}")
    extra = _extras.extra_of(blocked[0])[0]
    assert f'it comes with onnx-relu\'s "{extra}" extra' in line
    command = line.split("install it with: ")[1].split(";")[0]  # (then the command's own note)
    assert command.endswith((f"install EXTRAS={extra}", f'[{extra}]"')), command
    assert folder_state(tmp_path) == before  # nothing written, no output folder made


@pytest.mark.parametrize(
    "argv",
    [
        ["legalize", "m.onnx", "out.onnx"],
        ["run", "m.onnx", "-i", "x.npy", "-o", "out", "--engine", "onnxruntime"],
    ],
    ids=["legalize", "run-onnxruntime"],
)
def test_a_command_names_every_extra_it_needs_in_one_line(argv, tmp_path):
    """Without onnx and onnxruntime, legalize says it needs both, and one command installs
    both: not one extra now and the next after it is installed."""
    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")
    before = folder_state(tmp_path)
    done = run_without(["onnx", "onnxruntime"], CLI, *argv, cwd=tmp_path)
    line = assert_cli_error(done, 1, f"onnx-relu {argv[0]}: error: ")
    assert "needs onnx and onnxruntime, which are not installed" in line
    assert '"onnx" (onnx>=' in line and '"ort" (onnxruntime>=' in line
    assert "python_version" not in line
    command = line.split("install them with: ")[1].split(";")[0]
    assert command.endswith(('install EXTRAS="onnx ort"', '[onnx,ort]"')), command
    assert folder_state(tmp_path) == before


def test_the_rule_names_every_missing_module_of_a_list(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    absent = {"onnx", "zarr", "no_such_module"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name)
    )
    _extras.require_modules("the job", "json", "no_such_module")  # no extra's: left alone
    with pytest.raises(MissingExtraError) as raised:
        _extras.require_modules("the job", "onnx", "json", "zarr", "no_such_module")
    message = str(raised.value)
    assert message.startswith("the job needs onnx and zarr, which are not installed: ")
    assert '"onnx" (onnx>=' in message and '"dask" (zarr>=' in message
    assert message.endswith(_extras.install_command("onnx", "dask"))
    assert (raised.value.name, raised.value.extra) == ("onnx", "onnx")


def test_a_requirement_this_python_leaves_out_says_so(monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 99, 0, "final", 0))
    assert not _extras._python_included('python_version < "3.15" and extra == "ort"')
    assert _extras._python_included('python_version >= "3.11"')
