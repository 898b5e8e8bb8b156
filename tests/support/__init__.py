"""What the tests share: the oracle, the test values, the type table, Hypothesis strategies, ONNX
model builders, the command runner and a fresh interpreter (one module each). Import the modules
themselves (``from tests.support.oracle import expected_relu``); this package imports none of
them, so that a test needing numpy only never loads onnx or Hypothesis."""

from pathlib import Path

#: The repository's root folder (README.md, docs/, tools/).
REPOSITORY = Path(__file__).resolve().parents[2]
