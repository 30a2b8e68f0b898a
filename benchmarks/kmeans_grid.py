"""Per-iteration time of the exact step against KMeans' on a grid of shapes.

The grid of issue 33 (item 8): float32, one start (the first ``k`` rows), ``tol = 0``,
20 iterations, ``ExactLloydTransformer`` and ``KMeans(algorithm="lloyd")`` fitted
alternately in one process; the marginal time per iteration (long fit less short fit)
of each, and the medians of the paired per-round ratios, per iteration and of the whole
20-iteration fit (:mod:`benchmarks._timing`). Per iteration is iterations 11 to 20,
where the compiled step keeps row bounds; the whole fit includes the first steps, which
compute every product, and the set-up.

Run: ``python -m benchmarks.kmeans_grid [--reps 5] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import platform

import numpy as np
from sklearn.cluster import KMeans

from skformer import ExactLloydTransformer

from ._timing import marginal_times, paired_ratio

# (n, d, k) of the grid.
SHAPES = [(200_000, 16, 32), (100_000, 64, 256), (500_000, 8, 20), (50_000, 128, 64),
          (20_000, 2, 1000)]


def _data(n: int, d: int, k: int, kind: str = "uniform") -> np.ndarray:
    """Uniform points, or overlapping blobs (``k`` centres, each point one of them plus
    noise of the same scale): Lloyd's algorithm keeps moving for more than 20 steps on
    both, so both estimators run every iteration."""
    rng = np.random.default_rng(0)
    if kind == "uniform":
        return rng.uniform(size=(n, d)).astype(np.float32)
    centres = rng.normal(size=(k, d))
    return (centres[rng.integers(0, k, n)] + rng.normal(size=(n, d))).astype(np.float32)


def run(shapes, reps: int, max_iter: int = 20, data: str = "uniform") -> list[dict]:
    """One record per shape."""
    records = []
    for n, d, k in shapes:
        X = _data(n, d, k, data)
        init = X[:k].copy()

        def estimators(iterations: int, init=init, k=k) -> dict:
            common = dict(n_clusters=k, init=init, n_init=1, tol=0.0, max_iter=iterations)
            return {"ours": ExactLloydTransformer(**common),
                    "kmeans": KMeans(algorithm="lloyd", **common)}

        times = marginal_times(estimators, X, max_iter=max_iter, reps=reps)
        ratio = paired_ratio(times["rounds"], "ours", "kmeans")
        whole = paired_ratio(times["rounds"], "ours", "kmeans", whole_fit=True)
        records.append({"data": data, "n": n, "d": d, "k": k,
                        "ours_ms_per_iter": times["ours_ms_per_iter"],
                        "kmeans_ms_per_iter": times["kmeans_ms_per_iter"],
                        "ratio_per_iter": ratio, "ratio_whole_fit": whole})
        print(f"{data} n={n:>7} d={d:>3} k={k:>4}: ours {times['ours_ms_per_iter']:.2f} ms/iter, "
              f"KMeans {times['kmeans_ms_per_iter']:.2f}, paired ratio {ratio:.2f} per "
              f"iteration, {whole:.2f} whole fit",
              flush=True)
    return records


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--data", nargs="+", default=["uniform", "blobs"],
                        choices=["uniform", "blobs"])
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    records = [r for kind in args.data for r in run(SHAPES, args.reps, data=kind)]
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": platform.processor() or platform.machine(),
                       "records": records}, f, indent=1)


if __name__ == "__main__":
    main()
