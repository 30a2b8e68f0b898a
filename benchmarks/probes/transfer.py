"""Family transfer: train on one noise family, cluster tasks of another (paper Fig. 8 / 18).

The paper's claim
-----------------
Paper B, Fig. 8 (and the larger Fig. 18): one model per training family (normal, cauchy,
gumbel, laplace, lognormal; ``n = 512, d = 32, k = 10``, L2 loss, ``tau = 0.1``) is used
for ``T = 20`` re-embedded steps on tasks of every family, a 5 x 5 grid. Models trained
on the four light-tailed families transfer to each other's tasks and beat Lloyd's
algorithm, while **models trained on cauchy tasks fail to generalise, even to
single-step clustering of cauchy tasks, and diverge on multi-step clustering**. Cauchy
*test* tasks are also the hardest for every model (Fig. 9: they resemble no other family).

Protocol
--------
For every training family, train ``n_seeds`` models (same seeds for every family, so
only the family differs); for every test family, draw ``tasks`` tasks once (the same
tasks, and the same Lloyd baselines, for every model) and measure per task

* the relative loss of paper eq. (20): cost after one model step over the cost after
  one Lloyd step from the same random initial centres;
* the ``T``-step ratio: cost after ``T`` re-embedded model steps over the cost after
  ``T`` Lloyd steps.

The grid entry (row = test family, column = training family, as in the paper) is the
mean over tasks (eq. 20 is a mean), then the median over seeds; medians over tasks are
in the JSON too. With the fast warm start the untrained model (the softened exact Lloyd
construction, the same for every family) is scored as well, as a reference column.

The ``small`` preset (default, about 90 s on one CPU thread) trains with the fast preset
(warm start from the exact construction, ``n = 256``) for only 100 steps at
``d = 8, k = 6`` and evaluates on 256 tasks of 256 points with ``T = 10``; so few steps
barely move the warm start, which is why it is reported next to the grid. The ``paper``
preset trains with the paper's protocol (cold start, 10,000 steps, ``d = 32, k = 10``,
10 seeds: 50 models, meant for a GPU) and evaluates on 320 tasks of 512 points, ``T = 20``.

Run ``skformer probe transfer --out transfer.json --plot transfer.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks.probes._common import (
    add_run_options,
    describe,
    figure,
    obtain_model,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    score_model,
    seeded_generator,
    timed_run,
)
from skformer.tasks import FAMILIES, TaskConfig, sample_tasks

__all__ = ["PRESETS", "evaluation_tasks", "main", "run", "transfer_grid"]

PRESETS: dict[str, dict] = {
    "small": dict(d=8, k=6, n=256, tasks=256, horizon=10, source="fast", steps=100,
                  n_seeds=1),
    "paper": dict(d=32, k=10, n=512, tasks=320, horizon=20, source="paper", steps=None,
                  n_seeds=10),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""

_METRICS = ("relative_mean", "relative_median", "multistep_mean", "multistep_median")


def evaluation_tasks(family: str, d: int, k: int, n: int, tasks: int, seed: int, device):
    """The evaluation tasks of a test family (the same for every model).

    Returns
    -------
    TaskBatch
    """
    index = FAMILIES.index(family)
    config = TaskConfig(n_points=n, n_features=d, n_clusters=k, family=family)
    return sample_tasks(config, tasks, generator=seeded_generator(seed, d, k, index, 0),
                        device=device)


def _baselines(family: str, d: int, k: int, seed: int) -> tuple:
    """Fresh generators of the Lloyd baselines of a test family (identical per model)."""
    index = FAMILIES.index(family)
    return seeded_generator(seed, d, k, index, 1), seeded_generator(seed, d, k, index, 2)


def _cell(scores) -> dict:
    """Per-task summaries of one (model, test family) cell."""
    out = {"relative": describe(scores.relative),
           "multistep": None if scores.multistep is None else describe(scores.multistep)}
    return out


def _evaluate(model, tasks_by_family: dict, settings: dict) -> dict:
    """Scores of one model on every test family."""
    d, k, seed = settings["d"], settings["k"], settings["seed"]
    return {
        family: _cell(score_model(model, batch, horizon=settings["horizon"],
                                  generators=_baselines(family, d, k, seed)))
        for family, batch in tasks_by_family.items()
    }


def _reference(settings: dict, tasks_by_family: dict, device) -> dict | None:
    """Scores of the untrained warm start (fast source only), else None."""
    if settings["source"] != "fast" or settings["embedding"] == "none":
        return None
    from skformer.training import TrainingConfig, init_model

    config = TrainingConfig.fast(settings["d"], settings["k"], embedding=settings["embedding"])
    model = init_model(config, torch.Generator()).to(device).eval()
    return _evaluate(model, tasks_by_family, settings)


def _value(cell: dict, metric: str) -> float:
    kind, stat = metric.rsplit("_", 1)
    summary = cell[kind]
    if summary is None or summary[stat] is None:
        return float("inf") if summary is not None else float("nan")
    return float(summary[stat])


def transfer_grid(records: list[dict], metric: str = "relative_mean") -> np.ndarray:
    """The 5 x 5 grid of a metric: rows = test family, columns = training family.

    Parameters
    ----------
    records : list of dict
        One per (training family, seed, test family), as in the JSON's ``records``.
    metric : {"relative_mean", "relative_median", "multistep_mean", "multistep_median"}
        The per-task statistic; the grid holds its median over seeds.

    Returns
    -------
    ndarray of shape (5, 5)
        In the order of :data:`skformer.tasks.FAMILIES`; NaN where there is no record.
    """
    grid = np.full((len(FAMILIES), len(FAMILIES)), np.nan)
    for i, test in enumerate(FAMILIES):
        for j, train in enumerate(FAMILIES):
            values = [_value(r, metric) for r in records
                      if r["test_family"] == test and r["train_family"] == train]
            if values:
                grid[i, j] = float(np.median(values))
    return grid


def run(settings: dict, device) -> dict:
    """Train one model per (family, seed) and score it on every test family."""
    d, k = settings["d"], settings["k"]
    tasks_by_family = {f: evaluation_tasks(f, d, k, settings["n"], settings["tasks"],
                                     settings["seed"], device) for f in FAMILIES}
    records, models = [], []
    for train_family in FAMILIES:
        for s in range(settings["n_seeds"]):
            seed = settings["seed"] + s
            model, info = obtain_model(settings["source"], d, k, f"{settings['embedding']}:l2",
                                       seed=seed, family=train_family,
                                       steps=settings["steps"], device=device)
            models.append({"train_family": train_family, "model_seed": seed, **info})
            cells = _evaluate(model, tasks_by_family, settings)
            records += [{"train_family": train_family, "model_seed": seed, "test_family": f,
                         **cell} for f, cell in cells.items()]
    reference = _reference(settings, tasks_by_family, device)
    grids = {m: transfer_grid(records, m).tolist() for m in _METRICS}
    return {"families": list(FAMILIES), "grid_axes": "grid[test_family][train_family]",
            "grids": grids, "reference_untrained": reference, "models": models,
            "records": records}


def _findings(result: dict) -> dict:
    """The numbers behind the paper's claims, read off the grid."""
    grid = np.asarray(result["grids"]["relative_mean"], dtype=float)
    multi = np.asarray(result["grids"]["multistep_mean"], dtype=float)
    c = FAMILIES.index("cauchy")
    with np.errstate(invalid="ignore"):
        column = np.nanmean(np.where(np.isfinite(grid), grid, np.nan), axis=0)
    return {
        "mean_over_test_families_by_train_family": dict(zip(FAMILIES, column.tolist(),
                                                             strict=True)),
        "worst_train_family": FAMILIES[int(np.nanargmax(column))],
        "cauchy_on_cauchy_relative": float(grid[c, c]),
        "cauchy_on_cauchy_multistep": float(multi[c, c]),
        "cauchy_model_worst_on_cauchy_tasks": bool(grid[c, c] >= np.nanmax(grid[c])),
        "cauchy_tasks_hardest_for_every_model": bool(
            all(grid[c, j] >= np.nanmax(np.delete(grid[:, j], c)) for j in range(len(FAMILIES)))
        ),
    }


