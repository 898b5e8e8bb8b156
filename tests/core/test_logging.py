"""The ``onnx_relu`` logger: quiet by default, the long operations at INFO, and the logs of the
LocalCluster a Zarr job starts kept out of the caller's logging unless asked for (DEBUG)."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from onnx_relu._log import logger


def test_logger_is_named_and_quiet_by_default():
    assert logger is logging.getLogger("onnx_relu")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    # no handler configured: a warning reaches nothing (not logging's last resort, stderr)
    code = "from onnx_relu._log import logger; logger.warning('should not be printed')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""


def test_import_onnx_relu_does_not_import_logging_setup():
    code = "import sys, onnx_relu; print('onnx_relu._log' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False"


def _zarr_job(tmp_path):
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("distributed")
    from onnx_relu.files.jobs.zarr_dask import relu_zarr

    source = zarr.create_array(tmp_path / "x.zarr", shape=(64,), chunks=(16,), dtype="float32")
    source[:] = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    relu_zarr(tmp_path / "x.zarr", tmp_path / "y.zarr")
    return zarr.open_array(tmp_path / "y.zarr")[:]


def test_zarr_job_logs_itself_and_keeps_the_cluster_out(tmp_path, caplog):
    pytest.importorskip("distributed")  # (importing it sets its logger's level)
    before = logging.getLogger("distributed").level
    with caplog.at_level(logging.INFO):
        result = _zarr_job(tmp_path)
    assert result.min() == 0.0
    ours = [r.getMessage() for r in caplog.records if r.name == "onnx_relu"]
    assert len(ours) == 2 and "4 tasks" in ours[0] and "done in" in ours[1]
    cluster = [r for r in caplog.records if r.name.startswith("distributed")]
    assert all(r.levelno >= logging.WARNING for r in cluster), [r.getMessage() for r in cluster]
    assert logging.getLogger("distributed").level == before  # restored


def test_cluster_logs_when_asked_for(tmp_path, caplog):
    with caplog.at_level(logging.DEBUG, logger="onnx_relu"), caplog.at_level(logging.INFO):
        _zarr_job(tmp_path)
    assert any(
        r.name.startswith("distributed") and r.levelno == logging.INFO for r in caplog.records
    )
