"""Lloyd's step on small dense blocks, in NumPy.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

The fused kernel (:func:`~skformer.nn.exact_step`) runs a block in about two dozen
torch operations. Each costs a few microseconds whatever its size, and the Python around
them as much again: on iris (150 rows, k = 3) a step took about 220 us there, where its
arithmetic is a few thousand multiplications. On a block of at most :data:`SMALL`
distances (``m * k``; all of iris, wine, breast_cancer and digits) this module computes
the same step with NumPy and one torch scatter-add, a third of the time on iris:

- the nearest centre of each row (lowest index on ties), the argmin of one product of
  the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]``, in the data's dtype;
- each cluster's sum and mass, a scatter-add of the (weighted) tokens in row order
  (torch's ``index_add_``, the fused kernel's sum beyond 12 centres: on digits 65 us,
  where NumPy's product with one-hot labels took 160), in the data's dtype, returned in
  float64 (as the fused kernel sums a block);
- for scoring, the literal squared distances to the nearest centre, summed in float64.

Which kernel a block takes depends on its shape only, on the CPU; the blocks of every
container follow one grid of rows (:func:`~skformer._fit.sources.grid_rows`), so every
container still gives the same result. Beyond :data:`SMALL`, and on other devices, the
fused kernel's threads and cache blocking win (on 2 cores the NumPy step took 1.1-1.5x
the fused one at 1e5 distances and 1.4-2.3x at 5e5).
"""

from __future__ import annotations

import numpy as np
import torch

from .sources import Block

__all__ = ["SMALL", "is_small", "lloyd_sums", "small_lloyd_sums", "small_score"]

# Largest block (rows x centres) the NumPy step takes. NumPy step / fused step, one run
# on 2 cores: 0.3-0.4 on iris and wine, 0.5 on breast_cancer, 0.7 on digits (1797 x 10),
# 1.0-1.25 at 5000 x 10, 1.5 at 10000 x 10.
SMALL = 2**15

_TORCH = {np.float32: torch.float32, np.float64: torch.float64}


def is_small(block: Block, n_clusters: int) -> bool:
    """Whether the NumPy step runs ``block`` (a dense block on the CPU of at most
    :data:`SMALL` distances)."""
    return (block.tokens is not None and block.tokens.device.type == "cpu"
            and block.tokens.shape[0] * n_clusters <= SMALL)


def _nearest(tokens: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Nearest centre (m,) of tokens ``[x ; 1]`` (m, d + 1) among centres ``c`` (k, d),
    lowest index on ties. A single row is multiplied with a zero row below it (a
    matrix-vector product would sum in another order than a block's)."""
    k, d = c.shape
    cc = np.empty((k, d + 1), dtype=tokens.dtype)
    np.multiply(c, -2, out=cc[:, :d])  # exact: a power of two
    np.einsum("ij,ij->i", c, c, out=cc[:, d])
    m = tokens.shape[0]
    rows = np.concatenate([tokens, np.zeros_like(tokens)]) if m == 1 else tokens
    return (rows @ cc.T)[:m].argmin(1)


def lloyd_sums(tokens: np.ndarray, w: np.ndarray | None, c: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster weighted sums (k, d) and masses (k,), float64 arrays, of tokens
    ``[x ; 1]`` (m, d + 1) with weights ``w`` (m,) (None: 1) under their nearest of
    centres ``c`` (k, d), summed in the data's dtype.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> sums, mass = lloyd_sums(t, None, np.array([[0.0], [9.0]]))
    >>> sums.ravel().tolist(), mass.tolist()
    ([1.0, 10.0], [2.0, 1.0])
    """
    c = c.astype(tokens.dtype, copy=False)
    k, d = c.shape
    labels = torch.from_numpy(_nearest(tokens, c))
    values = tokens if w is None else tokens * w.astype(tokens.dtype)[:, None]
    acc = torch.zeros((k, d + 1), dtype=_TORCH[tokens.dtype.type])
    acc.index_add_(0, labels, torch.from_numpy(values))
    acc = acc.numpy().astype(np.float64)
    return acc[:, :d], acc[:, d]


def _arrays(block: Block):
    return block.tokens.numpy(), None if block.w is None else block.w.numpy()


def small_lloyd_sums(block: Block, c: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lloyd_sums` of a small block from centres ``c`` (k, d) (fit frame, on the
    CPU)."""
    return lloyd_sums(*_arrays(block), c.numpy())


def small_score(block: Block, c: torch.Tensor, other: torch.Tensor | None):
    """A small block's weighted sum of squared distances to the nearest of ``c`` (a
    float64 scalar tensor; each distance from the literal differences in the data's
    dtype) and, with ``other`` centres, the (k * k,) contingency table of the two
    nearest-centre assignments."""
    tokens, w = _arrays(block)
    cn = c.numpy().astype(tokens.dtype, copy=False)
    k, d = cn.shape
    labels = _nearest(tokens, cn)
    diff = tokens[:, :d] - cn[labels]
    sq = np.einsum("ij,ij->i", diff, diff).astype(np.float64)
    if w is not None:
        sq *= w
    inertia = torch.tensor(float(sq.sum()), dtype=torch.float64)
    if other is None:
        return inertia, None
    labels2 = _nearest(tokens, other.numpy().astype(tokens.dtype, copy=False))
    return inertia, torch.from_numpy(np.bincount(labels * k + labels2, minlength=k * k))
