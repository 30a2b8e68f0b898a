"""Benchmark: product-quantisation codebooks, batch_k_means against a loop of KMeans and faiss.

A product quantiser cuts each ``D``-dimensional vector into ``M`` sub-vectors of
``D / M`` features and learns one codebook of ``k`` centroids per sub-space: ``M``
independent k-means problems on the same rows, a batch of ``M`` problems of ``n`` rows.
On generated data (:func:`make_data`: a Gaussian mixture of ``n / 100`` components in
``D`` dimensions, float32, as descriptors cluster), one process times, in turns (the
order rotates each repetition), with medians over repetitions:

- ``batch``: :func:`skformer.batch_k_means` of the ``M`` sub-spaces (one call, default
  ``max_iter`` and ``tol``), from the initial centres below;
- ``loop``: ``sklearn.cluster.KMeans(n_init=1, algorithm="lloyd")`` on each sub-space in
  turn, from the same initial centres (so both run Lloyd's algorithm to the same stop,
  and should reach the same codebooks);
- ``batch_own_starts``: the same call with its own k-means++ seeding
  (``random_state``), what a user's call costs (different starts: its error differs
  from the loop's by the luck of the draw);
- ``faiss``: ``faiss.ProductQuantizer(D, M, log2 k).train`` with faiss' defaults (it
  samples 256 rows per centroid and runs 25 iterations from random rows), timed in a
  child process of its own (see :func:`measure`), where faiss is installed (``pip install
  faiss-cpu``, the ``bench`` extra); skipped with a note otherwise.

The initial centres are k-means++ centres of each sub-space (scikit-learn's
:func:`~sklearn.cluster.kmeans_plusplus`, seeded), drawn once per repetition and timed
apart (``seeding``), since faiss' start is random rows and costs nothing. Each method's
error is the mean squared quantisation error of all ``n`` rows under its codebooks (each
sub-vector replaced by its nearest centroid), computed the same way for every method;
``error / loop`` compares it with the loop's. Time ratios are medians over repetitions
of the ratio within a repetition; ``batch_own_starts`` is also compared with the loop
plus its seeding (a user's call against a user's loop, both drawing k-means++ starts).

Run it with ``skformer bench pq [--n 100000 --dim 128 --m 16 --k 256] [--out FILE.json]``
(``--out`` also writes the printed report beside it, as ``FILE.log``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

__all__ = ["make_data", "measure", "quantisation_error", "subspaces"]


def make_data(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """``n`` rows (float32) of a Gaussian mixture of ``max(2, n // 100)`` components in
    ``dim`` dimensions: centres from N(0, I), each row a centre plus N(0, 0.5^2 I).

    Examples
    --------
    >>> make_data(1000, 16).shape
    (1000, 16)
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(2, n // 100), dim))
    which = rng.integers(0, len(centres), size=n)
    return (centres[which] + 0.5 * rng.normal(size=(n, dim))).astype(np.float32)


def subspaces(X: np.ndarray, m: int) -> np.ndarray:
    """The ``m`` sub-spaces of rows ``X`` (n, D) as one C-ordered batch (m, n, D / m).

    Examples
    --------
    >>> subspaces(np.arange(12.0).reshape(2, 6), 3)[1]
    array([[2., 3.],
           [8., 9.]])
    """
    n, dim = X.shape
    if dim % m:
        raise ValueError(f"dim={dim} is not a multiple of m={m} sub-spaces.")
    return np.ascontiguousarray(X.reshape(n, m, dim // m).transpose(1, 0, 2))


def quantisation_error(Xs: np.ndarray, codebooks: np.ndarray, chunk: int = 8192) -> float:
    """Mean over rows of the squared distance of each row to its quantised form: the sum
    over sub-spaces of the squared distance of the sub-vector to its nearest centroid
    (float64 arithmetic), for sub-spaces ``Xs`` (m, n, d) and ``codebooks`` (m, k, d).

    Examples
    --------
    >>> Xs = np.zeros((2, 3, 1)); Xs[:, 0] = 1.0
    >>> quantisation_error(Xs, np.zeros((2, 1, 1)))
    0.6666666666666666
    """
    m, n, _ = Xs.shape
    total = 0.0
    for j in range(m):
        c = codebooks[j].astype(np.float64)
        c2 = np.square(c).sum(-1)
        for s in range(0, n, chunk):
            x = Xs[j, s : s + chunk].astype(np.float64)
            d2 = np.square(x).sum(-1)[:, None] - 2.0 * x @ c.T + c2
            total += float(np.maximum(d2.min(1), 0.0).sum())
    return total / n


def _starts(Xs: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means++ centres (m, k, d) of each sub-space, sub-space ``j`` seeded by ``seed + j``."""
    from sklearn.cluster import kmeans_plusplus

    return np.stack([kmeans_plusplus(x, k, random_state=seed + j)[0] for j, x in enumerate(Xs)])


def _batch(Xs, starts, k, max_iter, tol):
    from skformer import batch_k_means

    r = batch_k_means(Xs, k, init=starts, max_iter=max_iter, tol=tol, device="cpu")
    return r.cluster_centers, r.n_iter


def _batch_own_starts(Xs, k, max_iter, tol, seed):
    from skformer import batch_k_means

    r = batch_k_means(Xs, k, max_iter=max_iter, tol=tol, random_state=seed, device="cpu")
    return r.cluster_centers, r.n_iter


def _loop(Xs, starts, k, max_iter, tol):
    from sklearn.cluster import KMeans

    fits = [KMeans(k, init=c, n_init=1, algorithm="lloyd", max_iter=max_iter, tol=tol).fit(x)
            for x, c in zip(Xs, starts, strict=True)]
    return np.stack([f.cluster_centers_ for f in fits]), np.array([f.n_iter_ for f in fits])


def _faiss_timed(X, m, k, seed):
    """faiss' training, timed in the process that runs it: ``(seconds, codebooks (m, k,
    D / m), iterations, faiss version)``."""
    import faiss

    t = time.perf_counter()
    pq = faiss.ProductQuantizer(X.shape[1], m, int(np.log2(k)))
    pq.cp.seed = seed
    pq.train(np.ascontiguousarray(X))
    seconds = time.perf_counter() - t
    codebooks = faiss.vector_to_array(pq.centroids).reshape(m, k, X.shape[1] // m)
    return seconds, codebooks, pq.cp.niter, faiss.__version__


def _have_faiss() -> bool:
    """Whether faiss is installed (without importing it here: see :func:`measure`)."""
    import importlib.util

    return importlib.util.find_spec("faiss") is not None


def measure(*, n: int, dim: int, m: int, k: int, max_iter: int, tol: float, reps: int,
            seed: int, faiss: bool = True, own_starts: bool = True) -> dict:
    """Median times (s), paired time ratios, errors and iterations of every method (see
    the module docstring); ``faiss=False`` (or no faiss installed), ``own_starts=False``:
    without those methods."""
    if 2 ** int(np.log2(k)) != k:
        raise ValueError(f"k={k} must be a power of two (faiss codes are log2 k bits).")
    X = make_data(n, dim, seed)
    Xs = subspaces(X, m)
    methods = (["batch", "loop"] + (["batch_own_starts"] if own_starts else [])
               + (["faiss"] if faiss else []))
    times: dict[str, list[float]] = {name: [] for name in methods + ["seeding"]}
    errors: dict[str, list[float]] = {name: [] for name in methods}
    iters: dict[str, list[float]] = {name: [] for name in methods}
    same = []
    # faiss runs in a child process: its OpenMP-threaded OpenBLAS shares scikit-learn's
    # OpenMP runtime, and the one-BLAS-thread limit of a skformer fit then also sets
    # that runtime's thread count to one, which skformer's compiled kernels read.
    child, version = None, None
    if faiss:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        child = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        # One warm-up on a slice, untimed (compilation, thread pools), of enough rows
        # that batch_k_means runs it as it runs the whole (the one-problem driver from
        # 8192 rows).
        small = Xs[:2, : min(n, max(20 * k, 8192))]
        small_starts = _starts(small, k, seed)
        _batch(small, small_starts, k, 5, tol)
        _batch_own_starts(small, k, 5, tol, seed)
        _loop(small[:1], small_starts[:1], k, 5, tol)
        if child is not None:
            version = child.submit(_faiss_timed, X[: min(n, 64 * k)], m, k, seed).result()[3]
        for rep in range(reps):
            t = time.perf_counter()
            starts = _starts(Xs, k, seed + 1000 * rep)
            times["seeding"].append(time.perf_counter() - t)
            found = {}
            turn = rep % len(methods)
            for name in methods[turn:] + methods[:turn]:
                t = time.perf_counter()
                if name == "faiss":
                    seconds, codebooks, n_iter, _ = child.submit(
                        _faiss_timed, X, m, k, seed + rep).result()
                    n_iter = np.full(m, n_iter)
                elif name == "batch_own_starts":
                    codebooks, n_iter = _batch_own_starts(Xs, k, max_iter, tol, seed + rep)
                else:
                    run = _batch if name == "batch" else _loop
                    codebooks, n_iter = run(Xs, starts, k, max_iter, tol)
                if name != "faiss":
                    seconds = time.perf_counter() - t
                times[name].append(seconds)
                found[name] = codebooks
                iters[name].append(float(np.mean(n_iter)))
            for name in methods:  # after the timed runs (NumPy's BLAS threads spin)
                errors[name].append(quantisation_error(Xs, found[name]))
            same.append(float(np.abs(found["batch"] - found["loop"]).max()))
    finally:
        if child is not None:
            child.shutdown()
    out = {"n": n, "dim": dim, "m": m, "sub_dim": dim // m, "k": k, "max_iter": max_iter,
           "tol": tol, "reps": reps, "seed": seed, "faiss": faiss, "faiss_version": version,
           "methods": methods,
           "batch_loop_max_centre_difference": max(same)}
    for name in ("seeding", *methods):
        out[f"{name}_s"] = statistics.median(times[name])
        out[f"{name}_all_s"] = times[name]
    if own_starts:  # a user's call against a user's loop, both seeding
        out["batch_own_starts_over_loop_with_seeding_time"] = statistics.median(
            a / (b + c) for a, b, c in zip(times["batch_own_starts"], times["loop"],
                                           times["seeding"], strict=True))
    for name in methods:
        out[f"{name}_error"] = statistics.median(errors[name])
        out[f"{name}_mean_iter"] = statistics.median(iters[name])
        out[f"{name}_over_loop_time"] = statistics.median(
            a / b for a, b in zip(times[name], times["loop"], strict=True))
        out[f"{name}_over_loop_error"] = statistics.median(
            a / b for a, b in zip(errors[name], errors["loop"], strict=True))
    return out


def report(rec: dict) -> list[str]:
    """The printed lines of one record."""
    lines = [f"# PQ codebooks: n = {rec['n']:,} x {rec['dim']}, {rec['m']} sub-spaces of "
             f"{rec['sub_dim']}, k = {rec['k']}, max_iter = {rec['max_iter']}, tol = "
             f"{rec['tol']:g}; medians of {rec['reps']} repetitions",
             "| method | time s | time / loop | mean iterations | quantisation error | "
             "error / loop |",
             "|---|---|---|---|---|---|"]
    for name in rec["methods"]:
        lines.append(f"| {name} | {rec[f'{name}_s']:.2f} | {rec[f'{name}_over_loop_time']:.3f} | "
                     f"{rec[f'{name}_mean_iter']:.1f} | {rec[f'{name}_error']:.6g} | "
                     f"{rec[f'{name}_over_loop_error']:.4f} |")
    lines.append(f"scikit-learn's k-means++ starts of batch and loop (not in their times): "
                 f"{rec['seeding_s']:.2f} s; largest batch-loop centre difference "
                 f"{rec['batch_loop_max_centre_difference']:.2g}")
    if "batch_own_starts_over_loop_with_seeding_time" in rec:
        lines.append(f"batch_own_starts over loop with its k-means++ starts: "
                     f"{rec['batch_own_starts_over_loop_with_seeding_time']:.3f} of the time")
    if rec["faiss"]:
        lines.append(f"faiss {rec['faiss_version']}, timed in a child process")
    else:
        lines.append(f"faiss: not measured ({rec.get('faiss_note', 'skipped')})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skformer bench pq",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="rows")
    parser.add_argument("--dim", type=int, default=128, help="features of a row")
    parser.add_argument("--m", type=int, default=16, help="sub-spaces")
    parser.add_argument("--k", type=int, default=256, help="centroids per sub-space")
    parser.add_argument("--max-iter", type=int, default=300,
                        help="batch and loop (KMeans' default)")
    parser.add_argument("--tol", type=float, default=1e-4, help="batch and loop")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-faiss", action="store_true", help="skip faiss")
    parser.add_argument("--no-own-starts", action="store_true",
                        help="skip batch_k_means with its own k-means++ seeding")
    parser.add_argument("--out", help="write the record as JSON to this file (and the "
                                      "report to the same name with .log)")
    args = parser.parse_args(argv)

    import sklearn
    import torch

    faiss = not args.no_faiss and _have_faiss()
    head = (f"# {platform.processor() or platform.machine()}, torch {torch.__version__} "
            f"({torch.get_num_threads()} threads), scikit-learn {sklearn.__version__}")
    print(head, flush=True)
    rec = measure(n=args.n, dim=args.dim, m=args.m, k=args.k, max_iter=args.max_iter,
                  tol=args.tol, reps=args.reps, seed=args.seed, faiss=faiss,
                  own_starts=not args.no_own_starts)
    if not faiss:
        rec["faiss_note"] = ("--no-faiss" if args.no_faiss else
                             "faiss is not installed: pip install faiss-cpu")
    lines = report(rec)
    print("\n".join(lines))
    if args.out:
        rec["machine"] = platform.processor() or platform.machine()
        rec["threads"] = torch.get_num_threads()
        with open(args.out, "w") as f:
            json.dump(rec, f, indent=1)
        Path(args.out).with_suffix(".log").write_text("\n".join([head, *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
