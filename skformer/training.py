"""Training the learned k-means transformer on random clustering tasks.

The loop of paper B (Algorithm 1, spec section 3.3): each step draws a batch of random
tasks, runs one re-embedded step of the model, and minimises the smoothed k-means loss
``<P(r / tau), r>`` of its output centres with Adam. Every ``eval_every`` steps the
relative validation loss (paper eq. 20: the model's k-means cost over the cost after
one Lloyd step, averaged over a fixed set of validation tasks) is measured; the learning
rate is halved when it stops improving, and the last and best models are checkpointed.

``objective="multi-step"`` trains for the result of several re-embedded steps instead
(:mod:`skformer.objectives`): the batch's tasks start from random points or from
k-means++ centres, the model runs ``unroll`` steps, and the loss is their k-means cost
relative to as many Lloyd steps; validation measures the same objective on fixed tasks.
The returned model is always the best validation checkpoint, never a worse one.

Randomness comes from one seed, split into independent streams (model initialisation,
validation tasks, training tasks, dropout) with :class:`numpy.random.SeedSequence`; the
global torch seed is never touched.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from .losses import kmeans_cost, lloyd_costs, smoothed_kmeans_loss
from .nn.embedding import index_width
from .nn.learned import LearnedKMeansModel
from .objectives import multistep_terms, unroll
from .tasks import FAMILIES, TaskConfig, kmeans_plusplus, sample_tasks

__all__ = [
    "OBJECTIVES",
    "TrainingConfig",
    "TrainingResult",
    "ValidationSet",
    "evaluate",
    "init_model",
    "train",
    "validation_set",
]

OBJECTIVES = ("one-step", "multi-step")
TRAINABLE = ("all", "schedule")

# Ranges of the random schedules tried by ``schedule_search`` (effective inverse
# temperatures, log-uniform per step): A1 per mean squared distance to the nearest
# centre, A3 and A4 per differing code bit.
SEARCH_RANGES = ((0.5, 300.0), (2.0, 40.0), (2.0, 40.0))


@dataclass(frozen=True)
class TrainingConfig:
    """Everything that defines a training run (the defaults are the paper's).

    Parameters
    ----------
    n_features, n_clusters : int
        The ``(d, k)`` the model is tied to.
    embedding : {"binary", "onehot", "none"}, default="binary"
    loss : {"l2", "ne"}, default="l2"
        Smoothing of the per-point minimum: sparsemax (L2) or softmax (NE) weights.
    tau : float, default=0.1
        Temperature of the smoothing.
    n_points : int, default=512
        Points per training task.
    batch_size : int, default=32
        Tasks per step.
    steps : int, default=10_000
        Optimiser steps.
    lr : float, default=0.01
        Initial Adam learning rate.
    eval_every : int, default=50
        Steps between validations (and learning-rate schedule steps).
    n_val_tasks : int, default=320
        Fixed validation tasks, drawn once from the training distribution.
    lr_factor, patience : float, int, default=0.5, 5
        ``ReduceLROnPlateau`` on the relative validation loss.
    clip_grad_norm : float or None, default=None
        Gradient clipping (off in the paper).
    gamma : float, default=1.0
        Attention inverse temperature.
    dropout : float, default=0.01
        Attention dropout during training.
    init : {"random", "exact"}, default="random"
        ``"random"``: PyTorch's default initialisation (the paper). ``"exact"``: the
        Theorem 2.1 weights softened by ``init_scale`` (see
        :meth:`LearnedKMeansModel.from_exact`).
    init_scale : float or None, default=None
        Scale of the warm start's query and key matrices. None chooses it so that the
        inverse temperature of A1 on squared distances, ``gamma * s**2 / sqrt(e)``, is
        ``2000 / d``: in ``[0, 1]^d`` typical squared distances grow like ``d``, so the
        softness relative to the data is the same for every ``d`` (a slightly softened
        Lloyd step, relative loss just under 1 before any training).
    family, scale, isotropic, equal_weights :
        The task distribution (see :class:`skformer.tasks.TaskConfig`).
    seed : int, default=0
    objective : {"one-step", "multi-step"}, default="one-step"
        The paper's smoothed one-step loss, or the cost along ``unroll`` re-embedded
        steps relative to Lloyd's (:mod:`skformer.objectives`).
    unroll : int, default=10
        Steps of the multi-step objective (and of its validation).
    one_step_weight : float, default=1.0
        Weight of the first step against one Lloyd step in the multi-step objective.
    kmeanspp_share : float, default=0.0
        Share of the tasks of a batch (and of the validation tasks) that start from
        k-means++ centres instead of random points (multi-step objective).
    families : tuple of str, default=()
        If given, batch ``i`` is drawn from family ``families[i % len(families)]`` and
        the validation tasks from each in turn; otherwise every task is ``family``.
    normalise, schedule :
        Model options (:class:`~skformer.nn.learned.LearnedKMeansModel`): scale-free
        assignment in A1, and a learned temperature per step for ``schedule`` steps.
    init_temperature : 3 floats, default=(4.0, 20.0, 20.0)
        Initial inverse temperatures of A1, A3 and A4 of a scheduled warm start, per
        unit of (normalised) squared distance: A1 per mean squared distance to the
        nearest centre, A3 and A4 per differing code bit. The ``1/sqrt(e)`` of the
        attention is compensated.
    trainable : {"all", "schedule"}, default="all"
        Train every parameter, or only the temperature schedule (the warm start's
        projections stay the exact construction).
    schedule_lr : float or None, default=None
        Learning rate of the schedule (None: ``lr``).
    schedule_search : int, default=0
        Before training, try this many random schedules (per step, log-uniform in
        :data:`SEARCH_RANGES`), and the warm start's, on a batch of training tasks per
        family, and start from the best. Gradient steps alone settle in a Lloyd-like
        schedule at some shapes (d = 64, k = 16) where annealing schedules that
        alternate soft and sharp steps do far better.

    Examples
    --------
    >>> cfg = TrainingConfig.fast(8, 4)
    >>> cfg.init, cfg.steps <= 1000
    ('exact', True)
    >>> TrainingConfig.from_dict(cfg.to_dict()) == cfg
    True
    """

    n_features: int
    n_clusters: int
    embedding: str = "binary"
    loss: str = "l2"
    tau: float = 0.1
    n_points: int = 512
    batch_size: int = 32
    steps: int = 10_000
    lr: float = 0.01
    eval_every: int = 50
    n_val_tasks: int = 320
    lr_factor: float = 0.5
    patience: int = 5
    clip_grad_norm: float | None = None
    gamma: float = 1.0
    dropout: float = 0.01
    init: str = "random"
    init_scale: float | None = None
    family: str = "normal"
    scale: float = 0.1
    isotropic: bool = True
    equal_weights: bool = True
    seed: int = 0
    objective: str = "one-step"
    unroll: int = 10
    one_step_weight: float = 1.0
    kmeanspp_share: float = 0.0
    families: tuple[str, ...] = ()
    normalise: bool = False
    schedule: int = 0
    init_temperature: tuple[float, float, float] = (4.0, 20.0, 20.0)
    trainable: str = "all"
    schedule_lr: float | None = None
    schedule_search: int = 0

    def __post_init__(self) -> None:
        # JSON round trips give lists; the config is frozen and compared by value.
        object.__setattr__(self, "families", tuple(self.families))
        object.__setattr__(self, "init_temperature", tuple(self.init_temperature))
        if self.loss not in ("l2", "ne"):
            raise ValueError(f"loss must be 'l2' or 'ne', got {self.loss!r}.")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}.")
        if self.trainable not in TRAINABLE:
            raise ValueError(f"trainable must be one of {TRAINABLE}, got {self.trainable!r}.")
        if self.trainable == "schedule" and (self.schedule < 1 or self.init != "exact"):
            raise ValueError("trainable='schedule' needs schedule >= 1 and init='exact'.")
        if not 0.0 <= self.kmeanspp_share <= 1.0:
            raise ValueError(f"kmeanspp_share must be in [0, 1], got {self.kmeanspp_share!r}.")
        for family in self.families:
            if family not in FAMILIES:
                raise ValueError(f"families must be among {FAMILIES}, got {family!r}.")
        if len(self.init_temperature) != 3 or min(self.init_temperature) <= 0:
            raise ValueError("init_temperature must be 3 positive numbers, got "
                             f"{self.init_temperature!r}.")
        if self.init not in ("random", "exact"):
            raise ValueError(f"init must be 'random' or 'exact', got {self.init!r}.")
        if self.init == "exact" and self.embedding == "none":
            raise ValueError("init='exact' needs the 'binary' or 'onehot' embedding.")
        for name in ("steps", "batch_size", "eval_every", "n_val_tasks", "n_points", "unroll"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        self.task_config()  # validates the task distribution

    @classmethod
    def paper(cls, n_features: int, n_clusters: int, **overrides) -> TrainingConfig:
        """The paper's protocol: cold start, n = 512, 10,000 steps of 32 tasks."""
        return cls(n_features, n_clusters, **overrides)

    @classmethod
    def fast(cls, n_features: int, n_clusters: int, **overrides) -> TrainingConfig:
        """The on-demand preset: warm start from the exact construction, short run.

        Meant to beat one Lloyd step within about a minute on a 2-core CPU for
        ``d <= 32`` and ``k <= 16``. The warm start is already a slightly softened Lloyd
        step (relative loss just under 1); Adam's first steps move every weight by about
        ``lr``, so the learning rate is kept at 0.001 (0.003 undoes the warm start).
        """
        params = dict(
            init="exact",
            n_points=256,
            steps=200,
            lr=0.001,
            eval_every=25,
            n_val_tasks=64,
            patience=3,
        )
        params.update(overrides)
        return cls(n_features, n_clusters, **params)

    @classmethod
    def multistep(cls, n_features: int, n_clusters: int, **overrides) -> TrainingConfig:
        """The default of shipped and on-demand models: trained for 10 re-embedded steps.

        Warm start from the exact construction with scale-free assignment
        (``normalise``) and a 10-step temperature schedule; only the schedule trains
        (30 numbers; training every projection as well was measured and did not
        help on held-out tasks, see the Training page of the docs). Tasks: normal and
        laplace families in turn, half of them starting from k-means++ centres.
        About a minute on one CPU core for ``d <= 32``.
        """
        params = dict(
            objective="multi-step",
            init="exact",
            init_scale=1.0,
            normalise=True,
            schedule=10,
            unroll=10,
            trainable="schedule",
            lr=0.05,
            n_points=256,
            steps=300,
            eval_every=25,
            n_val_tasks=64,
            patience=3,
            dropout=0.0,
            kmeanspp_share=0.5,
            families=("normal", "laplace"),
            schedule_search=64,
        )
        params.update(overrides)
        return cls(n_features, n_clusters, **params)

    def warm_start_scale(self) -> float:
        """The warm start's scale: ``init_scale``, or its automatic value."""
        if self.init_scale is not None:
            return self.init_scale
        width = self.n_features + index_width(self.embedding, self.n_clusters)
        return math.sqrt(2000.0 * math.sqrt(width) / (self.gamma * self.n_features))

    def task_families(self) -> tuple[str, ...]:
        """The families batches are drawn from, in turn."""
        return self.families or (self.family,)

    def task_config(self, **overrides) -> TaskConfig:
        """The training task distribution (``overrides`` change it, e.g. for probes)."""
        params = dict(
            n_points=self.n_points,
            n_features=self.n_features,
            n_clusters=self.n_clusters,
            family=self.family,
            scale=self.scale,
            isotropic=self.isotropic,
            equal_weights=self.equal_weights,
        )
        params.update(overrides)
        return TaskConfig(**params)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainingConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class TrainingResult:
    """What :func:`train` returns."""

    model: LearnedKMeansModel
    """The best validation checkpoint (in eval mode): never worse than a later one."""
    config: TrainingConfig
    history: list[dict]
    """One row per validation: step, train_loss (mean since the previous row),
    val_relative (one-step, eq. 20), val_multistep (cost after ``unroll`` steps over
    Lloyd's; multi-step objective only), val_score (what selects the best model),
    lr, seconds."""
    best_val_relative: float
    """``val_relative`` of the best checkpoint."""
    best_step: int
    seconds: float

    @property
    def best(self) -> dict:
        """The history row of the returned model."""
        return next(row for row in self.history if row["step"] == self.best_step)

    @property
    def last_val_relative(self) -> float:
        return self.history[-1]["val_relative"]


def _streams(seed: int) -> dict[str, torch.Generator]:
    names = ("init", "val", "train", "dropout", "baseline", "search")
    states = np.random.SeedSequence(seed).generate_state(len(names), dtype=np.uint64)
    pairs = zip(names, states, strict=True)
    return {name: torch.Generator().manual_seed(int(state) >> 1) for name, state in pairs}


def init_model(config: TrainingConfig, generator: torch.Generator) -> LearnedKMeansModel:
    """The untrained model of a configuration, initialised from ``generator``.

    ``init="random"`` reproduces PyTorch's default ``nn.Linear`` initialisation
    (Kaiming-uniform weights, uniform biases) drawn from the explicit generator; the
    global torch generator is left exactly as it was. ``init="exact"`` is the softened
    exact construction; with a schedule, its temperatures start at ``init_temperature``.
    """
    kwargs = dict(
        embedding=config.embedding, gamma=config.gamma, dropout=config.dropout, bias=True,
        normalise=config.normalise, schedule=config.schedule,
    )
    with torch.random.fork_rng(devices=[]):  # module construction must not advance it
        if config.init == "exact":
            width = config.n_features + index_width(config.embedding, config.n_clusters)
            scale = config.warm_start_scale()
            # Multipliers of gamma * scale**2 / sqrt(e) giving the effective temperatures.
            factor = math.sqrt(width) / (config.gamma * scale**2)
            return LearnedKMeansModel.from_exact(
                config.n_features, config.n_clusters, scale=scale,
                temperature=tuple(t * factor for t in config.init_temperature), **kwargs
            )
        model = LearnedKMeansModel(config.n_features, config.n_clusters, **kwargs)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                torch.nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=generator)
                bound = 1.0 / math.sqrt(module.in_features)
                module.bias.uniform_(-bound, bound, generator=generator)
    return model


