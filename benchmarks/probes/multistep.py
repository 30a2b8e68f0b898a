"""Multi-step clustering: naive iteration against re-embedding (paper Fig. 6).

The paper's claim
-----------------
Paper B, Fig. 6 and App. C: a model trained for **one** clustering step, applied ``T = 20``
times, clusters only if its input is **re-embedded** before every step (fresh point
tokens from the original points, fresh centre tokens from the current centres: ``T``
single steps). Then the k-means cost improves steadily (OH and BN models beat Lloyd's
algorithm from the same initial centres; NA improves but stays behind Lloyd's). Applying
eq. (4) naively to its own output tokens instead makes the objective **diverge after
step 1**, for every configuration.

Protocol
--------
For each shape ``(d, k)`` and each model configuration, draw ``tasks`` random tasks of
``n`` points (the training distribution; initial centres: ``k`` random points of the
task) and run, from the same initial centres:

``reembed``
    ``model.iterate(x, c, T)`` -- re-embedding at every step (paper Fig. 6 right);
``naive``
    ``model.iterate(x, c, T, reembed=False)`` -- eq. (4) applied to its own output
    tokens, centres read out after each application (paper Fig. 6 left);
``lloyd``
    ``T`` Lloyd steps, an empty cluster re-seeded with a random point (the paper's code).

Per task and step ``t`` the k-means cost ``L(X, C^(t))`` is recorded (step 0 is the
shared start, so all three agree there). The figure shows, per step, the median and the
inter-quartile band over tasks of the cost relative to the start, ``L_t / L_0``, and of
the cost relative to Lloyd's at the same step, ``L_t / L_t(Lloyd)``. (The paper plots the
mean over tasks of ``log L_t`` per seed, with the median and IQR over seeds; with several
model seeds this probe pools the tasks of all seeds into one band.)

The ``small`` preset (default, under a minute on one CPU thread) uses the **shipped**
models (BN embedding, L2 loss; warm start from the exact construction and 200 Adam steps
at ``n = 256`` -- the only configuration shipped) for ``(d, k) = (32, 10)`` (the paper's
shape) and ``(4, 6)``, on 128 tasks of ``n = 512``. The ``paper`` preset trains the six
configurations ``{NE, L2} x {OH, BN, NA}`` for ``(32, 10)`` with the paper's protocol
(cold start, ``tau = 0.1``, 10,000 steps at ``n = 512``, 10 seeds; for a GPU) and
evaluates each on 320 tasks.

Run ``skformer probe multistep --out multistep.json --plot multistep.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks.probes._common import (
    COLOURS,
    SOURCES,
    add_run_options,
    add_shape_options,
    config_label,
    figure,
    model_seeds,
    obtain_model,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    seeded_generator,
    timed_run,
)
from skformer.losses import kmeans_cost, lloyd_costs
from skformer.tasks import TaskConfig, sample_tasks

__all__ = ["METHODS", "PRESETS", "bands", "cost_paths", "format_summary", "main",
           "obtain_model", "plot", "run", "summarise_costs"]

METHODS = ("reembed", "naive", "lloyd")
ALL_CONFIGS = ("onehot:ne", "binary:ne", "none:ne", "onehot:l2", "binary:l2", "none:l2")

PRESETS: dict[str, dict] = {
    "small": dict(d=[32, 4], k=[10, 6], n=512, tasks=128, horizon=20, source="shipped",
                  configs=["binary:l2"], n_seeds=1, steps=None),
    "paper": dict(d=[32], k=[10], n=512, tasks=320, horizon=20, source="paper",
                  configs=list(ALL_CONFIGS), n_seeds=10, steps=None),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


@torch.no_grad()
def cost_paths(model, x: torch.Tensor, c: torch.Tensor, horizon: int, *,
               generator: torch.Generator, batch_size: int = 32) -> dict[str, np.ndarray]:
    """k-means cost per task and step of the three methods, from the same start.

    Parameters
    ----------
    model : LearnedKMeansModel
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
        Initial centres.
    horizon : int
        ``T``, the number of steps.
    generator : torch.Generator
        Re-seeding of Lloyd's empty clusters.
    batch_size : int, default=32
        Tasks per forward pass.

    Returns
    -------
    dict of str to ndarray of shape (b, T + 1)
        ``"reembed"``, ``"naive"`` and ``"lloyd"``; column 0 is the cost of ``c``.
    """
    model.eval()
    out: dict[str, list] = {name: [] for name in METHODS}
    for s in range(0, x.shape[0], batch_size):
        xs, cs = x[s : s + batch_size], c[s : s + batch_size]
        for name, reembed in (("reembed", True), ("naive", False)):
            path = model.iterate(xs, cs, horizon, reembed=reembed)  # (b, T + 1, k, d)
            out[name].append(torch.stack([kmeans_cost(xs, path[:, t])
                                          for t in range(horizon + 1)], dim=1))
    out["lloyd"] = [lloyd_costs(x, c, horizon, generator=generator)]
    return {name: torch.cat(v).double().cpu().numpy() for name, v in out.items()}


def bands(values: np.ndarray) -> dict:
    """Median and inter-quartile band over tasks (rows), per step (columns).

    Non-finite values (a diverged naive iteration) count as ``+inf``.

    Examples
    --------
    >>> bands(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))["median"]
    [3.0, 4.0]
    """
    v = np.where(np.isnan(values), np.inf, values)
    q25, median, q75 = np.quantile(v, [0.25, 0.5, 0.75], axis=0, method="nearest")
    return {"median": median.tolist(), "q25": q25.tolist(), "q75": q75.tolist()}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = num / den
    return np.where((num == 0) & (den == 0), 1.0, r)


def summarise_costs(costs: dict[str, np.ndarray]) -> dict:
    """Bands and headline numbers of the per-task costs of one model configuration.

    Parameters
    ----------
    costs : dict of str to ndarray of shape (b, T + 1)
        From :func:`cost_paths` (tasks of several seeds may be stacked).

    Returns
    -------
    dict
        ``to_start`` and ``to_lloyd``: :func:`bands` of ``L_t / L_0`` and
        ``L_t / L_t(Lloyd)`` per method; ``final_to_lloyd``: median at step ``T`` of
        the re-embedded and the naive cost over Lloyd's; ``reembed_beats_lloyd``:
        fraction of tasks where re-embedding ends below Lloyd's; ``reembed_monotone``:
        whether the median re-embedded cost never rises by more than 0.1%;
        ``naive_best_step``: the step of the naive iteration's lowest median cost;
        ``naive_final_over_step1``: its median cost at ``T`` over its median at step 1
        (above 1: it diverged after step 1); ``start_equal``: all methods share step 0.
    """
    start = costs["lloyd"][:, :1]
    to_start = {m: bands(_ratio(costs[m], start)) for m in METHODS}
    to_lloyd = {m: bands(_ratio(costs[m], costs["lloyd"])) for m in METHODS}
    naive = np.asarray(to_start["naive"]["median"])
    reembed = np.asarray(to_start["reembed"]["median"])
    last = costs["reembed"][:, -1]
    return {
        "to_start": to_start,
        "to_lloyd": to_lloyd,
        "final_to_lloyd": {m: to_lloyd[m]["median"][-1] for m in ("reembed", "naive")},
        "reembed_beats_lloyd": float(np.mean(last < costs["lloyd"][:, -1])),
        "reembed_monotone": bool(np.all(reembed[1:] <= reembed[:-1] * 1.001)),
        "naive_best_step": int(np.argmin(naive)),
        "naive_final_over_step1": float(naive[-1] / naive[1]) if len(naive) > 1 else 1.0,
        "start_equal": bool(all(np.array_equal(costs[m][:, 0], costs["lloyd"][:, 0])
                                for m in METHODS)),
    }


def _evaluate_config(d: int, k: int, config: str, settings: dict, device) -> tuple:
    tasks_cfg = TaskConfig(n_points=settings["n"], n_features=d, n_clusters=k)
    stacked: dict[str, list] = {m: [] for m in METHODS}
    models = []
    for s, seed in enumerate(model_seeds(settings)):
        model, info = obtain_model(settings["source"], d, k, config, seed=seed,
                                   steps=settings["steps"], device=device)
        models.append({"d": d, "k": k, "config": config, "model_seed": seed, **info})
        # the same tasks for every configuration of a shape (paired comparison)
        batch = sample_tasks(tasks_cfg, settings["tasks"],
                             generator=seeded_generator(settings["seed"], d, k, s),
                             device=device)
        costs = cost_paths(model, batch.x, batch.centres, settings["horizon"],
                           generator=seeded_generator(settings["seed"], d, k, s, 1))
        for m in METHODS:
            stacked[m].append(costs[m])
    costs = {m: np.concatenate(v) for m, v in stacked.items()}
    return models, {"d": d, "k": k, "config": config, **summarise_costs(costs)}


def run(settings: dict, device) -> dict:
    """Evaluate every (shape, configuration); the models used and one record each."""
    models, records = [], []
    for d, k in zip(settings["d"], settings["k"], strict=True):
        for config in settings["configs"]:
            used, record = _evaluate_config(d, k, config, settings, device)
            models += used
            records.append(record)
    return {"models": models, "records": records}


def format_summary(result: dict) -> str:
    """A text table: where re-embedding, naive iteration and Lloyd's end after T steps."""
    s = result["settings"]
    lines = [f"multistep probe (paper Fig. 6), preset {s['preset']}: {s['tasks']} tasks of "
             f"n={s['n']}, T={s['horizon']}, source={s['source']}, "
             f"{result['seconds']:.0f} s on {result['machine']['device_name']}",
             f"{'d':>3} {'k':>3}  {'config':<6} {'reembed L_T/L_0':>15} {'naive L_T/L_0':>13} "
             f"{'Lloyd L_T/L_0':>13} {'reembed/Lloyd':>13} {'naive/Lloyd':>11} "
             f"{'naive best step':>15}"]
    for r in result["records"]:
        start = {m: r["to_start"][m]["median"][-1] for m in METHODS}
        lines.append(
            f"{r['d']:>3} {r['k']:>3}  {config_label(r['config']):<6} {start['reembed']:>15.3f} "
            f"{start['naive']:>13.3g} {start['lloyd']:>13.3f} "
            f"{r['final_to_lloyd']['reembed']:>13.3f} {r['final_to_lloyd']['naive']:>11.3g} "
            f"{r['naive_best_step']:>15}")
    lines.append("(medians over tasks at step T; L_0 = cost of the initial centres)")
    return "\n".join(lines)


