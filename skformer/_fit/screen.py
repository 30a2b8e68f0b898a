"""The context screen: which learned runs earn exact Lloyd steps on all the data.

Dimension legend: ``r`` rows of the context, ``k`` clusters, ``d`` features.

A learned run of a large data set works on a sample of its rows (the *context*), then
exact Lloyd steps on all the data finish it. Most learned runs end in the clustering the
plain Lloyd run already found (on most starts k-means++ and Lloyd's algorithm are not
stuck), and then the finish costs a Lloyd run on all the data and a comparison pass for
nothing. The screen decides on the context first: exact Lloyd steps on the context rows
from each run's centres, to a fixed point of the context, and the context's inertia
there. A learned run's finish runs only where its fixed point is a different clustering
of the context (another set of centres) with a lower inertia than every run finished so
far (the plain Lloyd run's first). Where the context is more than half the data (or all
of it), settling two runs on it costs more than the finish it may spare, so it is not
used (:data:`~skformer._fit.runs.SCREEN_SHARE`).

Screening changes which runs are finished, never how a finished run is compared: the
plain Lloyd run (KMeans' run from the start) is always finished, so the inertia is still
never above KMeans'.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np
import torch

from .engine import choose_backend, run_lloyd
from .frame import Frame
from .sources import ArraySource

__all__ = ["ContextScreen", "Settled"]

logger = logging.getLogger("skformer")


class Settled(NamedTuple):
    """A fixed point of exact Lloyd steps on the context."""

    centers: np.ndarray
    """(k, d), fit frame, the data's dtype."""
    inertia: float
    """The context's (weighted) inertia at ``centers``."""

    def same_centres(self, other: Settled) -> bool:
        """Whether both hold the same set of centres (one clustering, renamed)."""
        return np.array_equal(np.unique(self.centers, axis=0), np.unique(other.centers, axis=0))


class ContextScreen:
    """Exact Lloyd steps on the context rows.

    Parameters
    ----------
    rows : ndarray of shape (r, d)
        The context rows, fit frame (float32 or float64).
    weight : ndarray of shape (r,) or None
        Their sample weights.
    max_iter : int
        Most Lloyd steps on the context per run (the fit's ``max_iter``).

    Examples
    --------
    >>> import numpy as np, torch
    >>> rows = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]])
    >>> screen = ContextScreen(rows, None, max_iter=10)
    >>> poor = screen.settle(torch.tensor([[0.0], [1.0], [15.0]]))   # a poor fixed point
    >>> poor.centers.ravel().tolist(), poor.inertia
    ([0.0, 1.0, 15.5], 101.0)
    >>> better = screen.settle(torch.tensor([[0.0], [10.0], [20.0]]))
    >>> better.centers.ravel().tolist(), screen.improves(better, poor)
    ([0.5, 10.5, 20.5], True)
    >>> screen.improves(screen.settle(torch.tensor([[20.0], [0.0], [11.0]])), better)
    False
    """

    def __init__(self, rows: np.ndarray, weight: np.ndarray | None, max_iter: int):
        rows = np.ascontiguousarray(rows)
        self.source = ArraySource(rows, weight, torch.device("cpu"))
        self.source.set_frame(Frame(np.zeros(rows.shape[1], dtype=rows.dtype), 0))
        self.max_iter = max_iter
        # Chosen on the first settle (a screen serves one fit: one number of clusters),
        # with the context's squared norms.
        self._backend = None
        self._x2 = 0.0

    def settle(self, c: torch.Tensor) -> Settled:
        """Exact Lloyd steps on the context from centres ``c`` (k, d) to a fixed point
        (or ``max_iter`` steps), and the context's inertia there."""
        backend = self._backend
        if backend is None:
            # Every settle starts near a fixed point (a Lloyd run's end on all the data,
            # or the learned steps'): the warm backend's bounds spare most products.
            backend = self._backend = choose_backend(self.source, c.shape[0], warm=True)
            self._x2 = backend.norms()
        end = run_lloyd(backend, c.detach().cpu(), self.max_iter, 0.0, x2=self._x2,
                        log=False)
        inertia = end.inertia
        if inertia is None:  # stopped by max_iter: one scoring pass of the context
            inertia = backend.score(end.centers.numpy())[0]
        return Settled(end.centers.numpy(), float(inertia))

    @staticmethod
    def improves(settled: Settled, best: Settled) -> bool:
        """Whether ``settled`` is another clustering of the context than ``best``, of
        lower inertia: then the run it came from is worth finishing on all the data."""
        same = settled.same_centres(best)
        if same or not settled.inertia < best.inertia:
            logger.info("Context screen: inertia %.6g at the fixed point against %.6g "
                        "(%s): no Lloyd steps on all the data.", settled.inertia,
                        best.inertia, "the same clustering" if same else "not lower")
            return False
        return True
