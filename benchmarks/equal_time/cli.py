"""Benchmark: the learned mode at equal time, against KMeans' inertia-time curve.

The command line ``skformer bench equal-time``; see :mod:`benchmarks.equal_time`.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict

import numpy as np

from benchmarks._records import write_records
from benchmarks.equal_time.data import DATASETS, DEFAULT, QUICK, datasets
from benchmarks.equal_time.report import (
    format_curves,
    format_gaps,
    format_points,
    plot_summary,
    summarise,
)
from benchmarks.equal_time.runs import FitRecord, Method, load, peer_methods, run_dataset
from benchmarks.peers import limit_all_threads
from benchmarks.versus_kmeans.cli import _size
from benchmarks.versus_kmeans.runs import DEVICES, machine_info

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    d, q = DEFAULT, QUICK
    p = argparse.ArgumentParser(
        prog="skformer bench equal-time", description=__doc__.splitlines()[0]
        + " KMeans' median inertia and time over n_init (k-means++), TransformerKMeans' "
        "points over learned_starts and the peers' (Breathing K-Means, faiss), medians over "
        "seeds, all fits alternating in one process; every method's gap to the best "
        "inertia known.")
    p.add_argument("--quick", action="store_true",
                   help=f"a few minutes: {' '.join(q.datasets)}, n={q.ns[0]} only, "
                        f"{q.seeds} seeds (options given explicitly still apply)")
    p.add_argument("--datasets", nargs="+", choices=DATASETS, metavar="NAME",
                   help=f"data sets, of {', '.join(DATASETS)} "
                        f"(default: {' '.join(d.datasets)})")
    p.add_argument("--n", type=_size, nargs="+",
                   help="sizes of the generated data sets (default: 1e4 1e5 1e6)")
    p.add_argument("--d", type=int, nargs="+",
                   help="dimensions of the generated data sets (default: 8 32)")
    p.add_argument("--k", type=int, help=f"clusters of the generated data sets (default: {d.k})")
    p.add_argument("--cluster-std", type=float, default=None,
                   help="std of the generated blobs (default: 1.4 * sqrt(d); mixture 0.1)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="dtype of the generated data sets (default: float64)")
    p.add_argument("--data-seed", type=int, default=0,
                   help="seed of the generated data sets (default: 0)")
    p.add_argument("--seeds", type=int,
                   help=f"random_state 0 .. SEEDS-1 of every estimator (default: {d.seeds})")
    p.add_argument("--large-seeds", type=int,
                   help=f"seeds on data sets of n >= LARGE_N rows, at most SEEDS (default: "
                        f"{d.large_seeds})")
    p.add_argument("--large-n", type=_size, help=f"see --large-seeds (default: {d.large_n:g})")
    p.add_argument("--n-init", type=int, nargs="+",
                   help="KMeans' n_init values, the curve (default: 1 2 4 8 16)")
    p.add_argument("--learned-starts", type=int, nargs="+",
                   help="TransformerKMeans' learned_starts values, the points; 0 is the fast "
                        "mode (default: 0 1 2 3)")
    p.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the peers where installed (the bench extra): Breathing "
                        "K-Means (bkmeans, n_init=1) and faiss' k-means (nredo 1 and 10); "
                        "--no-peers: KMeans and TransformerKMeans only (default: on)")
    p.add_argument("--long-search", action=argparse.BooleanOptionalAction, default=True,
                   help="with --peers, also run Breathing K-Means with n_init=10, only to "
                        "lower the best inertia known (default: on)")
    p.add_argument("--repeats", type=int, default=1,
                   help="rounds of every seed's fits; a fit's time is its least over the "
                        "rounds (default: 1)")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="TransformerKMeans' device (default: cpu)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads of every estimator (KMeans' OpenMP and BLAS, torch, "
                        "faiss); "
                        "1 keeps a shared, loaded machine's timings stable (default: the "
                        "libraries' own)")
    p.add_argument("--out", metavar="FILE.json",
                   help="write records, summaries, machine and load averages as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="save the figure (needs matplotlib)")
    return p


def _options(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """Parsed options, each left unset taken from the preset (``--quick`` or the default)."""
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else DEFAULT
    for name, value in (("datasets", preset.datasets), ("n", preset.ns), ("d", preset.ds),
                        ("k", preset.k), ("seeds", preset.seeds),
                        ("large_seeds", preset.large_seeds), ("large_n", preset.large_n),
                        ("n_init", preset.n_inits), ("learned_starts", preset.learned_starts)):
        if getattr(args, name) is None:
            setattr(args, name, list(value) if isinstance(value, tuple) else value)
    if args.seeds < 1 or args.large_seeds < 1:
        parser.error("--seeds and --large-seeds must be >= 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if min(args.n_init) < 1 or min(args.learned_starts) < 0:
        parser.error("--n-init values must be >= 1 and --learned-starts values >= 0")
    args.large_seeds = min(args.large_seeds, args.seeds)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print tables; write ``--out`` and ``--plot``. Returns 0, or 2
    when a learned model is missing or the device is not available."""
    args = _options(_parser(), argv)
    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench equal-time: error: {exc}", file=sys.stderr)
        return 2
    peers, missing = peer_methods(args.long_search) if args.peers else ([], {})
    for package, why in missing.items():
        print(f"# peers needing {package} skipped: {why} (pip install \".[bench]\" in the "
              "checkout installs the bench extra)", flush=True)
    with limit_all_threads(args.threads):  # after the peers' imports: faiss' threads too
        return _run(args, machine, peers, missing)