@torch.no_grad()
def evaluate(
    model: LearnedKMeansModel,
    x: torch.Tensor,
    c: torch.Tensor,
    baseline_cost: torch.Tensor,
    batch_size: int = 32,
) -> float:
    """Mean over tasks of the model's k-means cost after one step over ``baseline_cost``.

    Parameters
    ----------
    model : LearnedKMeansModel
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    baseline_cost : Tensor of shape (b,)
        The cost after one Lloyd step from ``c`` (the denominator of eq. 20).
    batch_size : int, default=32

    Returns
    -------
    float
    """
    was_training = model.training
    model.eval()
    costs = torch.cat(
        [
            kmeans_cost(x[s : s + batch_size], model(x[s : s + batch_size], c[s : s + batch_size]))
            for s in range(0, x.shape[0], batch_size)
        ]
    )
    model.train(was_training)
    ratio = torch.where(baseline_cost > 0, costs / baseline_cost.clamp_min(1e-30), 1.0)
    return float(ratio.mean())


class ValidationSet(NamedTuple):
    """Fixed validation tasks and their Lloyd baselines."""

    x: torch.Tensor
    """Points, shape (b, n, d)."""
    centres: torch.Tensor
    """Starts, shape (b, k, d): random points, or k-means++ centres for a share."""
    lloyd: torch.Tensor
    """Cost of Lloyd's algorithm from the starts (empty clusters re-seeded with random
    points, as in the paper's code), shape (b, 1 + T): column ``t`` after ``t`` steps."""


