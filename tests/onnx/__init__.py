"""Tests of the ONNX layer: backend, reference op, check_model, legalize, onnxruntime, bad
models."""
