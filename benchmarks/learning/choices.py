"""What each choice of the multi-step recipe is worth, measured on held-out tasks.

Every variant is :meth:`skformer.training.TrainingConfig.multistep` with some fields
changed (or the one-step ``fast`` preset), trained at a few shapes and measured as
``skformer bench learning multistep`` measures the shipped models (held-out normal and
laplace tasks, random and k-means++ starts, 20 steps). Run
``skformer bench learning choices --d 8 32 64 --k 16 10 16 --n-jobs 2``.
"""

from __future__ import annotations

__all__ = ["VARIANTS", "run_variant"]

# name -> (preset, overrides of its TrainingConfig)
VARIANTS = {
    "recipe": ("multistep", {}),
    "no schedule search": ("multistep", {"schedule_search": 0}),
    "one temperature (no schedule)": ("multistep", {"schedule": 1, "schedule_search": 0}),
    "no normalisation": ("multistep", {"normalise": False}),
    "random starts only": ("multistep", {"kmeanspp_share": 0.0}),
    "normal tasks only": ("multistep", {"families": ("normal",)}),
    "no one-step term": ("multistep", {"one_step_weight": 0.0}),
    "one-step term x3": ("multistep", {"one_step_weight": 3.0}),
    "all projections trained": ("multistep", {"trainable": "all", "lr": 0.001,
                                              "schedule_lr": 0.05}),
    "one-step objective (fast preset)": ("fast", {}),
}


def run_variant(name: str, d: int, k: int, *, n_tasks: int = 48, budget: dict | None = None):
    """Train variant ``name`` at ``(d, k)`` and measure it; records with ``variant``,
    ``seconds`` and the validation figures of training."""
    import time

    import torch

    from skformer.training import TrainingConfig, train

    from .heldout import evaluate_model

    torch.set_num_threads(1)
    preset, overrides = VARIANTS[name]
    settings = {**(budget or {}), **overrides} if preset == "multistep" else {}
    config = getattr(TrainingConfig, preset)(d, k, **settings)
    start = time.perf_counter()
    result = train(config)
    seconds = time.perf_counter() - start
    records = evaluate_model(result.model, n_tasks=n_tasks)
    for r in records:
        r.update(variant=name, seconds=round(seconds, 1))
    return records


def summary(records: list[dict]) -> str:
    """One line per (variant, shape): captured share and ratio after 20 steps from random
    and k-means++ starts (means over the families), one-step loss, training seconds."""
    rows = {}
    for r in records:
        key = (r["variant"], r["d"], r["k"])
        rows.setdefault(key, []).append(r)
    lines = [f"{'variant':34s} {'d':>3s} {'k':>3s} {'capt.rnd':>9s} {'r20 rnd':>8s} "
             f"{'r20 k++':>8s} {'1-step':>7s} {'s':>6s}"]
    for (variant, d, k), rs in rows.items():
        def mean(values):
            values = [v for v in values if v is not None]
            return sum(values) / len(values) if values else float("nan")

        rnd = [r for r in rs if r["start"] == "random"]
        kpp = [r for r in rs if r["start"] == "k-means++"]
        last = max(rs[0]["ratio"], key=int)
        lines.append(
            f"{variant:34s} {d:3d} {k:3d} {mean([r['captured'] for r in rnd]):9.3f} "
            f"{mean([r['ratio'][last] for r in rnd]):8.3f} "
            f"{mean([r['ratio'][last] for r in kpp]):8.3f} "
            f"{mean([r['one_step'] for r in rnd]):7.3f} {rs[0]['seconds']:6.0f}")
    return "\n".join(lines)