def _starts(x: torch.Tensor, random_centres: torch.Tensor, share: float,
            generator: torch.Generator) -> torch.Tensor:
    """Random-point starts, the first ``share`` of the tasks replaced by k-means++."""
    count = int(round(share * x.shape[0]))
    if count == 0:
        return random_centres
    kpp = kmeans_plusplus(x[:count], random_centres.shape[1], generator=generator)
    return torch.cat([kpp, random_centres[count:]])


@torch.no_grad()
def validation_set(config: TrainingConfig, generator: torch.Generator,
                   baseline: torch.Generator, device=None) -> ValidationSet:
    """The validation tasks of a configuration: ``n_val_tasks`` split over its families,
    the first ``kmeanspp_share`` of each family's tasks starting from k-means++."""
    families = config.task_families()
    sizes = [len(part) for part in np.array_split(np.arange(config.n_val_tasks), len(families))]
    xs, cs = [], []
    for family, size in zip(families, sizes, strict=True):
        if size == 0:
            continue
        batch = sample_tasks(config.task_config(family=family), size, generator=generator,
                             device=device)
        xs.append(batch.x)
        cs.append(_starts(batch.x, batch.centres, config.kmeanspp_share, generator))
    x, c = torch.cat(xs), torch.cat(cs)
    n_steps = config.unroll if config.objective == "multi-step" else 1
    lloyd = torch.cat([lloyd_costs(x[s : s + 32], c[s : s + 32], n_steps, generator=baseline)
                       for s in range(0, x.shape[0], 32)])
    return ValidationSet(x, c, lloyd)


