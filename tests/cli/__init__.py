"""Tests of the ``onnx-relu`` command, run as a subprocess of the installed program."""
