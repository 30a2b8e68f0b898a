"""Hartigan and Wong's single-point moves over rows held in memory: the driver of the
compiled passes (:mod:`skformer._fit.kernels.hartigan`).

Dimension legend: ``n`` rows, ``k`` clusters, ``d`` features.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from ..sources import Block

__all__ = ["SingleMoves", "single_moves"]

# The kernels' weights where there are none: every row counts 1.
_NO_WEIGHTS = np.empty(0)
# The moves' log holds the clusters of the last max(this, k / 4) changes: a row that
# has seen fewer since its last visit measures those centres again (each d values),
# cheaper than all k.
_LEAST_LOG = 8


class SingleMoves(NamedTuple):
    """The end of the single-point moves."""

    centers: np.ndarray
    """(k, d) float64: the means of the last partition."""
    n_moves: int
    """Rows moved, over all the passes."""
    n_passes: int
    """Passes over the rows, the last one making no move unless ``max_passes`` ran."""


def single_moves(kernels, blocks: Callable[[], Iterable[Block]], n: int, c: np.ndarray, *,
                 max_passes: int, floor: float) -> SingleMoves:
    """Single-point moves from the nearest-centre partition of centres ``c`` (k, d) of
    ``n`` rows: passes over the rows in order until one moves none, at most
    ``max_passes`` (the compiled ``kernels``'
    :func:`~skformer._fit.kernels.hartigan.hartigan_pass`, with its ``floor``).
    ``blocks()`` walks the rows once, in order, as
    dense :class:`~skformer._fit.sources.Block` s; where they lie has no effect on the
    moves (every decision is made on exact differences).

    Examples
    --------
    >>> import torch
    >>> from skformer._fit import kernels
    >>> from skformer._fit.sources import Block
    >>> x = torch.tensor([[0.0], [3.0], [6.0], [8.0], [9.0], [11.0]], dtype=torch.float64)
    >>> start = np.array([[3.0], [28.0 / 3.0]])    # a fixed point of Lloyd's steps
    >>> end = single_moves(kernels.load(), lambda: [Block(x, None)], 6, start,
    ...                    max_passes=10, floor=1e-9)
    >>> end.centers.ravel().tolist(), end.n_moves, end.n_passes   # inertia 22.7 -> 17.5
    ([1.5, 8.5], 1, 2)
    """
    k, d = c.shape
    log = np.empty(max(_LEAST_LOG, k // 4), dtype=np.int64)
    labels, low = np.empty(n, dtype=np.int64), np.empty(n)
    # No row has a bound yet: the first pass bounds them by products.
    seen, clock = np.full(n, -log.shape[0] - 1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    sums, mass = np.zeros((k, d)), np.zeros(k)

    def walk():
        """Each block's rows, weights and row range, in order."""
        position = 0
        for block in blocks():
            x = block.x.cpu().numpy()
            w = _NO_WEIGHTS if block.w is None else block.w.cpu().numpy()
            yield x, w, slice(position, position + x.shape[0])
            position += x.shape[0]

    c64 = np.ascontiguousarray(c, dtype=np.float64)
    for x, w, rows in walk():
        kernels.hartigan_start(x, w, c64, labels[rows], sums, mass)
    means = c64.copy()  # an empty cluster keeps its centre
    np.divide(sums, mass[:, None], out=means, where=mass[:, None] > 0)
    n_moves = n_passes = 0
    while n_passes < max_passes:
        n_passes += 1
        moved = sum(kernels.hartigan_pass(x, w, labels[rows], low[rows], seen[rows], means,
                                          sums, mass, log, clock, floor)
                    for x, w, rows in walk())
        n_moves += moved
        if moved == 0:
            break
    return SingleMoves(means, n_moves, n_passes)
