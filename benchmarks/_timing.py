"""Marginal time per iteration of estimators fitted alternately in one process."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["marginal_times"]


def marginal_times(estimators_for: Callable[[int], dict], X, *, max_iter: int, reps: int,
                   on_round: Callable[[dict], None] | None = None) -> dict:
    """Median fit times (ms) of each estimator at ``max_iter // 2`` and ``max_iter``
    iterations, and the marginal time per iteration from their difference.

    Parameters
    ----------
    estimators_for : callable
        ``estimators_for(iterations)`` returns ``{name: unfitted estimator}`` that run
        exactly that many iterations (checked with ``n_iter_``).
    X : array-like or sparse matrix
    max_iter, reps : int
        Iterations of the long fits; repetitions after one warm-up round.
    on_round : callable, optional
        Called with ``{name: fitted estimator}`` after each round of fits.

    Returns
    -------
    dict
        ``{name}_fit_ms`` (the long fit) and ``{name}_ms_per_iter`` for each name.
    """
    short = max_iter // 2
    times: dict[tuple[str, int], list[float]] = {}
    for rep in range(reps + 1):  # the first round warms up
        for it in (short, max_iter):
            fitted = {}
            for name, est in estimators_for(it).items():
                t = time.perf_counter()
                est.fit(X)
                elapsed = (time.perf_counter() - t) * 1e3
                if est.n_iter_ != it:
                    raise RuntimeError(f"{name} stopped after {est.n_iter_} of {it} iterations")
                fitted[name] = est
                if rep:
                    times.setdefault((name, it), []).append(elapsed)
            if on_round is not None:
                on_round(fitted)
    med = {key: statistics.median(v) for key, v in times.items()}
    out = {}
    for name in {name for name, _ in med}:
        out[f"{name}_fit_ms"] = med[name, max_iter]
        out[f"{name}_ms_per_iter"] = (med[name, max_iter] - med[name, short]) / (max_iter - short)
    return out
