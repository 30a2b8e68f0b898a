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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..nn.inference import LearnedStepper
from ..nn.learned import LearnedKMeansModel
from ..nn.projection import Subspace, lift, principal_subspace
from ..nn.streaming import prepare_points
from .frame import ModelFrame

__all__ = ["BREATHING_GAIN", "BREATHING_SCALES", "CONTEXT_BUDGET", "CONTEXT_PER_CLUSTER",
           "DEFAULT_CONTEXT", "MIN_PER_CLUSTER", "PATIENCE", "POLISH_MIN_CLUSTERS",
           "SCALE_MARGIN", "TEMPERATURE_SCALES", "LearnedPhase", "LearnedSetup",
           "auto_context", "auto_polish", "context_indices", "learned_loop", "learned_search",
           "learned_pace", "project_context"]

logger = logging.getLogger("skformer")

# After the schedule, learned steps whose objective has not improved by a relative
# ``tol`` for this many steps in a row end the learned phase (one problem or many).
PATIENCE = 3
# ``max_context="auto"``: rows enough for every centre's mean, as many as a budget of
# the learned step's work allows. A soft step moves a centre by the mean of the rows it
# attends to, and on a sample that mean is off by the cluster's spread over the square
# root of its rows: with 16 rows a cluster, on data whose clusters tile a density
# (pixels, codebooks), the learned steps' centres ended above Lloyd's on all the data
# (docs: "The learned mode at users' shapes"). So CONTEXT_PER_CLUSTER rows a cluster,
# at least DEFAULT_CONTEXT and MIN_PER_CLUSTER a cluster, and at most what keeps
# rows x clusters x token width within CONTEXT_BUDGET (a step's attention products).
DEFAULT_CONTEXT = 2048
CONTEXT_PER_CLUSTER = 128
MIN_PER_CLUSTER = 16
CONTEXT_BUDGET = 2**28
# The learned run's steps are made at each of these multiples of the schedule's inverse
# temperatures, from the same start, and the centres of least objective on the context
# are kept. The shipped schedules were trained on mixtures whose clusters are apart;
# on data whose clusters tile a density (pixels, digits, codebooks) their soft steps
# pull centres together and sharper ones do better, on separated mixtures and on
# embeddings the schedule's own do (docs: "The learned mode at users' shapes"). The
# objective on the context tells which one the data at hand wants, at the price of a
# learned phase per scale.
TEMPERATURE_SCALES = (1.0, 2.0, 4.0)
# Where global moves follow the learned run (breathing k-means, :mod:`.moves`), its
# steps are made at this scale only: the moves repair what the schedule's own
# temperatures are kept for (separated mixtures, embeddings: docs, "The learned mode at
# users' shapes"), and from the sharpest run's end they reached as low an inertia as
# from the best of several scales, in less time, which deeper moves then use (docs:
# "The best clustering per CPU-second").
BREATHING_SCALES = (4.0,)
# Where global moves follow, the learned steps end once their objective has gained less
# than this share in PATIENCE steps (or the fit's ``tol``, where larger): by then most
# rows' soft weights are one-hot and a learned step moves the centres as a Lloyd step
# does, at about twice its cost; Lloyd's steps on all the rows finish the run. The
# moves' end was as low as after the learned steps' full run, in 0.9 of the time
# (docs: "The best clustering per CPU-second").
BREATHING_GAIN = 3e-3
# A later scale is kept only when its objective is lower by more than this relative
# amount: two scales that reach the same partition differ by rounding alone, and the
# objective is summed in different orders by one fit and by many problems at once.
SCALE_MARGIN = 1e-6


