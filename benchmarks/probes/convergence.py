"""Training curves: NE against L2 loss with OH, BN and NA embeddings (paper Fig. 2).

The paper's claim
-----------------
Paper B, Fig. 2 (and its ablations Figs. 10 and 14): trained from PyTorch's default
initialisation with Adam (lr 0.01, 32 tasks of ``n = 512`` points per step, ``k = 6``),
the one-layer model's relative validation loss (paper eq. 20: its k-means cost after one
step over the cost after one Lloyd step) falls below 1 -- one model step beats one Lloyd
step -- for the OH and BN embeddings, with the L2 (sparsemax) loss at least as good as
the NE (softmax) loss; BN, with fewer parameters, converges more slowly than OH at small
``d`` (its worse Lipschitz constant, Thm. 3.1); without an index embedding (NA) the model
improves but stays above one Lloyd step. The smoothing matters: a large ``tau`` makes the
NE bound loose.

Protocol
--------
For every panel ``(d, tau)`` and every one of the six configurations
``{NE, L2} x {OH, BN, NA}``, train :meth:`TrainingConfig.paper` models (cold start:
PyTorch's default initialisation, which is also the only start the NA embedding has;
``ReduceLROnPlateau`` on the validation loss, as the paper's code) with
:func:`skformer.training.train`, one model per seed. A seed fixes the model
initialisation, the training tasks and the validation tasks, so the six configurations
of a seed see the same tasks (as in the paper). Every ``eval_every`` steps the history
records the mean smoothed training loss since the previous row and the relative
validation loss on ``val_tasks`` fixed tasks. The curves are the median over seeds with
the inter-quartile band (the paper's reporting, over 10 seeds).

The ``small`` preset (the default: about 4 minutes on one CPU thread) is ``d = 4``,
``k = 6``, ``tau = 0.1``, ``n = 32``, 3,000 steps of 32 tasks, 64 validation tasks and
3 seeds: a reduced budget (the attention over points costs ``n^2``, so small tasks buy
more steps), enough for the curves to separate and for OH to cross one Lloyd step. The
``paper`` preset is the paper's setting (meant for a GPU): ``d in {4, 16}``,
``tau in {0.1, 0.25, 1}``, ``n = 512``, 10,000 steps, 320 validation tasks, 10 seeds.

Run ``skformer probe convergence --out convergence.json --plot convergence.png``.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from benchmarks.probes._common import (
    COLOURS,
    LABELS,
    add_run_options,
    figure,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    timed_run,
)

__all__ = ["CONFIGS", "PRESETS", "curve_band", "format_summary", "main", "plot", "run",
           "summarise", "train_run"]

CONFIGS: tuple[tuple[str, str], ...] = tuple(
    (embedding, loss) for loss in ("ne", "l2") for embedding in ("onehot", "binary", "none")
)
"""The six configurations of Fig. 2: (embedding, loss)."""

PRESETS: dict[str, dict] = {
    "small": dict(d=[4], k=6, tau=[0.1], n=32, steps=3000, n_seeds=3, batch_size=32,
                  val_tasks=64, eval_every=50, lr=0.01),
    "paper": dict(d=[4, 16], k=6, tau=[0.1, 0.25, 1.0], n=512, steps=10_000, n_seeds=10,
                  batch_size=32, val_tasks=320, eval_every=50, lr=0.01),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


def train_run(d: int, k: int, tau: float, embedding: str, loss: str, seed: int,
              settings: dict, device) -> dict:
    """Train one model from a cold start and return its history.

    Parameters
    ----------
    d, k : int
        The task shape.
    tau : float
        Temperature of the smoothed loss.
    embedding : {"onehot", "binary", "none"}
    loss : {"ne", "l2"}
    seed : int
        Training seed (model initialisation, training and validation tasks).
    settings : dict
        ``n``, ``steps``, ``batch_size``, ``val_tasks``, ``eval_every`` and ``lr``.
    device : torch.device

    Returns
    -------
    dict
        The configuration, ``seconds`` and ``history`` (one row per validation: ``step``,
        ``train_loss``, ``val_relative``, ``lr``, ``seconds``).
    """
    from skformer.training import TrainingConfig, train

    config = TrainingConfig.paper(
        d, k, embedding=embedding, loss=loss, tau=tau, seed=seed, n_points=settings["n"],
        steps=settings["steps"], batch_size=settings["batch_size"],
        n_val_tasks=settings["val_tasks"], eval_every=settings["eval_every"],
        lr=settings["lr"],
    )
    result = train(config, device=device)
    return {"d": d, "k": k, "tau": tau, "embedding": embedding, "loss": loss, "seed": seed,
            "seconds": result.seconds, "history": result.history}


def run(settings: dict, device, on_record=None) -> list[dict]:
    """Train every (panel, configuration, seed); one record per model.

    ``on_record(record)`` is called as each model finishes (progress reporting).
    """
    records = []
    for d in settings["d"]:
        for tau in settings["tau"]:
            for embedding, loss in CONFIGS:
                for s in range(settings["n_seeds"]):
                    rec = train_run(d, settings["k"], tau, embedding, loss,
                                    settings["seed"] + s, settings, device)
                    records.append(rec)
                    if on_record is not None:
                        on_record(rec)
    return records


def curve_band(histories: list[list[dict]], key: str) -> dict:
    """Median and inter-quartile band over seeds of one history column.

    Parameters
    ----------
    histories : list of list of dict
        One history per seed, all with the same steps.
    key : str
        ``"val_relative"`` or ``"train_loss"``.

    Returns
    -------
    dict
        ``step``, ``median``, ``q25`` and ``q75`` (lists, one entry per history row).

    Examples
    --------
    >>> h = [[{"step": 0, "v": 1.0}], [{"step": 0, "v": 3.0}]]
    >>> curve_band(h, "v")["median"]
    [2.0]
    """
    values = np.array([[row[key] for row in h] for h in histories], dtype=np.float64)
    with warnings.catch_warnings():  # the first row's training loss is NaN (no step yet)
        warnings.simplefilter("ignore", RuntimeWarning)
        q25, median, q75 = np.nanquantile(values, [0.25, 0.5, 0.75], axis=0)
    return {"step": [row["step"] for row in histories[0]], "median": median.tolist(),
            "q25": q25.tolist(), "q75": q75.tolist()}


def _first_below_one(steps: list[int], median: list[float]) -> int | None:
    return next((s for s, v in zip(steps, median, strict=True) if v < 1), None)


def summarise(records: list[dict]) -> list[dict]:
    """One row per (d, tau, embedding, loss): the median curve and where it ended.

    Returns
    -------
    list of dict
        ``d``, ``tau``, ``embedding``, ``loss``, ``seeds``, ``val`` and ``train`` (bands
        from :func:`curve_band`), ``final_median`` / ``final_q25`` / ``final_q75`` (the
        relative validation loss at the last step), ``best_median`` (the lowest point of
        the median curve), ``first_step_below_one`` (None if the median never went below
        1) and ``below_one`` (the final median is below 1: better than one Lloyd step).
    """
    rows = []
    keys = sorted({(r["d"], r["tau"]) for r in records})
    for d, tau in keys:
        for embedding, loss in CONFIGS:
            runs = [r for r in records if (r["d"], r["tau"], r["embedding"], r["loss"])
                    == (d, tau, embedding, loss)]
            if not runs:
                continue
            histories = [r["history"] for r in runs]
            val = curve_band(histories, "val_relative")
            rows.append({
                "d": d, "tau": tau, "embedding": embedding, "loss": loss,
                "seeds": [r["seed"] for r in runs],
                "val": val, "train": curve_band(histories, "train_loss"),
                "final_median": val["median"][-1], "final_q25": val["q25"][-1],
                "final_q75": val["q75"][-1], "best_median": float(np.nanmin(val["median"])),
                "first_step_below_one": _first_below_one(val["step"], val["median"]),
                "below_one": bool(val["median"][-1] < 1),
            })
    return rows


def format_summary(result: dict) -> str:
    """A text table of the final relative validation losses, and which beat Lloyd."""
    s = result["settings"]
    lines = [f"convergence probe (paper Fig. 2), preset {s['preset']}: k={s['k']}, "
             f"n={s['n']}, {s['steps']} steps x {s['batch_size']} tasks, {s['n_seeds']} "
             f"seed(s), {result['seconds']:.0f} s on {result['machine']['device_name']}",
             f"{'d':>3} {'tau':>5}  {'config':<6} {'start':>7} {'final (median [IQR])':>24} "
             f"{'best':>6} {'<1 from step':>12}"]
    for row in result["summary"]:
        name = f"{LABELS[row['embedding']]}:{row['loss'].upper()}"
        first = row["first_step_below_one"]
        lines.append(
            f"{row['d']:>3} {row['tau']:>5g}  {name:<6} {row['val']['median'][0]:>7.3f} "
            f"{row['final_median']:>8.3f} [{row['final_q25']:.3f}, {row['final_q75']:.3f}] "
            f"{row['best_median']:>6.3f} {'never' if first is None else first:>12}")
    below = [f"{LABELS[r['embedding']]}:{r['loss'].upper()} (d={r['d']}, tau={r['tau']:g})"
             for r in result["summary"] if r["below_one"]]
    lines.append("better than one Lloyd step at the end (median < 1): "
                 + (", ".join(below) if below else "none"))
    return "\n".join(lines)


def _draw(ax, rows: list[dict], key: str) -> None:
    for row in rows:
        band = {name: np.asarray(v, dtype=np.float64) for name, v in row[key].items()}
        style = "-" if row["loss"] == "l2" else "--"
        colour = COLOURS[row["embedding"]]
        ax.plot(band["step"], band["median"], ls=style, color=colour, lw=1.3,
                label=f"{LABELS[row['embedding']]}:{row['loss'].upper()}")
        ax.fill_between(band["step"], band["q25"], band["q75"], color=colour, alpha=0.15)
    ax.set_yscale("log", base=2)


def _zoom(ax, rows: list[dict]) -> None:
    """Validation axis: cut the untrained start (up to ~30) so that the end is readable."""
    low = min(np.nanmin(np.asarray(r["val"]["q25"], dtype=np.float64)) for r in rows)
    high = max(np.nanmax(np.asarray(r["val"]["q75"][1:] or r["val"]["q75"],
                                    dtype=np.float64)) for r in rows)
    bottom, top = min(0.9, 0.95 * low), min(4.0, 1.05 * high)
    ax.set_ylim(bottom, top)
    ticks = [t for t in (0.5, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0, 4.0) if bottom <= t <= top]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


def plot(result: dict, path: str | Path) -> None:
    """Two rows per panel ``(d, tau)``: smoothed training loss and relative validation loss."""
    panels = sorted({(r["d"], r["tau"]) for r in result["summary"]})
    fig = figure(figsize=(max(6.5, 4.2 * len(panels)), 6.0), layout="constrained")
    axes = fig.subplots(2, len(panels), squeeze=False, sharex="col")
    for col, (d, tau) in enumerate(panels):
        rows = [r for r in result["summary"] if (r["d"], r["tau"]) == (d, tau)]
        _draw(axes[0][col], rows, "train")
        _draw(axes[1][col], rows, "val")
        _zoom(axes[1][col], rows)
        axes[0][col].set_title(f"d={d}, k={result['settings']['k']}, tau={tau:g}", fontsize=9)
        axes[1][col].axhline(1.0, color="k", ls=":", lw=1)
        axes[1][col].set_xlabel("training step")
    axes[0][0].set_ylabel("smoothed training loss")
    axes[1][0].set_ylabel("relative validation loss (eq. 20)")
    axes[1][0].legend(fontsize=7, ncol=2)
    fig.suptitle("Cold-start training (paper Fig. 2): median and IQR over seeds\n"
                 "below the dotted line: better than one Lloyd step", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe convergence``."""
    p = probe_parser("convergence", __doc__, PRESETS,
                     "small: minutes on a CPU (default); paper: the paper's setting")
    p.add_argument("--d", type=int, nargs="+", help="data dimensions (one panel each)")
    p.add_argument("--k", type=int, help="number of clusters")
    p.add_argument("--tau", type=float, nargs="+", help="loss temperatures (panels)")
    p.add_argument("--n", type=int, help="points per task")
    p.add_argument("--steps", type=int, help="training steps per model")
    p.add_argument("--n-seeds", dest="n_seeds", type=int, help="models per configuration")
    p.add_argument("--batch-size", dest="batch_size", type=int, help="tasks per step")
    p.add_argument("--val-tasks", dest="val_tasks", type=int, help="validation tasks")
    p.add_argument("--eval-every", dest="eval_every", type=int, help="steps between rows")
    p.add_argument("--lr", type=float, help="initial Adam learning rate")
    add_run_options(p, seed_help="first training seed")
    p.add_argument("--quiet", action="store_true", help="no line per trained model")
    return p


def _settings(args: argparse.Namespace) -> dict:
    settings = preset_settings(args, PRESETS)
    settings.update(configs=[f"{LABELS[e]}:{loss.upper()}" for e, loss in CONFIGS],
                    init="random (cold start)")
    return settings


def _report(rec: dict) -> None:
    h = rec["history"]
    print(f"  d={rec['d']} tau={rec['tau']:g} {LABELS[rec['embedding']]}:"
          f"{rec['loss'].upper()} seed={rec['seed']}: {h[0]['val_relative']:.3f} -> "
          f"{h[-1]['val_relative']:.3f} ({rec['seconds']:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe convergence``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)

    def train_all(settings: dict, device) -> dict:
        records = run(settings, device, on_record=None if args.quiet else _report)
        return {"summary": summarise(records), "records": records}

    result = timed_run("convergence", "paper B Fig. 2", args, _settings(args), train_all)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
