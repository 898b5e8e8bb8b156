"""An ONNX backend (``onnx.backend.base.Backend``) that runs models made of Relu nodes on
onnx-relu's kernel.

It runs any number of ai.onnx Relu nodes (domain "" or "ai.onnx"), chained or side by side, with
several inputs and outputs and initializers, at any opset from 1 on (one newer than the installed
onnx knows selects the newest Relu version, Relu-14, as onnx's own ``get_schema`` does and as
``relu(x, opset=...)`` and ``onnx-relu apply --opset`` do). Everything is validated when the model
is prepared, before anything runs: the model's opset decides each node's Relu version, and a node
whose input type that version does not allow is refused naming the node, the input, its type, the
version and the allowed types. Relu-1's ``consumed_inputs`` attribute is accepted and ignored. Any
other operator raises :class:`~onnx_relu.errors.UnsupportedOperatorError` (a
``NotImplementedError``) and makes :meth:`OnnxReluBackend.is_compatible` return False.

Inputs are fed as a list (in graph-input order) or a dict (by name); their types must equal the
declared ones exactly (onnx-relu never casts). bfloat16 tensors are ``ml_dtypes.bfloat16`` arrays.

This module imports onnx; ``import onnx_relu`` does not import it. ``onnx_relu.backend`` is the
same module under the name ONNX users look for first (as ``onnx_tf.backend``).

Examples
--------
>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from onnx_relu.onnx import backend
>>> node = helper.make_node("Relu", ["x"], ["y"], name="relu")
>>> graph = helper.make_graph(
...     [node], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
>>> y = backend.run_model(model, [np.array([-1.0, -0.0, 2.0], dtype=np.float32)]).y
>>> str(y.dtype), y.tolist()
('float32', [0.0, 0.0, 2.0])
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._api import relu
from .._extras import extra_needed
from ..dtypes import dtype_of_onnx_type
from ..errors import (
    InvalidModelError,
    ModelInputError,
    OnnxReluError,
    UnsupportedOperatorError,
    UnsupportedTypeError,
)
from ..versions import ReluVersion, check_opset, version_for_opset
from ._models import checked_model_opset, latest_onnx_opset, load_model
from ._rules import (
    declared_onnx_type,
    describe_node,
    is_relu,
    judge_relu,
    onnx_type_of_dtype,
    onnx_type_of_elem_type,
    onnx_type_of_type_proto,
    refuse,
)
from .feeds import check_feed_names, check_feed_type

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx import numpy_helper
    from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

__all__ = [
    "OnnxReluBackend",
    "OnnxReluBackendRep",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
    "is_compatible",
]


@dataclass(frozen=True)
class _GraphInput:
    """A graph input that can be fed: its declared type (None if undeclared) and shape."""

    name: str
    onnx_type: str | None
    #: one entry per axis: an int for a fixed size, None for a symbolic or unknown one;
    #: None for the whole shape when no shape is declared.
    shape: tuple[int | None, ...] | None


@dataclass(frozen=True)
class _ReluStep:
    """One Relu node to compute: where it sits in the graph, its input and output names."""

    index: int
    description: str
    input: str
    output: str
    node: onnx.NodeProto


def _declared_shape(type_proto: onnx.TypeProto) -> tuple[int | None, ...] | None:
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


def _relu_description(node: onnx.NodeProto, index: int) -> str:
    """The node's label; UnsupportedOperatorError if it is not an ai.onnx Relu node."""
    description = describe_node(node, index)
    if not is_relu(node):
        domain = node.domain or "ai.onnx"
        raise UnsupportedOperatorError(
            f"{description} is operator {node.op_type!r} of domain {domain!r}: the onnx-relu"
            " backend runs only ai.onnx Relu nodes"
        )
    return description


def _refuse_invalid(
    node: onnx.NodeProto,
    description: str,
    opset: int,
    version: ReluVersion,
    input_type: str | None,
) -> None:
    """Raise for what the judge finds, except an unknown input type: the backend judges that
    type when the node runs, from the array it is given."""
    findings = judge_relu(node, opset, input_type, version)
    refuse(description, [found for found in findings if found.kind != "type-unknown"])


