"""Shapes of the shapes benchmark: users' kinds of data, each with its ``k``.

Every shape is a data set ``X`` of shape ``(n, d)`` and a number of clusters ``k``; its
data are made on demand (:attr:`Shape.make`), seeded, the same in every run. See
:mod:`benchmarks.shapes` for the protocol and :data:`FULL` / :data:`QUICK` for the grids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

__all__ = ["FULL", "PRESETS", "QUICK", "SHAPES", "Shape", "china_pixels", "embeddings",
           "pq_subspace", "select"]


@dataclass(frozen=True)
class Shape:
    """One shape of the grid: a named data set and its number of clusters."""

    name: str
    group: str
    """The kind of users' data: "pixels", "digits", "embeddings", "pq", "mixture", "1-d"."""
    n: int
    d: int
    k: int
    description: str
    make: Callable[[], np.ndarray] = field(repr=False, compare=False)
    """Makes ``X``, float64 of shape ``(n, d)``; seeded, so every call gives the same."""


# --------------------------------------------------------------------------- generators


@lru_cache(maxsize=2)
def _china() -> np.ndarray:
    try:
        from sklearn.datasets import load_sample_image

        image = load_sample_image("china.jpg")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the pixel shapes of skformer bench shapes read "
                          "sklearn.datasets.load_sample_image, which requires pillow. "
                          "Install with: pip install pillow") from exc
    return image.reshape(-1, 3).astype(np.float64) / 255.0


def china_pixels(n: int = 20_000, seed: int = 0) -> np.ndarray:
    """``n`` pixels of scikit-learn's bundled ``china.jpg`` (427 x 640), RGB in [0, 1]:
    rows drawn without replacement by ``np.random.default_rng(seed)``.

    Examples
    --------
    >>> X = china_pixels(100)
    >>> X.shape, bool(0.0 <= X.min() and X.max() <= 1.0)
    ((100, 3), True)
    """
    pixels = _china()
    rows = np.random.default_rng(seed).choice(len(pixels), size=n, replace=False)
    return pixels[rows]


def embeddings(n: int, d: int, k: int, *, subspace: int = 32, noise: float = 1.0,
               seed: int = 0) -> np.ndarray:
    """Synthetic sentence-embedding-like data: ``k`` topics in a low-rank subspace, rows on
    the unit sphere.

    One random ``subspace``-dimensional subspace of R^d is drawn (an orthonormal basis
    ``B``, from the QR decomposition of a d x subspace Gaussian matrix), shared by all
    topics. Topic ``t`` is a unit direction ``u_t = B g_t / ||g_t||`` with
    ``g_t ~ N(0, I)``: uniform on the unit sphere of the subspace. Each row picks a topic
    uniformly at random and is ``u_t + noise * z / sqrt(d)`` with ``z ~ N(0, I_d)``
    (isotropic noise of norm about ``noise``), then scaled to unit L2 norm, as sentence
    embeddings are. With ``noise = 1`` two rows of one topic have cosine about 0.5, rows
    of two topics about half the cosine of their directions (about +-0.09 for a
    32-dimensional subspace): overlapping clusters in a space of low effective rank,
    wider than the model's 64 principal directions whenever ``d > 64``.

    Examples
    --------
    >>> X = embeddings(50, 96, 4)
    >>> X.shape, bool(np.allclose(np.linalg.norm(X, axis=1), 1.0))
    ((50, 96), True)
    """
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, min(subspace, d))))
    g = rng.standard_normal((k, basis.shape[1]))
    topics = (g / np.linalg.norm(g, axis=1, keepdims=True)) @ basis.T  # (k, d), unit rows
    X = topics[rng.integers(0, k, size=n)] + noise * rng.standard_normal((n, d)) / np.sqrt(d)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@lru_cache(maxsize=1)
def _pq_full() -> np.ndarray:
    from sklearn.datasets import make_blobs

    return make_blobs(20_000, 128, centers=50, cluster_std=4.0, random_state=0)[0]


def pq_subspace(d: int) -> np.ndarray:
    """Columns ``0 .. d-1`` of a 20,000 x 128 Gaussian mixture
    (``make_blobs(20000, 128, centers=50, cluster_std=4, random_state=0)``): one
    sub-space of product quantisation, whose codebook has 256 centres."""
    return _pq_full()[:, :d].copy()


def _blobs(n: int, d: int, centers: int, cluster_std: float = 1.0) -> np.ndarray:
    from sklearn.datasets import make_blobs

    return make_blobs(n, d, centers=centers, cluster_std=cluster_std, random_state=0)[0]


def _digits() -> np.ndarray:
    from sklearn.datasets import load_digits

    return load_digits().data.astype(np.float64)


