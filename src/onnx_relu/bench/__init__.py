"""Benchmark harness: onnx-relu against a copy ceiling and every peer, in one process.

``python -m onnx_relu.bench`` (or :func:`main`) measures, for each of the Relu types and
each array size (default: 6 elements, 64 KiB, 4 MiB, 64 MiB, 512 MiB):

- onnx_relu: out of place into a preallocated ``out``, allocating, and in place;
- the ceilings: the harness's own copy (the kernel's copy: streaming and regular stores, split
  over threads like a relu call) and ``np.copyto``; for in place, the same copy of a buffer onto
  itself. A ceiling is the best of its copies at the thread count (``np.copyto`` counts at any);
- numpy ``np.maximum(x, 0, out=y)`` and ``np.maximum(x, 0)``;
- onnxruntime (io binding, intra-op threads = the thread count) where installed and where it
  has a kernel for the type, and its allocating ``session.run``;
- onnx-relu's ONNX backend, ``prepare(model).run([x])``, on the same one-node model;
- torch ``clamp_min(x, 0, out=y)`` and ``relu_()`` where installed.

Every variant runs at 1 thread and at the default count (peers that run on one thread only,
numpy and ``np.copyto``, at 1). Variants are interleaved: each of ``--rounds`` rounds runs all of
them once, in a new random (seeded) order, after a warm-up call; a variant's figure is the
median over rounds. Before each timed batch the output and in-place buffers are rewritten with
streaming stores (untimed), so that no variant pays for dirty lines another one left behind.
In-place variants get fresh mixed-sign data before every timed call (data that is already
non-negative, or zeros, runs faster and would flatter them); the refill is not timed.
Throughput is ``2 x bytes / time`` (one read and one write of the array).

Output: tables of GB/s and of same-run ratios (to the ceilings and to each peer at the same
thread count; the allocating call against ``out=`` and ``session.run``; the backend's ``run``
against ``session.run``) and the two overheads (a 6-element call, the import), a JSON file, and a
PNG with one panel per type (matplotlib, imported only to draw). The harness reports measurements
only: ``benchmarks/targets.py`` in the repository holds the performance targets and checks a run's
JSON against them.

The modules, by role: :mod:`.cases` (sizes, types, data, onnx-relu's and the ceilings' variants),
:mod:`.peers` (numpy, onnxruntime, torch), :mod:`.timing` (batches, rounds, overheads),
:mod:`.measure` (the run and its ratios), :mod:`.report` (tables, JSON, plot), :mod:`.scan`
(``--scan``: the streaming-store and threading thresholds of this machine, and the environment
settings that reproduce them). The harness uses onnx-relu's public API only
(``onnx_relu.tuning``, ``onnx_relu.dtypes``, ``onnx_relu.onnx.ort``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..argtypes import integer_at_least_one, positive_number, thread_count
from .cases import (
    DEFAULT_SIZES,
    INPLACE_BUFFER_BYTES,
    LARGEST_SKIPPED,
    QUICK_SIZES,
    TYPES,
    Size,
    dtype_of,
    mixed_sign_data,
)
from .measure import SCHEMA, run_benchmark
from .peers import PEERS
from .report import (
    NotBenchmarkResults,
    format_summary,
    format_tables,
    format_verdict,
    plot_results,
    read_results,
    write_json,
)
from .scan import run_scan

__all__ = [
    "main",
    "build_parser",
    "run_benchmark",
    "run_scan",
    "format_summary",
    "format_verdict",
    "format_tables",
    "plot_results",
    "read_results",
    "write_json",
    "NotBenchmarkResults",
    "SCHEMA",
    "TYPES",
    "Size",
    "dtype_of",
    "mixed_sign_data",
]


def _unwritable_reason(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (None if it can), found before the run starts
    by creating it (and removing it again) if it does not exist: permissions alone do not
    tell, e.g. for root in /proc."""
    if os.path.isdir(path):
        return "it is a folder"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "permission denied"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(path)
    return None


# Paragraphs, reflowed to the terminal by onnx_relu.cli._help.HelpFormatter; the indented lines
# are examples, each "COMMAND  # comment", kept as written.
_EXAMPLES = """\
examples:
  {prog} --quick  # a first look, under a minute
  {prog} --quick --tables  # with every table
  {prog} --skip-largest  # the whole run without 512 MiB
  {prog} --types float32 bfloat16 --sizes 4M 64M
  {prog} --threads 1 2 4 --peers numpy onnxruntime
  {prog} --replot onnx-relu-bench.json --png again.png
  {prog} --scan  # store and thread thresholds
  {prog} --models cnn --quick  # whole models in onnxruntime

--quick ends with a verdict: float32 GB/s beside the copy ceiling of this machine, or
"inconclusive" when the machine was too busy for the figures to mean anything.
"""


