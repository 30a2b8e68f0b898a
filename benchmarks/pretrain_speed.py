"""Benchmark: how fast the on-demand preset beats one Lloyd step.

For each shape ``(d, k)`` and seed, trains ``TrainingConfig.fast(d, k)`` (warm start
from the exact construction, short Adam run) and reports the wall-clock seconds and the
relative validation loss (paper eq. 20: the model's k-means cost after one step over
the cost after one Lloyd step; below 1 beats Lloyd) before and after training, with
medians over seeds.

Run it with ``skformer bench pretrain --d 4 32 --k 6 10 16 --seeds 0 1 2``.
"""

from __future__ import annotations

import argparse
import json
import statistics

__all__ = ["run"]


def run(d: int, k: int, seed: int, **overrides) -> dict:
    """Train one fast-preset model and return its record."""
    from skformer.training import TrainingConfig, train

    cfg = TrainingConfig.fast(d, k, seed=seed, **overrides)
    result = train(cfg)
    return {
        "d": d,
        "k": k,
        "seed": seed,
        "embedding": cfg.embedding,
        "loss": cfg.loss,
        "steps": cfg.steps,
        "seconds": result.seconds,
        "val_relative_start": result.history[0]["val_relative"],
        "val_relative_end": result.last_val_relative,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench pretrain", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--d", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--k", type=int, nargs="+", default=[6, 10, 16])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--embedding", default="binary", choices=("binary", "onehot"))
    parser.add_argument("--loss", default="l2", choices=("l2", "ne"))
    parser.add_argument("--out", help="write the records as JSON to this file")
    args = parser.parse_args(argv)

    print("| d | k | seconds (median) | relative loss before | after (median, min-max) |")
    print("|---|---|---|---|---|")
    records = []
    for d in args.d:
        for k in args.k:
            recs = [run(d, k, s, embedding=args.embedding, loss=args.loss) for s in args.seeds]
            records += recs
            end = [r["val_relative_end"] for r in recs]
            print(
                f"| {d} | {k} | {statistics.median(r['seconds'] for r in recs):.1f} | "
                f"{statistics.median(r['val_relative_start'] for r in recs):.3f} | "
                f"{statistics.median(end):.3f} ({min(end):.3f}-{max(end):.3f}) |",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
