"""The learned steps of a fit: re-embedded steps of the learned model on a sample.

Dimension legend: ``r`` rows of the sample, ``k`` clusters, ``d`` features,
``e`` the model's width (``d`` plus zero padding).

The learned model was trained on tasks of a few hundred points. Its steps run on the
*context*: all points when there are at most ``max_context`` of them, otherwise a seeded
sample (the same for every run). Exact Lloyd steps on all the data then finish. So the
learned phase costs the same whatever the data's size or container, and needs nothing
of the source but the sample's rows.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

import numpy as np
import torch

from ..nn.inference import LearnedStepper
from ..nn.learned import LearnedKMeansModel
from ..nn.projection import Subspace, lift, principal_subspace
from ..nn.streaming import prepare_points
from .frame import ModelFrame

__all__ = ["CONTEXT_PER_CLUSTER", "DEFAULT_CONTEXT", "PATIENCE", "LearnedPhase", "LearnedSetup",
           "auto_context", "context_indices", "project_context"]

logger = logging.getLogger("skformer")

# After the schedule, learned steps whose objective has not improved by a relative
# ``tol`` for this many steps in a row end the learned phase (one problem or many).
PATIENCE = 3
# ``max_context="auto"``: this many rows, or this many per cluster where that is more
# (the steps move a centre by the points it attends to: with many clusters a fixed
# sample leaves most of them with one or two).
DEFAULT_CONTEXT = 2048
CONTEXT_PER_CLUSTER = 16


def auto_context(n_clusters: int) -> int:
    """The context size of ``max_context="auto"``.

    Examples
    --------
    >>> auto_context(10), auto_context(1000)
    (2048, 16000)
    """
    return max(DEFAULT_CONTEXT, CONTEXT_PER_CLUSTER * int(n_clusters))


@dataclass
class LearnedSetup:
    """What the estimator chose for the learned steps of a fit."""

    model: LearnedKMeansModel
    padding: int = 0
    """Zero features appended to fit a wider model."""
    max_context: int | None = DEFAULT_CONTEXT
    """Rows the learned steps run on (None: all)."""
    project: int | None = None
    """Principal directions of the context the learned steps run in (the model's
    width), None for the data's own features."""


def context_indices(n: int, max_context: int | None, random_state) -> np.ndarray | None:
    """Seeded sample of ``max_context`` row indices (sorted), or None for all rows.

    Drawn from a copy of ``random_state``, so the initial centres are the ones
    :class:`sklearn.cluster.KMeans` draws with the same ``random_state``.
    """
    if max_context is None or n <= max_context:
        return None
    seed = copy.deepcopy(random_state).randint(np.iinfo(np.int32).max)
    return np.sort(np.random.default_rng(seed).choice(n, max_context, replace=False))


def project_context(rows: np.ndarray, weight: np.ndarray | None, width: int,
                    device) -> tuple[Subspace, np.ndarray]:
    """The context's top ``width`` principal directions, and the rows in them (r, p)."""
    x = torch.from_numpy(np.asarray(rows, dtype=np.float64)).to(device).unsqueeze(0)
    w = None if weight is None else torch.from_numpy(
        np.asarray(weight, dtype=np.float64)).to(device).unsqueeze(0)
    subspace = principal_subspace(x, w, width)
    return subspace, subspace.project(x)[0].cpu().numpy()


