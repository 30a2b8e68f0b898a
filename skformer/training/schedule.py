"""The untrained model: PyTorch's initialisation or the exact construction, and the search
for a starting temperature schedule."""

from __future__ import annotations

import math

import torch

from ..losses import lloyd_costs
from ..nn.embedding import index_width
from ..nn.learned import LearnedKMeansModel
from ..objectives import multistep_terms, unroll
from ..tasks import sample_tasks
from .config import SEARCH_RANGES, TrainingConfig
from .validation import _starts

__all__ = ["init_model", "search_schedule"]


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
            factor = _temperature_factor(config)
            return LearnedKMeansModel.from_exact(
                config.n_features, config.n_clusters, scale=config.warm_start_scale(),
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


def _temperature_factor(config: TrainingConfig) -> float:
    """Multiplier of the effective inverse temperatures giving the model's multipliers of
    ``gamma * scale**2 / sqrt(e)``."""
    width = config.n_features + index_width(config.embedding, config.n_clusters)
    return math.sqrt(width) / (config.gamma * config.warm_start_scale() ** 2)


@torch.no_grad()
def search_schedule(model: LearnedKMeansModel, config: TrainingConfig, gens: dict,
                    device, on_candidate=None) -> float:
    """Set the schedule to the best of the warm start's and ``schedule_search`` random
    ones, by the multi-step objective on a batch of training tasks per family (the
    configured share from k-means++); returns its objective. ``on_candidate()`` is called
    after each random candidate (progress)."""
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
        if i > 0 and on_candidate is not None:
            on_candidate()
    model.log_temperature.copy_(best[1])
    model.train(was_training)
    return best[0]
