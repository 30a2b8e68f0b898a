"""Global moves: breathing k-means (Fritzke, 2020) on the Lloyd engine.

Dimension legend: ``k`` clusters, ``m`` the breathing depth, ``d`` features.

Lloyd's steps, exact or learned, move each centre within its own neighbourhood: they
cannot take a centre from a region that holds one too many to a region that lacks one,
the error that costs k-means most. A *breathing cycle* makes that move:

- **breathe in**: ``m`` new centres, each beside one of the ``m`` centres of largest
  *error* (the squared distances of its points), offset by a small random vector (1 %
  of the root-mean-square error, only to break the tie), then Lloyd steps with
  ``k + m`` centres: the crowded regions split;
- **breathe out**: the ``m`` centres of least *utility* are removed (what the inertia
  would grow by without them: their points' second-nearest distance less their own),
  taken in order of utility; each removed centre *freezes* its nearest neighbour, which
  is then not removed too (while enough centres remain unfrozen), so that no region is
  emptied; then Lloyd steps with ``k`` centres.

A cycle whose inertia is lower by more than a relative ``tol`` than the best so far
becomes the best; after any other, the depth ``m`` drops by one. The search ends at
depth 0 (or after ``max_cycles``), with the best centres seen, never worse than the
start. Both costs come from one pass over the data
(:meth:`~skformer._fit.engine.base.Backend.costs`), and each Lloyd run starts warm,
from centres near a fixed point, so a cycle costs a few passes.

This module knows nothing of data or devices: the caller gives the Lloyd run and the
costs pass as functions of the centres.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.spatial.distance import cdist

from .engine.base import CentreCosts

__all__ = ["BREATHING_DEPTH", "BREATHING_SEED", "IMPROVEMENT_FLOOR", "OFFSET", "Breathing",
           "breathe_in",
           "breathe_out", "breathing"]

logger = logging.getLogger("skformer")

# The breathing depth of ``breathing_depth="auto"`` in the learned mode. Fritzke's
# default is 5; the time one learned scale spares (learned.BREATHING_SCALES) buys two
# more, and on the anchor sets the deeper search ended lower at equal time, most on
# 2-D data of many clusters (docs: "The best clustering per CPU-second").
BREATHING_DEPTH = 7
# The offsets of new centres (the tie breakers) come from this fixed stream: a fit's
# randomness is its initial centres, and one problem of many then breathes as it does
# alone.
BREATHING_SEED = 2020
# A new centre's offset from its parent: this share of the root-mean-square error.
OFFSET = 0.01
# The least relative improvement a cycle counts, whatever ``tol``: a cycle that returns
# to the best partition from other centres differs from it by rounding alone.
IMPROVEMENT_FLOOR = 1e-9


class Breathing(NamedTuple):
    """The end of the global moves."""

    centers: np.ndarray
    """(k, d): the best centres seen (the start where no cycle improved on it)."""
    inertia: float
    """The inertia at ``centers`` by the costs pass (float64)."""
    n_cycles: int
    """Breathing cycles made."""
    n_steps: int
    """Lloyd steps of all the cycles."""


def breathe_in(c: np.ndarray, costs: CentreCosts, m: int, total_weight: float,
               rng: np.random.Generator) -> np.ndarray:
    """``c`` (k, d) and ``m`` new centres (k + m, d): beside each of the ``m`` centres of
    largest error (the first of equal errors), offset uniformly within
    ``OFFSET * rmse`` per coordinate, where ``rmse`` is the root-mean-square error of the
    points (``total_weight``: their total weight).

    Examples
    --------
    >>> c = np.array([[0.0], [10.0], [20.0]])
    >>> costs = CentreCosts(np.array([1.0, 9.0, 4.0]), np.zeros(3))
    >>> new = breathe_in(c, costs, 2, 14.0, np.random.default_rng(0))
    >>> new.shape, np.round(new[3:], 1).ravel().tolist()
    ((5, 1), [10.0, 20.0])
    """
    top = np.argsort(-costs.error, kind="stable")[:m]
    rmse = math.sqrt(max(0.0, costs.inertia) / total_weight) if total_weight > 0 else 0.0
    offset = OFFSET * rmse * (rng.random((m, c.shape[1])) - 0.5)
    return np.concatenate([c, (c[top] + offset).astype(c.dtype, copy=False)])


def breathe_out(c: np.ndarray, costs: CentreCosts, m: int) -> np.ndarray:
    """The indices (sorted) of the centres of ``c`` (k + m, d) kept when ``m`` are removed:
    in order of increasing utility (the first of equal ones), each centre not frozen is
    removed and freezes its nearest other centre, while more than ``m`` centres would
    remain unfrozen.

    Examples
    --------
    >>> c = np.array([[0.0], [0.1], [5.0], [5.2], [9.0]])
    >>> costs = CentreCosts(np.zeros(5), np.array([1.0, 2.0, 0.5, 0.7, 9.0]))
    >>> breathe_out(c, costs, 2).tolist()      # 2 goes, freezing 3; then 0 goes
    [1, 3, 4]
    """
    n = c.shape[0]
    # SciPy sums each pair's squared differences in float64 in one pass; numpy's
    # broadcast would build an (n, n, d) array first, a tenth of a cycle's time at d = 58.
    between = cdist(c, c, "sqeuclidean")
    np.fill_diagonal(between, np.inf)
    nearest = between.argmin(1).tolist()
    kept = np.ones(n, dtype=bool)
    frozen: set[int] = set()
    removed = 0
    for j in np.argsort(costs.utility, kind="stable").tolist():
        if j in frozen:
            continue
        kept[j] = False
        removed += 1
        if len(frozen) + m < n:
            frozen.add(nearest[j])
        if removed == m:
            break
    return np.flatnonzero(kept)


def breathing(c: np.ndarray, *, lloyd: Callable[[np.ndarray], tuple[np.ndarray, int]],
              costs: Callable[[np.ndarray], CentreCosts], depth: int, total_weight: float,
              tol: float, max_cycles: int, rng: np.random.Generator | None = None,
              start_costs: CentreCosts | None = None, to_user: Callable = float) -> Breathing:
    """Breathing cycles from centres ``c`` (k, d) until the depth reaches 0.

    Parameters
    ----------
    c : ndarray of shape (k, d)
        The start: centres near a fixed point of Lloyd's steps.
    lloyd : callable
        ``lloyd(centres) -> (centres, n_steps)``: Lloyd steps from centres of any number.
    costs : callable
        ``costs(centres) -> CentreCosts``: one pass over the points.
    depth : int
        Centres added and removed by the first cycle (at most ``k``).
    total_weight : float
        The points' total weight (for the offsets' scale).
    tol : float
        A cycle improves when its inertia is below the best's times ``1 - tol`` (``tol``
        at least :data:`IMPROVEMENT_FLOOR`).
    max_cycles : int
    rng : numpy.random.Generator, optional
        The offsets' stream (default: the fixed :data:`BREATHING_SEED`).
    start_costs : CentreCosts, optional
        ``costs(c)``, where the caller has it.
    to_user : callable
        Squared distances to the user's units, for the log.

    Returns
    -------
    Breathing

    Examples
    --------
    >>> from skformer._fit.engine.base import CentreCosts
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]])
    >>> def costs(c):
    ...     d2 = np.square(X - c.T)
    ...     near = d2.argmin(1)
    ...     second = np.sort(d2, 1)[:, 1] if c.shape[0] > 1 else d2[:, 0]
    ...     error = np.bincount(near, d2.min(1), c.shape[0])
    ...     return CentreCosts(error, np.bincount(near, second - d2.min(1), c.shape[0]))
    >>> def lloyd(c):
    ...     for step in range(1, 100):
    ...         near = np.square(X - c.T).argmin(1)
    ...         new = np.array([X[near == j].mean(0) if (near == j).any() else c[j]
    ...                         for j in range(len(c))])
    ...         if np.array_equal(new, c):
    ...             return c, step
    ...         c = new
    ...     return c, step
    >>> start = np.array([[0.0], [1.0], [15.5]])   # a poor fixed point: two centres share
    >>> end = breathing(start, lloyd=lloyd, costs=costs, depth=1, total_weight=6.0,
    ...                 tol=1e-4, max_cycles=10)
    >>> costs(start).inertia, end.inertia, end.centers.ravel().tolist(), end.n_cycles
    (101.0, 1.5, [0.5, 20.5, 10.5], 2)
    """
    k = c.shape[0]
    m = max(0, min(int(depth), k))
    rng = np.random.default_rng(BREATHING_SEED) if rng is None else rng
    now = costs(c) if start_costs is None else start_costs
    best, best_inertia = c, now.inertia
    keep = 1.0 - max(float(tol), IMPROVEMENT_FLOOR)
    cycles = steps = 0
    while m > 0 and cycles < max_cycles:
        wide, n_in = lloyd(breathe_in(c, now, m, total_weight, rng))
        kept = breathe_out(wide, costs(wide), m)
        c, n_out = lloyd(np.ascontiguousarray(wide[kept]))
        now = costs(c)
        cycles += 1
        steps += n_in + n_out
        improved = now.inertia < best_inertia * keep
        logger.info("Breathing cycle %d (depth %d): inertia %.6g%s.", cycles, m,
                    to_user(now.inertia), ", the best so far" if improved else "")
        if improved:
            best, best_inertia = c, now.inertia
        else:
            m -= 1
    return Breathing(best, best_inertia, cycles, steps)
