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
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from skformer.experiments.cost import _resolve_device, machine_info
from skformer.losses import kmeans_cost, lloyd_costs, relative_loss
from skformer.tasks import TaskBatch, TaskConfig, sample_tasks

__all__ = [
    "PRESETS",
    "VARIANTS",
    "Scores",
    "describe",
    "figure",
    "main",
    "obtain_model",
    "require_matplotlib",
    "score_model",
    "seeded_generator",
    "variant_config",
    "variant_streams",
    "write_json",
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

SOURCES = ("shipped", "fast", "paper")
PRESETS: dict[str, dict] = {
    "small": dict(d=[8, 32], k=[6, 10], n=512, tasks=256, horizon=20, source="shipped",
                  n_seeds=1, steps=None),
    "paper": dict(d=[32], k=[10], n=512, tasks=320, horizon=20, source="paper",
                  n_seeds=10, steps=None),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


# ------------------------------------------------------------------------------ helpers


def seeded_generator(seed: int, *keys: int) -> torch.Generator:
    """A CPU generator for one stream, seeded from ``seed`` and integer ``keys``.

    Parameters
    ----------
    seed : int
    *keys : int
        Non-negative integers naming the stream (e.g. ``d, k, variant index``).

    Returns
    -------
    torch.Generator

    Examples
    --------
    >>> a = seeded_generator(0, 8, 6).initial_seed()
    >>> a == seeded_generator(0, 8, 6).initial_seed() != seeded_generator(0, 8, 7).initial_seed()
    True
    """
    state = np.random.SeedSequence([int(seed), *map(int, keys)]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]) >> 1)


def describe(values) -> dict:
    """Summary statistics of per-task ratios, JSON-ready.

    Parameters
    ----------
    values : array-like of shape (b,)

    Returns
    -------
    dict
        ``n``, ``mean`` (None if a value is not finite), ``median``, ``q25``, ``q75``,
        ``below_one`` (fraction of tasks where the model beats Lloyd) and ``n_nonfinite``.

    Examples
    --------
    >>> describe([0.5, 1.5])["below_one"]
    0.5
    """
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    with np.errstate(invalid="ignore"):  # inf - inf between two infinite tasks
        q25, median, q75 = (float(q) for q in np.quantile(v, [0.25, 0.5, 0.75]))
    return {
        "n": int(v.size),
        "mean": float(v.mean()) if finite.all() else None,
        "median": median,
        "q25": q25,
        "q75": q75,
        "below_one": float((v < 1).mean()),
        "n_nonfinite": int((~finite).sum()),
    }


