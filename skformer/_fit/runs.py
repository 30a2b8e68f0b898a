"""The run logic of a fit: frame, initialisation, runs, best of ``n_init``.

Dimension legend: ``n`` samples, ``k`` clusters, ``d`` features.

A run starts from initial centres. Its Lloyd part (the exact transformer's steps over
all the data) is the run of :class:`sklearn.cluster.KMeans` from the same start. A run
with learned steps also runs the learned model from the same start (and, with
``learned_starts > 1``, from further random starts) with Lloyd steps after it, and
keeps whichever ends with the lower inertia, so it never ends above the plain Lloyd run.
When the learned steps' context is a sample, a learned run gets its Lloyd steps on all
the data only where the context screen (:mod:`.screen`) finds it another, better
clustering of the context. The best run of ``n_init`` is chosen by inertia, as KMeans
does. With a breathing depth, global moves (:mod:`.moves`) then start from it, and their
centres replace it only where their inertia is lower; with ``learned_polish``, the learned
steps run once more from the result (then Lloyd steps), kept on the same terms; Hartigan's
single-point moves end the fit.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from joblib import Parallel, delayed
from sklearn.cluster import kmeans_plusplus
from sklearn.utils.extmath import row_norms
from sklearn.utils.validation import _is_arraylike_not_scalar, check_array

from ..nn.model import ExactLloydModel
from .blas import one_blas_thread
from .engine import Backend, choose_backend, run_lloyd, same_partition
from .engine.base import CentreCosts
from .frame import Frame, ModelFrame, ldexp_csr
from .learned import LearnedPhase, LearnedSetup, context_indices, project_context
from .moves import IMPROVEMENT_FLOOR, breathing
from .repeats import distinct_source
from .screen import ContextScreen
from .sources import ArraySource, Source, sum_parts

__all__ = ["Breathed", "FitResult", "FitSpec", "INIT_SAMPLE", "breathe_problem", "fit"]

logger = logging.getLogger("skformer")

# Above this many rows, a source that is not an in-memory array draws its initial
# centres from a seeded sample of max(INIT_SAMPLE, 20 k) rows.
INIT_SAMPLE = 10_000


@dataclass
class FitSpec:
    """Everything a fit needs besides the data (plain values)."""

    n_clusters: int
    init: Any
    """"k-means++", "random", a callable or an array (k, d) in the user's frame."""
    n_init: int
    max_iter: int
    tol: float
    """Relative tolerance (times the mean per-feature variance)."""
    random_state: np.random.RandomState
    exact: ExactLloydModel | None = None
    """The exact model when its literal (dense) path is asked for; None: fused steps."""
    learned: LearnedSetup | None = None
    finish: str = "lloyd"
    learned_starts: int = 0
    """Learned runs per start: the first from the start itself, the others from k-means++
    centres drawn on the context."""
    backend: Callable[[Source, int], Backend] | None = None
    """Makes the fit's Lloyd backend from the source and ``n_clusters`` (tests choose
    one); None: :func:`~skformer._fit.engine.choose_backend`."""
    breathing_depth: int = 0
    """Centres the first breathing cycle adds and removes (:mod:`.moves`), from the best
    run; 0: no global moves."""
    hartigan: bool = False
    """Hartigan and Wong's single-point moves from the end of the global moves (or the
    best run), where the backend offers them (:meth:`~.engine.base.Backend.single_moves`)."""
    learned_polish: bool = False
    """The learned steps once more from the end of the global moves (or the best run),
    then Lloyd steps, before the single-point moves; where learned steps run."""


@dataclass
class _Run:
    centers: torch.Tensor  # (k, d), fit frame
    n_learned: int = 0
    n_lloyd: int = 0
    kind: str = "lloyd"
    inertia: float | None = None
    n_cycles: int = 0  # breathing cycles made from this run
    moved: bool = False  # whether these are the global moves' centres
    n_single: int = 0  # rows the single-point moves moved to give these centres
    polished: bool = False  # whether these are the learned polish's centres


