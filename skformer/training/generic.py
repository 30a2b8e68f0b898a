"""Training one temperature schedule for many shapes: the shape-generic learned model.

Dimension legend: ``b`` tasks, ``n`` points, ``k`` clusters, ``d`` features,
``S`` scheduled steps.

A model of the ``"multistep"`` recipe keeps the exact construction's projections and
learns only its temperature schedule. Expressed as *effective* inverse temperatures
(A1's per mean squared distance to the nearest centre, A3's and A4's per differing code
bit; :meth:`~skformer.nn.learned.LearnedKMeansModel.from_schedule`), that schedule does
not depend on ``d`` or ``k``. So it can be trained on tasks whose shape varies from batch
to batch: for a binary code of ``B`` bits, every ``k`` in ``(2^(B-1), 2^B]`` and a range
of ``d``. The result serves every shape of that code width (and, by projection of the
data onto their top principal directions, any ``d``) without training at fit time.

The loop is the ``"multistep"`` preset's on shapes drawn per batch: a random search
over schedules (:data:`~skformer.training.config.SEARCH_RANGES`, and step sizes in
:data:`STEP_SIZE_RANGE`), then Adam on the ``S x 3`` log temperatures and the ``S`` log
step sizes against the cost of ``unroll`` re-embedded steps relative to as many Lloyd
steps from the same starts; the best validation schedule is returned. A step size is
shape-free too: it multiplies the move of every centre toward the mean it attends to.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from ..losses import lloyd_costs
from ..nn.learned import LearnedKMeansModel
from ..objectives import multistep_terms, unroll
from ..tasks import FAMILIES, TaskConfig, sample_tasks
from .config import SEARCH_RANGES
from .validation import _starts

__all__ = ["STEP_SIZE_GRID", "STEP_SIZE_RANGE", "GenericConfig", "GenericResult", "code_clusters",
           "train_generic"]

# Step sizes of the random schedules tried (log-uniform): from eq. (4)'s unit step to
# just under 2, where an over-relaxed step on a centre's own cluster stops shrinking
# the distance to its mean (|1 - s| < 1).
STEP_SIZE_RANGE = (1.0, 1.9)
# Constant step sizes tried first, on the start's temperatures, when step sizes are
# learned: random vectors in ten dimensions rarely come near a constant one.
STEP_SIZE_GRID = (1.0, 1.2, 1.4, 1.6, 1.8)


def code_clusters(bits: int) -> tuple[int, int]:
    """The smallest and largest ``k`` whose binary code has ``bits`` columns.

    Examples
    --------
    >>> code_clusters(1), code_clusters(4), code_clusters(10)
    ((2, 2), (9, 16), (513, 1024))
    """
    if isinstance(bits, bool) or int(bits) != bits or bits < 1:
        raise ValueError(f"bits must be an int >= 1, got {bits!r}.")
    return (2, 2) if bits == 1 else (2 ** (bits - 1) + 1, 2**bits)


@dataclass(frozen=True)
class GenericConfig:
    """A training run of one shape-generic schedule.

    Parameters
    ----------
    bits : int
        Code width ``B``: tasks have ``k`` drawn uniformly from ``(2^(B-1), 2^B]``.
    features : tuple of int, default=(2, 4, 8, 16, 32, 64)
        Data widths ``d`` drawn from (uniformly) for each batch.
    points_per_cluster : int, default=16
        Points per task are ``max(min_points, points_per_cluster * k)``.
    min_points : int, default=256
    max_clusters : int or None, default=None
        Cap on the ``k`` of the training tasks (the cost of a batch grows with ``k``
        times the points): a code width whose clusters are capped trains on its
        smallest ``k`` up to the cap, and says so in its metadata.
    batch_size : int, default=16
    steps : int, default=60
        Adam steps after the search.
    lr : float, default=0.05
    search : int, default=48
        Random schedules tried (besides ``init``) before Adam.
    schedule : int, default=10
        Scheduled steps ``S``.
    unroll : int, default=10
        Re-embedded steps of the objective.
    kmeanspp_share : float, default=0.5
        Share of the tasks starting from k-means++ centres (the others: random points).
    families : tuple of str, default=("normal", "laplace")
    tiling_share : float, default=0.0
        Share of the batches whose tasks have fewer mixture components than clusters
        (``TaskConfig.n_components`` drawn from 1 to ``max(1, k // 8)``, scale
        ``tiling_scale``): clusters that tile a few wide densities, as pixels quantised
        to a palette, codebooks of sub-spaces and topics of embeddings do. The others
        have one component per cluster (the paper's tasks).
    tiling_scale : float, default=0.2
    n_val_batches : int, default=6
        Fixed validation batches (one shape each, drawn like the training batches).
    eval_every : int, default=20
    init : tuple of S x 3 floats or None, default=None
        A starting schedule (effective temperatures); None starts from the search.
    step_size : bool, default=False
        Learn a step size of the centre update per scheduled step (False: eq. (4)'s
        unit step).
    init_step_size : tuple of S floats or None, default=None
        The starting schedule's step sizes (with ``init``; None: unit steps).
    objective : {"multistep", "final"}, default="multistep"
        What the search, Adam and the choice of the best validation minimise: the
        multi-step objective (every step's cost over Lloyd's, plus the first step's), or
        the cost after ``unroll`` steps over Lloyd's alone. A fit keeps the best centres
        its steps reach, not every step's, so the final cost is what step sizes are
        judged by; the multi-step objective holds an over-relaxed first step against
        them.
    learn : tuple of str or None, default=None
        The parts of the schedule searched and trained, among ``"temperature"`` and
        ``"step_size"``; the others stay at ``init``'s (``("step_size",)`` fits step
        sizes to a given temperature schedule). None: every part the schedule has.
    seed : int, default=0

    Examples
    --------
    >>> GenericConfig(bits=5).clusters
    (17, 32)
    >>> GenericConfig(bits=10, max_clusters=600).clusters
    (513, 600)
    """

    bits: int
    features: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    points_per_cluster: int = 16
    min_points: int = 256
    max_clusters: int | None = None
    batch_size: int = 16
    steps: int = 60
    lr: float = 0.05
    search: int = 48
    schedule: int = 10
    unroll: int = 10
    kmeanspp_share: float = 0.5
    families: tuple[str, ...] = ("normal", "laplace")
    tiling_share: float = 0.0
    tiling_scale: float = 0.2
    n_val_batches: int = 6
    eval_every: int = 20
    init: tuple | None = None
    step_size: bool = False
    init_step_size: tuple | None = None
    objective: str = "multistep"
    learn: tuple[str, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(int(d) for d in self.features))
        object.__setattr__(self, "families", tuple(self.families))
        if self.init is not None:
            object.__setattr__(self, "init", tuple(tuple(map(float, r)) for r in self.init))
        if self.init_step_size is not None:
            object.__setattr__(self, "init_step_size", tuple(map(float, self.init_step_size)))
        code_clusters(self.bits)
        if not self.features or min(self.features) < 1:
            raise ValueError(f"features must be widths >= 1, got {self.features!r}.")
        for family in self.families:
            if family not in FAMILIES:
                raise ValueError(f"families must be among {FAMILIES}, got {family!r}.")
        for name in ("batch_size", "schedule", "unroll", "n_val_batches", "eval_every",
                     "points_per_cluster", "min_points"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.init is not None and np.shape(self.init) != (self.schedule, 3):
            raise ValueError(f"init must have shape ({self.schedule}, 3).")
        object.__setattr__(self, "learn", tuple(
            self.learn if self.learn is not None
            else ("temperature", "step_size") if self.step_size else ("temperature",)))
        if not self.learn or not set(self.learn) <= {"temperature", "step_size"}:
            raise ValueError("learn must name 'temperature' and/or 'step_size', got "
                             f"{self.learn!r}.")
        if "step_size" in self.learn and not self.step_size:
            raise ValueError("learn=('step_size', ...) needs step_size=True.")
        if "temperature" not in self.learn and self.init is None:
            raise ValueError("a schedule whose temperatures are not learned needs init.")
        if self.objective not in ("multistep", "final"):
            raise ValueError(f"objective must be 'multistep' or 'final', got "
                             f"{self.objective!r}.")
        if not 0.0 <= self.tiling_share <= 1.0:
            raise ValueError(f"tiling_share must be in [0, 1], got {self.tiling_share}.")
        if not self.tiling_scale > 0:
            raise ValueError(f"tiling_scale must be > 0, got {self.tiling_scale}.")
        if self.init_step_size is not None and (
                len(self.init_step_size) != self.schedule or min(self.init_step_size) <= 0):
            raise ValueError(f"init_step_size must be {self.schedule} positive floats.")

    @property
    def clusters(self) -> tuple[int, int]:
        """The range of ``k`` of the training tasks."""
        lo, hi = code_clusters(self.bits)
        if self.max_clusters is not None:
            hi = max(lo, min(hi, int(self.max_clusters)))
        return lo, hi

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class GenericResult:
    """What :func:`train_generic` returns."""

    log_effective: torch.Tensor
    """The best validation schedule, shape (S, 3) (log effective temperatures)."""
    log_step_size: torch.Tensor | None
    """Its log step sizes, shape (S,); None with ``config.step_size=False``."""
    config: GenericConfig
    history: list[dict]
    """One row per validation: step, val_score (multi-step objective), val_ratio (cost
    after ``unroll`` steps over Lloyd's), seconds."""
    val_ratio: float
    """``val_ratio`` of the returned schedule."""
    seconds: float


def _streams(seed: int) -> dict[str, torch.Generator]:
    names = ("shape", "train", "val", "search")
    states = np.random.SeedSequence([seed, 0x5CED]).generate_state(len(names), dtype=np.uint64)
    return {n: torch.Generator().manual_seed(int(s) >> 1)
            for n, s in zip(names, states, strict=True)}


def _draw_batch(config: GenericConfig, index: int, gens: dict) -> tuple:
    """One batch of tasks of one shape: points, starts, Lloyd's costs, (d, k)."""
    lo, hi = config.clusters
    g = gens["shape"]
    k = int(torch.randint(lo, hi + 1, (1,), generator=g))
    d = config.features[int(torch.randint(len(config.features), (1,), generator=g))]
    family = config.families[index % len(config.families)]
    n = max(config.min_points, config.points_per_cluster * k)
    task = TaskConfig(n_points=n, n_features=d, n_clusters=k, family=family)
    if config.tiling_share > 0 and float(torch.rand((), generator=g)) < config.tiling_share:
        components = int(torch.randint(1, max(1, k // 8) + 1, (1,), generator=g))
        task = dataclasses.replace(task, n_components=components, scale=config.tiling_scale)
    tasks = sample_tasks(task, config.batch_size, generator=gens["train"])
    start = _starts(tasks.x, tasks.centres, config.kmeanspp_share, gens["train"])
    return tasks.x, start, lloyd_costs(tasks.x, start, config.unroll), (d, k)


class _Shapes:
    """The construction at each shape met, its schedule set from the shared one."""

    def __init__(self, step_size: bool) -> None:
        self.step_size = step_size
        self.models: dict[tuple[int, int], LearnedKMeansModel] = {}

    def __call__(self, shape: tuple[int, int], params: torch.Tensor):
        """The model of ``shape`` for ``params``: (S, 3) log effective temperatures, and
        a fourth column of log step sizes with step sizes."""
        params = params.detach()
        log_effective, log_step = params[:, :3], (params[:, 3] if self.step_size else None)
        model = self.models.get(shape)
        if model is None:
            model = LearnedKMeansModel.from_schedule(*shape, log_effective,
                                                     log_step_size=log_step).eval()
            for p in model.layer.parameters():
                p.requires_grad_(False)
            self.models[shape] = model
        model.set_effective_schedule(log_effective)
        if log_step is not None:
            with torch.no_grad():
                model.log_step_size.copy_(log_step)
        return model

    @staticmethod
    def gradient(model: LearnedKMeansModel) -> torch.Tensor:
        """The gradient of the parameters (S, 3 or 4) from the model's: its log
        temperatures are the schedule plus a constant, its log step sizes the same."""
        grads = [model.log_temperature.grad]
        if model.log_step_size is not None:
            grads.append(model.log_step_size.grad.unsqueeze(-1))
        return torch.cat(grads, dim=-1).detach().clone()


def _objective(model, batch, config: GenericConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Per task: the value the training minimises (``config.objective``) and the cost
    after ``unroll`` steps over Lloyd's."""
    x, start, lloyd, _ = batch
    centres = unroll(model, x, start, config.unroll)
    terms = multistep_terms(centres, x, lloyd[:, 1], lloyd[:, -1])
    return (terms.final if config.objective == "final" else terms.objective), terms.final


@torch.no_grad()
def _score(shapes: _Shapes, params, batches, config) -> tuple[float, float]:
    """Mean objective and mean final ratio to Lloyd's over fixed batches."""
    scores, ratios = [], []
    for batch in batches:
        score, final = _objective(shapes(batch[3], params), batch, config)
        scores.append(float(score.mean()))
        ratios.append(float(final.mean()))
    return float(np.mean(scores)), float(np.mean(ratios))


def train_generic(config: GenericConfig, *, progress: bool = False) -> GenericResult:
    """Train a shape-generic temperature schedule (see the module's docstring).

    Parameters
    ----------
    config : GenericConfig
    progress : bool, default=False
        A tqdm progress bar (its ``val_ratio`` is the returned result's figure).

    Returns
    -------
    GenericResult

    Examples
    --------
    >>> cfg = GenericConfig(bits=2, features=(2,), steps=2, search=2, batch_size=4,
    ...                     n_val_batches=1, eval_every=2, min_points=32, unroll=3,
    ...                     schedule=3)
    >>> result = train_generic(cfg)
    >>> tuple(result.log_effective.shape), [row["step"] for row in result.history]
    ((3, 3), [0, 2])
    >>> sized = train_generic(dataclasses.replace(cfg, step_size=True))
    >>> tuple(sized.log_step_size.shape)
    (3,)
    """
    gens = _streams(config.seed)
    start_time = time.perf_counter()
    val = [_draw_batch(config, i, {**gens, "train": gens["val"]})
           for i in range(config.n_val_batches)]
    shapes = _Shapes(config.step_size)
    search_batches = [_draw_batch(config, i, gens) for i in range(len(config.families))]
    ranges = list(SEARCH_RANGES) + ([STEP_SIZE_RANGE] if config.step_size else [])
    low = torch.tensor([math.log(lo) for lo, _ in ranges])
    span = torch.tensor([math.log(hi / lo) for lo, hi in ranges])
    bar = tqdm(total=config.search + config.steps, disable=not progress,
               desc=f"generic schedule, {config.bits} bits")
    # Columns of the parameters the search and the optimiser may change.
    learned = torch.tensor([1.0, 1.0, 1.0] if "temperature" in config.learn else [0.0] * 3)
    if config.step_size:
        learned = torch.cat([learned, torch.tensor([float("step_size" in config.learn)])])
    candidates = []
    if config.init is not None:
        init = torch.tensor(config.init).log()
        if config.step_size:
            sizes = config.init_step_size or (1.0,) * config.schedule
            init = torch.cat([init, torch.tensor(sizes).log().unsqueeze(-1)], dim=-1)
        candidates.append(init)
        if "step_size" in config.learn:
            for size in STEP_SIZE_GRID:
                constant = init.clone()
                constant[:, 3] = math.log(size)
                candidates.append(constant)
    best = (math.inf, None)
    for i in range(max(config.search + 1, len(candidates))):
        if i < len(candidates):
            cand = candidates[i]
        else:
            u = torch.rand(config.schedule, len(ranges), generator=gens["search"])
            cand = low + u * span
            if candidates:  # the parts not learned stay the start's
                cand = torch.where(learned.bool(), cand, candidates[0])
        score, _ = _score(shapes, cand, search_batches, config)
        if score < best[0]:
            best = (score, cand)
        bar.update(1)
    params = torch.nn.Parameter(best[1].clone())
    optimizer = torch.optim.Adam([params], lr=config.lr)
    history: list[dict] = []

    def validate(step: int) -> None:
        score, ratio = _score(shapes, params.detach(), val, config)
        history.append({"step": step, "val_score": score, "val_ratio": ratio,
                        "seconds": time.perf_counter() - start_time})
        bar.set_postfix(val_ratio=f"{ratio:.4f}")

    validate(0)
    chosen = (history[-1]["val_score"], params.detach().clone(), 0)
    for step in range(1, config.steps + 1):
        batch = _draw_batch(config, step, gens)
        model = shapes(batch[3], params.detach())
        loss = _objective(model, batch, config)[0].mean()
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.zero_grad(set_to_none=True)
        params.grad = _Shapes.gradient(model) * learned
        optimizer.step()
        bar.update(1)
        if step % config.eval_every == 0 or step == config.steps:
            validate(step)
            if history[-1]["val_score"] < chosen[0]:
                chosen = (history[-1]["val_score"], params.detach().clone(), step)
    bar.close()
    row = next(r for r in history if r["step"] == chosen[2])
    best_params = chosen[1]
    return GenericResult(best_params[:, :3].clone(),
                         best_params[:, 3].clone() if config.step_size else None,
                         config, history, row["val_ratio"],
                         time.perf_counter() - start_time)
