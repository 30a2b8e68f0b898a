"""Distribution shift: the learned model on task distributions it was not trained on (Fig. 7).

The paper's claim
-----------------
Paper B, Fig. 7: models trained on the default tasks (equally weighted mixtures of
isotropic normals with per-dimension scale 0.1, ``n = 512, d = 32, k = 10``, L2 loss,
``tau = 0.1``) are used for ``T = 20`` re-embedded clustering steps on four shifted task
distributions, and the paper presents them as generalising to these shifts (the learned
BN and OH models keep improving the k-means cost step after step, as on the training
distribution, and stay competitive with Lloyd's algorithm).

Protocol
--------
For every model and every variant (spec §4.3):

``train``
    the training distribution (equal weights, isotropic, scale 0.1);
``unequal_weights``
    mixture weights ``U(0, 1)^k`` normalised (the paper's code);
``anisotropic``
    per-component, per-dimension scales ``0.1 * U(0, 1)^d``;
``half_scale``, ``double_scale``
    equal weights, isotropic, scale 0.05 and 0.2.

draw ``tasks`` tasks of ``n`` points (initial centres: ``k`` random points of the task)
and measure, per task,

* the **relative loss** of paper eq. (20): k-means cost after one model step over the
  cost after one Lloyd step from the same centres (below 1 is better than Lloyd);
* the **T-step ratio**: cost after ``T`` re-embedded model steps over the cost after
  ``T`` Lloyd steps from the same centres (the quantity Fig. 7 plots at its last step).

Lloyd's baseline re-seeds an empty cluster with a random point (the paper's code). Every
draw comes from a generator seeded by ``(seed, d, k, variant)``.

The ``small`` preset (default) evaluates the shipped models for ``(d, k) = (8, 6)`` and
``(32, 10)`` (fast preset: warm start from the exact construction, 200 Adam steps at
``n = 256``) on 256 tasks of 512 points per variant. The ``paper`` preset trains
``(32, 10)`` models with the paper's protocol (cold start, 10,000 steps, 10 seeds; meant
for a GPU) and evaluates them on 320 tasks per variant.

Run ``skformer probe shift --out shift.json --plot shift.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import torch

from benchmarks.probes._common import (
    SOURCES,
    Scores,
    add_run_options,
    add_shape_options,
    describe,
    figure,
    model_seeds,
    obtain_model,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    score_model,
    seeded_generator,
    timed_run,
)
from skformer.tasks import TaskConfig, sample_tasks

__all__ = [
    "PRESETS",
    "VARIANTS",
    "evaluate_shift",
    "main",
    "plot",
    "run",
    "variant_config",
    "variant_streams",
]

TRAIN_SCALE = 0.1
VARIANTS: dict[str, dict] = {
    "train": {},
    "unequal_weights": {"equal_weights": False},
    "anisotropic": {"isotropic": False},
    "half_scale": {"scale": TRAIN_SCALE / 2},
    "double_scale": {"scale": TRAIN_SCALE * 2},
}
"""Task variants of paper Fig. 7 (spec §4.3): name -> changes to the training tasks."""

PRESETS: dict[str, dict] = {
    "small": dict(d=[8, 32], k=[6, 10], n=512, tasks=256, horizon=20, source="shipped",
                  n_seeds=1, steps=None),
    "paper": dict(d=[32], k=[10], n=512, tasks=320, horizon=20, source="paper",
                  n_seeds=10, steps=None),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


def variant_config(variant: str, d: int, k: int, n: int) -> TaskConfig:
    """The task distribution of a variant (see :data:`VARIANTS`).

    Examples
    --------
    >>> variant_config("half_scale", 8, 6, 512).scale
    0.05
    """
    params = {"scale": TRAIN_SCALE, **VARIANTS[variant]}
    return TaskConfig(n_points=n, n_features=d, n_clusters=k, **params)


def variant_streams(seed: int, d: int, k: int, variant: str):
    """Generators of a variant's tasks and of its two Lloyd baselines.

    Returns
    -------
    tasks, baselines : torch.Generator, tuple of two torch.Generator
    """
    index = list(VARIANTS).index(variant)
    gens = [seeded_generator(seed, d, k, index, stream) for stream in range(3)]
    return gens[0], (gens[1], gens[2])


def evaluate_shift(model, d: int, k: int, *, n: int, tasks: int, horizon: int, seed: int,
                   device) -> dict[str, Scores]:
    """Scores of one model on every variant (fresh, seeded tasks per variant)."""
    out = {}
    for variant in VARIANTS:
        task_gen, baselines = variant_streams(seed, d, k, variant)
        batch = sample_tasks(variant_config(variant, d, k, n), tasks, generator=task_gen,
                             device=device)
        out[variant] = score_model(model, batch, horizon=horizon, generators=baselines)
    return out


def _settings(args: argparse.Namespace) -> dict:
    settings = preset_settings(args, PRESETS)
    variants = {}
    for name in VARIANTS:
        config = dataclasses.asdict(variant_config(name, 1, 1, 1))
        variants[name] = {key: config[key] for key in ("family", "scale", "isotropic",
                                                        "equal_weights")}
    settings.update(embedding=args.embedding,
                    variants=variants)
    return settings


def run(settings: dict, device: torch.device) -> dict:
    """Run the probe; the records of every (shape, model seed, variant)."""
    records, models = [], []
    for d, k in zip(settings["d"], settings["k"], strict=True):
        for seed in model_seeds(settings):
            model, info = obtain_model(settings["source"], d, k, f"{settings['embedding']}:l2",
                                       seed=seed,
                                       steps=settings["steps"], device=device)
            models.append({"d": d, "k": k, "model_seed": seed, **info})
            scores = evaluate_shift(model, d, k, n=settings["n"], tasks=settings["tasks"],
                                    horizon=settings["horizon"], seed=settings["seed"],
                                    device=device)
            for variant, sc in scores.items():
                records.append({
                    "d": d, "k": k, "model_seed": seed, "variant": variant,
                    "relative": describe(sc.relative),
                    "multistep": None if sc.multistep is None else describe(sc.multistep),
                    "per_task_relative": sc.relative.tolist(),
                    "per_task_multistep": None if sc.multistep is None
                    else sc.multistep.tolist(),
                })
    return {"models": models, "records": records}


def format_summary(result: dict) -> str:
    """A text table: mean relative loss (eq. 20) and median T-step ratio per variant."""
    s = result["settings"]
    lines = [f"shift probe (paper Fig. 7), preset {s['preset']}: {s['tasks']} tasks of "
             f"n={s['n']} per variant, T={s['horizon']}, source={s['source']}, "
             f"{result['seconds']:.0f} s on {result['machine']['device_name']}",
             f"{'d':>3} {'k':>3} {'seed':>4}  {'variant':<15} {'eq.20 mean':>10} "
             f"{'median':>7} {'<1':>5}  {'T-step/Lloyd median':>20}"]
    for r in result["records"]:
        rel, ms = r["relative"], r["multistep"]
        mean = "inf" if rel["mean"] is None else f"{rel['mean']:.3f}"
        multi = "-" if ms is None else f"{ms['median']:.3f}"
        lines.append(f"{r['d']:>3} {r['k']:>3} {r['model_seed']:>4}  {r['variant']:<15} "
                     f"{mean:>10} {rel['median']:>7.3f} {rel['below_one']:>5.2f}  "
                     f"{multi:>20}")
    return "\n".join(lines)


def plot(result: dict, path: str | Path) -> None:
    """Box plots per variant: one column per shape, rows = one-step and T-step ratios."""
    shapes = sorted({(r["d"], r["k"]) for r in result["records"]})
    metrics = [("per_task_relative", "one-step relative loss (eq. 20)")]
    if result["settings"]["horizon"] > 0:
        metrics.append(("per_task_multistep",
                        f"cost after T={result['settings']['horizon']} steps / Lloyd's"))
    fig = figure(figsize=(3.6 * len(shapes), 3.0 * len(metrics)), layout="constrained")
    axes = fig.subplots(len(metrics), len(shapes), squeeze=False)
    for col, (d, k) in enumerate(shapes):
        for row, (key, label) in enumerate(metrics):
            ax = axes[row][col]
            data = [np.concatenate([r[key] for r in result["records"]
                                    if (r["d"], r["k"], r["variant"]) == (d, k, v)])
                    for v in VARIANTS]
            data = [np.where(np.isfinite(x), x, np.nan) for x in data]
            ax.boxplot([x[~np.isnan(x)] for x in data], showfliers=False, showmeans=True)
            ax.set_xticks(range(1, len(VARIANTS) + 1),
                          [v.replace("_", "\n") for v in VARIANTS], fontsize=7)
            ax.axhline(1.0, color="k", ls=":", lw=1)
            ax.set_title(f"d={d}, k={k}", fontsize=9)
            if col == 0:
                ax.set_ylabel(label, fontsize=8)
    fig.suptitle("Distribution shift (paper Fig. 7): boxes = quartiles, line = median, "
                 "triangle = mean; below 1 beats Lloyd", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe shift``."""
    p = probe_parser("shift", __doc__, PRESETS,
                     "small: shipped models on a CPU (default); paper: the paper's setting")
    add_shape_options(p)
    p.add_argument("--n", type=int, help="points per evaluation task")
    p.add_argument("--tasks", type=int, help="evaluation tasks per variant")
    p.add_argument("--horizon", type=int, help="T of the multi-step ratio (0: skip it)")
    p.add_argument("--source", choices=SOURCES, help="shipped models, or train them now")
    p.add_argument("--n-seeds", dest="n_seeds", type=int,
                   help="models trained per shape (trained sources)")
    p.add_argument("--steps", type=int, help="training steps (trained sources)")
    p.add_argument("--embedding", choices=("binary", "onehot", "none"), default="binary")
    add_run_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe shift``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    settings = _settings(args)
    result = timed_run("shift", "paper B Fig. 7", args, settings, run)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