@dataclass
class FitResult:
    """What a fit found, in the fit frame, and the frame."""

    centers: torch.Tensor
    """(k, d), fit frame, the data's dtype."""
    frame: Frame
    n_learned_steps: int
    n_lloyd_steps: int
    selected: str
    """Which run of the best start gave the result: "lloyd" or "learned"."""
    learned_used: bool
    learned_skipped: str | None = None
    """Why the fit made no learned run although its model was chosen (the data's range
    overflows, a sparse context too large to make dense), None otherwise."""
    n_breathing_cycles: int = 0
    """Breathing cycles made from the best run (whether or not they improved on it)."""
    breathing_improved: bool = False
    """Whether the result is the global moves' (they improved on the best run)."""
    n_hartigan_moves: int = 0
    """Rows that Hartigan's single-point moves moved, where their result was kept."""
    polish_improved: bool = False
    """Whether the learned polish (``learned_polish``) lowered the inertia."""

    @property
    def n_iter(self) -> int:
        return self.n_learned_steps + self.n_lloyd_steps


def _sample_indices(n: int, size: int, random_state) -> np.ndarray | None:
    """Seeded sample of ``size`` row indices (sorted) for the initialisation, or None.

    Drawn from a copy of ``random_state`` on a stream apart from the context's.
    """
    if n <= size:
        return None
    seed = copy.deepcopy(random_state).randint(np.iinfo(np.int32).max)
    return np.sort(np.random.default_rng([seed, 1]).choice(n, size, replace=False))


try:  # KMeans' own call: the rows were validated once, their norms are computed here
    from sklearn.cluster._kmeans import _kmeans_plusplus
except ImportError:  # pragma: no cover - a scikit-learn without it: the public function
    _kmeans_plusplus = None


def _plusplus(X, n_clusters, random_state, sample_weight):
    """k-means++ centres (k, d) of rows ``X``, as KMeans draws them (the public function
    validates ``X`` and the weights again: half a millisecond on iris)."""
    if _kmeans_plusplus is None:  # pragma: no cover
        return kmeans_plusplus(X, n_clusters, sample_weight=sample_weight,
                               random_state=random_state)[0]
    return _kmeans_plusplus(X, n_clusters, row_norms(X, squared=True), sample_weight,
                            random_state)[0]


def _init_centroids(X, n_clusters, init, random_state, sample_weight):
    """KMeans' initialisation on rows ``X`` (fit frame), same random stream."""
    if isinstance(init, str) and init == "k-means++":
        centers = _plusplus(X, n_clusters, random_state, sample_weight)
    elif isinstance(init, str) and init == "random":
        seeds = random_state.choice(X.shape[0], size=n_clusters, replace=False,
                                    p=sample_weight / sample_weight.sum())
        centers = X[seeds]
        if sp.issparse(centers):
            centers = centers.toarray()
    elif callable(init):
        centers = _checked_centers(init(X, n_clusters, random_state=random_state),
                                   n_clusters, X.shape[1], X.dtype)
    else:
        centers = init
    return centers


def _checked_centers(centers, n_clusters: int, n_features: int, dtype) -> np.ndarray:
    """A callable ``init``'s output as a C-ordered array of ``dtype``, with KMeans'
    errors for a wrong shape (they show the values as the callable returned them)."""
    centers = check_array(centers, dtype=dtype, copy=False, order="C")
    if centers.shape != (n_clusters, n_features):
        raise ValueError(
            f"The shape of the initial centers {centers.shape} does not match "
            f"the number of clusters {n_clusters}." if centers.shape[0] != n_clusters
            else f"The shape of the initial centers {centers.shape} does not match "
            f"the number of features of the data {n_features}.")
    return centers


def _rescaled_callable(init: Callable, power: int) -> Callable:
    """A callable ``init`` sees the data in the user's units (dense: centred), as in
    KMeans; its output is checked in those units too, then brought to the fit frame."""

    def scaled_init(X, n_clusters, random_state):
        X = ldexp_csr(X, power) if sp.issparse(X) else np.ldexp(X, power)
        centers = _checked_centers(init(X, n_clusters, random_state=random_state),
                                   n_clusters, X.shape[1], X.dtype)
        return np.ldexp(centers, -power)

    return scaled_init


