"""Benchmark: sparse (CSR) input, skformer against KMeans on the same matrix.

Two parts, both timed in one process with the estimators alternating, medians over
repetitions compared as ratios:

* ``exact``: ExactLloydTransformer against ``KMeans(algorithm="lloyd")`` on a random
  CSR matrix (default 1e5 x 1e4, 1 % non-zeros, float64), from the same initial
  centres (``init`` array, ``n_init=1``, ``tol=0``), exactly ``max_iter`` iterations.
  The time per iteration is the marginal cost (fits of ``max_iter`` and
  ``max_iter // 2`` iterations), its ratio the median over rounds of the two
  estimators' marginal costs in the same round; the whole fit is the longer one. Peak memory is
  measured in a fresh interpreter per fit, relative to the matrix's own bytes (stored
  values, column indices and row pointers).
* ``text``: TransformerKMeans (``learned_starts`` 0 and 1) against ``KMeans`` with
  default settings on the TF-IDF matrix of generated documents
  (:func:`skformer.datasets.make_documents`): inertia ratio, time ratio, and whether
  the learned steps ran (``learned_skipped_``), over seeds.

Run it with ``skformer bench sparse [--out FILE.json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from benchmarks._memory import fit_peak_memory
from benchmarks._timing import marginal_times, paired_ratio

__all__ = ["make_matrix", "measure_exact", "measure_text"]


def make_matrix(n: int, d: int, density: float, seed: int = 0, dtype: str = "float64"):
    """A random CSR matrix of about ``density * d`` stored values per row (columns drawn
    with replacement and merged, so slightly fewer), uniform values in [0, 1).

    (``scipy.sparse.random`` draws the positions without replacement among ``n * d``
    and needs gigabytes at 1e5 x 1e4.)
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    per_row = max(1, round(density * d))
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(d, size=n * per_row)
    values = rng.random(n * per_row).astype(dtype)
    X = sp.csr_matrix((values, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    return X


def _init(X, k: int, seed: int = 1) -> np.ndarray:
    rows = np.random.default_rng(seed).choice(X.shape[0], k, replace=False)
    return np.ascontiguousarray(X[rows].toarray())


def _exact_estimators(init: np.ndarray, max_iter: int) -> dict:
    from sklearn.cluster import KMeans

    from skformer import ExactLloydTransformer

    common = dict(init=init, n_init=1, max_iter=max_iter, tol=0.0)
    return {"kmeans": KMeans(len(init), algorithm="lloyd", **common),
            "transformer": ExactLloydTransformer(len(init), device="cpu", **common)}


def measure_exact(X, k: int, *, max_iter: int, reps: int) -> dict:
    """Median whole-fit and marginal per-iteration times (ms) of both estimators, and
    whether their labels agree in every round."""
    init = _init(X, k)
    same = []

    def compare(fitted):
        same.append(bool(np.array_equal(fitted["kmeans"].labels_,
                                        fitted["transformer"].labels_)))

    out = marginal_times(lambda it: _exact_estimators(init, it), X, max_iter=max_iter,
                         reps=reps, on_round=compare)
    return {"same_labels": all(same), **out}


def _memory_case(n, d, density, k, max_iter, name):
    """``(estimator, X)`` of one memory measurement."""
    X = make_matrix(n, d, density)
    return _exact_estimators(_init(X, k), max_iter)[name], X


def measure_text(n_documents: int, n_topics: int, seeds: list[int]) -> dict:
    """TransformerKMeans (``learned_starts`` 0 and 1) against KMeans on TF-IDF of
    generated documents: per seed, inertia ratio and time ratio."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    from skformer import TransformerKMeans
    from skformer.datasets import make_documents

    docs, _ = make_documents(n_documents, n_topics, vocabulary_size=20_000,
                             words_per_topic=300, random_state=0)
    X = TfidfVectorizer().fit_transform(docs)
    rows = {0: [], 1: []}
    skipped = {}
    for seed in [seeds[0], *seeds]:  # the first fit warms up
        t = time.perf_counter()
        km = KMeans(n_topics, random_state=seed).fit(X)
        km_s = time.perf_counter() - t
        for starts in rows:
            t = time.perf_counter()
            est = TransformerKMeans(n_topics, learned_starts=starts, random_state=seed,
                                    device="cpu").fit(X)
            elapsed = time.perf_counter() - t
            rows[starts].append((est.inertia_ / km.inertia_, elapsed / km_s))
            skipped[starts] = est.learned_skipped_
    out = {"shape": list(X.shape), "nnz": int(X.nnz)}
    for starts, values in rows.items():
        values = values[1:]
        out[f"learned_starts={starts}"] = {
            "inertia_ratio_max": max(v[0] for v in values),
            "inertia_ratio_median": statistics.median(v[0] for v in values),
            "time_ratio_median": statistics.median(v[1] for v in values),
            "learned_skipped": skipped[starts],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skformer bench sparse",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=10_000)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--max-iter", type=int, default=6)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    parser.add_argument("--documents", type=int, default=20_000,
                        help="documents of the text part (0: skip it)")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", help="write the records as JSON to this file")
    args = parser.parse_args(argv)

    import torch

    X = make_matrix(args.n, args.d, args.density)
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    print(f"# {platform.processor() or platform.machine()}, torch threads "
          f"{torch.get_num_threads()}, median of {args.reps} reps after 1 warm-up")
    print(f"# exact: CSR {args.n:,} x {args.d:,}, {X.nnz:,} stored values "
          f"({x_bytes / 2**20:.0f} MiB), {args.max_iter} iterations")
    print("| k | KMeans ms/iter | transformer ms/iter | ratio per iteration | ratio whole fit "
          "| same labels | extra peak memory / matrix (transformer / KMeans) |")
    print("|---|---|---|---|---|---|---|")
    record: dict = {"exact": [], "text": None}
    for k in args.k:
        r = measure_exact(X, k, max_iter=args.max_iter, reps=args.reps)
        mem = {}
        if not args.no_memory:
            for name in ("transformer", "kmeans"):
                res = fit_peak_memory(f"{__name__}:_memory_case", args.n, args.d,
                                      args.density, k, args.max_iter, name)
                mem[name] = None if res is None else res["peak_bytes"] / res["x_nbytes"]
        r.update(k=k, n=args.n, d=args.d, density=args.density, dtype="float64",
                 iterations=args.max_iter,
                 iter_time_ratio=paired_ratio(r["rounds"], "transformer", "kmeans"),
                 fit_time_ratio=paired_ratio(r["rounds"], "transformer", "kmeans",
                                             whole_fit=True),
                 transformer_extra_memory_over_matrix=mem.get("transformer"),
                 kmeans_extra_memory_over_matrix=mem.get("kmeans"))
        record["exact"].append(r)
        memory = ("n/a" if mem.get("transformer") is None
                  else f"{mem['transformer']:.2f}x / {mem['kmeans']:.2f}x")
        print(f"| {k} | {r['kmeans_ms_per_iter']:.0f} | {r['transformer_ms_per_iter']:.0f} | "
              f"{r['iter_time_ratio']:.2f} | {r['fit_time_ratio']:.2f} | {r['same_labels']} | "
              f"{memory} |", flush=True)
    if args.documents:
        text = measure_text(args.documents, args.topics, args.seeds)
        record["text"] = text
        print(f"\n# text: TF-IDF of {args.documents:,} generated documents, {args.topics} "
              f"topics: CSR {text['shape'][0]:,} x {text['shape'][1]:,}, {text['nnz']:,} "
              f"stored values; KMeans(n_clusters={args.topics}) defaults, seeds {args.seeds}")
        print("| TransformerKMeans | inertia ratio (median / max) | time ratio (median) | "
              "learned steps |")
        print("|---|---|---|---|")
        for key in ("learned_starts=0", "learned_starts=1"):
            v = text[key]
            print(f"| {key} | {v['inertia_ratio_median']:.6f} / {v['inertia_ratio_max']:.6f} "
                  f"| {v['time_ratio_median']:.2f} | {v['learned_skipped'] or 'ran'} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
