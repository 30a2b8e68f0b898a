"""Train, evaluate and ship the grid of learned models.

For every shape of the grid: :func:`skformer.pretrain` with the ``"multistep"`` preset
(the shipped budget), saved into the weights folder; then the held-out measurement
(:mod:`benchmarks.learning.heldout`) of every model, written into ``index.json`` with
:func:`skformer.store.write_index`. Shapes run in parallel through joblib (one torch
thread each).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["GRID_D", "GRID_K", "SHIPPED", "evaluate_folder", "train_grid"]

GRID_D = (2, 4, 8, 16, 32, 64)
GRID_K = (2, 3, 4, 5, 6, 8, 10, 16)
# The shipped models' budget (the preset's other settings unchanged).
SHIPPED = {"steps": 400, "n_val_tasks": 128, "schedule_search": 64}


def _train_one(d: int, k: int, folder: str, overrides: dict) -> dict:
    import torch

    from skformer.store import model_filename, pretrain, read_model

    torch.set_num_threads(1)
    path = Path(folder) / model_filename(d, k)
    start = time.perf_counter()
    pretrain(d, k, preset="multistep", path=path, **overrides)
    training = read_model(path).metadata["training"]
    return {"d": d, "k": k, "wall_seconds": round(time.perf_counter() - start, 1), **training}


def train_grid(folder: Path, ds=GRID_D, ks=GRID_K, *, n_jobs: int = 1,
               skip_existing: bool = False, overrides: dict | None = None, log=print):
    """Train every shape into ``folder`` (largest first, so the pool ends evenly)."""
    from joblib import Parallel, delayed

    from skformer.store import model_filename

    folder.mkdir(parents=True, exist_ok=True)
    shapes = sorted(((d, k) for d in ds for k in ks), key=lambda s: -s[0] * s[1])
    if skip_existing:
        shapes = [s for s in shapes if not (folder / model_filename(*s)).is_file()]
    settings = {**SHIPPED, **(overrides or {})}
    results = []
    jobs = (delayed(_train_one)(d, k, str(folder), settings) for d, k in shapes)
    for result in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs):
        log(f"trained d={result['d']} k={result['k']} in {result['wall_seconds']} s: "
            f"one-step {result['best_val_relative']:.3f}, multi-step "
            f"{result.get('val_multistep', float('nan')):.3f} (best step {result['best_step']})")
        results.append(result)
    return results


def _evaluate_one(path: str, n_tasks: int) -> list[dict]:
    import torch

    from skformer.store import read_model

    from .heldout import evaluate_model

    torch.set_num_threads(1)
    return evaluate_model(read_model(path).model, n_tasks=n_tasks)


def evaluate_folder(folder: Path, *, n_tasks: int = 48, n_jobs: int = 1) -> list[dict]:
    """The held-out records of every model of a folder."""
    from joblib import Parallel, delayed

    paths = sorted(folder.glob("*_binary_l2.safetensors"))
    parts = Parallel(n_jobs=n_jobs)(delayed(_evaluate_one)(str(p), n_tasks) for p in paths)
    return [r for part in parts for r in part]


def heldout_index(records: list[dict]) -> dict[str, dict]:
    """The ``"heldout"`` figures of each model file for ``index.json``."""
    from skformer.store import model_filename

    out: dict[str, dict] = {}
    for r in records:
        entry = out.setdefault(model_filename(r["d"], r["k"]), {"tasks": r["tasks"]})
        key = f"{r['family']}/{r['start']}"
        last = r["ratio"][max(r["ratio"], key=int)]
        entry[key] = {"ratio20": round(last, 4), "headroom": round(r["headroom"], 4),
                      "captured": None if r["captured"] is None else round(r["captured"], 4)}
        if r["one_step"] is not None:
            entry[f"{r['family']}/one_step"] = round(r["one_step"], 4)
    return out


def write_records(records: list[dict], path: Path) -> None:
    path.write_text(json.dumps(records, indent=1) + "\n")
