"""Benchmark: ExactLloydTransformer (fused path) against KMeans(algorithm="lloyd").

Both estimators start from the same initial centres (``init`` array, ``n_init=1``,
``tol=0``) on uniform data, where Lloyd's algorithm keeps moving, and run exactly
``max_iter`` iterations (checked). The time per iteration is the marginal cost: the
difference between fits of ``max_iter`` and ``max_iter // 2`` iterations, divided by
the difference in iterations, which leaves out the fixed costs (validation, centring,
final labelling) that the whole-fit ratio includes. Both estimators are timed in one
process: a round fits each estimator short then long, the two taking turns going
first, and the ratios are medians over rounds of the ratio within a round (paired, so
that a slow stretch of a shared machine falls on both sides of a ratio).

Peak memory is measured in a fresh subprocess per fit as the growth of the peak
resident set size during the fit, relative to ``X.nbytes``.

Run it with ``skformer bench exact [--out FILE.json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
from dataclasses import asdict, dataclass

import numpy as np

from benchmarks._memory import fit_peak_memory
from benchmarks._timing import marginal_times, paired_ratio

__all__ = ["Record", "make_data", "measure", "peak_memory"]


@dataclass(frozen=True)
class Record:
    """One benchmark configuration's results (times are medians, in milliseconds)."""

    n: int
    d: int
    k: int
    dtype: str
    iterations: int
    """Iterations of the long fits (the short fits run half as many)."""
    kmeans_fit_ms: float
    transformer_fit_ms: float
    fit_time_ratio: float
    """Median over rounds of the long fits' ratio within a round."""
    kmeans_ms_per_iter: float
    transformer_ms_per_iter: float
    """Marginal cost of one iteration: (median long fit - median short fit) / (extra
    iterations)."""
    iter_time_ratio: float
    """Median over rounds of the ratio of the two marginal costs within a round."""
    transformer_extra_memory_over_X: float | None
    kmeans_extra_memory_over_X: float | None
    rounds: list[dict[str, list[float]]]
    """Every timed round: ``{name: [short fit ms, long fit ms]}``."""


def make_data(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Uniform points in [0, 1]^d (float32) and k initial centres drawn from them.

    Data without cluster structure keep Lloyd's algorithm moving, so both estimators
    run the full ``max_iter`` iterations.
    """
    rng = np.random.default_rng(seed)
    X = rng.random((n, d), dtype=np.float32)
    return X, X[rng.choice(n, k, replace=False)].copy()


def _estimators(init: np.ndarray, max_iter: int):
    from sklearn.cluster import KMeans

    from skformer import ExactLloydTransformer

    common = dict(init=init, n_init=1, max_iter=max_iter, tol=0.0)
    return {
        "kmeans": KMeans(len(init), algorithm="lloyd", **common),
        "transformer": ExactLloydTransformer(len(init), path="fused", device="cpu", **common),
    }


def measure(n: int, d: int, k: int, *, max_iter: int = 20, reps: int = 5) -> dict:
    """Median fit times at ``max_iter`` and ``max_iter // 2`` iterations for KMeans and
    the transformer, and the marginal time per iteration from their difference."""
    X, init = make_data(n, d, k)
    return marginal_times(lambda it: _estimators(init, it), X, max_iter=max_iter, reps=reps)


def _memory_case(n: int, d: int, k: int, max_iter: int, name: str):
    """``(estimator, X)`` of one memory measurement (see :func:`peak_memory`)."""
    X, init = make_data(n, d, k)
    return _estimators(init, max_iter)[name], X


def peak_memory(n: int, d: int, k: int, name: str, max_iter: int = 10) -> float | None:
    """Peak resident memory a fit adds, as a multiple of ``X.nbytes`` (Linux only).

    Measured in a fresh interpreter: the peak resident set size (``VmHWM``, reset just
    before the fit) minus the resident size before the fit.
    """
    res = fit_peak_memory(f"{__name__}:_memory_case", n, d, k, max_iter, name)
    return None if res is None else res["peak_bytes"] / res["x_nbytes"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench exact", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    parser.add_argument("--out", help="write the records as JSON to this file")
    args = parser.parse_args(argv)

    import torch

    print(f"# {platform.processor() or platform.machine()}, torch threads "
          f"{torch.get_num_threads()}, median of {args.reps} reps after 1 warm-up")
    print("| n | k | KMeans ms/iter | transformer ms/iter | ratio per iteration | "
          "ratio whole fit | extra peak memory / X (transformer / KMeans) |")
    print("|---|---|---|---|---|---|---|")
    records = []
    for n in args.n:
        for k in args.k:
            t = measure(n, args.d, k, max_iter=args.max_iter, reps=args.reps)
            rounds = t.pop("rounds")
            mem_t = mem_k = None
            if not args.no_memory:
                mem_t = peak_memory(n, args.d, k, "transformer", args.max_iter)
                mem_k = peak_memory(n, args.d, k, "kmeans", args.max_iter)
            rec = Record(
                n=n,
                d=args.d,
                k=k,
                dtype="float32",
                iterations=args.max_iter,
                fit_time_ratio=paired_ratio(rounds, "transformer", "kmeans", whole_fit=True),
                iter_time_ratio=paired_ratio(rounds, "transformer", "kmeans"),
                transformer_extra_memory_over_X=mem_t,
                kmeans_extra_memory_over_X=mem_k,
                rounds=rounds,
                **t,
            )
            records.append(rec)
            mem = "n/a" if mem_t is None else f"{mem_t:.2f}x / {mem_k:.2f}x"
            print(
                f"| {n:,} | {k} | {rec.kmeans_ms_per_iter:.2f} | "
                f"{rec.transformer_ms_per_iter:.2f} | {rec.iter_time_ratio:.2f} | "
                f"{rec.fit_time_ratio:.2f} | {mem} |",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as f:
            json.dump([asdict(r) for r in records], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
