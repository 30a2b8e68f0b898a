"""Length generalisation: models trained at one ``n`` used on tasks of other sizes (Fig. 12).

The paper's claim
-----------------
Paper B, Fig. 12: a model is tied to ``(d, k)`` but not to ``n`` -- every attention
averages over its keys, so the same weights apply to any number of points. Models
trained with ``n = 512`` (``d = 32, k = 10, tau = 0.1``, L2 loss, OH / BN / NA) are used
for ``T = 20`` re-embedded steps on tasks with ``n in {128, 256, 1024, 2048}`` (a quarter,
half, twice and four times the training size), against Lloyd's algorithm. The caption (the
only text of the figure available here) does not state the outcome; the claim it supports,
with the paper's "the same model works for any n", is that the learned models keep
clustering at every size.

Protocol
--------
For each shape ``(d, k)`` and each model, and for each test size ``n``, draw ``tasks``
random tasks of ``n`` points from the training distribution (initial centres: ``k``
random points of the task) and measure, per task:

* the **relative loss** of paper eq. (20): the k-means cost after one model step over the
  cost after one Lloyd step from the same centres (below 1: better than Lloyd), on all
  ``tasks`` tasks; its mean over tasks is eq. (20);
* the **T-step ratio**: the cost after ``T`` re-embedded model steps over the cost after
  ``T`` Lloyd steps from the same centres, on the first ``multistep_tasks`` of them (the
  quantity Fig. 12 plots at its last step).

Lloyd's baseline re-seeds an empty cluster with a random point (the paper's code). Every
draw comes from a generator seeded by ``(seed, d, k, n)``. The training size of each model
is read from its metadata and marked in the figure.

The ``small`` preset (default, about 2 minutes on one CPU thread) evaluates the
**shipped** models (BN embedding, L2 loss, trained at ``n = 256`` -- so the test sizes are
half, once, four and eight times the training size) for ``(d, k)`` in ``(4, 6)``,
``(8, 4)``, ``(16, 16)`` and ``(32, 10)``, on 64 tasks per size for eq. (20) and 32 tasks
for the 20-step ratio. The ``paper`` preset trains ``(32, 10)`` L2 models with the
paper's protocol (cold start, ``n = 512``, 10,000 steps, OH / BN / NA, 10 seeds; for a
GPU) and evaluates them on 320 tasks per size for both numbers.

Run ``skformer probe length --out length.json --plot length.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.probes._common import (
    LABELS,
    SOURCES,
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
from skformer.tasks import TaskBatch, TaskConfig, sample_tasks

__all__ = ["PRESETS", "evaluate_lengths", "format_summary", "main", "plot", "run"]

PRESETS: dict[str, dict] = {
    "small": dict(d=[4, 8, 16, 32], k=[6, 4, 16, 10], ns=[128, 256, 1024, 2048], tasks=64,
                  multistep_tasks=32, horizon=20, source="shipped", embeddings=["binary"],
                  n_seeds=1, steps=None),
    "paper": dict(d=[32], k=[10], ns=[128, 256, 1024, 2048], tasks=320, multistep_tasks=320,
                  horizon=20, source="paper", embeddings=["onehot", "binary", "none"],
                  n_seeds=10, steps=None),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


def _subset(batch: TaskBatch, count: int) -> TaskBatch:
    return TaskBatch(x=batch.x[:count], centres=batch.centres[:count])


def evaluate_lengths(model, d: int, k: int, settings: dict, device) -> list[dict]:
    """Scores of one model at every test size.

    Parameters
    ----------
    model : LearnedKMeansModel
    d, k : int
    settings : dict
        ``ns``, ``tasks``, ``multistep_tasks``, ``horizon`` and ``seed``.
    device : torch.device

    Returns
    -------
    list of dict
        One per ``n``: ``n``, ``relative`` and ``multistep`` (:func:`describe` of the
        per-task eq. (20) ratios and ``T``-step ratios).
    """
    rows = []
    for n in settings["ns"]:
        gens = [seeded_generator(settings["seed"], d, k, n, stream) for stream in range(3)]
        batch = sample_tasks(TaskConfig(n_points=n, n_features=d, n_clusters=k),
                             settings["tasks"], generator=gens[0], device=device)
        one = score_model(model, batch, horizon=0, generators=(gens[1], gens[1]))
        multi = score_model(model, _subset(batch, settings["multistep_tasks"]),
                            horizon=settings["horizon"], generators=(gens[2], gens[2]))
        rows.append({"n": n, "relative": describe(one.relative),
                     "multistep": describe(multi.multistep)})
    return rows


def _training_n(info: dict) -> int | None:
    return (info.get("training_config") or {}).get("n_points")


def run(settings: dict, device) -> dict:
    """Evaluate every (shape, embedding, model seed); the models used and the records."""
    models, records = [], []
    for d, k in zip(settings["d"], settings["k"], strict=True):
        for embedding in settings["embeddings"]:
            for seed in model_seeds(settings):
                model, info = obtain_model(settings["source"], d, k, f"{embedding}:l2",
                                           seed=seed, steps=settings["steps"], device=device)
                models.append({"d": d, "k": k, "embedding": embedding, "model_seed": seed,
                               **info})
                records.append({"d": d, "k": k, "embedding": embedding, "model_seed": seed,
                                "n_train": _training_n(info),
                                "by_n": evaluate_lengths(model, d, k, settings, device)})
    return {"models": models, "records": records}


def format_summary(result: dict) -> str:
    """A text table: eq. (20) mean and the T-step ratio's median at every test size."""
    s = result["settings"]
    lines = [f"length probe (paper Fig. 12), preset {s['preset']}: {s['tasks']} tasks per n "
             f"(T={s['horizon']} ratio on {s['multistep_tasks']}), source={s['source']}, "
             f"{result['seconds']:.0f} s on {result['machine']['device_name']}",
             f"{'d':>3} {'k':>3} {'emb':>3} {'seed':>4} {'n_train':>7}  "
             + "  ".join(f"{'n=' + str(n):>15}" for n in s["ns"]),
             f"{'':>25}" + "  ".join(f"{'eq20 | T-step':>15}" for _ in s["ns"])]
    for r in result["records"]:
        cells = "  ".join(
            f"{_fmt(row['relative']['mean']):>7} | {row['multistep']['median']:.3f}"
            for row in r["by_n"])
        lines.append(f"{r['d']:>3} {r['k']:>3} {LABELS[r['embedding']]:>3} "
                     f"{r['model_seed']:>4} {str(r['n_train']):>7}  {cells}")
    lines.append("(eq20 = mean one-step cost / one Lloyd step; T-step = median cost after "
                 "T re-embedded steps / T Lloyd steps; below 1 beats Lloyd)")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "inf" if value is None else f"{value:.3f}"


