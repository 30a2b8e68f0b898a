"""The problems of ``skformer bench batch``: batches of small generated clustering tasks.

Dimension legend: ``b`` problems, ``n`` points, ``d`` features, ``k`` clusters.

Each problem is a Gaussian mixture of its own: ``k`` centres drawn from N(0, 3^2 I) in
``d`` dimensions, every point one of them (uniformly) plus N(0, I) noise, so clusters
overlap as in real per-image or per-sub-space data. A ragged batch keeps the first
``lengths[i]`` points of problem ``i``, ``lengths`` uniform in [n/2, n].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SHAPES", "Batch", "make_batch"]

# The shapes of the issue: (b, n, d, k).
SHAPES = [(4096, 128, 3, 8), (1024, 196, 64, 16), (512, 512, 32, 10), (16, 20000, 8, 256)]


@dataclass
class Batch:
    """One benchmark batch."""

    X: np.ndarray
    """Points, shape (b, n, d), float32 (rows past a problem's length are zeros)."""
    lengths: np.ndarray | None
    """Points per problem (b,), or None when every problem has n."""
    k: int

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (*self.X.shape, self.k)

    def problem(self, i: int) -> np.ndarray:
        """Problem ``i``'s points (n_i, d)."""
        return self.X[i] if self.lengths is None else self.X[i, : self.lengths[i]]


def make_batch(b: int, n: int, d: int, k: int, *, ragged: bool = False,
               seed: int = 0) -> Batch:
    """A batch of ``b`` Gaussian-mixture problems (see the module docstring).

    Examples
    --------
    >>> batch = make_batch(4, 50, 2, 3, ragged=True)
    >>> batch.X.shape, batch.X.dtype, bool((batch.lengths >= 25).all())
    ((4, 50, 2), dtype('float32'), True)
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(b, k, d))
    which = rng.integers(0, k, size=(b, n))
    X = (np.take_along_axis(centres, which[..., None], axis=1)
         + rng.normal(size=(b, n, d))).astype(np.float32)
    lengths = None
    if ragged:
        lengths = rng.integers(max(k, n // 2), n + 1, size=b)
        X[np.arange(n)[None, :] >= lengths[:, None]] = 0.0
    return Batch(X, lengths, k)