@torch.no_grad()
def _validate(model: LearnedKMeansModel, config: TrainingConfig, val: ValidationSet) -> dict:
    """``val_relative``, ``val_multistep`` and ``val_score`` (lower is better)."""
    was_training = model.training
    model.eval()
    if config.objective == "one-step":
        rel = evaluate(model, val.x, val.centres, val.lloyd[:, 1])
        model.train(was_training)
        return {"val_relative": rel, "val_multistep": None, "val_score": rel}
    parts = []
    for s in range(0, val.x.shape[0], 32):
        x, c, lloyd = val.x[s : s + 32], val.centres[s : s + 32], val.lloyd[s : s + 32]
        centres = unroll(model, x, c, config.unroll)
        parts.append(multistep_terms(centres, x, lloyd[:, 1], lloyd[:, -1],
                                     one_step_weight=config.one_step_weight))
    model.train(was_training)
    objective, final, first = (torch.cat(t) for t in zip(*parts, strict=True))
    return {"val_relative": float(first.mean()), "val_multistep": float(final.mean()),
            "val_score": float(objective.mean())}


def _save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # atomic: a crash leaves the previous checkpoint intact


def _batch_loss(model, config: TrainingConfig, step: int, gens: dict, device) -> torch.Tensor:
    """The training loss of one batch (the batch's family is ``step``'s turn)."""
    families = config.task_families()
    tasks = config.task_config(family=families[step % len(families)])
    batch = sample_tasks(tasks, config.batch_size, generator=gens["train"], device=device)
    if config.objective == "one-step":
        centres = model(batch.x, batch.centres, generator=gens["dropout"])
        return smoothed_kmeans_loss(batch.x, centres, tau=config.tau, kind=config.loss)
    start = _starts(batch.x, batch.centres, config.kmeanspp_share, gens["train"])
    lloyd = lloyd_costs(batch.x, start, config.unroll)  # (b, 1 + T), no gradient
    centres = unroll(model, batch.x, start, config.unroll, generator=gens["dropout"])
    terms = multistep_terms(centres, batch.x, lloyd[:, 1], lloyd[:, -1],
                            one_step_weight=config.one_step_weight)
    return terms.objective.mean()