def _ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` per task; 1 where both are 0 and inf where only ``den`` is."""
    zero = den == 0
    ratio = num / torch.where(zero, torch.ones_like(den), den)
    degenerate = torch.where(num == 0, torch.ones_like(num), torch.full_like(num, math.inf))
    return torch.where(zero, degenerate, ratio)


@dataclass
class Scores:
    """Per-task scores of a model on a batch of tasks."""

    relative: np.ndarray
    """Paper eq. (20) per task: cost after one model step / cost after one Lloyd step."""
    multistep: np.ndarray | None
    """Cost after ``T`` re-embedded model steps / cost after ``T`` Lloyd steps (None if
    ``T = 0``)."""


@torch.no_grad()
def score_model(
    model: torch.nn.Module,
    tasks: TaskBatch,
    *,
    horizon: int,
    generators: tuple[torch.Generator, torch.Generator],
    batch_size: int = 32,
) -> Scores:
    """One-step relative loss (eq. 20) and ``T``-step cost ratio of a model on tasks.

    Parameters
    ----------
    model : LearnedKMeansModel
        Evaluated in eval mode (no dropout).
    tasks : TaskBatch
        ``x`` of shape (b, n, d) and initial centres of shape (b, k, d).
    horizon : int
        ``T``, the number of re-embedded steps of the multi-step ratio; 0 skips it.
    generators : pair of torch.Generator
        Re-seeding of empty clusters for the one-step and the ``T``-step Lloyd baselines.
    batch_size : int, default=32
        Tasks per forward pass.

    Returns
    -------
    Scores

    Notes
    -----
    ``relative`` is :func:`skformer.losses.relative_loss` with ``reduction="none"``; its
    mean over tasks is paper eq. (20).
    """
    model.eval()
    x, c = tasks.x, tasks.centres
    n_steps = max(1, int(horizon))
    paths = torch.cat(
        [model.iterate(x[s : s + batch_size], c[s : s + batch_size], n_steps)
         for s in range(0, x.shape[0], batch_size)]
    )  # (b, T + 1, k, d)
    relative = relative_loss(x, c, paths[:, 1], generator=generators[0], reduction="none")
    multistep = None
    if horizon > 0:
        lloyd = lloyd_costs(x, c, int(horizon), generator=generators[1])[:, -1]
        multistep = _ratio(kmeans_cost(x, paths[:, -1]), lloyd).cpu().numpy()
    return Scores(relative=relative.cpu().numpy(), multistep=multistep)


def obtain_model(
    source: str,
    d: int,
    k: int,
    *,
    seed: int = 0,
    family: str = "normal",
    embedding: str = "binary",
    steps: int | None = None,
    device: torch.device | str = "cpu",
) -> tuple[torch.nn.Module, dict]:
    """A learned model for ``(d, k)``: the shipped one, or one trained now.

    Parameters
    ----------
    source : {"shipped", "fast", "paper"}
        ``"shipped"``: the model shipped with skformer (trained on normal tasks; binary
        embedding only). ``"fast"``: :meth:`TrainingConfig.fast` (warm start from the
        exact construction). ``"paper"``: :meth:`TrainingConfig.paper` (cold start,
        10,000 steps).
    d, k : int
    seed : int, default=0
        Training seed.
    family : str, default="normal"
        Training task family (trained sources only).
    embedding : {"binary", "onehot", "none"}, default="binary"
    steps : int, default=None
        Training steps; None keeps the preset's.
    device : torch.device or str, default="cpu"

    Returns
    -------
    model : LearnedKMeansModel
        In eval mode, on ``device``.
    info : dict
        How the model was obtained (file or training configuration, seconds, final
        relative validation loss).
    """
    if source == "shipped":
        from skformer.store import find_model, load_model

        if family != "normal" or embedding != "binary":
            raise ValueError("shipped models are trained on 'normal' tasks with the "
                             "'binary' embedding; use --source fast or paper.")
        path = find_model(d, k)
        model = load_model(d, k, pretrain=False, device=device)
        return model.eval(), {"source": source, "file": None if path is None else path.name}
    if source not in ("fast", "paper"):
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}.")
    from skformer.training import TrainingConfig, train

    params = dict(seed=seed, family=family, embedding=embedding)
    if steps is not None:
        params["steps"] = steps
    if source == "fast" and embedding == "none":
        params["init"] = "random"
    config = getattr(TrainingConfig, source)(d, k, **params)
    result = train(config, device=device)
    info = {"source": source, "training_config": config.to_dict(),
            "seconds": result.seconds, "val_relative_before": result.history[0]["val_relative"],
            "val_relative_after": result.last_val_relative}
    return result.model.eval(), info


def write_json(path: str | Path, payload: dict) -> None:
    """Write ``payload`` as strict JSON (non-finite floats become null)."""

    def clean(obj):
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else None
        if isinstance(obj, dict):
            return {str(key): clean(value) for key, value in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(value) for value in obj]
        return obj

    Path(path).write_text(json.dumps(clean(payload), indent=1, allow_nan=False))


def require_matplotlib() -> None:
    """Fail early, with the install hint, if matplotlib is missing.

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "Plotting a probe requires matplotlib. Install with: pip install skformer[plot]"
        ) from exc


def figure(*args, **kwargs):
    """A matplotlib :class:`~matplotlib.figure.Figure` (no pyplot, no backend state).

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(*args, **kwargs)


# ------------------------------------------------------------------------------ the probe


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
    settings = dict(PRESETS[args.preset])
    for key in settings:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    if len(settings["d"]) != len(settings["k"]):
        raise SystemExit("--d and --k must list the same number of values (paired shapes).")
    variants = {}
    for name in VARIANTS:
        config = dataclasses.asdict(variant_config(name, 1, 1, 1))
        variants[name] = {key: config[key] for key in ("family", "scale", "isotropic",
                                                        "equal_weights")}
    settings.update(preset=args.preset, seed=args.seed, embedding=args.embedding,
                    variants=variants)
    return settings


def run(settings: dict, device: torch.device) -> dict:
    """Run the probe; the records of every (shape, model seed, variant)."""
    records, models = [], []
    for d, k in zip(settings["d"], settings["k"], strict=True):
        n_seeds = 1 if settings["source"] == "shipped" else settings["n_seeds"]
        for s in range(n_seeds):
            seed = settings["seed"] + s
            model, info = obtain_model(settings["source"], d, k, seed=seed,
                                       embedding=settings["embedding"],
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
    p = argparse.ArgumentParser(prog="skformer probe shift",
                                description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=tuple(PRESETS), default="small",
                   help="small: shipped models on a CPU (default); paper: the paper's setting")
    p.add_argument("--d", type=int, nargs="+", help="data dimensions, paired with --k")
    p.add_argument("--k", type=int, nargs="+", help="cluster counts, paired with --d")
    p.add_argument("--n", type=int, help="points per evaluation task")
    p.add_argument("--tasks", type=int, help="evaluation tasks per variant")
    p.add_argument("--horizon", type=int, help="T of the multi-step ratio (0: skip it)")
    p.add_argument("--source", choices=SOURCES, help="shipped models, or train them now")
    p.add_argument("--n-seeds", dest="n_seeds", type=int,
                   help="models trained per shape (trained sources)")
    p.add_argument("--steps", type=int, help="training steps (trained sources)")
    p.add_argument("--embedding", choices=("binary", "onehot", "none"), default="binary")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--out", help="write the numbers and settings to this JSON file")
    p.add_argument("--plot", help="save the figure to this PNG file (needs matplotlib)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe shift``; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.plot:
        require_matplotlib()
    settings = _settings(args)
    device = _resolve_device(args.device)
    start = time.perf_counter()
    result = run(settings, device)
    result = {"probe": "shift", "figure": "paper B Fig. 7", "settings": settings,
              "machine": machine_info(args.device), "seconds": time.perf_counter() - start,
              **result}
    print(format_summary(result))
    if args.out:
        write_json(args.out, result)
    if args.plot:
        plot(result, args.plot)
        print(f"figure: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
