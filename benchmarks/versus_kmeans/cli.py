"""Benchmark: TransformerKMeans against sklearn.cluster.KMeans on bundled and generated data.

The command line ``skformer bench kmeans``; see :mod:`benchmarks.versus_kmeans`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

import numpy as np

from benchmarks._records import write_records
from benchmarks.versus_kmeans.data import DATASETS, make_datasets
from benchmarks.versus_kmeans.report import (
    format_context,
    format_summary,
    plot_summary,
    summarise,
    summarise_context,
)
from benchmarks.versus_kmeans.runs import (
    CONTEXTS,
    DEVICES,
    Record,
    compare,
    context_experiment,
    machine_info,
    peak_memory,
)

__all__ = ["main"]


def _n_init(text: str):
    if text == "auto":
        return text
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def _size(text: str) -> int:
    """A positive count, also written as ``1e6``."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value >= 1 and value.is_integer()):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(value)


def _context(text: str) -> int | None:
    return None if text.lower() in ("none", "all") else _size(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench kmeans", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS),
                        metavar="NAME", help=f"data sets (default: all of {', '.join(DATASETS)})")
    parser.add_argument("--n", type=_size, nargs="+", default=[10_000, 100_000],
                        help="sizes of the generated data sets (default: 10000 100000)")
    parser.add_argument("--d", type=int, nargs="+", default=[8, 32],
                        help="dimensions of the generated data sets (default: 8 32)")
    parser.add_argument("--k", type=int, default=10,
                        help="clusters of the generated data sets (default: 10)")
    parser.add_argument("--cluster-std", type=float, default=None,
                        help="std of the generated blobs (default: 1.4 * sqrt(d))")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="dtype of the generated data sets (default: float64)")
    parser.add_argument("--data-seed", type=int, default=0,
                        help="seed of the generated data sets (default: 0)")
    parser.add_argument("--seeds", type=int, default=5,
                        help="random_state 0 .. SEEDS-1 of both estimators (default: 5)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed fits of each estimator per seed, their median kept "
                             "(default: 3)")
    parser.add_argument("--n-init", type=_n_init, default=1,
                        help="n_init of both estimators (default: 1)")
    parser.add_argument("--learned-starts", type=int, default=0,
                        help="TransformerKMeans' learned_starts (default: 0, as the estimator)")
    parser.add_argument("--kmeans-blas-threads", type=int, default=None,
                        help="hold NumPy's BLAS to this many threads while KMeans fits "
                             "(default: as a user calls KMeans; skformer holds it to one "
                             "thread in its own fits)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="TransformerKMeans' device (default: cpu)")
    parser.add_argument("--no-table", action="store_true",
                        help="skip the main comparison (run only --context / --memory)")
    parser.add_argument("--context", action="store_true",
                        help="also run the max_context experiment")
    parser.add_argument("--context-n", type=_size, default=20_000)
    parser.add_argument("--context-d", type=int, default=32)
    parser.add_argument("--contexts", type=_context, nargs="+", default=list(CONTEXTS),
                        help="max_context values ('none': all points) (default: "
                             "64 256 1024 4096 none)")
    parser.add_argument("--memory", action="store_true",
                        help="also measure peak memory of one fit in a fresh process")
    parser.add_argument("--memory-n", type=_size, default=1_000_000)
    parser.add_argument("--out", help="write records, summaries and machine info as JSON")
    parser.add_argument("--plot", help="save a figure of the main comparison to this file")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench kmeans: error: {exc}", file=sys.stderr)
        return 2
    device = machine["device"]
    seeds = list(range(args.seeds))
    payload: dict = {"machine": machine, "options": vars(args), "records": [],
                     "summaries": [], "context": None, "memory": None}
    print(f"# {machine['device_name']} ({device}), {machine['cpu_count']} CPUs, torch "
          f"{machine['torch']} ({machine['threads']} threads), scikit-learn "
          f"{machine['sklearn']}; {args.seeds} seeds x {args.repeats} timed fits (median), "
          f"n_init={args.n_init}, "
          f"learned_starts={args.learned_starts}, KMeans' BLAS threads: "
          f"{args.kmeans_blas_threads or 'as called'}")
    records: list[Record] = []
    try:
        if not args.no_table:
            print(format_summary([]), flush=True)
            for ds in make_datasets(args.datasets, ns=args.n, ds=args.d, k=args.k,
                                    cluster_std=args.cluster_std, seed=args.data_seed,
                                    dtype=np.dtype(args.dtype)):
                new = compare(ds, seeds, n_init=args.n_init, device=device,
                              learned_starts=args.learned_starts,
                              kmeans_blas_threads=args.kmeans_blas_threads,
                              repeats=args.repeats)
                records.extend(new)
                print(format_summary(summarise(new)).splitlines()[-1], flush=True)
                payload["records"] = [asdict(r) for r in records]
                payload["summaries"] = [asdict(s) for s in summarise(records)]
                write_records(args.out, payload)  # rewritten after every data set
        if args.context:
            ctx = context_experiment(args.context_n, args.context_d, args.k, seeds=seeds,
                                     contexts=args.contexts, cluster_std=args.cluster_std,
                                     data_seed=args.data_seed, device=device)
            summaries = summarise_context(ctx)
            print(f"\n# max_context: blobs-iso n={args.context_n:,} d={args.context_d} "
                  f"k={args.k}, medians over {args.seeds} seeds")
            print(format_context(summaries), flush=True)
            payload["context"] = {"records": [asdict(r) for r in ctx],
                                  "summaries": [asdict(s) for s in summaries]}
            write_records(args.out, payload)
    except LookupError as exc:
        print(f"skformer bench kmeans: error: {exc} (pretrain it first with "
              "`skformer pretrain --d D --k K`)", file=sys.stderr)
        return 2
    if args.memory:
        mem = [peak_memory(name, args.memory_n, 32, args.k, device) for name in ("ours", "kmeans")]
        print(f"\n# peak memory of one fit, n={args.memory_n:,} d=32 k={args.k} float32")
        print("| estimator | X MiB | extra peak MiB | / X.nbytes | method |\n|---|---|---|---|---|")
        for m in mem:
            if m is not None:
                print(f"| {m.estimator} | {m.x_nbytes / 2**20:.1f} | {m.peak_bytes / 2**20:.1f} "
                      f"| {m.over_x:.2f} | {m.method} |")
        payload["memory"] = [None if m is None else asdict(m) for m in mem]
        write_records(args.out, payload)
    if args.plot and records:
        title = (f"TransformerKMeans against KMeans: {args.seeds} seeds, n_init={args.n_init}, "
                 f"{machine['device_name']} ({device}, {machine['threads']} threads)")
        plot_summary(records, args.plot, title=title)
    return 0
