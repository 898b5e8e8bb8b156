"""``python -m onnx_relu.bench``: the benchmark harness's command line (see :func:`main`)."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
