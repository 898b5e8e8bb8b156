"""The ONNX layer: onnx-relu for ONNX models (needs the ``onnx`` extra).

Importing the package imports nothing heavy; its names below, and its modules but
:mod:`.ort_library`, import onnx (a missing one raises
:class:`~onnx_relu.errors.MissingExtraError`, naming the extra and how to install it). The
modules that run onnxruntime (:mod:`onnx_relu.onnx.ort`, and :mod:`onnx_relu.onnx.probe` when
it probes) import it themselves (the ``ort`` extra). :mod:`.ort_library` needs neither to find
the library, and onnxruntime alone for ``ort_session_options``.

- :func:`check_model`, :class:`Finding` (:mod:`.check`): judge every Relu node of any model.
- :func:`legalize`, :func:`legalize_with_report`, :func:`run_with_onnxruntime`
  (:mod:`.legalization`): make onnxruntime run every Relu node with onnx-relu's values, and say
  which nodes were rewritten; run a model in onnxruntime, bfloat16 included.
- :mod:`.backend`: an ``onnx.backend.base.Backend`` for models made of Relu nodes (also
  importable as ``onnx_relu.backend``).
- :mod:`.reference`: ``Relu`` for ``onnx.reference.ReferenceEvaluator(model, new_ops=[Relu])``,
  and ``ReluReferenceEvaluator``, which uses it inside local functions too.
- :mod:`.probe`: what the installed onnxruntime does with each Relu type and opset.
- :mod:`.ort`: the onnxruntime session helper (io binding with bfloat16).
- :mod:`.ort_library`: the onnx-relu custom-op library that makes onnxruntime run every Relu
  type natively (``ort_library_path``, ``ort_session_options``, ``ort_session``, ``ort_run``).
- :func:`load_model`, :func:`ai_onnx_opset`, :func:`is_relu`: reading models, for tools.

Examples
--------
>>> from onnx import TensorProto, helper
>>> from onnx_relu.onnx import check_model, is_relu
>>> node = helper.make_node("Relu", ["x"], ["y"])
>>> graph = helper.make_graph(
...     [node], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
>>> is_relu(node), check_model(helper.make_model(graph))
(True, [])
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:  # what static checkers see ("as": exported); at run time, see below
    from ._models import ai_onnx_opset as ai_onnx_opset
    from ._models import load_model as load_model
    from ._rules import is_relu as is_relu
    from .check import Finding as Finding
    from .check import check_model as check_model
    from .legalization import Legalization as Legalization
    from .legalization import Rewritten as Rewritten
    from .legalization import legalize as legalize
    from .legalization import legalize_with_report as legalize_with_report
    from .legalization import run_with_onnxruntime as run_with_onnxruntime

#: Every name of the layer: name -> the module of this package that defines it, imported (and
#: onnx with it) on first use by the hooks lazy_face makes (``__getattr__``, ``__dir__``).
_LAZY_EXPORTS = {
    "check_model": ".check",
    "Finding": ".check",
    "legalize": ".legalization",
    "legalize_with_report": ".legalization",
    "Legalization": ".legalization",
    "Rewritten": ".legalization",
    "run_with_onnxruntime": ".legalization",
    "load_model": "._models",
    "ai_onnx_opset": "._models",
    "is_relu": "._rules",
}
__all__ = list(_LAZY_EXPORTS)
__getattr__, __dir__ = lazy_face(globals(), _LAZY_EXPORTS, extra=True)
