"""Training the learned k-means transformer on random clustering tasks.

The loop of paper B (Algorithm 1, spec section 3.3): each step draws a batch of random
tasks, runs one re-embedded step of the model, and minimises the smoothed k-means loss
``<P(r / tau), r>`` of its output centres with Adam. Every ``eval_every`` steps the
relative validation loss (paper eq. 20: the model's k-means cost over the cost after
one Lloyd step, averaged over a fixed set of validation tasks) is measured; the learning
rate is halved when it stops improving, and the last and best models are checkpointed.

Randomness comes from one seed, split into independent streams (model initialisation,
validation tasks, training tasks, dropout) with :class:`numpy.random.SeedSequence`; the
global torch seed is never touched.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from .losses import kmeans_cost, lloyd_step, smoothed_kmeans_loss
from .nn.embedding import index_width
from .nn.learned import LearnedKMeansModel
from .tasks import TaskConfig, sample_tasks

__all__ = ["TrainingConfig", "TrainingResult", "evaluate", "init_model", "train"]


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

    def __post_init__(self) -> None:
        if self.loss not in ("l2", "ne"):
            raise ValueError(f"loss must be 'l2' or 'ne', got {self.loss!r}.")
        if self.init not in ("random", "exact"):
            raise ValueError(f"init must be 'random' or 'exact', got {self.init!r}.")
        if self.init == "exact" and self.embedding == "none":
            raise ValueError("init='exact' needs the 'binary' or 'onehot' embedding.")
        for name in ("steps", "batch_size", "eval_every", "n_val_tasks", "n_points"):
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

    def warm_start_scale(self) -> float:
        """The warm start's scale: ``init_scale``, or its automatic value."""
        if self.init_scale is not None:
            return self.init_scale
        width = self.n_features + index_width(self.embedding, self.n_clusters)
        return math.sqrt(2000.0 * math.sqrt(width) / (self.gamma * self.n_features))

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
    """The model after the last step (in eval mode)."""
    config: TrainingConfig
    history: list[dict]
    """One row per validation: step, train_loss (mean since the previous row),
    val_relative, lr, seconds."""
    best_val_relative: float
    best_step: int
    seconds: float

    @property
    def last_val_relative(self) -> float:
        return self.history[-1]["val_relative"]


def _streams(seed: int) -> dict[str, torch.Generator]:
    names = ("init", "val", "train", "dropout", "baseline")
    states = np.random.SeedSequence(seed).generate_state(len(names), dtype=np.uint64)
    pairs = zip(names, states, strict=True)
    return {name: torch.Generator().manual_seed(int(state) >> 1) for name, state in pairs}


def init_model(config: TrainingConfig, generator: torch.Generator) -> LearnedKMeansModel:
    """The untrained model of a configuration, initialised from ``generator``.

    ``init="random"`` reproduces PyTorch's default ``nn.Linear`` initialisation
    (Kaiming-uniform weights, uniform biases) drawn from the explicit generator; the
    global torch generator is left exactly as it was.
    """
    kwargs = dict(
        embedding=config.embedding, gamma=config.gamma, dropout=config.dropout, bias=True
    )
    with torch.random.fork_rng(devices=[]):  # module construction must not advance it
        if config.init == "exact":
            return LearnedKMeansModel.from_exact(
                config.n_features, config.n_clusters, scale=config.warm_start_scale(), **kwargs
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


def _save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # atomic: a crash leaves the previous checkpoint intact


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

    Examples
    --------
    >>> cfg = TrainingConfig.fast(2, 3, steps=4, eval_every=2, n_val_tasks=8, n_points=32)
    >>> result = train(cfg)
    >>> [row["step"] for row in result.history]
    [0, 2, 4]
    """
    device = torch.device(device)
    gens = _streams(config.seed)
    tasks = config.task_config()
    model = init_model(config, gens["init"]).to(device)
    val = sample_tasks(tasks, config.n_val_tasks, generator=gens["val"], device=device)
    baseline = torch.cat(
        [
            kmeans_cost(
                val.x[s : s + 32],
                lloyd_step(val.x[s : s + 32], val.centres[s : s + 32], generator=gens["baseline"]),
            )
            for s in range(0, config.n_val_tasks, 32)
        ]
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, factor=config.lr_factor, patience=config.patience
    )
    history: list[dict] = []
    step, elapsed = 0, 0.0
    best = (math.inf, 0)
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
            best = (state["best_val_relative"], state["best_step"])

    def checkpoint(kind: str) -> None:
        if out is None:
            return
        _save_checkpoint(
            out / f"{kind}.pt",
            {
                "config": config.to_dict(),
                "model_config": model.config,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "generators": {n: g.get_state() for n, g in gens.items()},
                "history": history,
                "step": step,
                "seconds": elapsed,
                "best_val_relative": best[0],
                "best_step": best[1],
            },
        )

    def validate(train_loss: float) -> None:
        nonlocal best
        rel = evaluate(model, val.x, val.centres, baseline)
        lr = optimizer.param_groups[0]["lr"]
        history.append(
            {"step": step, "train_loss": train_loss, "val_relative": rel, "lr": lr,
             "seconds": elapsed}
        )
        if step > 0:
            scheduler.step(rel)
        if rel < best[0]:
            best = (rel, step)
            checkpoint("best")
        checkpoint("last")

    if not history:
        validate(math.nan)
    model.train()
    bar = tqdm(total=config.steps, initial=step, disable=not progress, desc="pretraining")
    window: list[float] = []
    start = time.perf_counter() - elapsed
    while step < config.steps:
        batch = sample_tasks(tasks, config.batch_size, generator=gens["train"], device=device)
        centres = model(batch.x, batch.centres, generator=gens["dropout"])
        loss = smoothed_kmeans_loss(batch.x, centres, tau=config.tau, kind=config.loss)
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
            bar.set_postfix(val=f"{history[-1]['val_relative']:.3f}")
    bar.close()
    elapsed = time.perf_counter() - start
    if out is not None:
        with open(out / "history.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(history[0]))
            writer.writeheader()
            writer.writerows(history)
    model.eval()
    return TrainingResult(model, config, history, best[0], best[1], elapsed)
