"""A plain NumPy Lloyd's algorithm: the oracle that tests and benchmarks trust.

It is deliberately simple: squared distances summed literally
(:func:`scipy.spatial.distance.cdist`), the lowest index wins ties, and a cluster whose
points carry no weight keeps its previous centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["LloydResult", "assign", "hartigan", "lloyd", "lloyd_step"]

_BLOCK = 2**22  # elements of one (rows, k) distance block


def assign(X: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of every point and its squared distance.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    centers : ndarray of shape (k, d)

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Index of the nearest centre, lowest index on ties.
    sq_dist : ndarray of shape (n,)
        Squared distance to that centre.

    Examples
    --------
    >>> import numpy as np
    >>> assign(np.array([[0.0], [3.0]]), np.array([[1.0], [2.0]]))
    (array([0, 1]), array([1., 1.]))
    """
    n, k = X.shape[0], centers.shape[0]
    rows = max(1, _BLOCK // max(k, 1))
    labels = np.empty(n, dtype=np.int64)
    sq = np.empty(n, dtype=np.float64)
    for s in range(0, n, rows):
        dist = cdist(X[s : s + rows], centers, "sqeuclidean")
        labels[s : s + rows] = dist.argmin(axis=1)
        sq[s : s + rows] = dist[np.arange(dist.shape[0]), labels[s : s + rows]]
    return labels, sq


def lloyd_step(
    X: np.ndarray, centers: np.ndarray, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One Lloyd iteration.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    centers : ndarray of shape (k, d)
    sample_weight : ndarray of shape (n,), default=None

    Returns
    -------
    new_centers : ndarray of shape (k, d)
        Weighted mean of each cluster; a cluster of zero total weight keeps its centre.
    labels : ndarray of shape (n,)
        The assignment to ``centers`` the means were taken over.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [10.0]])
    >>> lloyd_step(X, np.array([[0.0], [10.0], [50.0]]))[0].ravel()
    array([ 0.5, 10. , 50. ])
    """
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    labels, _ = assign(X, centers)
    k = centers.shape[0]
    mass = np.bincount(labels, weights=w, minlength=k)
    sums = np.zeros_like(centers)
    np.add.at(sums, labels, X * w[:, None])
    new = centers.copy()
    filled = mass > 0
    new[filled] = sums[filled] / mass[filled, None]
    return new, labels


@dataclass(frozen=True)
class LloydResult:
    """Outcome of :func:`lloyd`."""

    centers: np.ndarray
    """Centres after the last iteration, shape (k, d)."""
    labels: np.ndarray
    """Assignment of the last iteration (to the centres before it), shape (n,)."""
    inertia: np.ndarray
    """Weighted k-means cost of the centres before each iteration and after the
    last, shape (n_iter + 1,)."""
    n_empty: int
    """Number of (iteration, cluster) pairs where a cluster was empty."""


def lloyd(
    X: np.ndarray,
    init: np.ndarray,
    n_iter: int,
    sample_weight: np.ndarray | None = None,
) -> LloydResult:
    """Run exactly ``n_iter`` Lloyd iterations from ``init`` (no early stop).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    init : ndarray of shape (k, d)
    n_iter : int
    sample_weight : ndarray of shape (n,), default=None

    Returns
    -------
    LloydResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [10.0], [12.0]])
    >>> res = lloyd(X, X[[0, 1]], n_iter=3)
    >>> res.centers.ravel(), res.labels
    (array([ 0.5, 11. ]), array([0, 0, 1, 1]))
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    centers = np.array(init, dtype=np.float64)
    labels = np.zeros(X.shape[0], dtype=np.int64)
    costs, n_empty = [], 0
    for _ in range(n_iter):
        new, labels = lloyd_step(X, centers, w)
        _, sq = assign(X, centers)
        costs.append(float(w @ sq))
        n_empty += int(np.sum(np.bincount(labels, weights=w, minlength=len(centers)) == 0))
        centers = new
    costs.append(float(w @ assign(X, centers)[1]))
    return LloydResult(centers, labels, np.asarray(costs), n_empty)


