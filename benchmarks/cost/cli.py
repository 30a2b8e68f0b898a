"""Benchmark: cost of the learned one-layer model, one-hot (OH) against binary (BN) embedding.

The command line ``skformer bench cost``; see :mod:`benchmarks.cost`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from benchmarks.cost.report import format_record, format_summary, plot_summary, summarise
from benchmarks.cost.runs import (
    DEVICES,
    EMBEDDINGS,
    GRIDS,
    PAPER_REPS,
    PAPER_WARMUP,
    CostRecord,
    grid_shapes,
    machine_info,
    measure_interleaved,
)

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--grid", choices=sorted(GRIDS),
                        help="preset (d, k) grid: figure1 (6 x 6) or table1 (d = 32)")
    parser.add_argument("--d", type=int, nargs="+", help="values of d (with --k)")
    parser.add_argument("--k", type=int, nargs="+", help="values of k (with --d)")
    parser.add_argument("--embeddings", nargs="+", choices=EMBEDDINGS, default=list(EMBEDDINGS))
    parser.add_argument("--batch", type=int, default=32, help="tasks per batch (default: 32)")
    parser.add_argument("--n", type=int, default=1024, help="points per task (default: 1024)")
    parser.add_argument("--warmup", type=int, default=PAPER_WARMUP,
                        help=f"warm-up rounds (default: {PAPER_WARMUP})")
    parser.add_argument("--reps", type=int, default=PAPER_REPS,
                        help=f"timed repetitions (default: {PAPER_REPS})")
    parser.add_argument("--device", choices=DEVICES, default="auto",
                        help="device (default: auto = cuda if available)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the records as JSON to this file")
    parser.add_argument("--plot", help="save a figure of BN against OH to this file")
    args = parser.parse_args(argv)
    if args.grid is not None and (args.d or args.k):
        parser.error("give either --grid or --d and --k, not both")
    if args.grid is None and not (args.d and args.k):
        parser.error("give --grid {figure1,table1} or both --d and --k")
    shapes = grid_shapes(args.grid) if args.grid else [(d, k) for d in args.d for k in args.k]

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench cost: error: {exc}", file=sys.stderr)
        return 2
    print(f"# {machine['device_name']} ({machine['device']}), torch {machine['torch']}, "
          f"{machine['threads']} threads; batch {args.batch}, n {args.n}; medians of "
          f"{args.reps} timed reps after {args.warmup} warm-up rounds; peak memory: "
          f"{'cuda_max_allocated' if machine['device'] == 'cuda' else 'torch_profiler'}")
    if args.reps < PAPER_REPS or args.warmup < PAPER_WARMUP:
        print(f"# note: {args.reps} timed repetitions and {args.warmup} warm-up rounds, "
              f"fewer than the paper's {PAPER_REPS} and {PAPER_WARMUP}")
    paired = set(args.embeddings) == set(EMBEDDINGS)
    if paired:
        print("\n".join(format_summary([]).splitlines()[:2]), flush=True)
    else:
        print("| d | k | embedding | e | forward train ms | backward ms | forward eval ms | "
              "peak memory MiB |\n|---|---|---|---|---|---|---|---|", flush=True)
    records: list[CostRecord] = []
    for d, k in shapes:
        try:
            new = measure_interleaved(d, k, args.embeddings, batch=args.batch, n=args.n,
                                      warmup=args.warmup, reps=args.reps,
                                      device=machine["device"], seed=args.seed)
        except ValueError as exc:
            print(f"skformer bench cost: error: {exc}", file=sys.stderr)
            return 2
        records.extend(new)
        if paired:
            print(format_summary(summarise(new)).splitlines()[-1], flush=True)
        else:
            for r in new:
                print(format_record(r), flush=True)
        if args.out:  # rewritten after every shape, so a long sweep keeps what it measured
            with open(args.out, "w") as f:
                json.dump([{**asdict(r), "machine": machine} for r in records], f, indent=1)
    if args.plot:
        summaries = summarise(records)
        if not summaries:
            print("skformer bench cost: error: --plot needs both embeddings", file=sys.stderr)
            return 2
        title = (f"BN against OH: batch {args.batch}, n {args.n}, median of {args.reps} reps, "
                 f"{machine['device_name']} ({machine['device']}, {machine['threads']} threads)")
        plot_summary(summaries, args.plot, title=title)
    return 0