def _style(config: str) -> dict:
    embedding, loss = config.split(":")
    return {"color": COLOURS[embedding], "ls": "-" if loss == "l2" else "--"}


def _band(ax, band: dict, label: str | None, **style) -> None:
    steps = np.arange(len(band["median"]))
    ax.plot(steps, band["median"], label=label, lw=1.3, **style)
    ax.fill_between(steps, band["q25"], band["q75"], color=style["color"], alpha=0.15)


def _row(axes, records: list[dict]) -> None:
    lloyd = records[0]["to_start"]["lloyd"]
    for col, method in enumerate(("naive", "reembed")):
        for r in records:
            _band(axes[col], r["to_start"][method], config_label(r["config"]),
                  **_style(r["config"]))
        _band(axes[col], lloyd, "Lloyd", color="k", ls=":")
        axes[col].set_yscale("log")
    for r in records:
        for method, ls in (("reembed", "-"), ("naive", "--")):
            _band(axes[2], r["to_lloyd"][method], f"{config_label(r['config'])} {method}",
                  color=_style(r["config"])["color"], ls=ls)
    axes[2].axhline(1.0, color="k", ls=":", lw=1)
    axes[2].set_yscale("log")


def plot(result: dict, path: str | Path) -> None:
    """Per shape: naive iteration, re-embedding (cost / start) and cost / Lloyd's."""
    shapes = list(dict.fromkeys((r["d"], r["k"]) for r in result["records"]))
    fig = figure(figsize=(12, 3.3 * len(shapes)), layout="constrained")
    axes = fig.subplots(len(shapes), 3, squeeze=False)
    for row, (d, k) in enumerate(shapes):
        _row(axes[row], [r for r in result["records"] if (r["d"], r["k"]) == (d, k)])
        axes[row][0].set_ylabel(f"d={d}, k={k}\ncost / initial cost")
        axes[row][2].set_ylabel("cost / Lloyd's cost")
    for col, title in enumerate(("naive iteration of eq. (4)", "re-embedding at every step",
                                 "against Lloyd's at the same step")):
        axes[0][col].set_title(title, fontsize=9)
        axes[-1][col].set_xlabel("step")
    axes[0][1].legend(fontsize=7)
    axes[0][2].legend(fontsize=7)
    fig.suptitle("Multi-step clustering (paper Fig. 6): median and IQR over tasks",
                 fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe multistep``."""
    p = probe_parser("multistep", __doc__, PRESETS,
                     "small: shipped models on a CPU (default); paper: the paper's setting")
    add_shape_options(p)
    p.add_argument("--n", type=int, help="points per task")
    p.add_argument("--tasks", type=int, help="tasks per shape")
    p.add_argument("--horizon", type=int, help="T, the number of steps")
    p.add_argument("--source", choices=SOURCES, help="shipped models, or train them now")
    p.add_argument("--configs", nargs="+", choices=ALL_CONFIGS,
                   help="model configurations embedding:loss (trained sources)")
    p.add_argument("--n-seeds", dest="n_seeds", type=int,
                   help="models trained per configuration (trained sources)")
    p.add_argument("--steps", type=int, help="training steps (trained sources)")
    add_run_options(p)
    return p


def _settings(args: argparse.Namespace) -> dict:
    settings = preset_settings(args, PRESETS)
    if settings["horizon"] < 1:
        raise SystemExit("--horizon must be >= 1.")
    return settings


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe multistep``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    settings = _settings(args)
    result = timed_run("multistep", "paper B Fig. 6", args, settings, run)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