def centre_costs(
    X: np.ndarray, centers: np.ndarray, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each centre's error (the weighted squared distances of its points) and utility
    (the weighted sum, over its points, of the second-nearest squared distance less the
    nearest), both (k,) float64, by brute force.

    Examples
    --------
    >>> import numpy as np
    >>> error, utility = centre_costs(np.array([[0.0], [1.0], [10.0]]),
    ...                               np.array([[0.0], [9.0]]))
    >>> error.tolist(), utility.tolist()
    ([1.0, 1.0], [144.0, 99.0])
    """
    X = np.asarray(X, dtype=np.float64)
    c = np.asarray(centers, dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    sq = ((X[:, None, :] - c[None, :, :]) ** 2).sum(-1)
    labels = sq.argmin(1)
    near = sq[np.arange(len(X)), labels]
    if c.shape[0] > 1:
        second = np.sort(sq, axis=1)[:, 1]
    else:
        second = near
    k = c.shape[0]
    return (np.bincount(labels, weights=w * near, minlength=k),
            np.bincount(labels, weights=w * (second - near), minlength=k))


def lloyd_to_fixed_point(X: np.ndarray, init: np.ndarray, max_iter: int,
                         sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Lloyd iterations from ``init`` until the assignment no longer changes (or
    ``max_iter``): the centres and the iterations made.

    Examples
    --------
    >>> import numpy as np
    >>> c, n = lloyd_to_fixed_point(np.array([[0.0], [1.0], [10.0]]), np.array([[0.0], [1.0]]), 10)
    >>> c.ravel().tolist(), n     # the third finds the assignment unchanged
    ([0.5, 10.0], 3)
    """
    w = None if sample_weight is None else np.asarray(sample_weight, float)
    centers = np.array(init, dtype=np.float64)
    labels = None
    for i in range(1, max_iter + 1):
        new, new_labels = lloyd_step(np.asarray(X, np.float64), centers, w)
        if labels is not None and np.array_equal(labels, new_labels):
            return centers, i
        centers, labels = new, new_labels
    return centers, max_iter


def breathing(X: np.ndarray, init: np.ndarray, depth: int, *, max_iter: int = 300,
              sample_weight: np.ndarray | None = None, seed: int = 2020,
              offset: float = 0.01, tol: float = 1e-9) -> tuple[np.ndarray, float, int]:
    """Breathing k-means (Fritzke, 2020) from centres ``init`` at a fixed point of
    Lloyd's algorithm, with Lloyd runs to a fixed point: the best centres, their
    inertia and the cycles made. A cycle adds ``m`` centres beside the ``m`` of largest
    error (offsets ``offset * rmse * (u - 0.5)``, ``u`` uniform from
    ``numpy.random.default_rng(seed)``), runs Lloyd, removes the ``m`` of least utility
    (each removal freezing its nearest other centre while more than ``m`` stay free),
    runs Lloyd; ``m`` starts at ``depth`` and drops by one after a cycle that does not
    lower the best inertia by a relative ``tol``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]])
    >>> c, inertia, cycles = breathing(X, np.array([[0.0], [1.0], [15.5]]), 1)
    >>> sorted(c.ravel().tolist()), inertia
    ([0.5, 10.5, 20.5], 1.5)
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    rng = np.random.default_rng(seed)
    c = np.array(init, dtype=np.float64)
    m = min(depth, c.shape[0])
    best, best_inertia = c, float(centre_costs(X, c, w)[0].sum())
    cycles = 0
    while m > 0 and cycles < max_iter:
        error, _ = centre_costs(X, c, w)
        rmse = np.sqrt(error.sum() / w.sum())
        parents = np.argsort(-error, kind="stable")[:m]
        wide = np.concatenate([c, c[parents] + offset * rmse * (rng.random((m, c.shape[1]))
                                                                 - 0.5)])
        wide, _ = lloyd_to_fixed_point(X, wide, max_iter, w)
        _, utility = centre_costs(X, wide, w)
        between = ((wide[:, None] - wide[None]) ** 2).sum(-1)
        np.fill_diagonal(between, np.inf)
        removed, frozen = [], set()
        for j in np.argsort(utility, kind="stable"):
            if j in frozen:
                continue
            removed.append(j)
            if len(frozen) + m < len(wide):
                frozen.add(int(between[j].argmin()))
            if len(removed) == m:
                break
        c, _ = lloyd_to_fixed_point(X, np.delete(wide, removed, axis=0), max_iter, w)
        cycles += 1
        inertia = float(centre_costs(X, c, w)[0].sum())
        if inertia < best_inertia * (1.0 - tol):
            best, best_inertia = c, inertia
        else:
            m -= 1
    return best, best_inertia, cycles


def hartigan(X: np.ndarray, init: np.ndarray, *, sample_weight: np.ndarray | None = None,
             max_passes: int = 100, floor: float = 1e-9) -> tuple[np.ndarray, np.ndarray, int]:
    """Hartigan and Wong's single-point moves by the literal loop: from the nearest-centre
    partition of ``init`` (k, d), each row in turn, of weight ``w`` in cluster ``a``,
    goes to the cluster ``b`` of least ``W_b / (W_b + w) |x - c_b|^2`` (the first of
    equal ones), where that is below ``(1 - floor) W_a / (W_a - w) |x - c_a|^2``; the
    means (float64 sums over weights) follow each move; a row alone in its cluster
    stays. Passes repeat until one moves no row. Returns the means, the labels and the
    rows moved.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [3.0], [6.0], [8.0], [9.0], [11.0]])
    >>> c, labels, moves = hartigan(X, np.array([[3.0], [28.0 / 3.0]]))
    >>> c.ravel().tolist(), labels.tolist(), moves
    ([1.5, 8.5], [0, 0, 1, 1, 1, 1], 1)
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
    c = np.array(init, dtype=np.float64)
    k = c.shape[0]
    labels = ((X[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)
    mass = np.bincount(labels, weights=w, minlength=k)
    sums = np.stack([np.bincount(labels, weights=w * X[:, q], minlength=k)
                     for q in range(X.shape[1])], axis=1)
    filled = mass > 0
    c[filled] = sums[filled] / mass[filled, None]
    moves = 0
    for _ in range(max_passes):
        moved = 0
        for i, x in enumerate(X):
            a = labels[i]
            rest = mass[a] - w[i]
            if not rest > 1e-12 * mass[a]:
                continue
            cost = ((x - c[a]) ** 2).sum() * mass[a] / rest
            values = ((x - c) ** 2).sum(-1)
            factors = np.where(mass + w[i] > 0, mass / np.where(mass + w[i] > 0,
                                                                mass + w[i], 1.0), 1.0)
            values = values * factors
            values[a] = np.inf
            b = int(values.argmin())
            if not values[b] < cost * (1.0 - floor):
                continue
            mass[a], mass[b] = rest, mass[b] + w[i]
            sums[a] -= w[i] * x
            sums[b] += w[i] * x
            c[a], c[b] = sums[a] / mass[a], sums[b] / mass[b]
            labels[i] = b
            moved += 1
        moves += moved
        if moved == 0:
            break
    return c, labels, moves