# The most values of a sparse context made dense for the learned steps (8 GiB of float64
# would be 2**30): with its principal-subspace computation a context takes about three
# times its dense size.
DENSE_CONTEXT_CELLS = 2**27
# The context screen (:mod:`.screen`) serves where the context is at most this share of
# the rows: it settles two runs on the context to spare one run on all the data, so on
# a context of more than half the rows it costs more than the finish it may spare.
SCREEN_SHARE = 0.5


def _moments_partial(block) -> tuple[np.ndarray, np.ndarray]:
    """A block's per-feature sums and sums of squares (float64, (d,) each)."""
    if sp.issparse(block.x):
        x = block.x.astype(np.float64)
        return (np.asarray(x.sum(0)).ravel(), np.asarray(x.multiply(x).sum(0)).ravel())
    x = block.x.double()
    return x.sum(0).cpu().numpy(), x.square().sum(0).cpu().numpy()


def _block_weight(block) -> float:
    """A block's total weight (its rows where all weights are 1)."""
    return float(block.x.shape[0] if block.w is None else block.w.sum())


def _fit_frame_variance(source: Source) -> float:
    """The mean over features of the (unweighted) variance of the source's rows in its
    fit frame, by one pass."""
    sums, squares = source.map_reduce(_moments_partial, sum_parts)
    n = source.n_samples
    return float(np.mean(np.maximum(squares / n - np.square(sums / n), 0.0)))


