"""The one table of types and settings (``onnx_relu._spec``) and the files derived from it.

The C headers (the kernel's type and setting X-macros, the NumPy module's DTypes, the onnxruntime
library's element types), the stub ``_relu.pyi`` and the docs' tables are written by
``tools/generate_tables.py`` from the table; the build runs it with ``--check``. Here: every
derived copy is what the table gives, a hand edit of one is caught, and what the compiled module
reports is exactly what the table lists.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from onnx_relu import _spec
from onnx_relu.tuning import kernel_tuning
from tests.support import REPOSITORY


def _generator():
    loaded = importlib.util.spec_from_file_location(
        "generate_tables", REPOSITORY / "tools" / "generate_tables.py"
    )
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def test_every_derived_file_is_what_the_table_gives():
    generator = _generator()
    stale = generator.stale_files()
    assert stale == [], f"run make tables: {stale}"


@pytest.mark.parametrize(
    ("derived", "old", "new"),
    [
        ("src/kernel/relu_types.h", "X(int8, int8_t, 0)", "X(uint8, uint8_t, 0)"),
        ("src/onnx_relu/_relu.pyi", "vendor (str)", "vendor (int)"),
        ("docs/semantics.md", "| Relu-13 | 13 |", "| Relu-13 | 13-20 |"),
    ],
)
def test_a_hand_edit_of_a_derived_copy_is_caught(tmp_path, monkeypatch, capsys, derived, old, new):
    generator = _generator()
    copy = tmp_path / "repository"
    for path in [
        "src/onnx_relu/_spec.py",
        *(str(p.relative_to(generator.ROOT)) for p in generator.derived(generator.load_spec())),
    ]:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPOSITORY / path, copy / path)
    monkeypatch.setattr(generator, "ROOT", copy)
    monkeypatch.setattr(generator, "SPEC_PATH", copy / "src" / "onnx_relu" / "_spec.py")
    assert generator.main(["--check"]) == 0
    # an edit outside the generated part of a document is no drift
    if derived.endswith(".md"):
        (copy / derived).write_text("Edited by hand.\n" + (copy / derived).read_text())
        assert generator.main(["--check"]) == 0
    edited = copy / derived
    hand_edited = edited.read_text().replace(old, new, 1)
    assert hand_edited != edited.read_text()
    edited.write_text(hand_edited)
    assert generator.main(["--check"]) == 1
    assert derived in capsys.readouterr().err
    assert edited.read_text() == hand_edited  # --check writes nothing
    assert generator.main([]) == 0  # regenerating puts it back
    assert generator.main(["--check"]) == 0


def test_kernel_tuning_reports_exactly_the_keys_of_the_table():
    keys = {
        *(key for key, _, _ in _spec.REPORT),
        *(name for name, *_ in _spec.SETTINGS),
        *(f"default_{name}" for name, *_ in _spec.SETTINGS),
        *(name for name, _ in _spec.NAMED_SETTINGS),
    }
    assert set(kernel_tuning()) == keys


def test_the_docstring_of_kernel_tuning_names_every_key():
    doc = " ".join(kernel_tuning.__doc__.split())
    for key in kernel_tuning():
        assert f"``{key}``" in doc, key


def test_the_python_type_table_is_the_tables():
    # onnx_relu.dtypes derives its records from the table: row for row, in its Python order,
    # each dtype numpy's type of that name or ml_dtypes' attribute the row names.
    import ml_dtypes
    import numpy as np

    from onnx_relu.dtypes import RELU_TYPES

    rows = {row[0]: row for row in _spec.TYPES}
    assert [t.name for t in RELU_TYPES] == list(_spec.PYTHON_ORDER)
    assert sorted(_spec.PYTHON_ORDER) == sorted(rows)
    for t in RELU_TYPES:
        name, int_t, _threshold, onnx_name, _proto, elem_type, c_dtype, mantissa, _since, ml = rows[
            t.name
        ]
        assert (t.onnx_name, t.elem_type, t.mantissa_bits) == (onnx_name, elem_type, mantissa)
        assert int_t.endswith(f"int{t.bits}_t")  # (int16_t, uint8_t)
        assert (c_dtype is None) == (ml is not None), name  # one source of the dtype
        expected = np.dtype(getattr(ml_dtypes, ml)) if ml is not None else np.dtype(name)
        assert t.dtype == expected and t.dtype.itemsize * 8 == t.bits


def test_the_versions_are_the_tables():
    from onnx_relu.versions import RELU_VERSIONS

    assert [(v.since, v.attributes) for v in RELU_VERSIONS.values()] == list(_spec.VERSIONS)
    for version in RELU_VERSIONS.values():
        allowed = {t[3] for t in _spec.TYPES if t[8] <= version.since}
        assert set(version.types) == allowed