def _table(grid, title: str, reference: list | None) -> list[str]:
    corner = "test \\ train"
    head = f"{corner:<13}" + "".join(f"{f:>10}" for f in FAMILIES)
    lines = [title, head + (f"{'untrained':>11}" if reference else "")]
    for i, test in enumerate(FAMILIES):
        row = "".join(f"{v:>10.3f}" for v in grid[i])
        ref = f"{reference[i]:>11.3f}" if reference else ""
        lines.append(f"{test:<13}{row}{ref}")
    return lines


def format_summary(result: dict) -> str:
    """The grids of eq. (20) and of the T-step ratio, as text."""
    s = result["settings"]
    ref = result["reference_untrained"]
    lines = [f"transfer probe (paper Fig. 8), preset {s['preset']}: d={s['d']} k={s['k']}, "
             f"source={s['source']} steps={s['steps']} x {s['n_seeds']} seed(s); {s['tasks']} "
             f"tasks of n={s['n']} per test family, T={s['horizon']}; "
             f"{result['seconds']:.0f} s on {result['machine']['device_name']}"]
    for metric, title in (("relative_mean", "eq. (20), mean over tasks (1 = one Lloyd step)"),
                          ("multistep_mean", f"cost after T={s['horizon']} steps / Lloyd's, "
                                             "mean over tasks")):
        if s["horizon"] == 0 and metric.startswith("multistep"):
            continue
        refs = None if ref is None else [_value(ref[f], metric) for f in FAMILIES]
        lines += _table(np.asarray(result["grids"][metric], dtype=float), title, refs)
    f = result["findings"]
    lines.append(f"worst training family (mean over test families): {f['worst_train_family']}; "
                 f"cauchy model on cauchy tasks: eq.20 {f['cauchy_on_cauchy_relative']:.3f}, "
                 f"T-step {f['cauchy_on_cauchy_multistep']:.3f}")
    return "\n".join(lines)


