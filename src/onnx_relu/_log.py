"""The library's logger, ``logging.getLogger("onnx_relu")``, and the Dask cluster's logs.

The logger is quiet by default (a ``NullHandler``: nothing reaches ``logging``'s last resort,
stderr); a program that configures logging sees the library's long operations (a Zarr job's
start and end) at INFO, and at DEBUG the logs of the Dask cluster a job starts. The command
line's progress is its own (not these records).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

__all__ = ["logger", "dask_logs_kept_out"]

logger = logging.getLogger("onnx_relu")
logger.addHandler(logging.NullHandler())


@contextlib.contextmanager
def dask_logs_kept_out(dask_config: Any) -> Iterator[None]:
    """While the block runs, the records of a LocalCluster it starts (``distributed``'s, below
    WARNING, in this process and in its worker processes) stay out of the caller's logging,
    unless the ``onnx_relu`` logger is enabled for DEBUG. ``dask_config`` is ``dask.config``.

    distributed sets its logger's level from dask's ``logging`` configuration when it is
    imported (``silence_logs`` only quiets its own handler, not the records that propagate to
    the caller's): here (imported already) the level is raised for the block and restored
    after it; worker processes import it afresh, with the configuration in their environment.
    """
    if logger.isEnabledFor(logging.DEBUG):
        yield
        return
    distributed_logger = logging.getLogger("distributed")
    level = distributed_logger.level
    settings = {
        "logging.distributed": "warning",
        "distributed.nanny.pre-spawn-environ.DASK_LOGGING__DISTRIBUTED": "warning",
    }
    try:
        with dask_config.set(settings):
            if distributed_logger.getEffectiveLevel() < logging.WARNING:
                distributed_logger.setLevel(logging.WARNING)
            yield
    finally:
        distributed_logger.setLevel(level)