def auto_context(n_clusters: int, width: int = 1) -> int:
    """The context size of ``max_context="auto"`` for ``n_clusters`` centres and the
    learned model's token width ``width``.

    Examples
    --------
    >>> auto_context(10, 42), auto_context(256, 11), auto_context(300, 73)
    (2048, 32768, 12257)
    >>> auto_context(1000, 74)   # the floor: 16 rows a cluster
    16000
    """
    k, width = int(n_clusters), max(1, int(width))
    budget = CONTEXT_BUDGET // (k * width)
    return max(DEFAULT_CONTEXT, MIN_PER_CLUSTER * k, min(CONTEXT_PER_CLUSTER * k, budget))


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
    temperature_scales: tuple[float, ...] = TEMPERATURE_SCALES
    """Multiples of the model's inverse temperatures the learned steps are made at
    (:func:`learned_search`); ``(1.0,)``: the model's own only."""
    least_gain: float = 0.0
    """After the schedule, the learned steps end when their objective has not improved
    by this relative amount (or the fit's ``tol``, where larger) for :data:`PATIENCE`
    steps in a row."""

    def __post_init__(self) -> None:
        scales = tuple(float(f) for f in self.temperature_scales)
        if not scales or not all(0 < f < float("inf") for f in scales):
            raise ValueError("temperature_scales must be finite numbers > 0, got "
                             f"{self.temperature_scales!r}.")
        self.temperature_scales = scales
        if not 0 <= self.least_gain < 1:
            raise ValueError(f"least_gain must be in [0, 1), got {self.least_gain!r}.")

    def stop_gain(self, rel_tol: float) -> float:
        """The relative gain below which the learned steps end after the schedule: the
        fit's ``rel_tol`` or :attr:`least_gain`, whichever is larger."""
        return max(rel_tol, self.least_gain)


# ``learned_polish="auto"`` polishes from this many clusters up. With fewer, a breathing
# cycle's new centres reach most regions of the data and the moves leave little that
# the soft steps find: on the anchor sets of 10 to 60 clusters the polish changed
# almost no result, at a tenth more time (docs: "The learned polish").
POLISH_MIN_CLUSTERS = 64


def auto_polish(n_clusters: int, learned_starts: int, breathing_depth: int) -> bool:
    """Whether ``learned_polish="auto"`` polishes: learned runs and global moves run,
    with at least :data:`POLISH_MIN_CLUSTERS` clusters; one choice for the estimator and
    for many problems at once.

    Examples
    --------
    >>> auto_polish(100, 1, 7), auto_polish(10, 1, 7), auto_polish(100, 0, 7)
    (True, False, False)
    """
    return learned_starts >= 1 and breathing_depth > 0 and n_clusters >= POLISH_MIN_CLUSTERS


def learned_pace(moves_follow: bool) -> dict:
    """The :class:`LearnedSetup` fields that differ where global moves follow the learned
    steps (one temperature scale, the steps ending at :data:`BREATHING_GAIN`) from where
    they end the fit; one choice for the estimator and for many problems at once.

    Examples
    --------
    >>> learned_pace(True)
    {'temperature_scales': (4.0,), 'least_gain': 0.003}
    """
    if moves_follow:
        return {"temperature_scales": BREATHING_SCALES, "least_gain": BREATHING_GAIN}
    return {"temperature_scales": TEMPERATURE_SCALES, "least_gain": 0.0}


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