def _heatmap(ax, grid: np.ndarray, title: str) -> object:
    from matplotlib.colors import LogNorm

    shown = np.clip(np.where(np.isfinite(grid), grid, np.nan), 1e-3, 1e3)
    spread = max(np.nanmax(shown), 1.0 / np.nanmin(shown), 1.1)  # symmetric around 1
    image = ax.imshow(shown, cmap="RdBu_r", norm=LogNorm(1.0 / spread, spread))
    for (i, j), v in np.ndenumerate(grid):
        dark = np.isfinite(v) and abs(np.log(max(v, 1e-3))) > 0.6 * np.log(spread)
        ax.text(j, i, "inf" if np.isinf(v) else f"{v:.2f}", ha="center", va="center",
                fontsize=7, color="w" if dark else "k")
    ax.set_xticks(range(len(FAMILIES)), FAMILIES, rotation=45, fontsize=7)
    ax.set_yticks(range(len(FAMILIES)), FAMILIES, fontsize=7)
    ax.set_xlabel("training family", fontsize=8)
    ax.set_ylabel("test family", fontsize=8)
    ax.set_title(title, fontsize=8)
    return image


def plot(result: dict, path: str | Path) -> None:
    """Heatmaps of eq. (20) and of the T-step ratio (blue: better than Lloyd)."""
    s = result["settings"]
    panels = [("relative_mean", "one step, eq. (20)")]
    if s["horizon"] > 0:
        panels.append(("multistep_mean", f"T={s['horizon']} steps / Lloyd's T steps"))
    fig = figure(figsize=(4.2 * len(panels), 4.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (metric, title) in zip(axes, panels, strict=True):
        image = _heatmap(ax, np.asarray(result["grids"][metric], dtype=float), title)
        bar = fig.colorbar(image, ax=ax, shrink=0.8)
        lo, hi = image.norm.vmin, image.norm.vmax
        nice = (0.25, 0.5, 1.0, 2.0, 4.0) if hi >= 2 else (0.8, 0.9, 1.0, 1.1, 1.25)
        ticks = [t for t in nice if lo <= t <= hi]
        bar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
        bar.ax.minorticks_off()
        bar.set_label("ratio (log scale)", fontsize=7)
    fig.suptitle(f"Family transfer (paper Fig. 8), d={s['d']}, k={s['k']}, mean over tasks; "
                 "below 1 beats Lloyd", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe transfer``."""
    p = probe_parser("transfer", __doc__, PRESETS,
                     "small: a CPU in minutes (default); paper: the paper's setting")
    p.add_argument("--d", type=int, help="data dimension")
    p.add_argument("--k", type=int, help="number of clusters")
    p.add_argument("--n", type=int, help="points per evaluation task")
    p.add_argument("--tasks", type=int, help="evaluation tasks per test family")
    p.add_argument("--horizon", type=int, help="T of the multi-step ratio (0: skip it)")
    p.add_argument("--source", choices=("fast", "paper"),
                   help="training protocol: fast (warm start) or paper (cold start)")
    p.add_argument("--steps", type=int, help="training steps per model")
    p.add_argument("--n-seeds", dest="n_seeds", type=int, help="models per training family")
    p.add_argument("--embedding", choices=("binary", "onehot", "none"), default="binary")
    add_run_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe transfer``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    settings = preset_settings(args, PRESETS)
    settings.update(embedding=args.embedding)
    result = timed_run("transfer", "paper B Fig. 8", args, settings, run)
    result["findings"] = _findings(result)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
