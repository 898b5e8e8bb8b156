"""Runs in a separate virtual environment holding only an old onnxruntime and numpy (no onnx,
no onnx-relu): loads every ``*.onnx`` model of FOLDER into a session with the onnx-relu library
at LIBRARY, feeds it ``<name>.npy`` as its input "x" when that file exists (otherwise the model
has none), and writes its output as ``<name>.out.npy``; what failed goes to ``errors.json``.

Usage: python ort_oldest_driver.py LIBRARY FOLDER
(tests/onnx/test_ort_library_oldest.py builds the models and checks the outputs.)
"""

import glob
import json
import os
import sys

import numpy as np
import onnxruntime


def main(library: str, folder: str) -> None:
    errors = {}
    for model_path in sorted(glob.glob(os.path.join(folder, "*.onnx"))):
        name = os.path.basename(model_path)[: -len(".onnx")]
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # No constant folding: a Relu of an initializer must run in the session, on the library.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.register_custom_ops_library(library)
        try:
            session = onnxruntime.InferenceSession(
                model_path, options, providers=["CPUExecutionProvider"]
            )
            input_path = os.path.join(folder, name + ".npy")
            feeds = {"x": np.load(input_path)} if os.path.exists(input_path) else {}
            (y,) = session.run(None, feeds)
            np.save(os.path.join(folder, name + ".out.npy"), y)
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails on any
            errors[name] = f"{type(error).__name__}: {error}"
    with open(os.path.join(folder, "errors.json"), "w") as stream:
        json.dump({"onnxruntime": onnxruntime.__version__, "errors": errors}, stream)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
