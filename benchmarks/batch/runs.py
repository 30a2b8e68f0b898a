"""The methods ``skformer bench batch`` times, each on the first ``m`` problems of a batch.

Every method returns a :class:`Run`: its wall time and, per problem, the centres and
labels it found; :func:`literal_inertia` scores them all alike (float64, from the
literal differences), so no method is judged by its own arithmetic.

- ``loop``: ``KMeans(n_init=1, random_state=i)`` on each problem in turn;
- ``joblib``: the same loop under ``joblib.Parallel(n_jobs=-1)``;
- ``batch``: :func:`skformer.batch_k_means` (``learned_starts`` as given);
- ``torch_kmeans``: ``torch_kmeans.KMeans`` (k-means++, one init) on the batch tensor;
- ``fast_pytorch_kmeans``: ``fast_pytorch_kmeans.MultiKMeans`` (k-means++) on it.

The two peers have no mask for problems of different lengths: on a ragged batch they
do not run. They seed from the global torch generator, so they run inside
``torch.random.fork_rng`` (the caller's generator is left as it was).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .data import Batch

__all__ = ["METHODS", "PEERS", "Run", "literal_inertia", "run_method"]

PEERS = ("torch_kmeans", "fast_pytorch_kmeans")
METHODS = ("loop", "joblib", "batch", *PEERS)


@dataclass
class Run:
    seconds: float
    centres: list
    """Per problem, its (k, d) centres."""
    labels: list
    """Per problem, its (n_i,) labels."""


def literal_inertia(batch: Batch, run: Run) -> np.ndarray:
    """Each problem's sum of squared distances to its centre, float64, literal."""
    out = np.empty(len(run.labels))
    for i, (c, lab) in enumerate(zip(run.centres, run.labels, strict=True)):
        x = batch.problem(i).astype(np.float64)
        diff = x - np.asarray(c, dtype=np.float64)[np.asarray(lab)]
        out[i] = np.einsum("nd,nd->", diff, diff)
    return out


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _fit_one(x: np.ndarray, k: int, seed: int):
    from sklearn.cluster import KMeans

    km = KMeans(k, n_init=1, random_state=seed).fit(x)
    return km.cluster_centers_, km.labels_


def _loop(batch: Batch, m: int, seed: int, device: str) -> Run:
    t = time.perf_counter()
    out = [_fit_one(batch.problem(i), batch.k, seed + i) for i in range(m)]
    return Run(time.perf_counter() - t, [c for c, _ in out], [lab for _, lab in out])


def _joblib(batch: Batch, m: int, seed: int, device: str) -> Run:
    from joblib import Parallel, delayed

    t = time.perf_counter()
    out = Parallel(n_jobs=-1)(delayed(_fit_one)(batch.problem(i), batch.k, seed + i)
                              for i in range(m))
    return Run(time.perf_counter() - t, [c for c, _ in out], [lab for _, lab in out])


def _batch(batch: Batch, m: int, seed: int, device: str, learned_starts: int = 0) -> Run:
    import torch

    from skformer import batch_k_means

    X = batch.X[:m]
    lengths = None if batch.lengths is None else batch.lengths[:m]
    if device.startswith("cuda"):
        X = torch.from_numpy(X).to(device)
        _sync(device)
    extra = {"learned_starts": learned_starts} if learned_starts else {}
    t = time.perf_counter()
    res = batch_k_means(X, batch.k, lengths=lengths, random_state=seed, device=device,
                        **extra)
    _sync(device)
    seconds = time.perf_counter() - t
    centres, labels = (np.asarray(a.cpu() if hasattr(a, "cpu") else a)
                       for a in (res.cluster_centers, res.labels))
    n = [batch.problem(i).shape[0] for i in range(m)]
    return Run(seconds, list(centres), [labels[i, : n[i]] for i in range(m)])


def _torch_kmeans(batch: Batch, m: int, seed: int, device: str) -> Run | None:
    import warnings

    import torch

    if batch.lengths is not None:
        return None
    with warnings.catch_warnings():  # torch_kmeans' import uses torch.jit.script
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        from torch_kmeans import KMeans
    x = torch.from_numpy(batch.X[:m]).to(device)
    model = KMeans(n_clusters=batch.k, init_method="k-means++", num_init=1, max_iter=300,
                   tol=1e-4, verbose=False, seed=seed)
    _sync(device)
    with torch.random.fork_rng(devices=[]):
        t = time.perf_counter()
        res = model(x)
        _sync(device)
        seconds = time.perf_counter() - t
    return Run(seconds, list(res.centers.cpu().numpy()), list(res.labels.cpu().numpy()))


def _fast_pytorch_kmeans(batch: Batch, m: int, seed: int, device: str) -> Run | None:
    import torch
    from fast_pytorch_kmeans import MultiKMeans

    if batch.lengths is not None:
        return None
    x = torch.from_numpy(batch.X[:m]).to(device)
    model = MultiKMeans(n_clusters=batch.k, max_iter=300, tol=1e-4, verbose=0,
                        init_method="kmeans++")
    _sync(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # its only source of randomness (its k-means++ draws)
        t = time.perf_counter()
        labels = model.fit_predict(x)
        _sync(device)
        seconds = time.perf_counter() - t
    return Run(seconds, list(model.centroids.cpu().numpy()), list(labels.cpu().numpy()))


_RUNNERS = {"loop": _loop, "joblib": _joblib, "batch": _batch,
            "torch_kmeans": _torch_kmeans, "fast_pytorch_kmeans": _fast_pytorch_kmeans}


def run_method(name: str, batch: Batch, m: int, seed: int, device: str = "cpu",
               **options) -> Run | None:
    """Run method ``name`` on the first ``m`` problems of ``batch``; None where it cannot
    run (a peer on a ragged batch)."""
    return _RUNNERS[name](batch, m, seed, device, **options)