def _temperature_factor(config: TrainingConfig) -> float:
    """Multiplier of the effective inverse temperatures giving the model's multipliers of
    ``gamma * scale**2 / sqrt(e)``."""
    width = config.n_features + index_width(config.embedding, config.n_clusters)
    return math.sqrt(width) / (config.gamma * config.warm_start_scale() ** 2)


@torch.no_grad()
def _search_schedule(model: LearnedKMeansModel, config: TrainingConfig, gens: dict,
                     device) -> float:
    """Set the schedule to the best of the warm start's and ``schedule_search`` random
    ones, by the multi-step objective on a batch of training tasks per family (the
    configured share from k-means++); returns its objective."""
    tasks = []
    for family in config.task_families():
        batch = sample_tasks(config.task_config(family=family), config.batch_size,
                             generator=gens["train"], device=device)
        start = _starts(batch.x, batch.centres, config.kmeanspp_share, gens["train"])
        tasks.append((batch.x, start, lloyd_costs(batch.x, start, config.unroll)))
    low = torch.tensor([math.log(lo) for lo, _ in SEARCH_RANGES], dtype=torch.float64)
    span = torch.tensor([math.log(hi / lo) for lo, hi in SEARCH_RANGES], dtype=torch.float64)
    shift = math.log(_temperature_factor(config))
    was_training, best = model.training, (math.inf, None)
    model.eval()
    for i in range(config.schedule_search + 1):
        if i > 0:  # candidate 0 is the warm start's schedule
            u = torch.rand(model.schedule, 3, generator=gens["search"], dtype=torch.float64)
            model.log_temperature.copy_(low + u * span + shift)
        score = float(torch.stack([
            multistep_terms(unroll(model, x, c0, config.unroll), x, lloyd[:, 1],
                            lloyd[:, -1], one_step_weight=config.one_step_weight).objective
            for x, c0, lloyd in tasks]).mean())
        if score < best[0]:
            best = (score, model.log_temperature.detach().clone())
    model.log_temperature.copy_(best[1])
    model.train(was_training)
    return best[0]


def _optimizer(model: LearnedKMeansModel, config: TrainingConfig) -> torch.optim.Adam:
    schedule = [] if model.log_temperature is None else [model.log_temperature]
    others = [p for p in model.parameters() if all(p is not q for q in schedule)]
    groups = []
    if config.trainable == "all" and others:
        groups.append({"params": others, "lr": config.lr})
    if schedule:
        groups.append({"params": schedule, "lr": config.schedule_lr or config.lr})
    return torch.optim.Adam(groups)


