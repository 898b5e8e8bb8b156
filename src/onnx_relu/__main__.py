"""``python -m onnx_relu``: the same program as the ``onnx-relu`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