class _Fit:
    """One fit's state: the source, its frame, tolerance, learned phase."""

    def __init__(self, source: Source, spec: FitSpec):
        self.source, self.spec = source, spec
        summary = source.summary()
        if not summary.finite:
            raise ValueError("Input X contains NaN or infinity.")
        summary.weights.check(dtype=source.dtype)  # weights are cast to X's dtype
        if summary.weights.unit:
            source.drop_weights()
        self.frame = frame = summary.frame(unit_within=source.unit_within)
        source.set_frame(frame)
        self.dtype = torch.float32 if source.dtype == np.float32 else torch.float64
        with np.errstate(over="ignore", under="ignore"):
            variance = float(np.ldexp(summary.variance,
                                      2 * (summary.variance_power - frame.power)))
        if spec.tol != 0 and not np.isfinite(variance):
            # The summary's variance overflowed in the user's units (a sparse source's,
            # of data beyond 1e154): a tolerance of inf would stop every run after one
            # step. One pass in the fit frame, where the values lie in [-2, 2), gives it.
            variance = _fit_frame_variance(source)
        self.tol = 0.0 if spec.tol == 0 else variance * spec.tol
        self.backend = self.make_backend(spec.n_clusters)
        self._warm: dict[int, Backend] = {}
        self._warm_source: Source | None = None
        self.phase: LearnedPhase | None = None
        self.skipped: str | None = None
        self.context: np.ndarray | None = None
        self.screen: ContextScreen | None = None
        self._x2: float | None = None
        # The learned steps of the polish (fit-frame centres in, centres and steps out):
        # the learned phase's, or a caller's (batch_k_means gives its own per problem).
        self.learned_end: Callable[[torch.Tensor], tuple[torch.Tensor, int]] | None = None

    def make_backend(self, k: int, warm: bool = False, source: Source | None = None
                     ) -> Backend:
        """The fit's kind of Lloyd backend for ``k`` centres on ``source`` (default: the
        fit's) (``warm``: for runs that start near a fixed point)."""
        spec = self.spec
        source = self.source if source is None else source
        return (choose_backend(source, k, spec.exact, warm=warm) if spec.backend is None
                else spec.backend(source, k))

    @property
    def warm_source(self) -> Source:
        """The rows of the warm runs: the distinct rows weighted by their copies, where
        the data repeat rows (:func:`~.repeats.distinct_source`), else the fit's source."""
        if self._warm_source is None:
            self._warm_source = distinct_source(self.source) or self.source
            if self._warm_source is not self.source:
                logger.info("Warm runs walk the %d distinct rows of %d.",
                            self._warm_source.n_samples, self.source.n_samples)
        return self._warm_source

    def warm_backend(self, k: int) -> Backend:
        """The fit's backend for runs of ``k`` centres that start near a fixed point (the
        learned run's finish, the global and single-point moves), made once per ``k``,
        on :attr:`warm_source`."""
        if k not in self._warm:
            self._warm[k] = self.make_backend(k, warm=True, source=self.warm_source)
        return self._warm[k]

    @property
    def x2(self) -> float:
        """The points' weighted sum of squared norms (fit frame), one pass, once."""
        if self._x2 is None:
            self._x2 = self.backend.norms()
        return self._x2

    def to_user(self, squared: float) -> float:
        return self.frame.squared_to_user(squared)

    def prepare_learned(self, random_state) -> None:
        setup = self.spec.learned
        if setup is None or self.spec.n_clusters == 1:
            return
        if setup.max_context is None and not self.source.in_memory:
            raise ValueError(
                "max_context=None (every point in the learned steps' context) needs "
                "in-memory data; set an integer max_context for dask arrays and memmaps.")
        idx = context_indices(self.source.n_samples, setup.max_context, random_state)
        rows, w = self.source.gather(idx)
        if sp.issparse(rows):  # the learned steps and the screen read dense rows
            cells = rows.shape[0] * rows.shape[1]
            if cells > DENSE_CONTEXT_CELLS:
                reason = (f"the context of {rows.shape[0]} sparse rows of {rows.shape[1]} "
                          f"features would take {cells * rows.dtype.itemsize / 2**30:.1f} GiB "
                          f"dense (at most {DENSE_CONTEXT_CELLS:.0e} values): pass a smaller "
                          "max_context, or reduce the features first (TruncatedSVD)")
                self.skipped = reason
                logger.info("Learned steps skipped: %s.", reason)
                warnings.warn(f"No learned run is made: {reason}.", UserWarning, stacklevel=4)
                return
            rows = rows.toarray()
        # The model frame maps the context (all the learned steps see) into the model's
        # box, whatever the rows outside it.
        subspace = seen = None
        if setup.project is not None:  # wide data: the steps run in principal directions
            subspace, seen = project_context(rows, w, setup.project, self.source.device)
        low, high = (rows.min(0), rows.max(0)) if seen is None else (seen.min(0), seen.max(0))
        mframe = ModelFrame.of(low, high, setup.padding, self.source.device)
        if mframe is None:
            self.skipped = "the range of the data overflows float64"
            logger.info("The data's range overflows: learned steps skipped.")
            warnings.warn("No learned run is made: the range of the data overflows "
                          "float64 (the learned steps need it); the fit is KMeans'.",
                          UserWarning, stacklevel=4)
            return
        self.context = rows
        self.phase = LearnedPhase(setup, rows, w, mframe, subspace, seen)
        if self.spec.learned_polish:
            self.learned_end = self.learned_steps
        if (idx is not None and self.spec.finish == "lloyd"  # the context is a sample
                and idx.size <= SCREEN_SHARE * self.source.n_samples):
            self.screen = ContextScreen(rows, w, self.spec.max_iter)

    def starts(self, random_state) -> list[np.ndarray]:
        """All initial centres, drawn first and in KMeans' order."""
        spec, source, frame = self.spec, self.source, self.frame
        init = spec.init
        if _is_arraylike_not_scalar(init):
            init = frame.apply(np.asarray(init, dtype=source.dtype))
        elif callable(init) and frame.power != 0:
            init = _rescaled_callable(init, frame.power)
        rows = weights = None
        if not _is_arraylike_not_scalar(init):
            idx = None if source.in_memory else _sample_indices(
                source.n_samples, max(INIT_SAMPLE, 20 * spec.n_clusters), random_state)
            rows, weights = source.gather(idx)
            if weights is None:
                weights = np.ones(rows.shape[0], dtype=rows.dtype)
            else:
                weights = weights.astype(rows.dtype)
        starts = []
        for _ in range(spec.n_init):
            starts.append(_init_centroids(rows, spec.n_clusters, init, random_state, weights))
            logger.info("Initialization complete")
        return starts

    def inertia(self, c: torch.Tensor, other: torch.Tensor | None = None):
        return self.backend.score(c.cpu().numpy(),
                                  None if other is None else other.cpu().numpy())

    def lloyd(self, c: torch.Tensor, kind: str = "lloyd", n_learned: int = 0) -> _Run:
        """Lloyd steps from ``c``; a learned run's end (``n_learned`` > 0) is near a fixed
        point, so its steps take the warm backend (the same steps, fewer products)."""
        backend = self.backend if n_learned == 0 else self.warm_backend(c.shape[0])
        end = run_lloyd(backend, c, self.spec.max_iter, self.tol, to_user=self.to_user,
                        x2=self.x2 if self.compares else None)
        return _Run(end.centers, n_learned, end.n_iter, kind, end.inertia)

    def learned_steps(self, c: torch.Tensor) -> tuple[torch.Tensor, int]:
        spec = self.spec
        return self.phase.run(c, spec.max_iter, self.tol, spec.tol, to_user=self.to_user)

    def scored(self, run: _Run) -> _Run:
        """``run`` with its inertia (one pass, unless its last Lloyd step gave it)."""
        if run.inertia is None:
            run.inertia = self.inertia(run.centers)[0]
        return run

    def extra_start(self, index: int, seed: tuple[int, int]) -> torch.Tensor:
        """k-means++ centres drawn on the context rows from a stream of their own: the
        start of extra learned run ``index``."""
        state = np.random.RandomState(np.random.SeedSequence([*seed, index]).generate_state(1))
        centres, _ = kmeans_plusplus(self.context, self.spec.n_clusters, random_state=state)
        return torch.from_numpy(np.ascontiguousarray(centres)).to(self.source.device, self.dtype)

    def better(self, run: _Run, best: _Run | None) -> bool:
        """KMeans' rule: lower inertia, and not the same partition renamed."""
        if best is None:
            return True
        if not run.inertia < best.inertia:
            return False
        _, table = self.inertia(run.centers, best.centers)
        return not bool(same_partition(table, self.spec.n_clusters))

    def breathe(self, run: _Run) -> _Run:
        """Breathing cycles (:func:`~.moves.breathing`) from ``run``'s centres; their
        best centres, where KMeans' rule finds them better than the run's."""
        spec = self.spec
        if spec.breathing_depth == 0 or spec.n_clusters == 1:
            return run
        self.scored(run)
        device = run.centers.device
        # What the last costs pass learnt of the rows (their bounds), for the next run,
        # which starts from centres near those of the pass.
        last = None
        warm = self.warm_backend

        def costs(c: np.ndarray) -> CentreCosts:
            nonlocal last
            found, last = warm(c.shape[0]).costs_and_state(c)
            return found

        def lloyd(c: np.ndarray) -> tuple[np.ndarray, int]:
            nonlocal last
            end = run_lloyd(warm(c.shape[0]), torch.from_numpy(c).to(device),
                            spec.max_iter, self.tol, log=False, state=last)
            last = None
            return end.centers.cpu().numpy(), end.n_iter

        found = breathing(run.centers.cpu().numpy(), lloyd=lloyd, costs=costs,
                          depth=spec.breathing_depth, total_weight=self.total_weight,
                          tol=spec.tol, max_cycles=spec.max_iter, to_user=self.to_user)
        run.n_cycles = found.n_cycles
        if found.n_cycles == 0:
            return run
        # The steps stay the run's (KMeans' n_iter_ counts one run's steps, at most
        # max_iter); the cycles are counted apart.
        moved = self.scored(_Run(torch.from_numpy(found.centers).to(device), run.n_learned,
                                 run.n_lloyd, run.kind, None, found.n_cycles, True))
        logger.info("Breathing: %d cycles, %d Lloyd steps, inertia %.6g from %.6g.",
                    found.n_cycles, found.n_steps, self.to_user(moved.inertia),
                    self.to_user(run.inertia))
        return moved if self.better(moved, run) else run

    def polish(self, run: _Run) -> _Run:
        """The learned steps from ``run``'s centres (the end of the global moves), then
        Lloyd steps; kept where their inertia is lower than the run's.

        Where the moves stall, the soft steps still move whole groups of centres at
        once, which neither a breathing cycle nor a single-point move does."""
        if self.learned_end is None or self.spec.n_clusters == 1:
            return run
        self.scored(run)
        centres, n_learned = self.learned_end(run.centers)
        end = run_lloyd(self.warm_backend(self.spec.n_clusters), centres, self.spec.max_iter,
                        self.tol, log=False)
        polished = self.scored(_Run(end.centers, run.n_learned, run.n_lloyd, run.kind, None,
                                    run.n_cycles, run.moved, polished=True))
        logger.info("Learned polish: %d learned and %d Lloyd steps, inertia %.6g from %.6g.",
                    n_learned, end.n_iter, self.to_user(polished.inertia),
                    self.to_user(run.inertia))
        # As a breathing cycle counts one: a partition that differs by rounding alone
        # is no improvement.
        better = polished.inertia < run.inertia * (1.0 - IMPROVEMENT_FLOOR)
        return polished if better else run

    def refine(self, run: _Run) -> _Run:
        """Hartigan and Wong's single-point moves from ``run``'s centres, then Lloyd steps
        (to a fixed point of the fit's own arithmetic); kept where their inertia is
        lower than the run's."""
        spec = self.spec
        if not spec.hartigan or spec.n_clusters == 1:
            return run
        found = self.warm_backend(spec.n_clusters).single_moves(
            run.centers.cpu().numpy(), max_passes=spec.max_iter, floor=IMPROVEMENT_FLOOR)
        if found is None:
            logger.info("Single-point moves skipped: they walk the rows in this process "
                        "(in memory, a memmap or a sparse matrix), not a dask array.")
            return run
        logger.info("Single-point moves: %d rows moved in %d passes.", found.n_moves,
                    found.n_passes)
        if found.n_moves == 0:
            return run
        self.scored(run)
        device = run.centers.device
        start = torch.from_numpy(found.centers).to(device, run.centers.dtype)
        end = run_lloyd(self.warm_backend(spec.n_clusters), start, spec.max_iter, self.tol,
                        log=False)
        moved = self.scored(_Run(end.centers, run.n_learned, run.n_lloyd, run.kind, None,
                                 run.n_cycles, run.moved, found.n_moves, run.polished))
        logger.info("Single-point moves: inertia %.6g from %.6g.",
                    self.to_user(moved.inertia), self.to_user(run.inertia))
        # Moves were made: the partition is another one (Lloyd's steps keep it, each row
        # being strictly nearest its own mean), so the inertia alone decides, without
        # KMeans' pass comparing the two assignments.
        return moved if moved.inertia < run.inertia else run

    @property
    def total_weight(self) -> float:
        """The points' total weight (their number without weights), one pass over the
        weights."""
        return float(self.source.map_reduce(_block_weight, sum_parts))

    @property
    def compares(self) -> bool:
        """Whether every run will be compared (several starts, or several runs per start
        that the context screen does not sort out first)."""
        return self.spec.n_init > 1 or (self.phase is not None and self.screen is None)

    def single_run(self, start: np.ndarray, seed: tuple[int, int], score: bool) -> _Run:
        spec = self.spec
        c0 = torch.from_numpy(np.asarray(start)).to(self.source.device, self.dtype)
        if self.phase is None:
            run = self.lloyd(c0)
            return self.scored(run) if score else run
        candidates = []
        if spec.finish == "lloyd":
            candidates.append(self.lloyd(c0))
        reference = None if self.screen is None else self.screen.settle(candidates[0].centers)
        for j in range(spec.learned_starts):
            c, n_learned = self.learned_steps(c0 if j == 0 else self.extra_start(j, seed))
            if spec.finish != "lloyd":
                candidates.append(_Run(c, n_learned, 0, "learned"))
                continue
            if reference is not None:
                settled = self.screen.settle(c)
                if not self.screen.improves(settled, reference):
                    continue
                reference = settled
            candidates.append(self.lloyd(c, "learned", n_learned))
        if len(candidates) == 1 and not score:
            return candidates[0]
        best = None
        for run in candidates:
            if self.better(self.scored(run), best):
                best = run
        logger.info("Run: %s", ", ".join(f"{r.kind} {self.to_user(r.inertia):.6g}"
                                          for r in candidates))
        return best