class OnnxReluBackendRep(BackendRep):
    """A prepared Relu model: validated once, run any number of times with :meth:`run`.

    Create it with :func:`prepare`.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self.opset: int = checked_model_opset(model)
        #: the Relu version in force at that opset
        self.version: ReluVersion = version_for_opset(self.opset)
        graph = model.graph
        if graph.sparse_initializer:
            raise UnsupportedOperatorError(
                "the onnx-relu backend does not support sparse initializers"
            )
        # Names already defined, with their ONNX type (None where undeclared).
        types: dict[str, str | None] = {}
        self._initializers: dict[str, np.ndarray] = {}
        for tensor in graph.initializer:
            self._initializers[tensor.name] = _initializer_values(tensor)
            types[tensor.name] = onnx_type_of_elem_type(tensor.data_type)

        feedable = []
        overridable = []
        for value in graph.input:
            onnx_type = declared_onnx_type(value.type)
            if value.name in self._initializers:
                # IR < 4 lists initializers among the inputs; from IR 4 such an input is a
                # default that a caller may override by name.
                overridable.append(_GraphInput(value.name, types[value.name], None))
                continue
            feedable.append(_GraphInput(value.name, onnx_type, _declared_shape(value.type)))
            types[value.name] = onnx_type
        #: the graph inputs that must be fed, in order (initializers excluded)
        self.required_inputs: tuple[_GraphInput, ...] = tuple(feedable)
        self._overridable: dict[str, _GraphInput] = {i.name: i for i in overridable}
        self._inputs_by_name = {i.name: i for i in feedable}

        steps = []
        for index, node in enumerate(graph.node):
            description = _relu_description(node, index)
            input_type = types.get(node.input[0]) if len(node.input) == 1 else None
            _refuse_invalid(node, description, self.opset, self.version, input_type)
            (input_name,), (output_name,) = node.input, node.output
            if input_name not in types:
                raise InvalidModelError(
                    f"{description}: input {input_name!r} is not a graph input, an initializer"
                    " or the output of an earlier node (nodes must be in topological order)"
                )
            if output_name in types:
                raise InvalidModelError(
                    f"{description}: output {output_name!r} is already defined earlier in the"
                    " graph (every value must be produced once)"
                )
            types[output_name] = types[input_name]
            steps.append(_ReluStep(index, description, input_name, output_name, node))
        self._steps: tuple[_ReluStep, ...] = tuple(steps)

        for value in graph.output:
            if value.name not in types:
                raise InvalidModelError(
                    f"graph output {value.name!r} is produced by no node, input or initializer"
                )
            declared = onnx_type_of_type_proto(value.type)
            computed = types[value.name]
            if declared is not None and computed is not None and declared != computed:
                raise InvalidModelError(
                    f"graph output {value.name!r} is declared {declared} but is {computed}"
                    " (Relu's output has its input's type)"
                )
        #: the graph output names, in order
        self.output_names: tuple[str, ...] = tuple(value.name for value in graph.output)

        # What run() needs on every call, computed once here: the output container (a
        # namedtuple class: building one costs ~28 us, more than the whole run of a small model),
        # the (input, output) name of each step, which outputs must be copied, and per input
        # what a call may feed without the general checks.
        self._outputs_type = _outputs_type(self.output_names)
        self._step_names: tuple[tuple[str, str, bool], ...] = tuple(
            (s.input, s.output, types[s.input] is not None) for s in steps
        )
        produced = {step.output for step in self._steps}
        # A graph output that is an input or an initializer is returned as a copy, so the
        # caller's array and the prepared model never alias the results.
        self._copied_outputs = tuple(name not in produced for name in self.output_names)
        self._any_copied = any(self._copied_outputs)
        self._required_names = tuple(i.name for i in self.required_inputs)
        self._fast_inputs = tuple(_fast_input_check(i) for i in self.required_inputs)

    # -- running -------------------------------------------------------------------------------

    def _feeds(self, inputs: Any) -> dict[str, Any]:
        required = [i.name for i in self.required_inputs]
        if isinstance(inputs, Mapping):
            check_feed_names(inputs, required, self._overridable)
            return dict(inputs)
        if isinstance(inputs, (np.ndarray, np.generic)):
            inputs = [inputs]
        elif not isinstance(inputs, Sequence) or isinstance(inputs, (str, bytes)):
            raise ModelInputError(
                "inputs must be a list (in graph-input order) or a dict (by name) of arrays,"
                f" got {type(inputs).__name__}"
            )
        if len(inputs) != len(required):
            raise ModelInputError(
                f"{len(inputs)} input(s) given but the model has {len(required)}: {required}"
            )
        return dict(zip(required, inputs, strict=True))

    def _checked_value(self, name: str, value: Any) -> np.ndarray:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        graph_input = self._inputs_by_name.get(name) or self._overridable[name]
        if graph_input.onnx_type is not None:
            check_feed_type(name, graph_input.onnx_type, array.dtype)
        shape = graph_input.shape
        if shape is not None:
            if array.ndim != len(shape) or any(
                size is not None and size != actual
                for size, actual in zip(shape, array.shape, strict=True)
            ):
                declared = tuple("?" if size is None else size for size in shape)
                raise ModelInputError(
                    f"input {name!r} has shape {array.shape} but the model declares {declared}"
                )
        return array

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Run the model.

        Parameters
        ----------
        inputs : list, tuple, dict or numpy.ndarray
            The graph inputs (initializers excluded): a list in graph-input order, a dict by
            name (which may also override initializers listed as graph inputs), or one array for
            a model with one input. Types must equal the declared ones; bfloat16 tensors are
            ``ml_dtypes.bfloat16`` arrays. Inputs are never modified.

        Returns
        -------
        tuple of numpy.ndarray
            The graph outputs in order; also addressable by name (``outputs["y"]``, ``.y``).
        """
        if type(inputs) in (list, tuple) and len(inputs) == len(self._fast_inputs):
            # The common call: a list of arrays of the declared types and shapes. Everything
            # else about the model was checked by prepare; what can change between calls (the
            # arrays fed) is checked here, cheaply; anything unusual takes the general path,
            # whose checks give the errors.
            for (dtype, shape), value in zip(self._fast_inputs, inputs, strict=True):
                if type(value) is not np.ndarray or value.dtype is not dtype:
                    break
                if (
                    shape is not None
                    and value.shape != shape
                    and not _shape_fits(value.shape, shape)
                ):
                    break
            else:
                values = dict(zip(self._required_names, inputs, strict=True))
                if self._initializers:
                    values = {**self._initializers, **values}
                return self._compute(values)
        values = dict(self._initializers)
        for name, value in self._feeds(inputs).items():
            values[name] = self._checked_value(name, value)
        return self._compute(values)

    def _compute(self, values: dict[str, Any]) -> tuple[Any, ...]:
        """Run the steps on checked values; the outputs in the model's output container."""
        for input_name, output_name, typed in self._step_names:
            x = values[input_name]
            if typed:
                # The type was declared, checked against the Relu version at prepare and the
                # value's type against the declaration: no version check again (~2 us).
                y = relu(x)
            else:
                try:
                    y = relu(x, opset=self.opset)
                except UnsupportedTypeError:
                    # The graph leaves the type undeclared: say which node.
                    step = next(s for s in self._steps if s.output == output_name)
                    _refuse_invalid(
                        step.node,
                        step.description,
                        self.opset,
                        self.version,
                        onnx_type_of_dtype(x.dtype),
                    )
                    raise
            values[output_name] = y if type(y) is np.ndarray else np.asarray(y)
        outputs: tuple[Any, ...]
        if self._any_copied:
            outputs = self._outputs_type._make(
                [
                    np.array(values[name], copy=True) if copied else values[name]
                    for name, copied in zip(self.output_names, self._copied_outputs, strict=True)
                ]
            )
        else:
            outputs = self._outputs_type._make([values[name] for name in self.output_names])
        return outputs


