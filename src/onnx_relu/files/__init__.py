"""The file layer: tensor files and their Relu, in bounded memory, and Zarr stores on Dask.

Needs numpy only for ``.npy``; ``.pb`` (ONNX TensorProto) files import onnx when one is read or
written (the ``onnx`` extra), and :func:`relu_zarr` imports dask, distributed and zarr when it
runs (the ``dask`` extra); a missing one raises :class:`~onnx_relu.errors.MissingExtraError`,
naming the extra and how to install it. Importing this package imports none of them.

- :func:`read_tensor`, :func:`write_tensor` (:mod:`.tensors`): ``.npy`` (:mod:`.npy`) and
  ``.pb`` (:mod:`.pb`), bit for bit.
- :mod:`onnx_relu.io`: what a path is (regular file, missing,
  ``-``, FIFO, device, folder), classified once, and what reading and writing it does; every
  reader and writer opens its paths there.
- :func:`relu_file` (:mod:`.tensor_files`): Relu of a whole file, out of core for ``.npy``, or
  in place.
- :func:`~.plan.plan_apply` (:mod:`.plan`): the plan of one such job, made once (what IN and
  OUT are, every refusal checked before anything is created), then its job (:mod:`.jobs`) run
  in one pass; what :func:`relu_file` and ``onnx-relu apply`` run.
- :func:`relu_zarr` (:mod:`.jobs.zarr_dask`): Relu of a Zarr store on a Dask cluster.
- :data:`Progress` (:mod:`.progress`): the ``progress(done_bytes, total_bytes)`` callback type.
- :func:`atomic_file`, :data:`TEMP_SUFFIX`: how every output file is written (the new content
  under a temporary name ending in ``TEMP_SUFFIX``, renamed over the destination when complete).

Examples
--------
>>> import os, tempfile, numpy as np
>>> from onnx_relu.files import read_tensor, relu_file, write_tensor
>>> folder = tempfile.mkdtemp()
>>> write_tensor(os.path.join(folder, "x.pb"), np.array([-1, 0, 5], dtype=np.int16))
>>> relu_file(os.path.join(folder, "x.pb"), os.path.join(folder, "y.npy"))
>>> y = read_tensor(os.path.join(folder, "y.npy"))
>>> str(y.dtype), y.tolist()
('int16', [0, 0, 5])
"""

from .._lazy import lazy_face

# (not typing.TYPE_CHECKING: importing typing costs more than this module)
TYPE_CHECKING = False
if TYPE_CHECKING:  # what static checkers see ("as": exported); at run time, see below
    from ..io.atomic import TEMP_SUFFIX as TEMP_SUFFIX
    from ..io.atomic import atomic_file as atomic_file
    from .jobs.zarr_dask import relu_zarr as relu_zarr
    from .progress import Progress as Progress
    from .tensor_files import relu_file as relu_file
    from .tensors import read_tensor as read_tensor
    from .tensors import write_tensor as write_tensor

# Every name of the layer: name -> the submodule that defines it, imported on first use by the
# hooks lazy_face makes (``__getattr__``, ``__dir__``): a submodule (``.formats``, what the
# command line needs to parse its arguments) is then imported without numpy, and the rest of
# the layer is loaded only as far as the job in hand needs.
_LAZY_EXPORTS = {
    "read_tensor": ".tensors",
    "write_tensor": ".tensors",
    "relu_file": ".tensor_files",
    "relu_zarr": ".jobs.zarr_dask",
    "Progress": ".progress",
    "atomic_file": "..io.atomic",
    "TEMP_SUFFIX": "..io.atomic",
}
__all__ = list(_LAZY_EXPORTS)
__getattr__, __dir__ = lazy_face(globals(), _LAZY_EXPORTS)
