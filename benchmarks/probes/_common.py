"""Helpers shared by the probes: seeded streams, per-task scores, models, labels, command
lines, JSON, figures."""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks.cost import machine_info
from skformer._base import resolve_device
from skformer.losses import kmeans_cost, lloyd_costs, relative_loss
from skformer.tasks import TaskBatch

__all__ = [
    "COLOURS",
    "LABELS",
    "SOURCES",
    "Scores",
    "add_run_options",
    "add_shape_options",
    "config_label",
    "describe",
    "figure",
    "machine_info",
    "model_seeds",
    "obtain_model",
    "parse_probe_args",
    "preset_settings",
    "probe_parser",
    "publish",
    "require_matplotlib",
    "resolve_device",
    "score_model",
    "seeded_generator",
    "timed_run",
    "write_json",
]

SOURCES = ("shipped", "fast", "paper")
LABELS = {"onehot": "OH", "binary": "BN", "none": "NA"}
"""The paper's short names of the cluster-index embeddings."""
COLOURS = {"onehot": "tab:blue", "binary": "tab:orange", "none": "tab:green"}
"""One colour per embedding, the same in every probe's figure."""


def config_label(config: str) -> str:
    """The short label of a model configuration ``"embedding:loss"``.

    Examples
    --------
    >>> config_label("binary:l2")
    'BN:L2'
    """
    embedding, loss = config.split(":")
    return f"{LABELS[embedding]}:{loss.upper()}"


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
    config: str = "binary:l2",
    *,
    seed: int = 0,
    family: str = "normal",
    steps: int | None = None,
    device: torch.device | str = "cpu",
) -> tuple[torch.nn.Module, dict]:
    """A learned model for ``(d, k)``: the shipped one, or one trained now.

    Parameters
    ----------
    source : {"shipped", "fast", "paper"}
        ``"shipped"``: the model shipped with skformer (trained on normal tasks,
        ``"binary:l2"`` only). ``"fast"``: :meth:`TrainingConfig.fast` (warm start from
        the exact construction; a cold start for NA, which has none). ``"paper"``:
        :meth:`TrainingConfig.paper` (the paper's cold start, 10,000 steps).
    d, k : int
    config : str, default="binary:l2"
        ``"embedding:loss"``, e.g. ``"onehot:ne"``.
    seed : int, default=0
        Training seed.
    family : str, default="normal"
        Training task family (trained sources only).
    steps : int, default=None
        Training steps; None keeps the preset's.
    device : torch.device or str, default="cpu"

    Returns
    -------
    model : LearnedKMeansModel
        In eval mode, on ``device``.
    info : dict
        How the model was obtained (file, or training configuration, seconds and
        relative validation loss before and after).
    """
    embedding, loss = config.split(":")
    if source == "shipped":
        from skformer.store import find_model, read_model

        path = find_model(d, k, embedding=embedding, loss=loss)
        if family != "normal" or path is None:
            raise ValueError(f"no shipped model for d={d}, k={k}, {config}, {family} tasks; "
                             "skformer ships 'binary:l2' models trained on normal tasks. "
                             "Use --source fast or paper.")
        stored = read_model(path, map_location=device)
        return stored.model.eval(), {"source": source, "file": path.name,
                                     "training_config": stored.metadata["training_config"]}
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}.")
    from skformer.training import TrainingConfig, train

    params = dict(embedding=embedding, loss=loss, family=family, seed=seed)
    if steps is not None:
        params["steps"] = steps
    if source == "fast" and embedding == "none":
        params["init"] = "random"
    cfg = getattr(TrainingConfig, source)(d, k, **params)
    result = train(cfg, device=device)
    return result.model.eval(), {
        "source": source, "training_config": cfg.to_dict(), "seconds": result.seconds,
        "val_relative_before": result.history[0]["val_relative"],
        "val_relative_after": result.last_val_relative,
    }


def model_seeds(settings: dict) -> range:
    """Training seeds of the models of one shape or configuration.

    One model for the ``"shipped"`` source (skformer ships one), else ``n_seeds`` models
    seeded ``seed, seed + 1, ...``.

    Examples
    --------
    >>> list(model_seeds({"source": "fast", "n_seeds": 3, "seed": 5}))
    [5, 6, 7]
    """
    count = 1 if settings["source"] == "shipped" else settings["n_seeds"]
    return range(settings["seed"], settings["seed"] + count)


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
            "Plotting a probe requires matplotlib. Install with: pip install matplotlib"
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


def publish(result: dict, args, summary, plot) -> int:
    """Print a probe's summary, write its JSON (``--out``) and figure (``--plot``)."""
    print(summary(result))
    if args.out:
        write_json(args.out, result)
    if args.plot:
        plot(result, args.plot)
        print(f"figure: {args.plot}")
    return 0


def timed_run(probe: str, figure_ref: str, args, settings: dict, run) -> dict:
    """Run ``run(settings, device)`` on ``args.device``; its result with the probe's name,
    the paper's figure, the settings, the machine and the seconds it took."""
    device = resolve_device(args.device)
    start = time.perf_counter()
    result = run(settings, device)
    return {"probe": probe, "figure": figure_ref, "settings": settings,
            "machine": machine_info(args.device), "seconds": time.perf_counter() - start,
            **result}


def probe_parser(name: str, doc: str, presets: dict, preset_help: str
                 ) -> argparse.ArgumentParser:
    """The parser of ``skformer probe NAME``: the first line of ``doc`` as its description,
    and ``--preset`` (one of ``presets``, default ``"small"``)."""
    parser = argparse.ArgumentParser(prog=f"skformer probe {name}",
                                     description=doc.splitlines()[0])
    parser.add_argument("--preset", choices=tuple(presets), default="small", help=preset_help)
    return parser


def add_shape_options(parser) -> None:
    """``--d`` and ``--k``: lists of shapes, paired one to one (see :func:`preset_settings`)."""
    parser.add_argument("--d", type=int, nargs="+", help="data dimensions, paired with --k")
    parser.add_argument("--k", type=int, nargs="+", help="cluster counts, paired with --d")


def parse_probe_args(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """Parse a probe's command line; with ``--plot``, check for matplotlib before any work."""
    args = parser.parse_args(argv)
    if args.plot:
        require_matplotlib()
    return args


def add_run_options(parser, *, seed_help: str = "seed of every random stream") -> None:
    """The options every probe has: ``--seed``, ``--device``, ``--out``, ``--plot``."""
    parser.add_argument("--seed", type=int, default=0, help=seed_help)
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    parser.add_argument("--out", help="write the numbers and settings to this JSON file")
    parser.add_argument("--plot", help="save the figure to this PNG file (needs matplotlib)")


def preset_settings(args, presets: dict, *, base: dict | None = None) -> dict:
    """The preset's settings, updated by ``base`` then by every option given on the
    command line; ``d`` and ``k`` lists (when present) must pair up."""
    settings = {**presets[args.preset], **(base or {})}
    for key in presets[args.preset]:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    d, k = settings.get("d"), settings.get("k")
    if isinstance(d, list) and isinstance(k, list) and len(d) != len(k):
        raise SystemExit("--d and --k must list the same number of values (paired shapes).")
    settings.update(preset=args.preset, seed=args.seed)
    return settings
