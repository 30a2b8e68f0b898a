"""Lloyd's step on the CPU in NumPy, where it beats the fused torch kernel.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

The fused kernel (:func:`~skformer.nn.exact_step`) computes a block's step in about two
dozen torch operations, two of them matrix products. This module computes the same step
with NumPy (and one torch scatter-add) for two kinds of dense blocks on the CPU:

- **small blocks**, at most :data:`SMALL` distances (``m * k``; each of iris, wine,
  breast_cancer and digits is one such block). There a torch operation's fixed cost (a
  few microseconds, and as much again of Python around it) exceeds its arithmetic: a step
  of iris took about 220 us in the fused kernel and 50 here. The nearest centre of each
  row is the argmin of one product of the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]``; each
  cluster's sum and mass, a scatter-add of the (weighted) tokens in row order (torch's
  ``index_add_``: on digits 65 us, where NumPy's product with one-hot labels took 160).
- **float64 blocks**, any size: torch's float64 products (MKL) took twice as long as
  NumPy's (OpenBLAS) on an AVX2 AMD EPYC (float32: the same). The fused kernel's
  arithmetic, in chunks of about :data:`CHUNK` distances on KMeans' thread count: the
  distances centres-major, their minimum over the centres, one-hot codes from the
  equality with it (exact ties: the first centre), weighted, and one product with the
  tokens. Measured per step against KMeans' iteration, alternating in one run (2 cores):
  n = 1e5, d = 32, k = 10: 2.1x against the fused kernel's 3.2x; d = 8: 2.0x against
  2.8x; k = 40: 2.1x against 2.9x; n = 1e4: 1.7x against 2.2x.

Sums are in the data's dtype within a block (small) or a chunk (float64), returned in
float64 (the fit adds blocks in float64, as it does the fused kernel's). Which kernel a
block takes depends on its shape, dtype and device only, and the blocks of every
container follow one grid of rows (:func:`~skformer._fit.sources.grid_rows`), so every
container still gives the same result. Other blocks (float32 beyond :data:`SMALL`, and
every block on a GPU) take the fused kernel, whose float32 products were as fast and
whose threads and cache blocking win there.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

from ..nn.threads import ordered_map
from .sources import Block

__all__ = ["CHUNK", "SMALL", "is_small", "lloyd_sums", "numpy_step", "block_lloyd_sums",
           "small_score"]

# Largest block (rows x centres) of the small step. Small step / fused step, one run on
# 2 cores: 0.3-0.4 on iris and wine, 0.5 on breast_cancer, 0.7 on digits (1797 x 10),
# 1.0-1.25 at 5000 x 10, 1.5 at 10000 x 10.
SMALL = 2**15
# Distances (rows x centres) per chunk of the chunked step: per step at n = 1e5, d = 8,
# k = 10, chunks of 2**16 took 3.7x KMeans' iteration, 2**17 2.0x, 2**18 2.1x.
CHUNK = 2**18

_TORCH = {np.float32: torch.float32, np.float64: torch.float64}


def is_small(block: Block, n_clusters: int) -> bool:
    """Whether ``block`` is a dense block on the CPU of at most :data:`SMALL` distances."""
    return (block.tokens is not None and block.tokens.device.type == "cpu"
            and block.tokens.shape[0] * n_clusters <= SMALL)


def numpy_step(block: Block, n_clusters: int) -> bool:
    """Whether this module steps ``block``: a small block, or a float64 dense block on
    the CPU."""
    return is_small(block, n_clusters) or (
        block.tokens is not None and block.tokens.device.type == "cpu"
        and block.tokens.dtype == torch.float64)


def _augmented(c: np.ndarray, dtype) -> np.ndarray:
    """``[-2 c ; |c|^2]`` (k, d + 1) of centres ``c`` (k, d), in ``dtype``."""
    c = c.astype(dtype, copy=False)
    k, d = c.shape
    cc = np.empty((k, d + 1), dtype=dtype)
    np.multiply(c, -2, out=cc[:, :d])  # exact: a power of two
    np.einsum("ij,ij->i", c, c, out=cc[:, d])
    return cc


def _nearest(tokens: np.ndarray, cc: np.ndarray) -> np.ndarray:
    """Nearest centre (m,) of tokens ``[x ; 1]`` (m, d + 1) given ``cc = [-2 c ; |c|^2]``,
    lowest index on ties. A single row is multiplied with a zero row below it (a
    matrix-vector product would sum in another order than a block's)."""
    m = tokens.shape[0]
    rows = np.concatenate([tokens, np.zeros_like(tokens)]) if m == 1 else tokens
    return (rows @ cc.T)[:m].argmin(1)


def lloyd_sums(tokens: np.ndarray, w: np.ndarray | None, c: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster weighted sums (k, d) and masses (k,), float64 arrays, of tokens
    ``[x ; 1]`` (m, d + 1) with weights ``w`` (m,) (None: 1) under their nearest of
    centres ``c`` (k, d): the small step up to :data:`SMALL` distances, the chunked one
    beyond.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> sums, mass = lloyd_sums(t, None, np.array([[0.0], [9.0]]))
    >>> sums.ravel().tolist(), mass.tolist()
    ([1.0, 10.0], [2.0, 1.0])
    """
    k, d = c.shape
    cc = _augmented(c, tokens.dtype)
    m = tokens.shape[0]
    if m * k <= SMALL:
        acc = _scatter_sums(tokens, w, cc)
    else:
        rows = max(256, CHUNK // k)
        starts = range(0, m, rows)

        def part(s: int) -> np.ndarray:
            return _chunk_sums(tokens[s : s + rows],
                               None if w is None else w[s : s + rows], cc)

        acc = None
        for p in ordered_map(part, starts, min(len(starts), _openmp_effective_n_threads())):
            acc = p if acc is None else acc + p
    return acc[:, :d], acc[:, d]


def _scatter_sums(tokens: np.ndarray, w: np.ndarray | None, cc: np.ndarray) -> np.ndarray:
    """The small step's sums (k, d + 1), float64: the argmin, then a scatter-add of the
    (weighted) tokens in row order, in the data's dtype."""
    labels = torch.from_numpy(_nearest(tokens, cc))
    values = tokens if w is None else tokens * w.astype(tokens.dtype)[:, None]
    acc = torch.zeros(cc.shape, dtype=_TORCH[tokens.dtype.type])
    acc.index_add_(0, labels, torch.from_numpy(values))
    return acc.numpy().astype(np.float64)


def _chunk_sums(t: np.ndarray, w: np.ndarray | None, cc: np.ndarray) -> np.ndarray:
    """A chunk's sums (k, d + 1), float64: the distances centres-major (k, r), the
    one-hot codes of their minimum over the centres (exact ties: the first centre),
    weighted, and one product with the tokens ``t`` (r, d + 1), in the data's dtype."""
    r = t.shape[0]
    dist = cc @ t.T
    codes = np.empty_like(dist)
    np.equal(dist, dist.min(axis=0), out=codes, casting="unsafe")
    if codes.sum() != r:  # exact ties: the first centre only
        codes *= np.cumsum(codes, axis=0) == 1
    if w is not None:
        codes *= w.astype(t.dtype)
    return (codes @ t).astype(np.float64)


def _arrays(block: Block):
    return block.tokens.numpy(), None if block.w is None else block.w.numpy()


def block_lloyd_sums(block: Block, c: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lloyd_sums` of a block that :func:`numpy_step` takes, from centres ``c``
    (k, d) (fit frame, on the CPU)."""
    return lloyd_sums(*_arrays(block), c.numpy())


def small_score(block: Block, c: torch.Tensor, other: torch.Tensor | None):
    """A small block's weighted sum of squared distances to the nearest of ``c`` (a
    float64 scalar tensor; each distance from the literal differences in the data's
    dtype) and, with ``other`` centres, the (k * k,) contingency table of the two
    nearest-centre assignments."""
    tokens, w = _arrays(block)
    cn = c.numpy().astype(tokens.dtype, copy=False)
    k, d = cn.shape
    labels = _nearest(tokens, _augmented(cn, tokens.dtype))
    diff = tokens[:, :d] - cn[labels]
    sq = np.einsum("ij,ij->i", diff, diff).astype(np.float64)
    if w is not None:
        sq *= w
    inertia = torch.tensor(float(sq.sum()), dtype=torch.float64)
    if other is None:
        return inertia, None
    labels2 = _nearest(tokens, _augmented(other.numpy(), tokens.dtype))
    return inertia, torch.from_numpy(np.bincount(labels * k + labels2, minlength=k * k))