@one_blas_thread()
def fit(source: Source, spec: FitSpec) -> FitResult:
    """Fit k-means centres to a data source.

    Returns
    -------
    FitResult
    """
    random_state = spec.random_state
    state = _Fit(source, spec)
    state.prepare_learned(random_state)
    # The extra starts' seed comes from a copy, so KMeans' stream is left as it is (a
    # copy costs about a millisecond: made only when there are extra starts).
    seed = (copy.deepcopy(random_state).randint(np.iinfo(np.int32).max)
            if state.phase is not None and spec.learned_starts > 1 else 0)
    starts = state.starts(random_state)
    score = spec.n_init > 1
    parallel = source.in_memory and spec.n_init > 1
    if parallel:  # sequential by default, parallel under the user's parallel_config
        runs = Parallel(prefer="threads")(
            delayed(state.single_run)(start, (seed, 2 + i), score)
            for i, start in enumerate(starts))
    else:
        runs = [state.single_run(start, (seed, 2 + i), score) for i, start in enumerate(starts)]
    best = None
    for run in runs:
        if state.better(run, best):
            best = run
    best = state.refine(state.polish(state.breathe(best)))
    return FitResult(best.centers, state.frame, best.n_learned, best.n_lloyd, best.kind,
                     state.phase is not None, state.skipped, best.n_cycles, best.moved,
                     best.n_single, best.polished)