def build_parser(
    prog: str = "python -m onnx_relu.bench",
    formatter_class: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter,
) -> argparse.ArgumentParser:
    """The harness's argument parser (``prog`` names the program in help and usage;
    ``onnx-relu bench`` gives the command's ``formatter_class``, which reflows the help to the
    terminal)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Benchmark onnx-relu against a copy ceiling, numpy, onnxruntime and torch "
        "(each where installed): GB/s tables, ratios, JSON and a PNG.",
        epilog=_EXAMPLES.format(prog=prog),
        formatter_class=formatter_class,
    )
    option = parser.add_argument
    option(
        "--types",
        nargs="+",
        choices=TYPES,
        default=list(TYPES),
        metavar="TYPE",
        help="types to measure (default: all of them)",
    )
    option(
        "--sizes",
        nargs="+",
        type=Size.parse,
        default=None,
        metavar="SIZE",
        help="array sizes: elements (6) or bytes (64K, 4M, 512M); default: "
        + " ".join(DEFAULT_SIZES),
    )
    option(
        "--skip-largest",
        action="store_true",
        help="leave out sizes of 512 MiB and more (memory, time)",
    )
    option(
        "--threads",
        nargs="+",
        type=thread_count,
        default=None,
        metavar="N",
        help="thread counts (default: 1 and the CPUs available)",
    )
    option(
        "--peers",
        nargs="*",
        default=list(PEERS),
        choices=PEERS,
        metavar="PEER",
        help=f"peers to include where installed: {', '.join(PEERS)} (default: all)",
    )
    option(
        "--rounds",
        type=integer_at_least_one,
        default=None,
        metavar="N",
        help="interleaved rounds; the median is reported (default 5)",
    )
    option(
        "--batch-ms",
        type=positive_number("milliseconds"),
        default=None,
        metavar="MS",
        help="target length of one timed batch in ms (default 20)",
    )
    option(
        "--quick",
        action="store_true",
        help="a first look: sizes "
        + " ".join(QUICK_SIZES)
        + ", 3 rounds, 1 ms batches; prints the summary only (--tables for the tables)",
    )
    option(
        "--tables",
        action="store_true",
        help="also print every table (GB/s of every variant, every ratio); the default"
        " without --quick",
    )
    option(
        "--json",
        default="onnx-relu-bench.json",
        metavar="PATH",
        help="where to write the results (default: %(default)s)",
    )
    option(
        "--png",
        default="onnx-relu-bench.png",
        metavar="PATH",
        help="where to draw the plot (default: %(default)s)",
    )
    option("--no-plot", action="store_true", help="do not draw the PNG")
    option(
        "--scan",
        action="store_true",
        help="instead of the benchmark: scan where streaming stores and threads start to pay"
        " on this machine (first of --types, default float32; --rounds, default 7) and print"
        " the ONNX_RELU_* settings that reproduce it",
    )
    option(
        "--figures",
        choices=("start-up", "layouts", "thread-scaling", "arrays", "session-creation"),
        metavar="SET",
        help="instead of the benchmark, one set of focused same-run figures: start-up (fresh"
        " processes), layouts (views numpy cannot merge, against contiguous arrays),"
        " thread-scaling (N Python threads calling relu), arrays (the 6-element call against"
        " np.maximum, torch and jax round trips) or session-creation (ort_session and"
        " check_model opening a model, against onnxruntime and onnx.load)",
    )
    option(
        "--models",
        nargs="*",
        choices=("cnn", "mlp"),
        default=None,
        metavar="MODEL",
        help="instead of the benchmark: whole models, cnn or mlp (a CNN and an MLP, built here;"
        " default"
        " both) in onnxruntime -- stock, with the onnx-relu library (each choice) and"
        " legalized -- as same-run time ratios to stock, at the first of --threads (default"
        " 2) intra-op threads (--rounds, default 10; 2 with --quick)",
    )
    option(
        "--replot",
        metavar="JSON",
        help="only draw --png from an earlier run's JSON and print its tables",
    )
    return parser


def main(
    argv: Sequence[str] | None = None,
    prog: str = "python -m onnx_relu.bench",
    formatter_class: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter,
) -> int:
    """Run the benchmark from the command line; return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    prog : str, optional
        The program name shown in help and usage messages (``onnx-relu bench`` from the CLI).
    formatter_class : type, optional
        argparse's formatter of the help (the command line's reflows it to the terminal).

    Returns
    -------
    int
        0 on success, 2 for bad arguments or a ``--replot`` file that is not a benchmark's.

    Examples
    --------
    A one-type smoke run without plot or JSON (prints its summary; ``--tables`` adds every
    table):

    >>> from onnx_relu.bench import main
    >>> main(["--quick", "--types", "int8", "--sizes", "64K", "--threads", "1", "--peers",
    ...       "--no-plot", "--json", ""])  # doctest: +ELLIPSIS
    onnx-relu bench: 1 types, 3 rounds, ...
    0
    """
    parser = build_parser(prog, formatter_class)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:  # --help, usage errors
        return exc.code if isinstance(exc.code, int) else 2

    def usage_error(message: str) -> int:
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2

    # Where the results go is checked now, not after a run of many minutes.
    plots = args.png and (args.replot or not args.no_plot)  # --replot always draws
    outputs = [("--png", args.png)] if plots else []
    if args.json and not args.replot:
        outputs.insert(0, ("--json", args.json))
    for option_name, path in outputs:
        reason = _unwritable_reason(path)
        if reason is not None:
            return usage_error(f"{option_name} {path!r} cannot be written: {reason}")
    if args.replot:
        return _replot(args, usage_error)
    if args.figures == "arrays":
        from .arrays import main as arrays_main

        return arrays_main(quick=args.quick)
    if args.figures == "session-creation":
        from .session_creation import main as session_creation_main

        return session_creation_main([])
    if args.figures:
        from .figures import main as figures_main

        return figures_main(args.figures)
    if args.models is not None:
        return _models(args)
    if args.scan:
        return _scan(args)
    return _tables(args, prog)


def _replot(args: argparse.Namespace, usage_error: Callable[[str], int]) -> int:
    """``--replot FILE``: the tables, summary and plot of a saved run."""
    try:
        results = read_results(args.replot)
    except NotBenchmarkResults as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        return usage_error(f"--replot {args.replot!r} cannot be read: {exc.strerror or exc}")
    except ValueError as exc:  # not JSON (json.JSONDecodeError) or not UTF-8 text
        return usage_error(
            f"--replot {args.replot!r} is not an onnx-relu benchmark file ({SCHEMA}):"
            f" {type(exc).__name__}: {exc}"
        )
    print(format_tables(results))
    print()
    print(format_summary(results))
    return _plot(results, args.png)


def _models(args: argparse.Namespace) -> int:
    """``--models``: the model rows."""
    from .models import MODELS, format_models, run_models

    threads = args.threads[0] if args.threads else 2
    rounds = args.rounds or (2 if args.quick else 10)
    calls = 1 if args.quick else 3
    records = run_models(threads, rounds, calls, args.models or tuple(MODELS))
    print(format_models(records, threads, rounds, calls))
    return 0


def _scan(args: argparse.Namespace) -> int:
    """``--scan``: the store and thread thresholds."""
    from .scan import STORE_SIZES_KIB, THREAD_SIZES_KIB

    quick = args.quick
    run_scan(
        type_name=args.types[0] if args.types != list(TYPES) else "float32",
        rounds=args.rounds or (2 if quick else 7),
        store_sizes_kib=(64, 1024, 4096) if quick else STORE_SIZES_KIB,
        thread_sizes_kib=(256, 2048) if quick else THREAD_SIZES_KIB,
    )
    return 0


def _tables(args: argparse.Namespace, prog: str) -> int:
    """The benchmark itself: run it, print its tables, summary and verdict, save and plot."""
    sizes = args.sizes or [Size.parse(s) for s in (QUICK_SIZES if args.quick else DEFAULT_SIZES)]
    if args.skip_largest:
        sizes = [s for s in sizes if not (s.in_bytes and s.count >= LARGEST_SKIPPED)]
    rounds = args.rounds or (3 if args.quick else 5)
    batch_seconds = (args.batch_ms or (1.0 if args.quick else 20.0)) / 1000
    if args.quick:
        print(
            f"{prog} --quick: {len(args.types)} types x {len(sizes)} sizes, {rounds} rounds...",
            file=sys.stderr,
            flush=True,
        )
    results = run_benchmark(
        types=args.types,
        sizes=sizes,
        thread_counts=args.threads,
        peers=args.peers,
        rounds=rounds,
        batch_seconds=batch_seconds,
        gap=0.0 if args.quick else 0.04,
        import_repeats=1 if args.quick else 5,
        inplace_bytes=(2 << 20) if args.quick else INPLACE_BUFFER_BYTES,
        progress=None
        if args.quick
        else lambda message: print(message, file=sys.stderr, flush=True),
    )
    if args.tables or not args.quick:
        print(format_tables(results))
        print()
    print(format_summary(results))
    if args.json:
        write_json(results, args.json)
        print(f"wrote {args.json}" + ("" if args.tables else " (every round of every variant)"))
    status = 0 if args.no_plot or not args.png else _plot(results, args.png)
    print(format_verdict(results))  # the last word: what the run says of this machine
    return status


def _plot(results: dict[str, Any], path: str) -> int:
    try:
        plot_results(results, path)
    except ImportError as exc:
        from ..errors import MissingExtraError

        print(f"no plot: {MissingExtraError.from_error(exc, 'the plot') or exc}", file=sys.stderr)
        return 0
    print(f"wrote {path}")
    return 0