def train(
    config: TrainingConfig,
    *,
    out_dir: str | Path | None = None,
    resume: bool = False,
    progress: bool = False,
    device: str | torch.device = "cpu",
) -> TrainingResult:
    """Train a learned k-means transformer.

    Parameters
    ----------
    config : TrainingConfig
    out_dir : path, default=None
        Where to write ``last.pt`` and ``best.pt`` checkpoints (model, optimiser,
        scheduler and generator states, history) and ``history.csv``. None keeps
        everything in memory.
    resume : bool, default=False
        Continue from ``out_dir/last.pt`` if it exists. The configuration must be the
        same except for ``steps``, which may be raised to train longer.
    progress : bool, default=False
        Show a tqdm progress bar.
    device : str or torch.device, default="cpu"

    Returns
    -------
    TrainingResult
        Its model is the best validation checkpoint.

    Examples
    --------
    >>> cfg = TrainingConfig.fast(2, 3, steps=4, eval_every=2, n_val_tasks=8, n_points=32)
    >>> result = train(cfg)
    >>> [row["step"] for row in result.history]
    [0, 2, 4]
    """
    device = torch.device(device)
    gens = _streams(config.seed)
    model = init_model(config, gens["init"]).to(device)
    val = validation_set(config, gens["val"], gens["baseline"], device=device)
    optimizer = _optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, factor=config.lr_factor, patience=config.patience
    )
    history: list[dict] = []
    step, elapsed = 0, 0.0
    best = (math.inf, 0)  # (val_score, step)
    best_state = copy.deepcopy(model.state_dict())
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if resume and (out / "last.pt").exists():
            state = torch.load(out / "last.pt", map_location=device, weights_only=False)
            if {**state["config"], "steps": config.steps} != config.to_dict():
                raise ValueError(
                    f"Cannot resume from {out / 'last.pt'}: it was trained with another "
                    "configuration."
                )
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            for name, gen_state in state["generators"].items():
                gens[name].set_state(gen_state)
            history, step, elapsed = state["history"], state["step"], state["seconds"]
            best = (state["best_score"], state["best_step"])
            best_state = state["best_model"]

    def checkpoint(kind: str) -> None:
        if out is None:
            return
        _save_checkpoint(
            out / f"{kind}.pt",
            {
                "config": config.to_dict(),
                "model_config": model.config,
                "model": model.state_dict(),
                "best_model": best_state,
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "generators": {n: g.get_state() for n, g in gens.items()},
                "history": history,
                "step": step,
                "seconds": elapsed,
                "best_score": best[0],
                "best_step": best[1],
            },
        )

    def validate(train_loss: float) -> None:
        nonlocal best, best_state
        row = {"step": step, "train_loss": train_loss, **_validate(model, config, val),
               "lr": optimizer.param_groups[0]["lr"], "seconds": elapsed}
        history.append(row)
        if step > 0:
            scheduler.step(row["val_score"])
        if row["val_score"] < best[0]:
            best = (row["val_score"], step)
            best_state = copy.deepcopy(model.state_dict())
            checkpoint("best")
        checkpoint("last")

    frozen = [p for p in model.layer.parameters() if p.requires_grad] \
        if config.trainable == "schedule" else []
    for p in frozen:
        p.requires_grad_(False)
    if not history and config.schedule_search and model.log_temperature is not None:
        _search_schedule(model, config, gens, device)
        best_state = copy.deepcopy(model.state_dict())
    if not history:
        validate(math.nan)
    model.train()
    bar = tqdm(total=config.steps, initial=step, disable=not progress, desc="pretraining")
    window: list[float] = []
    start = time.perf_counter() - elapsed
    while step < config.steps:
        loss = _batch_loss(model, config, step, gens, device)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_grad_norm)
        optimizer.step()
        window.append(loss.item())
        step += 1
        bar.update(1)
        if step % config.eval_every == 0 or step == config.steps:
            elapsed = time.perf_counter() - start
            validate(float(np.mean(window)))
            window = []
            bar.set_postfix(val=f"{history[-1]['val_score']:.3f}")
    bar.close()
    elapsed = time.perf_counter() - start
    for p in frozen:
        p.requires_grad_(True)
    if out is not None:
        with open(out / "history.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(history[0]))
            writer.writeheader()
            writer.writerows(history)
    model.load_state_dict(best_state)
    model.eval()
    best_row = next(row for row in history if row["step"] == best[1])
    return TrainingResult(model, config, history, best_row["val_relative"], best[1], elapsed)