def _shape_fits(actual: tuple[int, ...], declared: tuple[int | None, ...]) -> bool:
    """Whether a shape is one that a declared shape with unknown (None) sizes allows."""
    return len(actual) == len(declared) and all(
        size is None or size == length for size, length in zip(declared, actual, strict=True)
    )


def _fast_input_check(
    graph_input: _GraphInput,
) -> tuple[np.dtype[Any] | None, tuple[int | None, ...] | None]:
    """(dtype, shape) that a fed array must have (by identity: numpy's dtypes of the Relu
    types are singletons) for run() to skip the general checks; shape None: any. An undeclared
    type (None) never matches, so such inputs always take the general path."""
    dtype = None if graph_input.onnx_type is None else dtype_of_onnx_type(graph_input.onnx_type)
    if dtype is not None:
        dtype = np.empty(0, dtype=dtype).dtype  # the canonical instance arrays carry
    return dtype, graph_input.shape


def _initializer_values(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer's values; InvalidModelError if its data cannot be decoded."""
    from onnx.external_data_helper import uses_external_data

    if uses_external_data(tensor):
        # load_model reads external data beside a model file; here it was not read (a model
        # given as bytes or as a ModelProto loaded without it). Resolving the location against
        # the current folder would read whatever file happens to be there.
        raise InvalidModelError(
            f"initializer {tensor.name!r} keeps its data in an external file that was not"
            " loaded: give the model as a path (its external data is read from the model's"
            " folder) or load it with onnx.load(path)"
        )
    try:
        return numpy_helper.to_array(tensor)
    except Exception as error:  # noqa: BLE001 - ValueError, TypeError, KeyError... from onnx
        raise InvalidModelError(
            f"initializer {tensor.name!r} cannot be decoded ({type(error).__name__}: {error});"
            " the model is corrupt"
        ) from None


class OnnxReluBackend(Backend):
    """The onnx-relu backend: runs models made only of ai.onnx Relu nodes, on the CPU."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        """True if :meth:`prepare` would accept the model on this device."""
        if not cls.supports_device(device):
            return False
        try:
            OnnxReluBackendRep(load_model(model))
        except (OnnxReluError, NotImplementedError):
            return False
        return True

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> OnnxReluBackendRep:
        """Validate a model (ModelProto, path or bytes); return a runnable OnnxReluBackendRep."""
        _check_device(cls, device)
        return OnnxReluBackendRep(load_model(model))

    @classmethod
    def run_model(
        cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        """Prepare and run a model once; see :meth:`OnnxReluBackendRep.run` for ``inputs``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Any = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run one Relu node on ``inputs`` (a one-element list, or a dict by input name).

        The opset is ``kwargs["opset_version"]`` if given, else the latest onnx knows; it decides
        the Relu version and so the allowed types.
        """
        _check_device(cls, device)
        opset = _checked_node_opset(kwargs.get("opset_version", latest_onnx_opset()))
        description = _relu_description(node, 0)
        version = version_for_opset(opset)
        # Without exactly one input and one output there is no input to read; otherwise every
        # finding is reported at once, when the input's type is known.
        findings = judge_relu(node, opset, None, version)
        refuse(description, [found for found in findings if found.kind == "arity"])
        (input_name,), (output_name,) = node.input, node.output
        if isinstance(inputs, Mapping):
            if set(inputs) != {input_name}:
                raise ModelInputError(
                    f"{description} needs exactly the input {input_name!r}, got {sorted(inputs)}"
                )
            x = inputs[input_name]
        else:
            if isinstance(inputs, (np.ndarray, np.generic)):
                inputs = [inputs]
            # bytes and str are sequences too, but of characters, not of input arrays.
            if not isinstance(inputs, Sequence) or isinstance(inputs, (str, bytes, bytearray)):
                raise ModelInputError(
                    f"{description} takes its input as a list of one array or a dict by input"
                    f" name ({input_name!r}), got {type(inputs).__name__}"
                )
            if len(inputs) != 1:
                raise ModelInputError(f"{description} takes one input, got {len(inputs)}")
            (x,) = inputs
        x = x if isinstance(x, np.ndarray) else np.asarray(x)
        _refuse_invalid(node, description, opset, version, onnx_type_of_dtype(x.dtype))
        outputs: tuple[Any, ...] = _outputs_type((output_name,))(np.asarray(relu(x, opset=opset)))
        return outputs

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for the CPU ("CPU", "CPU:0"); the kernel runs nowhere else."""
        try:
            return bool(Device(device).type == DeviceType.CPU)
        except (AttributeError, ValueError):
            return False


@functools.lru_cache(maxsize=256)
def _outputs_type(names: tuple[str, ...]) -> Any:
    """The output container for these output names (built once: each build costs ~28 us)."""
    return namedtupledict("Outputs", names)


def _checked_node_opset(opset: object) -> int:
    """run_node's ``opset_version``: an integer >= 1, as :func:`prepare` requires of a model's
    opset; one newer than onnx knows selects the newest Relu version, as everywhere."""
    return check_opset(opset)


def _check_device(backend: type[OnnxReluBackend], device: str) -> None:
    if not backend.supports_device(device):
        raise ValueError(f"device {device!r} is not supported: the onnx-relu backend runs on CPU")


is_compatible = OnnxReluBackend.is_compatible
prepare = OnnxReluBackend.prepare
run_model = OnnxReluBackend.run_model
run_node = OnnxReluBackend.run_node
supports_device = OnnxReluBackend.supports_device