class LearnedPhase:
    """The learned steps from initial centres, on the context rows (fit frame).

    Parameters
    ----------
    setup : LearnedSetup
    rows : ndarray of shape (r, d)
        The context rows, fit frame.
    weight : ndarray of shape (r,) or None
        Their sample weights. The steps see them divided by their maximum, which
        changes no weighted mean and keeps any finite weights within float32's range
        (uniform weights, however large or small, cluster as no weights do).
    frame : ModelFrame
        Of the rows the steps see: ``rows``, or their projection.
    subspace : Subspace, default=None
        With ``setup.project``: the principal directions the steps run in
        (:func:`project_context`); ``rows`` are then the full rows and ``frame`` is
        the projected rows' frame.
    """

    def __init__(self, setup: LearnedSetup, rows: np.ndarray, weight: np.ndarray | None,
                 frame: ModelFrame, subspace: Subspace | None = None,
                 projected: np.ndarray | None = None):
        model = setup.model
        self.model, self.frame, self.subspace = model, frame, subspace
        device = frame.lo.device
        self.full_rows = self.projected = None
        if subspace is not None:
            self.full_rows = torch.from_numpy(np.asarray(rows, dtype=np.float64)).to(device)
            self.projected = torch.from_numpy(np.asarray(projected)).to(device)
            rows = projected
        z = frame.to_model(torch.from_numpy(np.asarray(rows)).to(device)).unsqueeze(0)
        # The objective is in units of the largest weight (``weight_unit``, for the log).
        self.weight, self.weight_unit = None, 1.0
        if weight is not None:
            weight = np.asarray(weight, dtype=np.float64)
            self.weight_unit = float(weight.max()) or 1.0
            self.weight = torch.from_numpy(
                (weight / self.weight_unit).astype(np.float32)).to(device).unsqueeze(0)
        self.points = z
        sq = z[0].double().square().sum(-1)
        self.points_sq = float(sq.sum() if self.weight is None
                               else (sq * self.weight[0].double()).sum())
        with torch.no_grad():
            prepared = prepare_points(model, z, None, self.weight, keep_tokens=False)
        self.stepper = LearnedStepper(model, prepared, self.weight)

    def objective(self, z: torch.Tensor) -> float:
        """k-means objective of model-frame centres ``z`` (1, k, e) on the context:
        ``sum_i w_i (|x_i|^2 + min_j (|c_j|^2 - 2 x_i.c_j))`` (float32 products, float64 sum)."""
        c = z[0]
        nearest = torch.addmm(c.square().sum(-1, keepdim=True), c, self.points[0].T, alpha=-2.0)
        nearest = nearest.amin(0).double()
        if self.weight is not None:
            nearest = nearest * self.weight[0].double()
        return self.points_sq + float(nearest.sum())

    @torch.no_grad()
    def run(self, c: torch.Tensor, max_iter: int, tol: float, rel_tol: float, *,
            to_user=float) -> tuple[torch.Tensor, int]:
        """Learned steps from fit-frame centres ``c`` (k, d).

        Every step of the model's schedule runs (soft steps may raise the objective on
        the way); after it, the steps stop when the squared centre shift is within
        ``tol`` (fit frame), when the objective has not improved by a relative
        ``rel_tol`` for three steps, or after ``max_iter`` steps in all.

        Returns
        -------
        centres : Tensor of shape (k, d)
            The centres of least objective among the start and the steps (fit frame,
            ``c``'s dtype).
        n_steps : int
        """
        frame, start = self.frame, c
        if self.subspace is not None:  # the steps run in the principal directions
            c = self.subspace.project(c.double().unsqueeze(0))[0]
        z = frame.to_model(c).unsqueeze(0)
        tol_model = tol / frame.scale**2
        best_z, best = z, self.objective(z)
        reference, stalled, n_steps = best, 0, 0
        d = c.shape[-1]
        for i in range(max_iter):
            new = self.stepper.step(z, i)
            if not bool(torch.isfinite(new).all()):
                logger.info("Learned step %d gave non-finite centres: stopped.", i)
                break
            shift = float((new - z)[..., :d].double().square().sum())
            z, n_steps = new, n_steps + 1
            objective = self.objective(z)
            logger.info("Learned step %d, centre shift %.6g, objective %.6g.", i,
                        to_user(shift * frame.scale**2),
                        to_user(objective * frame.scale**2) * self.weight_unit)
            if objective < best:
                best_z, best = z, objective
            if i + 1 < self.model.schedule:  # the schedule runs to its end
                reference = best
                continue
            if objective < reference * (1.0 - rel_tol):
                reference, stalled = objective, 0
            else:
                stalled += 1
            if shift <= tol_model:
                logger.info("Learned steps converged at step %d.", i)
                break
            if stalled >= PATIENCE:
                logger.info("Learned steps stopped at step %d: no progress in %d steps.",
                            i, PATIENCE)
                break
        best_c = frame.to_fit(best_z[0], torch.float64)
        if self.subspace is None:
            return best_c.to(start.dtype), n_steps
        full = lift(self.full_rows.unsqueeze(0), self.weight, self.projected.unsqueeze(0),
                    best_c.unsqueeze(0), start.double().unsqueeze(0))
        return full[0].to(start.dtype), n_steps
