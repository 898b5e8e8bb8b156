"""Python code in a fresh interpreter, with none of this process's ONNX_RELU_* settings: what
the tests of start-up configuration (threads, the output cache) run their code in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) with ``python -c`` in this environment less its ONNX_RELU_*
    variables, plus ``env``; its output captured as text (a hang fails after 300 s)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ONNX_RELU_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )
