"""onnx-relu's Relu for onnx's reference evaluator: ``ReferenceEvaluator(model, new_ops=[Relu])``.

One class serves every opset: the model's ai.onnx opset (``run_params["opsets"]``) selects the
Relu version, hence the allowed types, exactly as ``onnx_relu.relu(x, opset=...)`` does. Relu-1's
``consumed_inputs`` attribute is accepted (and ignored) at opsets 1-5 and refused from opset 6 on,
like any attribute the version does not declare. Unlike onnx's own reference Relu (which computes
``np.maximum(x, 0)`` for whatever it is given), a type the version does not allow raises
:class:`~onnx_relu.errors.UnsupportedTypeError` naming the node, the input, its type, the version
and the allowed types.

The reference evaluator finds replacement operators by class name, so the class is named ``Relu``.
This module imports onnx (onnx.reference); ``import onnx_relu`` does not import it.

onnx's evaluator does not pass ``new_ops`` on to the evaluators it makes for a model's local
functions (``model.functions``), so ``ReferenceEvaluator(model, new_ops=[Relu])`` runs onnx's own
Relu inside them. :class:`ReluReferenceEvaluator` is the evaluator with onnx-relu's Relu
everywhere, function bodies included (onnx makes those with the evaluator's own class).

Examples
--------
>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from onnx.reference import ReferenceEvaluator
>>> from onnx_relu.onnx.reference import Relu
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
>>> [y] = ReferenceEvaluator(model, new_ops=[Relu]).run(None, {"x": np.array([-1, -0.0, 2], "f4")})
>>> str(y.dtype), y.tolist()
('float32', [0.0, 0.0, 2.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._api import relu
from .._extras import extra_needed
from ..errors import InvalidModelError
from ..versions import ReluVersion, version_for_opset
from ._rules import (
    AI_ONNX_DOMAINS,
    describe_node,
    judge_relu,
    onnx_type_of_dtype,
    refusal_class,
    refuse,
)

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

__all__ = ["Relu", "ReluReferenceEvaluator"]


def _ai_onnx_opset(run_params: dict[str, Any]) -> int:
    opsets = run_params.get("opsets") or {}
    for domain in AI_ONNX_DOMAINS:
        if domain in opsets:
            return int(opsets[domain])
    raise InvalidModelError(
        f"the evaluated model imports no ai.onnx opset (opsets: {opsets!r}), so the Relu version"
        " in force is undefined"
    )


def _label(node: onnx.NodeProto) -> str:
    # The evaluator does not tell an operator its position in the graph: name only.
    return describe_node(node, None)


class Relu(OpRun):
    """ai.onnx Relu (versions 1, 6, 13, 14) computed by ``onnx_relu.relu``."""

    op_domain = ""

    def __init__(
        self, onnx_node: onnx.NodeProto, run_params: dict[str, Any], schema: Any = None
    ) -> None:
        super().__init__(onnx_node, run_params, schema)
        #: the model's ai.onnx opset, which selects the Relu version
        self.opset: int = _ai_onnx_opset(run_params)
        #: the Relu version in force at that opset
        self.version: ReluVersion = version_for_opset(self.opset)
        # The node now; its input's type when it runs (the evaluator gives the op no types).
        findings = judge_relu(onnx_node, self.opset, None, self.version)
        refuse(_label(onnx_node), [found for found in findings if found.kind != "type-unknown"])

    def run(self, *args: Any, **kwargs: Any) -> Any:
        # Checked here rather than in _run: OpRun.run rewraps every TypeError raised by _run into
        # a generic "Issues with types" error, which would hide the message.
        if args:
            self._check_type(args[0])
        return super().run(*args, **kwargs)  # type: ignore[no-untyped-call]  # onnx: untyped

    def _check_type(self, x: Any) -> None:
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            dtype = np.asarray(x).dtype
        findings = judge_relu(self.onnx_node, self.opset, onnx_type_of_dtype(dtype), self.version)
        refuse(_label(self.onnx_node), findings)

    # consumed_inputs: Relu-1's legacy attribute, accepted and unused.
    def _run(self, x: Any, consumed_inputs: object = None) -> tuple[np.ndarray]:
        return (np.asarray(relu(x, opset=self.opset)),)


class ReluReferenceEvaluator(ReferenceEvaluator):
    """``onnx.reference.ReferenceEvaluator`` with onnx-relu's :class:`Relu` in the model and in
    the bodies of its local functions.

    Takes the arguments of ``ReferenceEvaluator``; ``new_ops`` may add other operators.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import TensorProto, helper
    >>> body = helper.make_function(
    ...     "local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
    ...     opset_imports=[helper.make_opsetid("", 14)])
    >>> graph = helper.make_graph(
    ...     [helper.make_node("F", ["x"], ["y"], domain="local")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2])])
    >>> model = helper.make_model(graph, functions=[body], opset_imports=[
    ...     helper.make_opsetid("", 14), helper.make_opsetid("local", 1)])
    >>> x = {"x": np.array([-0.0, 2.0], np.float16)}
    >>> np.signbit(ReluReferenceEvaluator(model).run(None, x)[0]).tolist()  # onnx-relu's: +0.0
    [False, False]
    >>> np.signbit(ReferenceEvaluator(model, new_ops=[Relu]).run(None, x)[0]).tolist()  # onnx's
    [True, False]
    """

    def __init__(self, proto: Any, *args: Any, new_ops: Any = None, **kwargs: Any) -> None:
        others = [op for op in (new_ops or []) if op is not Relu]
        kwargs["new_ops"] = [Relu, *others]
        if isinstance(proto, onnx.ModelProto):  # before the ops judge their nodes alone
            _refuse_judged(proto)
        super().__init__(proto, *args, **kwargs)
        if not isinstance(proto, onnx.ModelProto) and isinstance(self.proto_, onnx.ModelProto):
            _refuse_judged(self.proto_)


def _refuse_judged(model: onnx.ModelProto) -> None:
    """Raise for what the judge finds in ``model`` (main graph, subgraphs, the bodies of the
    local functions it calls), as check_model reports it, except a type that cannot be inferred
    (the op judges the array it is given). The op alone never sees a declared type: element type
    0 (UNDEFINED) on a graph input, or a forbidden type declared for a call of a local function,
    would otherwise go unnoticed."""
    from .check import _judged

    blocking = [found for found in _judged(model)[1] if found.kind != "type-unknown"]
    if not blocking:
        return
    by_node: dict[str, list[str]] = {}
    for found in blocking:
        by_node.setdefault(found.where, []).append(found.message)
    raise refusal_class([found.kind for found in blocking])(
        "\n".join(f"{where}: {'; '.join(messages)}" for where, messages in by_node.items())
    )
