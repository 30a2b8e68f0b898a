"""Learned re-embedded steps on held-out tasks: ratio to Lloyd's algorithm, headroom,
share of it captured.

Dimension legend: ``b`` tasks, ``n`` points, ``k`` clusters, ``d`` features, ``T`` steps.

For one model ``(d, k)`` and a task family: ``n_tasks`` tasks of the paper's generator
(n = 512, scale 0.1) drawn from generators seeded by
``SeedSequence([HELDOUT_ENTROPY, d, k, family])`` - entropy that no training run uses
(training streams come from ``SeedSequence(config.seed)``). From random points of each
task (the paper's protocol) and from k-means++ centres, the model runs ``T``
re-embedded steps and Lloyd's algorithm ``T`` steps (empty clusters re-seeded with
random points, as in the paper's code). The best clustering known is
:class:`sklearn.cluster.KMeans` with k-means++ and ``n_init=10`` run to convergence.

- ratio after t steps: mean over tasks of the model's cost over Lloyd's;
- headroom: ``1 - mean(best / Lloyd_T)``, the room Lloyd's algorithm leaves;
- captured: ``(sum Lloyd_T - sum model_T) / (sum Lloyd_T - sum best)``;
- one-step: median over the random-start tasks of the relative loss of paper eq. 20.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["HELDOUT_ENTROPY", "STEPS", "evaluate_model", "heldout_tasks"]

HELDOUT_ENTROPY = 20261201
STEPS = (1, 5, 10, 20)
FAMILIES = ("normal", "laplace")


def _generator(d: int, k: int, family: str) -> torch.Generator:
    from skformer.tasks import FAMILIES as ALL

    state = np.random.SeedSequence([HELDOUT_ENTROPY, d, k, ALL.index(family)])
    return torch.Generator().manual_seed(int(state.generate_state(1, dtype=np.uint64)[0] >> 1))


def heldout_tasks(d: int, k: int, family: str, n_tasks: int, n_points: int = 512):
    """Held-out tasks: points (b, n, d), random-point starts and k-means++ starts (b, k, d),
    and the generator (for the Lloyd baseline's re-seeding)."""
    from skformer.tasks import TaskConfig, kmeans_plusplus, sample_tasks

    gen = _generator(d, k, family)
    batch = sample_tasks(TaskConfig(n_points=n_points, n_features=d, n_clusters=k,
                                    family=family), n_tasks, generator=gen)
    kpp = kmeans_plusplus(batch.x, k, generator=gen)
    return batch.x, batch.centres, kpp, gen


def best_known(x: torch.Tensor, k: int) -> torch.Tensor:
    """KMeans (k-means++, n_init=10, to convergence) cost of every task, float64 (b,)."""
    from sklearn.cluster import KMeans

    out = [KMeans(k, n_init=10, random_state=0).fit(task.double().numpy()).inertia_
           for task in x]
    return torch.tensor(out, dtype=torch.float64)


@torch.no_grad()
def _curves(model, x, c0, n_steps, gen):
    from skformer.losses import kmeans_cost, lloyd_costs

    lloyd = lloyd_costs(x, c0, n_steps, generator=gen).double()
    centres = model.iterate(x, c0, n_steps)  # (b, T + 1, k, d)
    ours = torch.stack([kmeans_cost(x, centres[:, t]) for t in range(n_steps + 1)], 1)
    return lloyd, ours.double()


@torch.no_grad()
def evaluate_model(model, families=FAMILIES, n_tasks: int = 48, n_steps: int = 20) -> list[dict]:
    """Records of one model, one per (family, start).

    Each record: ``d``, ``k``, ``family``, ``start``, ``ratio`` (dict step -> mean
    ratio to Lloyd), ``headroom``, ``captured``, ``one_step`` (median eq. 20, random
    starts only), ``lloyd_curve`` / ``model_curve`` (mean cost per step over the mean
    best cost, for the figure).
    """
    from skformer.losses import relative_loss

    model = model.eval()
    d, k = model.n_features, model.n_clusters
    records = []
    for family in families:
        x, random_c, kpp_c, gen = heldout_tasks(d, k, family, n_tasks)
        best = best_known(x, k)
        one_step = relative_loss(x, random_c, model(x, random_c),
                                 generator=_generator(d, k, family), reduction="none")
        for start, c0 in (("random", random_c), ("k-means++", kpp_c)):
            lloyd, ours = _curves(model, x, c0, n_steps, gen)
            L, M = lloyd[:, -1], ours[:, -1]
            room = float(L.sum() - best.sum())
            records.append({
                "d": d, "k": k, "family": family, "start": start, "tasks": n_tasks,
                "ratio": {t: float((ours[:, t] / lloyd[:, t]).mean()) for t in STEPS
                          if t <= n_steps},
                "headroom": float(1 - (best / L).mean()),
                "captured": float((L.sum() - M.sum()) / room) if room > 1e-6 * float(L.sum())
                else None,
                "one_step": float(one_step.median()) if start == "random" else None,
                "lloyd_curve": (lloyd.mean(0) / best.mean()).tolist(),
                "model_curve": (ours.mean(0) / best.mean()).tolist(),
            })
    return records