def _series(records: list[dict], key: str, stat: str) -> np.ndarray:
    """(seeds, ns) array of one statistic; None (non-finite mean) becomes NaN."""
    return np.array([[np.nan if row[key][stat] is None else row[key][stat]
                      for row in r["by_n"]] for r in records], dtype=np.float64)


def plot(result: dict, path: str | Path) -> None:
    """Eq. (20) mean and the T-step ratio's median against ``n``, one line per model."""
    s = result["settings"]
    fig = figure(figsize=(10, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    groups = list(dict.fromkeys((r["d"], r["k"], r["embedding"]) for r in result["records"]))
    for d, k, embedding in groups:
        recs = [r for r in result["records"] if (r["d"], r["k"], r["embedding"])
                == (d, k, embedding)]
        label = f"d={d}, k={k}, {LABELS[embedding]}:L2"
        for ax, key, stat in ((axes[0], "relative", "mean"), (axes[1], "multistep", "median")):
            values = np.nanmedian(_series(recs, key, stat), axis=0)
            line = ax.plot(s["ns"], values, marker="o", lw=1.2, label=label)[0]
            lo = np.nanmedian(_series(recs, key, "q25"), axis=0)
            hi = np.nanmedian(_series(recs, key, "q75"), axis=0)
            ax.fill_between(s["ns"], lo, hi, color=line.get_color(), alpha=0.08)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(s["ns"], [str(n) for n in s["ns"]])
        ax.axhline(1.0, color="k", ls=":", lw=1)
        ax.set_xlabel("points per task n")
        for n_train in {r["n_train"] for r in result["records"] if r["n_train"]}:
            ax.axvline(n_train, color="grey", ls="--", lw=0.8)
    axes[0].set_ylabel("eq. (20): one step / one Lloyd step")
    axes[0].set_title("one step (mean over tasks, IQR band)", fontsize=9)
    axes[1].set_ylabel(f"cost after T={s['horizon']} steps / Lloyd's")
    axes[1].set_title(f"T={s['horizon']} re-embedded steps (median, IQR band)", fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("Length generalisation (paper Fig. 12); dashed: training n; "
                 "below 1 beats Lloyd", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe length``."""
    p = probe_parser("length", __doc__, PRESETS,
                     "small: shipped models on a CPU (default); paper: the paper's setting")
    add_shape_options(p)
    p.add_argument("--n", dest="ns", type=int, nargs="+", help="test sizes n")
    p.add_argument("--tasks", type=int, help="tasks per size for eq. (20)")
    p.add_argument("--multistep-tasks", dest="multistep_tasks", type=int,
                   help="tasks per size for the T-step ratio (a prefix of --tasks)")
    p.add_argument("--horizon", type=int, help="T of the multi-step ratio")
    p.add_argument("--source", choices=SOURCES, help="shipped models, or train them now")
    p.add_argument("--embeddings", nargs="+", choices=tuple(LABELS),
                   help="embeddings of the L2 models (trained sources)")
    p.add_argument("--n-seeds", dest="n_seeds", type=int,
                   help="models trained per embedding (trained sources)")
    p.add_argument("--steps", type=int, help="training steps (trained sources)")
    add_run_options(p)
    return p


def _settings(args: argparse.Namespace) -> dict:
    settings = preset_settings(args, PRESETS)
    if settings["horizon"] < 1:
        raise SystemExit("--horizon must be >= 1.")
    settings["multistep_tasks"] = min(settings["multistep_tasks"], settings["tasks"])
    settings.update(loss="l2")
    return settings


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe length``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    settings = _settings(args)
    result = timed_run("length", "paper B Fig. 12", args, settings, run)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
