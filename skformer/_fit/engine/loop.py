"""The Lloyd run loop, one for a single problem and for many: KMeans' stopping rules.

Dimension legend: ``e`` runs, ``k`` clusters, ``d`` features.

:func:`lloyd_loop` steps runs until each stops: at strict convergence (the assignment
did not change), when its squared centre shift is within its tolerance, or after
``max_iter`` steps; a run that stops leaves the loop, the others go on. It knows nothing
of data, devices or containers: a step function does the work. A fit's run
(:func:`run_lloyd`) is one run over a :class:`~skformer._fit.engine.base.Backend`;
:func:`skformer.batch_k_means` steps many problems' runs at once through the same loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from .base import Backend

__all__ = ["LloydRun", "lloyd_loop", "run_lloyd"]

logger = logging.getLogger("skformer")


def lloyd_loop(step: Callable, runs, max_iter: int, tol, *, report: Callable | None = None):
    """Lloyd steps of runs ``runs`` (0, 1, ..., e - 1: a NumPy array or a tensor, whose
    kind the loop's arrays take) until each stops.

    Parameters
    ----------
    step : callable
        ``step(active, i) -> (shift, same)``: step ``i`` of the runs ``active`` (an index
        array), their squared centre shifts (float64) and whether each run's assignment
        did not change.
    runs : ndarray or Tensor of shape (e,)
        ``arange(e)``.
    max_iter : int
    tol : ndarray or Tensor of shape (e,)
        Each run's tolerance on the squared shift.
    report : callable, optional
        ``report(i, active, shift, same)`` after each step (the log).

    Returns
    -------
    n_iter : ndarray or Tensor of shape (e,), int
        Steps of each run.
    strict : ndarray or Tensor of shape (e,), bool
        Whether each run stopped by strict convergence.

    Examples
    --------
    >>> shifts = np.array([[4.0, 1.0], [0.5, 0.0]])   # per step, per run
    >>> def step(active, i):
    ...     return shifts[i][active], np.zeros(len(active), dtype=bool)
    >>> n_iter, strict = lloyd_loop(step, np.arange(2), 10, np.array([1.0, 1.0]))
    >>> n_iter.tolist(), strict.tolist()
    ([2, 1], [False, False])
    """
    n_iter = runs * 0
    strict = runs < 0
    active = runs
    for i in range(max_iter):
        if active.shape[0] == 0:
            break
        shift, same = step(active, i)
        if report is not None:
            report(i, active, shift, same)
        n_iter[active] += 1
        strict[active] = same
        active = active[~(same | (shift <= tol[active]))]
    return n_iter, strict


class LloydRun(NamedTuple):
    """The end of a run of Lloyd steps."""

    centers: torch.Tensor
    """(k, d), the data's dtype."""
    n_iter: int
    inertia: float | None
    """Inertia of ``centers``, known without another pass when the run ended by strict
    convergence (the last assignment is the final one); None otherwise."""


def run_lloyd(backend: Backend, c: torch.Tensor, max_iter: int, tol: float, *,
              to_user=float, x2: float | None = None, log: bool = True,
              state: object | None = None) -> LloydRun:
    """Lloyd steps of one run from centres ``c`` (k, d) over ``backend``'s source.

    ``to_user`` converts a squared shift to the user's units for the log; ``x2`` (the
    points' weighted sum of squared norms) lets a run that ends by strict convergence
    report its inertia from the last step's statistics. ``log=False``: nothing is
    logged (steps that are not the fit's own, such as the context screen's).
    ``state``: what a costs pass learnt of the rows at nearby centres
    (:meth:`~.base.Backend.costs_and_state`), for a cheaper first step.
    """
    cn, previous = c.detach().cpu().numpy(), None
    step = backend.stepper() if state is None else backend.stepper_from(state, cn)

    def one(active, i):
        nonlocal cn, previous
        new, stats = step(cn)
        cn, shift, same = backend.end_step(cn, stats, previous, new)
        previous = stats
        return np.array([shift]), np.array([same])

    def report(i, active, shift, same):
        logger.info("Iteration %d, centre shift %.6g.", i, to_user(float(shift[0])))
        if same[0]:
            logger.info("Converged at iteration %d: strict convergence.", i)
        elif shift[0] <= tol:
            logger.info("Converged at iteration %d: centre shift within tolerance.", i)

    log = log and logger.isEnabledFor(logging.INFO)
    n_iter, strict = lloyd_loop(one, np.arange(1), max_iter, np.array([tol]),
                                report=report if log else None)
    # Ended by strict convergence: the last statistics are the final assignment's.
    inertia = previous.inertia(cn, x2) if strict[0] and x2 is not None else None
    return LloydRun(torch.from_numpy(cn).to(c.device), int(n_iter[0]), inertia)