def _mixture(n: int, d: int, k: int) -> np.ndarray:
    import torch

    from skformer.tasks import TaskConfig, sample_tasks

    config = TaskConfig(n_points=n, n_features=d, n_clusters=k, family="laplace")
    tasks = sample_tasks(config, 1, generator=torch.Generator().manual_seed(0))
    return tasks.x[0].numpy().astype(float)


# --------------------------------------------------------------------------- the grids


def _china_shape(k: int, n: int = 20_000, name: str | None = None) -> Shape:
    return Shape(name or f"china-k{k}", "pixels", n, 3, k,
                 f"colour quantisation: {n:,} pixels of china.jpg, RGB / 255",
                 lambda: china_pixels(n))


def _digits_shape(k: int) -> Shape:
    return Shape(f"digits-k{k}", "digits", 1797, 64, k, "load_digits().data (raw, 0-16)",
                 _digits)


def _embed_shape(d: int, k: int, n: int, name: str | None = None) -> Shape:
    return Shape(name or f"embed{d}-k{k}", "embeddings", n, d, k,
                 f"sentence-embedding-like: {k} topics in a random 32-dim subspace of "
                 f"R^{d}, isotropic noise, unit rows (benchmarks.shapes.data.embeddings)",
                 lambda: embeddings(n, d, k))


def _pq_shape(d: int) -> Shape:
    return Shape(f"pq{d}-k256", "pq", 20_000, d, 256,
                 f"PQ sub-space: columns 0-{d - 1} of make_blobs(20000, 128, centers=50, "
                 "cluster_std=4)", lambda: pq_subspace(d))


EMBED1024_N = 12_000
"""Rows of ``embed1024-k1000``: 12,000, not 20,000. Measured on 2 shared CPU cores,
sklearn's k-means++ seeding alone takes 78 s at n = 20,000 (d = 1024, k = 1000) and a
Lloyd iteration 2.5 s, so the shape's fits (KMeans with ``n_init=10``, three seeds of
every run) would take over an hour; the brief's bound was 10 minutes alone."""

SHAPES: dict[str, Shape] = {s.name: s for s in [
    _china_shape(16), _china_shape(64), _china_shape(256),
    _digits_shape(10), _digits_shape(50), _digits_shape(100),
    _pq_shape(4), _pq_shape(8), _pq_shape(16),
    Shape("d1-k5", "1-d", 5000, 1, 5, "make_blobs(5000, 1, centers=5, cluster_std=2)",
          lambda: _blobs(5000, 1, 5, 2.0)),
    Shape("mixture16-k64", "mixture", 8192, 16, 64,
          "the paper's task generator: sample_tasks(TaskConfig(8192, 16, 64, 'laplace')), "
          "seed 0", lambda: _mixture(8192, 16, 64)),
    Shape("blobs128-k30", "embeddings", 20_000, 128, 30,
          "make_blobs(20000, 128, centers=30) (issue 34's case)",
          lambda: _blobs(20_000, 128, 30)),
    _embed_shape(384, 100, 20_000), _embed_shape(768, 300, 15_000),
    _embed_shape(1024, 1000, EMBED1024_N),
    # quick: tiny, seconds each (tests); one per path: d = 3, projected d > 64, d = 1
    _china_shape(8, 500, "quick-china-k8"),
    _embed_shape(80, 6, 400, "quick-embed80-k6"),
    Shape("quick-d1-k3", "1-d", 300, 1, 3, "make_blobs(300, 1, centers=3, cluster_std=2)",
          lambda: _blobs(300, 1, 3, 2.0)),
]}
"""Every shape by name, in the order of the full grid (the most expensive last), then the
quick ones."""

FULL: tuple[str, ...] = tuple(n for n in SHAPES if not n.startswith("quick-"))
"""The default grid: pixels (d = 3, k = 16-256), digits (d = 64, k = 10-100), PQ
sub-spaces (d = 4-16, k = 256), 1-D data, the paper's mixture at a new shape, and
embeddings (d = 128-1024, k = 30-1000)."""

QUICK: tuple[str, ...] = tuple(n for n in SHAPES if n.startswith("quick-"))
"""Three tiny shapes (n <= 500) that run in seconds: pixels, projected (d = 80), 1-D."""

PRESETS = {"full": FULL, "quick": QUICK}


def select(names: Sequence[str]) -> list[Shape]:
    """The shapes of ``names``, in that order.

    Examples
    --------
    >>> [(s.n, s.d, s.k) for s in select(["digits-k50", "pq8-k256"])]
    [(1797, 64, 50), (20000, 8, 256)]
    """
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        raise ValueError(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
    return [SHAPES[n] for n in names]
