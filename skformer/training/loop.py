"""The training loop: batches, Adam, validation, checkpoints, the best model."""

from __future__ import annotations

import copy
import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..losses import lloyd_costs, smoothed_kmeans_loss
from ..nn.learned import LearnedKMeansModel
from ..objectives import multistep_terms, unroll
from ..tasks import sample_tasks
from .config import TrainingConfig
from .schedule import init_model, search_schedule
from .validation import _starts, _validate, validation_set

__all__ = ["TrainingResult", "train"]


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
    search = (config.schedule_search if not history and model.log_temperature is not None
              else 0)
    bar = tqdm(total=search + config.steps, initial=step, disable=not progress,
               desc="pretraining")
    if search:
        bar.set_postfix_str("schedule search")
        search_schedule(model, config, gens, device, on_candidate=lambda: bar.update(1))
    if not history:
        validate(math.nan)
    model.train()
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
            # The figures the saved model's metadata and `skformer pretrain` report
            # (the score that selects the model mixes them).
            row = history[-1]
            bar.set_postfix({"val_relative": f"{row['val_relative']:.4f}",
                             **({} if row["val_multistep"] is None else
                                {"val_multistep": f"{row['val_multistep']:.4f}"})})
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
