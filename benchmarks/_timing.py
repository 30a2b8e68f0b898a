"""Marginal time per iteration of estimators fitted alternately in one process."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["marginal_times", "paired_ratio"]


def marginal_times(estimators_for: Callable[[int], dict], X, *, max_iter: int, reps: int,
                   on_round: Callable[[dict], None] | None = None) -> dict:
    """Median fit times (ms) of each estimator at ``max_iter // 2`` and ``max_iter``
    iterations, the marginal time per iteration from their difference, and every
    round's times for paired ratios (:func:`paired_ratio`).

    A round fits each estimator short then long, back to back, and the estimators
    take turns going first (the order rotates each round), so a slow stretch of a
    shared machine falls on both estimators of a round rather than on one of them.

    Parameters
    ----------
    estimators_for : callable
        ``estimators_for(iterations)`` returns ``{name: unfitted estimator}`` that run
        exactly that many iterations (checked with ``n_iter_``).
    X : array-like or sparse matrix
    max_iter, reps : int
        Iterations of the long fits; repetitions after one warm-up round.
    on_round : callable, optional
        Called with ``{name: fitted estimator}`` (the long fits) after each round.

    Returns
    -------
    dict
        ``{name}_fit_ms`` (median long fit), ``{name}_ms_per_iter`` (difference of the
        medians of long and short fits over the extra iterations) for each name, and
        ``rounds``: one ``{name: [short_ms, long_ms]}`` per timed round.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.cluster import KMeans
    >>> X = np.random.default_rng(0).random((500, 4))
    >>> make = lambda it: {"a": KMeans(3, init=X[:3], n_init=1, max_iter=it, tol=0)}
    >>> out = marginal_times(make, X, max_iter=4, reps=2)
    >>> sorted(out), len(out["rounds"])
    (['a_fit_ms', 'a_ms_per_iter', 'rounds'], 2)
    """
    short = max_iter // 2
    rounds: list[dict[str, list[float]]] = []
    for rep in range(reps + 1):  # the first round warms up
        fits = {it: estimators_for(it) for it in (short, max_iter)}
        names = list(fits[max_iter])
        turn = rep % len(names)
        times: dict[str, list[float]] = {}
        fitted = {}
        for name in names[turn:] + names[:turn]:
            for it in (short, max_iter):
                est = fits[it][name]
                t = time.perf_counter()
                est.fit(X)
                elapsed = (time.perf_counter() - t) * 1e3
                if est.n_iter_ != it:
                    raise RuntimeError(f"{name} stopped after {est.n_iter_} of {it} iterations")
                times.setdefault(name, []).append(elapsed)
            fitted[name] = est
        if on_round is not None:
            on_round(fitted)
        if rep:
            rounds.append(times)
    out: dict = {}
    for name in rounds[0]:
        short_ms = statistics.median(r[name][0] for r in rounds)
        long_ms = statistics.median(r[name][1] for r in rounds)
        out[f"{name}_fit_ms"] = long_ms
        out[f"{name}_ms_per_iter"] = (long_ms - short_ms) / (max_iter - short)
    out["rounds"] = rounds
    return out


def paired_ratio(rounds: list[dict[str, list[float]]], num: str, den: str, *,
                 whole_fit: bool = False) -> float:
    """Median over rounds of the ratio of two estimators' costs in the same round.

    The cost is the marginal one (the long fit minus the short fit), or with
    ``whole_fit=True`` the long fit's time. Pairing within a round cancels what a shared
    machine adds to a stretch of time, which a ratio of medians taken over all rounds
    does not.

    Examples
    --------
    >>> rounds = [{"a": [10, 30], "b": [5, 15]}, {"a": [10, 50], "b": [5, 25]},
    ...           {"a": [10, 90], "b": [5, 15]}]
    >>> paired_ratio(rounds, "a", "b")
    2.0
    >>> paired_ratio(rounds, "a", "b", whole_fit=True)
    2.0
    """
    if whole_fit:
        return statistics.median(r[num][1] / r[den][1] for r in rounds)
    return statistics.median((r[num][1] - r[num][0]) / (r[den][1] - r[den][0])
                             for r in rounds)
