"""Figures for arrays: the small call against its anchor, and the round trips of other libraries.

``python -m onnx_relu.bench --figures arrays`` (or ``python src/onnx_relu/bench/arrays.py``
against any installed onnx-relu: it uses the public API only) prints, each as a ratio measured
in the same run, interleaved:

- :func:`small_call`: ``relu(x)`` of a 6-element float32 array against
  ``np.maximum(x, np.float32(0))`` (the goal: <= 1.0) and the bare ``relu_ufunc(x)``;
- :func:`round_trips`: ``relu(t)`` of 64 MiB of float32 held by torch and by jax (where
  installed: the caller's type in and out, through DLPack) against ``relu(x)`` of the same
  numpy array (the goal: <= 1.05), with ``torch.relu(t)`` for scale: the median and quartiles
  of the ratios of interleaved pairs of calls, which a shared machine's load moves little;
- :func:`jax_transformations`: ``jax.jit(relu)`` (through jax's FFI where its handler could be
  built: the route is read from the jaxpr) against the same through ``jax.pure_callback``, on 6
  elements and on 64 MiB.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from typing import Any

import numpy as np

import onnx_relu

__all__ = ["small_call", "round_trips", "jax_transformations", "format_arrays", "main"]


def _best_of(
    statements: dict[str, str], names: dict[str, Any], rounds: int, number: int
) -> dict[str, float]:
    """Seconds per call of each statement: best of ``rounds`` interleaved batches of
    ``number`` calls (the statements run inline in timeit's loop: no wrapper call counted)."""
    timers = {label: timeit.Timer(code, globals=names) for label, code in statements.items()}
    best = dict.fromkeys(timers, float("inf"))
    for timer in timers.values():
        timer.timeit(number // 10 or 1)  # warm-up
    for _ in range(rounds):
        for label, timer in timers.items():
            best[label] = min(best[label], timer.timeit(number) / number)
    return best


def small_call(rounds: int = 9, number: int = 100_000) -> dict[str, Any]:
    """The 6-element float32 call: seconds of each form and ``relu``'s ratios."""
    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32)
    names = {"np": np, "x": x, "relu": onnx_relu.relu, "relu_ufunc": onnx_relu.relu_ufunc}
    best = _best_of(
        {
            "relu(x)": "relu(x)",
            "np.maximum(x, np.float32(0))": "np.maximum(x, np.float32(0))",
            "np.maximum(x, 0)": "np.maximum(x, 0)",
            "relu_ufunc(x)": "relu_ufunc(x)",
        },
        names,
        rounds,
        number,
    )
    return {
        "microseconds": {label: seconds * 1e6 for label, seconds in best.items()},
        "relu(x) / np.maximum(x, np.float32(0))  (goal <= 1.0)": best["relu(x)"]
        / best["np.maximum(x, np.float32(0))"],
        "relu(x) / np.maximum(x, 0)": best["relu(x)"] / best["np.maximum(x, 0)"],
        "relu(x) / relu_ufunc(x)": best["relu(x)"] / best["relu_ufunc(x)"],
    }


def _pairs(
    first: str, second: str, names: dict[str, Any], count: int, calls: int = 1
) -> list[float]:
    """Seconds of ``second`` over seconds of ``first``, for ``count`` pairs: each pair is
    ``calls`` calls of each, alternated (first-second, then second-first, ...) and each side's
    fastest taken. A busy machine slows both sides of a pair alike, the fastest of a few calls
    drops a call stalled by another process, and the median of the ratios keeps little of the
    rest."""
    timers = timeit.Timer(first, globals=names), timeit.Timer(second, globals=names)
    for timer in timers:
        timer.timeit(2)  # warm-up
    ratios = []
    for index in range(count):
        a = b = float("inf")
        for turn in range(calls):
            if (index + turn) % 2:
                b, a = min(b, timers[1].timeit(1)), min(a, timers[0].timeit(1))
            else:
                a, b = min(a, timers[0].timeit(1)), min(b, timers[1].timeit(1))
        ratios.append(b / a)
    return ratios


def _spread(ratios: list[float]) -> dict[str, float]:
    """The median of ``ratios`` and their quartiles."""
    q1, median, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return {"median": median, "first quartile": q1, "third quartile": q3}


def round_trips(nbytes: int = 64 << 20, pairs: int = 61) -> dict[str, Any]:
    """``nbytes`` of float32: ``relu`` of a torch tensor and of a jax array (each where
    installed; the caller's type in and out) against ``relu`` of the numpy array, as the median
    and quartiles of ``pairs`` interleaved pairs (the fastest of 3 calls a side), with
    ``torch.relu`` for scale."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(nbytes // 4, dtype=np.float32)
    names: dict[str, Any] = {"relu": onnx_relu.relu, "x": x}
    torch, jax = _optional("torch"), _optional("jax")
    # Each library's array in memory of its own allocator (as its users' arrays are), and a
    # numpy view of that memory: the numpy path over it tells the memory's part (pages of
    # 4 KiB where numpy's 64 MiB array has huge pages) from the round trip's own.
    against = {}
    if torch is not None:
        names["t"], names["torch"] = torch.from_numpy(x).clone(), torch
        names["t_view"] = names["t"].numpy()
        against["relu(torch)"] = ("relu(t)", "relu(t_view)")
    if jax is not None:
        names["j"] = jax.device_put(x)
        names["j"].block_until_ready()
        names["j_view"] = np.asarray(names["j"])
        against["relu(jax)"] = ("relu(j)", "relu(j_view)")
    figures: dict[str, Any] = {
        "relu(numpy), milliseconds": 1e3
        * statistics.median(timeit.repeat("relu(x)", globals=names, number=1, repeat=pairs))
    }
    for label, (code, over_view) in against.items():
        spread = _spread(_pairs("relu(x)", code, names, pairs, calls=3))
        figures[f"{label} / relu(numpy)  (goal <= 1.05)"] = spread.pop("median")
        figures[f"{label} / relu(numpy), quartiles"] = spread
        library = label[5:-1]
        figures[f"{label} / relu(numpy view of the {library} buffer)"] = _spread(
            _pairs(over_view, code, names, pairs, calls=3)
        )["median"]
    if torch is not None:
        spread = _spread(_pairs("torch.relu(t)", "relu(t)", names, pairs, calls=3))
        figures["relu(torch) / torch.relu(torch)"] = spread.pop("median")
    missing = [name for name, module in (("torch", torch), ("jax", jax)) if module is None]
    if missing:
        figures["not installed"] = ", ".join(missing)
    return figures


def _blocking_pairs(first: Any, second: Any, count: int) -> list[float]:
    """:func:`_pairs` for two jax functions of no argument, each call waited for."""
    first().block_until_ready(), second().block_until_ready()  # compiled, warm
    ratios = []
    for index in range(count):
        runs = (first, second) if index % 2 == 0 else (second, first)
        seconds = {}
        for run in runs:
            start = time.perf_counter()
            run().block_until_ready()
            seconds[run] = time.perf_counter() - start
        ratios.append(seconds[second] / seconds[first])
    return ratios


def jax_transformations(nbytes: int = 64 << 20, pairs: int = 31) -> dict[str, Any]:
    """``jax.jit(relu)`` (jax's FFI, where its handler could be built) against the same through
    ``jax.pure_callback``, on 6 float32 elements and on ``nbytes``: medians of interleaved
    pairs."""
    jax = _optional("jax")
    if jax is None:
        return {"not installed": "jax"}

    def on_host(values: Any) -> Any:
        return onnx_relu.relu(np.asarray(values))

    def through_callback(x: Any) -> Any:
        result = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(on_host, result, x, vmap_method="expand_dims")

    jitted, callback = jax.jit(onnx_relu.relu), jax.jit(through_callback)
    figures: dict[str, Any] = {"jit(relu) calls": _route(jax)}
    rng = np.random.default_rng(0)
    for label, count, rounds in (
        ("6 float32 elements", 6, 20 * pairs),
        ("64 MiB", nbytes // 4, pairs),
    ):
        x = jax.device_put(rng.standard_normal(count, dtype=np.float32))
        spread = _spread(_blocking_pairs(lambda x=x: callback(x), lambda x=x: jitted(x), rounds))
        figures[f"{label}: jit(relu) / jit(pure_callback of relu)"] = spread.pop("median")
    return figures


def _route(jax: Any) -> str:
    """What ``relu`` calls under a jax transformation, as its jaxpr shows it."""
    text = str(jax.make_jaxpr(onnx_relu.relu)(jax.numpy.zeros(2, np.float32)))
    if "ffi_call" in text:
        return "jax's FFI"
    return "jax.pure_callback" if "pure_callback" in text else "neither FFI nor pure_callback"


def _optional(name: str) -> Any:
    """The module ``name`` if it is installed, else None."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def format_arrays(figures: dict[str, Any]) -> str:
    """The figures as indented text lines."""
    lines = [f"arrays (onnx-relu {onnx_relu.__version__}, Python {sys.version.split()[0]}):"]

    def walk(value: dict[str, Any], indent: int) -> None:
        for key, item in value.items():
            if isinstance(item, dict):
                lines.append(" " * indent + f"{key}:")
                walk(item, indent + 2)
            elif isinstance(item, float):
                lines.append(" " * indent + f"{key}: {item:.3f}")
            else:
                lines.append(" " * indent + f"{key}: {item}")

    walk(figures, 2)
    return "\n".join(lines)


def main(quick: bool = False) -> int:
    """Print the small-call figures and the round trips (``quick``: fewer rounds, 4 MiB)."""
    figures = {
        "small call, 6 float32 elements, best of interleaved batches": small_call(
            rounds=3 if quick else 9, number=10_000 if quick else 100_000
        ),
        "round trips, median of interleaved pairs": round_trips(
            4 << 20 if quick else 64 << 20, pairs=3 if quick else 61
        ),
    }
    figures["under jax.jit, median of interleaved pairs"] = jax_transformations(
        4 << 20 if quick else 64 << 20, pairs=3 if quick else 31
    )
    print(format_arrays(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv[1:]))
