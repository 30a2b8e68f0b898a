"""Large problems of a batch, each on the one-problem driver.

Dimension legend: ``b`` problems, ``n`` rows, ``k`` clusters, ``d`` features.

The batched torch kernel pays for every distance of every centre at every iteration;
the one-problem fit (:func:`skformer._fit.fit`) runs, on the CPU, compiled kernels
whose Hamerly bounds skip most of them once the centres settle. Where a problem is
large (at least :data:`LARGE_ROWS` rows and :data:`LARGE_WORK` rows x clusters; the
measurement behind them is in ``docs/batch.rst``), the batch's per-call saving is small
beside its iterations, so :func:`batch_k_means` hands such a problem to the one-problem
driver: each of its ``n_init`` runs starts from the batch's own initial centres (drawn
from the problem's own stream, as for a problem of the batch: the result still does not
depend on the other problems, and ``random_state`` means what it meant), and the
problem keeps its best run by KMeans' rule. Its result is the batched path's (KMeans'
from the same starts: labels from the final centres, inertia in the user's units, the
best run's iterations). Calls with learned runs (``learned_starts >= 1``) and calls on
a GPU keep every problem batched for now.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .._fit import FitSpec, as_source, fit
from ._inputs import ProblemBlock, Problems
from ._lloyd import RunState, pick_best

__all__ = ["LARGE_ROWS", "LARGE_WORK", "fit_large", "large_problems", "split_blocks"]

LARGE_ROWS = 8192
"""Rows from which a problem may run on the one-problem driver (on the CPU)."""
LARGE_WORK = 2**19
"""Rows x clusters from which a problem of :data:`LARGE_ROWS` rows or more does."""

_CPU = torch.device("cpu")


def large_problems(problems: Problems, learned_starts: int, *, rows: int = LARGE_ROWS,
                   work: int = LARGE_WORK) -> np.ndarray:
    """Which problems run on the one-problem driver, shape (b,) bool: those of at least
    ``rows`` rows and ``work`` rows x clusters, when the call runs on the CPU without
    learned runs."""
    if learned_starts or problems.device.type != "cpu":
        return np.zeros(problems.n_problems, dtype=bool)
    return (problems.lengths >= rows) & (problems.lengths * problems.ks >= work)


def split_blocks(blocks: list[np.ndarray], large: np.ndarray
                 ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The blocks' problems in parts that are all small and parts that are all
    ``large``: each block cut where the kind changes, so the part of a block of
    consecutive problems is consecutive too (a batch's blocks and seeding stay as
    they were)."""
    if not large.any():
        return blocks, []
    parts: tuple[list, list] = ([], [])
    for index in blocks:
        kind = large[index]
        cuts = np.flatnonzero(kind[1:] != kind[:-1]) + 1
        for part in np.split(index, cuts):
            parts[int(large[part[0]])].append(part)
    return parts


def _rows(problems: Problems, i: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Problem ``i``'s rows (n_i, d), C-ordered, and its weights in the rows' dtype
    (as KMeans casts them), or None when every weight is 1."""
    n = int(problems.lengths[i])
    x = np.ascontiguousarray(problems.data[i][:n].cpu().numpy())
    if problems.weights is None:
        return x, None
    w = problems.weights[i][:n].cpu().numpy().astype(x.dtype)
    return x, None if bool((w == 1).all()) else w


def _one_run(x: np.ndarray, w: np.ndarray | None, start: np.ndarray, max_iter: int,
             tol: float) -> RunState:
    """The one-problem fit of rows ``x`` from ``start`` (k, d), user frame, as a run of
    one entry: centres (user frame, float64 of the rows' dtype), labels from them,
    inertia in the user's units."""
    source = as_source(x, w, _CPU)
    spec = FitSpec(n_clusters=start.shape[0], init=start, n_init=1, max_iter=max_iter,
                   tol=tol, random_state=np.random.RandomState(0))  # (init is explicit)
    result = fit(source, spec)
    centres = result.frame.to_user(result.centers.cpu().numpy()).astype(x.dtype, copy=False)
    labels, inertia, _ = source.final(centres)
    return RunState(torch.zeros(1, dtype=torch.int64),
                    torch.from_numpy(centres.astype(np.float64))[None],
                    torch.tensor([result.n_iter], dtype=torch.int64),
                    torch.from_numpy(np.asarray(labels, dtype=np.int64))[None],
                    torch.tensor([float(inertia)], dtype=torch.float64))


def fit_large(problems: Problems, blocks: list[np.ndarray], *,
              explicit: torch.Tensor | None, seed: Callable[[ProblemBlock, int], torch.Tensor],
              n_init: int, max_iter: int, tol: float, centres: torch.Tensor,
              labels: torch.Tensor, inertia: torch.Tensor, n_iter: torch.Tensor) -> None:
    """Cluster the problems of ``blocks`` one by one with the one-problem driver,
    writing each one's best run into ``centres`` (b, k_max, d) (user frame), ``labels``
    (b, n_max), ``inertia`` (b,) (user units) and ``n_iter`` (b,) (in place).

    Parameters
    ----------
    problems : Problems
    blocks : list of ndarray of int
        The problems to cluster, in blocks that are seeded together (k-means++ costs
        ``k`` rounds of small tensor operations whatever the number of problems).
    explicit : Tensor of shape (b, k_max, d) or None
        The caller's initial centres (user frame), or None: ``seed`` draws them.
    seed : callable
        ``seed(block, r)``: run ``r``'s initial centres (p, k_max, d) of the problems
        of ``block`` (working frame), the batch's own seeding.
    n_init, max_iter : int
    tol : float
        Relative tolerance, as the batch's.
    """
    for index in blocks:
        if explicit is None:
            block = problems.block(index, tol)
            starts = [block.to_user(seed(block, r)).cpu().numpy() for r in range(n_init)]
        else:
            starts = [explicit[torch.as_tensor(index, device=explicit.device)].cpu().numpy()]
        for j, i in enumerate(int(i) for i in index):
            k = int(problems.ks[i])
            x, w = _rows(problems, i)
            best = pick_best([_one_run(x, w, c[j, :k], max_iter, tol) for c in starts])
            centres[i, :k] = best.centres[0].to(centres.device)
            labels[i, : x.shape[0]] = best.labels[0].to(labels.device)
            inertia[i] = best.inertia[0]
            n_iter[i] = best.n_iter[0]