@torch.no_grad()
def learned_loop(step: Callable, objective: Callable, z: torch.Tensor, *, schedule: int,
                 max_iter: int, tol: torch.Tensor, rel_tol: float, d: int,
                 measures: bool = False, report: Callable | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Learned steps of runs from model-frame centres ``z`` (e, k, w), until each stops:
    one loop for a fit's run (``e`` = 1) and for many problems' runs.

    Every step of the model's schedule runs (soft steps may raise the objective on the
    way); after it, a run stops when its squared centre shift (over the first ``d``
    features) is within its ``tol`` (e,), when its objective has not improved by a
    relative ``rel_tol`` for :data:`PATIENCE` steps, or after ``max_iter`` steps in all.
    A step that gives non-finite centres stops its run, uncounted.

    Each run's centres are weighed (their objective taken) once, before its next step
    is kept. With ``measures`` (each step takes the objective at its input on the way:
    the closed form finds every point's nearest centre for A1), the next step weighs
    them, and ``objective`` is called only for a run's last centres and for a run that
    may stall there (so no step is made that the rules would not make); the rules, and
    so the steps, are the same either way.

    Parameters
    ----------
    step : callable
        ``step(z, i, active) -> z``: step ``i`` of the runs ``active`` (None: all) from
        their centres ``z``; with ``measures``, ``-> (z, value)``, ``value`` the
        objective at the input ``z`` (float64).
    objective : callable
        ``objective(z, active) -> (e_active,)`` float64: the k-means objective of the
        runs ``active`` (None: all) at centres ``z``.
    z : Tensor of shape (e, k, w)
        The start (overwritten with the runs' last centres).
    measures : bool, default=False
        Whether ``step`` returns the objective at its input.
    report : callable, optional
        ``report(i, shift, objective, stopped)`` after each step of a single run.

    Returns
    -------
    best : Tensor of shape (e, k, w)
        Each run's centres of least objective among its start and its steps.
    n_steps : LongTensor of shape (e,)
    objective : Tensor of shape (e,)
        The objective at ``best`` (float64).
    """
    e, device = z.shape[0], z.device
    best_z, best = z.clone(), torch.full((e,), torch.inf, dtype=torch.float64, device=device)
    reference = best.clone()
    stalled = torch.zeros(e, dtype=torch.long, device=device)
    n_steps = torch.zeros(e, dtype=torch.long, device=device)
    shift_in = torch.zeros(e, dtype=torch.float64, device=device)  # for the report
    patient = max(schedule, 1)  # the weighing after which the patience counts

    def weigh(runs: torch.Tensor, value: torch.Tensor, i: int) -> torch.Tensor:
        """Take ``value``, the objective of runs ``runs`` at their centres after ``i``
        steps (the best so far, the patience); returns which runs stall there."""
        better = value < best[runs]
        best_z[runs[better]] = z[runs[better]]
        best[runs[better]] = value[better]
        if i < patient:  # the schedule runs to its end
            reference[runs] = best[runs]
            return torch.zeros_like(better)
        improved = value < reference[runs] * (1.0 - rel_tol)
        reference[runs] = torch.where(improved, value, reference[runs])
        stalled[runs] = torch.where(improved, 0, stalled[runs] + 1)
        return stalled[runs] >= PATIENCE

    def weighed(runs: torch.Tensor, i: int, value: torch.Tensor | None = None,
                reason: str | None = None) -> torch.Tensor:
        """:func:`weigh` of ``runs`` (their objective measured unless given), the
        report; returns which runs stall."""
        if value is None:
            value = objective(z[runs], None if runs.numel() == e else runs)
        stop = weigh(runs, value, i)
        if report is not None and i > 0 and runs.numel() and int(runs[0]) == 0:
            report(i - 1, float(shift_in[0]), float(value[0]),
                   reason if reason or not bool(stop[0]) else "stalled")
        return stop

    active = torch.arange(e, device=device)
    for i in range(max_iter):
        # Centres weighed before the step: all of them unless the step weighs them,
        # else those whose weighing may stop them (one more stall).
        first = (torch.ones_like(active, dtype=torch.bool) if not measures else
                 (stalled[active] == PATIENCE - 1) & (i >= patient))
        if bool(first.any()):
            stop = torch.zeros_like(first)
            stop[first] = weighed(active[first], i)
            active, first = active[~stop], first[~stop]
        if active.numel() == 0:
            break
        every = active.numel() == e
        new = step(z[active], i, None if every else active)
        if measures:  # the rest are weighed by their step; none of them can stall
            # there, since a run one stall from the end was weighed before it
            new, value = new
            later = ~first
            if bool(later.any()):
                weighed(active[later], i, value if bool(later.all()) else value[later])
        finite = torch.isfinite(new).all(-1).all(-1)
        shift = (new - z[active])[..., :d].double().square().sum((-1, -2))
        z[active] = torch.where(finite.view(-1, 1, 1), new, z[active])
        n_steps[active] += finite.long()
        shift_in[active] = shift
        done = ~finite | ((shift <= tol[active]) if i + 1 >= schedule
                          else torch.zeros_like(finite))
        if report is not None and active.numel() and int(active[0]) == 0 and not finite[0]:
            report(i, float(shift[0]), float("nan"), "non-finite")
        if bool(done.any()):
            converged = active[done & finite]
            if converged.numel():
                weighed(converged, i + 1, reason="converged")
            active = active[~done]
    else:
        if active.numel():  # the last step's centres
            weighed(active, max_iter)
    return best_z, n_steps, best


@torch.no_grad()
def learned_search(stepper: LearnedStepper, objective: Callable, z: torch.Tensor, *,
                   scales: tuple[float, ...], report: Callable | None = None,
                   report_step: Callable | None = None,
                   **loop) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`learned_loop` of runs from ``z`` (e, k, w) at each temperature scale of
    ``stepper`` (:meth:`~skformer.nn.inference.LearnedStepper.scaled`), from the same
    start; each run keeps the centres of least objective over all scales (a later
    scale only when lower by more than a relative :data:`SCALE_MARGIN`).

    Parameters
    ----------
    stepper : LearnedStepper
        Its :meth:`~skformer.nn.inference.LearnedStepper.measured_step` makes the steps
        where it :attr:`~skformer.nn.inference.LearnedStepper.measures` the objective.
    objective : callable
        As for :func:`learned_loop`.
    z : Tensor of shape (e, k, w)
        The start (not changed).
    scales : tuple of float
    report : callable, optional
        ``report(scale)`` before each scale's steps.
    report_step : callable, optional
        :func:`learned_loop`'s ``report``.
    **loop
        :func:`learned_loop`'s other keyword arguments.

    Returns
    -------
    best : Tensor of shape (e, k, w)
    n_steps : LongTensor of shape (e,)
        The steps of each run at its kept scale.
    scale : Tensor of shape (e,)
        Each run's kept scale (float64).
    """
    best_z = n_steps = best = chosen = None
    for f in scales:
        if report is not None:
            report(f)
        scaled = stepper.scaled(f) if f != 1.0 else stepper
        step = scaled.measured_step if stepper.measures else scaled.step
        found, n, value = learned_loop(step, objective, z.clone(), report=report_step,
                                       measures=stepper.measures, **loop)
        if best is None:
            best_z, n_steps, best = found, n, value
            chosen = torch.full_like(value, f, dtype=torch.float64)
            continue
        better = value < best * (1.0 - SCALE_MARGIN)
        best_z[better], n_steps[better] = found[better], n[better]
        best = torch.where(better, value, best)
        chosen[better] = f
    return best_z, n_steps, chosen


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
        self.scales, self.setup = setup.temperature_scales, setup
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

        At each of the setup's temperature scales (:func:`learned_search`): every
        step of the model's schedule runs (soft steps may raise the objective on the
        way); after it, the steps stop when the squared centre shift is within ``tol``
        (fit frame), when the objective has not improved by a relative ``rel_tol`` (or
        the setup's ``least_gain``, where larger) for :data:`PATIENCE` steps, or after
        ``max_iter`` steps in all.

        Returns
        -------
        centres : Tensor of shape (k, d)
            The centres of least objective among the start and the steps at every
            scale (fit frame, ``c``'s dtype).
        n_steps : int
            The steps at the kept scale.
        """
        frame, start = self.frame, c
        if self.subspace is not None:  # the steps run in the principal directions
            c = self.subspace.project(c.double().unsqueeze(0))[0]
        z = frame.to_model(c).unsqueeze(0)
        scale2 = frame.scale**2
        # A context whose range is below 1e-154 of the fit frame's (one far value sets the
        # fit frame's scale) squares to 0: its model-frame tolerance is then unbounded.
        model_tol = tol / scale2 if scale2 > 0 else float("inf")

        def objective(z: torch.Tensor, active) -> torch.Tensor:
            return torch.tensor([self.objective(z)], dtype=torch.float64)

        def report(i: int, shift: float, value: float, reason: str | None) -> None:
            if reason == "non-finite":
                logger.info("Learned step %d gave non-finite centres: stopped.", i)
                return
            logger.info("Learned step %d, centre shift %.6g, objective %.6g.", i,
                        to_user(shift * scale2), to_user(value * scale2) * self.weight_unit)
            if reason == "converged":
                logger.info("Learned steps converged at step %d.", i)
            elif reason == "stalled":
                logger.info("Learned steps stopped at step %d: no progress in %d steps.",
                            i, PATIENCE)

        logging_on = logger.isEnabledFor(logging.INFO)

        def announce(f: float) -> None:
            if len(self.scales) > 1:
                logger.info("Learned steps at %g times the schedule's inverse temperatures.",
                            f)

        best_z, n_steps, kept = learned_search(
            self.stepper, objective, z, scales=self.scales,
            report=announce if logging_on else None, schedule=self.model.schedule,
            max_iter=max_iter, tol=torch.tensor([model_tol], dtype=torch.float64),
            rel_tol=self.setup.stop_gain(rel_tol), d=c.shape[-1],
            report_step=report if logging_on else None)
        n_steps = int(n_steps[0])
        if logging_on and len(self.scales) > 1:
            logger.info("Learned steps kept at %g times the inverse temperatures.",
                        float(kept[0]))
        best_c = frame.to_fit(best_z[0], torch.float64)
        if self.subspace is None:
            return best_c.to(start.dtype), n_steps
        full = lift(self.full_rows.unsqueeze(0), self.weight, self.projected.unsqueeze(0),
                    best_c.unsqueeze(0), start.double().unsqueeze(0))
        return full[0].to(start.dtype), n_steps