@dataclass
class Breathed:
    """The end of :func:`breathe_problem` where the global moves improved on the start."""

    centers: np.ndarray
    """(k, d), the user's frame, X's dtype."""
    labels: np.ndarray
    inertia: float
    n_cycles: int


def breathe_problem(X: np.ndarray, sample_weight: np.ndarray | None, centers: np.ndarray, *,
                    max_iter: int, tol: float, depth: int, device, hartigan: bool = False,
                    learned: Callable[[np.ndarray], tuple[np.ndarray, int]] | None = None
                    ) -> tuple[Breathed | None, int]:
    """The global moves of a fit (:meth:`_Fit.breathe`), with ``learned`` its learned
    polish (:meth:`_Fit.polish`) and with ``hartigan`` its single-point moves
    (:meth:`_Fit.refine`) on one in-memory problem, from centres ``centers`` (k, d) in
    the user's frame: :func:`skformer.batch_k_means` runs each problem's as
    :class:`~skformer.TransformerKMeans` runs its own.

    ``learned`` takes centres (k, d) of the user's frame to the learned steps' centres
    there, and their number.

    Returns
    -------
    breathed : Breathed or None
        None where the moves found nothing better than the start.
    n_cycles : int
        The cycles made.
    """
    source = ArraySource(np.ascontiguousarray(X), sample_weight, torch.device(device))
    spec = FitSpec(n_clusters=centers.shape[0], init=centers, n_init=1, max_iter=max_iter,
                   tol=tol, random_state=np.random.RandomState(0), breathing_depth=depth,
                   hartigan=hartigan, learned_polish=learned is not None)
    state = _Fit(source, spec)
    frame = state.frame
    if learned is not None:
        def learned_end(c: torch.Tensor) -> tuple[torch.Tensor, int]:
            user = frame.to_user(c.cpu().numpy()).astype(source.dtype, copy=False)
            found, n_steps = learned(user)
            back = frame.apply(np.asarray(found, dtype=source.dtype))
            return torch.from_numpy(np.ascontiguousarray(back)).to(c.device, c.dtype), n_steps
        state.learned_end = learned_end
    start = frame.apply(np.asarray(centers, dtype=source.dtype))
    run = _Run(torch.from_numpy(np.ascontiguousarray(start)).to(source.device))
    moved = state.refine(state.polish(state.breathe(run)))
    if moved is run:
        return None, run.n_cycles
    user = frame.to_user(moved.centers.cpu().numpy()).astype(source.dtype, copy=False)
    labels, inertia, _ = source.final(user)
    return Breathed(user, labels, float(inertia), moved.n_cycles), moved.n_cycles