def _run(args: argparse.Namespace, machine: dict, peers: list[Method] | None = None,
         missing: dict[str, str] | None = None) -> int:
    peers = peers or []
    machine = {**machine, "threads_used": _threads_used(), "source": _source()}
    started = time.perf_counter()
    payload: dict = {"machine": machine, "options": vars(args), "loadavg_before": load(),
                     "loadavg_after": None, "wall_seconds": None,
                     "peers": [m.label for m in peers], "skipped": missing or {},
                     "datasets": [], "records": [], "curves": [], "points": [], "gaps": []}
    print(f"# {machine['device_name']} ({machine['device']}), {machine['cpu_count']} CPUs, "
          f"torch {machine['torch']}, scikit-learn {machine['sklearn']}, threads "
          f"{machine['threads_used']}; load {_load_text(payload['loadavg_before'])}", flush=True)
    records: list[FitRecord] = []
    try:
        for ds in datasets(args.datasets, ns=args.n, ds=args.d, k=args.k,
                           cluster_std=args.cluster_std, seed=args.data_seed,
                           dtype=np.dtype(args.dtype)):
            n = ds.X.shape[0]
            seeds = list(range(args.large_seeds if n >= args.large_n else args.seeds))
            before, t = load(), time.perf_counter()
            new = run_dataset(ds, seeds, n_inits=args.n_init,
                              learned_starts=args.learned_starts, peers=peers,
                              device=machine["device"], repeats=args.repeats)
            records += new
            entry = {"dataset": ds.name, "n": n, "d": ds.X.shape[1], "k": ds.n_clusters,
                     "description": ds.description, "seeds": len(seeds),
                     "seconds": time.perf_counter() - t, "loadavg_before": before,
                     "loadavg_after": load()}
            payload["datasets"].append(entry)
            print(f"\n## {ds.name} n={n:,} d={entry['d']} k={entry['k']}: {len(seeds)} seeds, "
                  f"{entry['seconds']:.0f} s, load {_load_text(entry['loadavg_after'])}")
            summary = summarise(new)
            print(format_points(summary) + "\n\n" + format_gaps(summary), flush=True)
            _record(payload, records)
            write_records(args.out, payload)  # rewritten after every data set
    except LookupError as exc:
        print(f"skformer bench equal-time: error: {exc} (pretrain it first with "
              "`skformer pretrain --d D --k K`)", file=sys.stderr)
        return 2
    summary = _record(payload, records)
    payload["loadavg_after"] = load()
    payload["wall_seconds"] = time.perf_counter() - started
    write_records(args.out, payload)
    print("\n# KMeans' curves (medians over seeds)\n" + format_curves(summary))
    print("\n# TransformerKMeans and the peers at equal time (medians over seeds)\n"
          + format_points(summary))
    print("\n# every method's gap to the best inertia known (medians over seeds)\n"
          + format_gaps(summary))
    print(f"\n# wall {payload['wall_seconds']:.0f} s; load before "
          f"{_load_text(payload['loadavg_before'])}, after {_load_text(payload['loadavg_after'])}")
    if args.plot and records:
        plot_summary(summary, args.plot, title=(
            "TransformerKMeans" + (" and the peers" if peers else "") + " against KMeans' "
            "n_init curve at equal time: medians over seeds,\n"
            f"{machine['device_name']}, threads: " + ", ".join(
                f"{lib} {n}" for lib, n in machine["threads_used"].items())))
    return 0


def _record(payload: dict, records: list[FitRecord]):
    summary = summarise(records)
    payload["records"] = [asdict(r) for r in records]
    payload["curves"] = [asdict(c) for c in summary.curves]
    payload["points"] = [asdict(p) for p in summary.points]
    payload["gaps"] = [asdict(g) for g in summary.gaps]
    return summary


def _load_text(avg) -> str:
    return "/".join(f"{v:.2f}" for v in avg)


def _threads_used() -> dict:
    """The threads each library will use now: torch's, the largest OpenMP and BLAS pools
    that threadpoolctl sees (KMeans'), and faiss' where it is imported."""
    import torch
    from threadpoolctl import threadpool_info

    out = {"torch": torch.get_num_threads()}
    for pool in threadpool_info():
        api = pool["user_api"]
        out[api] = max(out.get(api, 0), pool["num_threads"])
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        out["faiss"] = faiss.omp_get_max_threads()
    return out


def _source() -> dict | None:
    """The checkout's commit and its files changed but not committed (``git status``), or
    None outside a git checkout: what code the run measured."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    try:
        def git(*cmd: str) -> str:
            return subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True,
                                  check=True, timeout=30).stdout

        return {"commit": git("rev-parse", "HEAD").strip(),
                "uncommitted": git("status", "--porcelain", "--untracked-files=no")
                .splitlines()}
    except (OSError, subprocess.SubprocessError):
        return None
