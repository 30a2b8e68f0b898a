"""Task dissimilarity between the five noise families by 1-D earth mover's distance (Fig. 9).

The paper's claim
-----------------
Paper B, Fig. 9 (4 tasks per family, a 20 x 20 matrix) and Fig. 19 (16 per family,
80 x 80): represent a task by the distribution of its squared point-to-initial-centre
distances and compare tasks by the earth mover's distance (EMD). Cauchy tasks resemble
only other cauchy tasks; the other four families (normal, gumbel, laplace, lognormal)
resemble each other, and laplace is the family least dissimilar to cauchy. The paper
uses this to explain the transfer grid of Fig. 8: models do not transfer to or from
cauchy tasks.

Protocol
--------
Spec §4.4: draw ``tasks`` tasks per family (``n`` points, ``d`` features, ``k``
components, equal weights, isotropic scale 0.1; the generator's per-dimension min-max
scaling to [0, 1] is the only normalisation), with their initial centres (``k`` random
points of the task). A task is the empirical distribution of its ``n * k`` squared
distances ``||x_i - c_j||^2``; two tasks are compared by the 1-D Wasserstein-1 distance
between these distributions (:func:`scipy.stats.wasserstein_distance`). Blocks are in the
paper's order: normal, cauchy, gumbel, laplace, lognormal. The 5 x 5 family matrix is the
mean of each block (off-diagonal entries only inside a family).

With ``--transfer FILE.json`` (the output of ``skformer probe transfer``) the tasks take
that run's ``n, d, k`` (unless given), and the family matrix is set beside the transfer
grid: Spearman correlations over the 20 cross-family cells between the EMD of (train,
test) families and (a) the transfer relative loss, (b) its excess over the model trained
on the test family.

Presets: ``small`` (default) is Fig. 9, 4 tasks per family; ``paper`` is Fig. 19, 16 per
family; both at the spec's recommended ``n = 512, d = 32, k = 10``. Both take seconds.

Run ``skformer probe dissimilarity --out dissimilarity.json --plot dissimilarity.png``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr, wasserstein_distance

from benchmarks.probes._common import (
    add_run_options,
    figure,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    seeded_generator,
    timed_run,
)
from skformer.losses import pairwise_sq_dist
from skformer.tasks import FAMILIES, TaskConfig, sample_tasks

__all__ = [
    "PRESETS",
    "compare_with_transfer",
    "distance_samples",
    "emd_matrix",
    "family_matrix",
    "main",
]

PRESETS: dict[str, dict] = {
    "small": dict(tasks=4, n=512, d=32, k=10),
    "paper": dict(tasks=16, n=512, d=32, k=10),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


def distance_samples(family: str, *, tasks: int, n: int, d: int, k: int, seed: int,
                     device="cpu") -> list[np.ndarray]:
    """The squared point-to-initial-centre distances of ``tasks`` random tasks.

    Parameters
    ----------
    family : {"normal", "cauchy", "gumbel", "laplace", "lognormal"}
    tasks, n, d, k : int
    seed : int
    device : str or torch.device, default="cpu"

    Returns
    -------
    list of ndarray of shape (n * k,)
        One float64 array per task.

    Examples
    --------
    >>> samples = distance_samples("normal", tasks=2, n=16, d=2, k=3, seed=0)
    >>> len(samples), samples[0].shape
    (2, (48,))
    """
    config = TaskConfig(n_points=n, n_features=d, n_clusters=k, family=family)
    generator = seeded_generator(seed, d, k, FAMILIES.index(family), 3)
    batch = sample_tasks(config, tasks, generator=generator, device=device)
    sq = pairwise_sq_dist(batch.x, batch.centres).reshape(tasks, -1)
    return [row.double().cpu().numpy() for row in sq]


def emd_matrix(samples: list[np.ndarray]) -> np.ndarray:
    """Pairwise 1-D earth mover's distances between empirical distributions.

    Parameters
    ----------
    samples : list of 1-D ndarray
        One sample per task (its values are the support of a uniform distribution).

    Returns
    -------
    ndarray of shape (len(samples), len(samples))
        Symmetric, zero diagonal; entry ``(i, j)`` is
        ``scipy.stats.wasserstein_distance(samples[i], samples[j])``.

    Examples
    --------
    >>> import numpy as np
    >>> emd_matrix([np.array([0.0, 1.0]), np.array([1.0, 2.0])])
    array([[0., 1.],
           [1., 0.]])
    """
    m = len(samples)
    out = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            out[i, j] = out[j, i] = wasserstein_distance(samples[i], samples[j])
    return out


def family_matrix(matrix: np.ndarray, per_family: int) -> np.ndarray:
    """Mean EMD of each pair of family blocks.

    Parameters
    ----------
    matrix : ndarray of shape (F * per_family, F * per_family)
        Tasks grouped by family, ``per_family`` consecutive rows each.
    per_family : int

    Returns
    -------
    ndarray of shape (F, F)
        Block means; a diagonal block's mean leaves out its zero diagonal (NaN if a
        family has a single task).

    Examples
    --------
    >>> import numpy as np
    >>> family_matrix(np.array([[0, 1, 4, 4], [1, 0, 4, 4], [4, 4, 0, 2], [4, 4, 2, 0.]]), 2)
    array([[1., 4.],
           [4., 2.]])
    """
    f = matrix.shape[0] // per_family
    blocks = matrix.reshape(f, per_family, f, per_family).transpose(0, 2, 1, 3)
    out = blocks.mean(axis=(2, 3))
    if per_family > 1:
        off = ~np.eye(per_family, dtype=bool)
        out[np.diag_indices(f)] = [blocks[i, i][off].mean() for i in range(f)]
    else:
        out[np.diag_indices(f)] = np.nan
    return out


def _findings(families: np.ndarray) -> dict:
    """The numbers behind the paper's claims."""
    names = list(FAMILIES)
    c = names.index("cauchy")
    others = [i for i in range(len(names)) if i != c]
    nearest = {}
    for i, name in enumerate(names):
        row = [(families[i, j], names[j]) for j in range(len(names)) if j != i]
        nearest[name] = min(row)[1]
    light = families[np.ix_(others, others)]
    return {
        "nearest_other_family": nearest,
        "least_dissimilar_to_cauchy": nearest["cauchy"],
        "cauchy_within": float(families[c, c]),
        "cauchy_to_others_mean": float(np.mean(families[c, others])),
        "light_tailed_between_mean": float(light[~np.eye(len(others), dtype=bool)].mean()),
        "cauchy_isolated": bool(np.min(families[c, others]) >
                                np.max(light[~np.eye(len(others), dtype=bool)])),
    }


def compare_with_transfer(families: np.ndarray, transfer: dict) -> dict:
    """Spearman correlations between family EMD and the transfer grid (cross-family cells).

    Parameters
    ----------
    families : ndarray of shape (5, 5)
        Family EMD matrix in the order of :data:`skformer.tasks.FAMILIES`.
    transfer : dict
        The JSON of ``skformer probe transfer`` (``grids[metric][test][train]``).

    Returns
    -------
    dict
        For each available grid metric: ``rho`` and ``p`` against the loss, and
        ``rho_excess``, ``p_excess`` against the loss minus the loss of the model trained
        on the test family (the same row's diagonal), and ``rho_without_cauchy``,
        ``p_without_cauchy`` against the loss over the 12 cells without cauchy (is the
        relation more than "cauchy is far and transfers badly"?).
    """
    order = [transfer["families"].index(f) for f in FAMILIES]
    c = FAMILIES.index("cauchy")
    out = {}
    cross = ~np.eye(len(FAMILIES), dtype=bool)
    for metric in ("relative_mean", "multistep_mean"):
        grid = np.asarray(transfer["grids"].get(metric) or np.nan, dtype=float)
        if grid.ndim != 2:
            continue
        grid = grid[np.ix_(order, order)]
        excess = grid - np.diag(grid)[:, None]
        keep = cross & np.isfinite(grid)
        if keep.sum() < 3:
            continue
        rho, p = spearmanr(families[keep], grid[keep])
        rho_x, p_x = spearmanr(families[keep], excess[keep])
        light = keep.copy()
        light[c, :] = light[:, c] = False
        rho_l, p_l = spearmanr(families[light], grid[light])
        out[metric] = {"rho": float(rho), "p": float(p), "rho_excess": float(rho_x),
                       "p_excess": float(p_x), "cells": int(keep.sum()),
                       "rho_without_cauchy": float(rho_l), "p_without_cauchy": float(p_l),
                       "cells_without_cauchy": int(light.sum())}
    return out


def run(settings: dict, device) -> dict:
    """Distances, the task EMD matrix and the family matrix."""
    samples = []
    for family in FAMILIES:
        samples += distance_samples(family, tasks=settings["tasks"], n=settings["n"],
                                    d=settings["d"], k=settings["k"], seed=settings["seed"],
                                    device=device)
    matrix = emd_matrix(samples)
    families = family_matrix(matrix, settings["tasks"])
    return {"families": list(FAMILIES), "task_family": [f for f in FAMILIES
                                                         for _ in range(settings["tasks"])],
            "emd": matrix.tolist(), "family_emd": families.tolist(),
            "findings": _findings(families)}


def format_summary(result: dict) -> str:
    """The family matrix and the findings, as text."""
    s = result["settings"]
    fam = np.asarray(result["family_emd"])
    lines = [f"dissimilarity probe (paper Fig. 9), preset {s['preset']}: {s['tasks']} tasks "
             f"per family, n={s['n']} d={s['d']} k={s['k']}; {result['seconds']:.1f} s",
             "mean EMD between family blocks (diagonal: between tasks of one family)",
             f"{'':<10}" + "".join(f"{f:>10}" for f in FAMILIES)]
    lines += [f"{f:<10}" + "".join(f"{v:>10.4f}" for v in fam[i])
              for i, f in enumerate(FAMILIES)]
    f = result["findings"]
    lines.append(f"least dissimilar to cauchy: {f['least_dissimilar_to_cauchy']}; cauchy "
                 f"isolated from the other four: {f['cauchy_isolated']}")
    for metric, c in (result.get("transfer_correlation") or {}).items():
        lines.append(f"EMD vs transfer {metric}: Spearman rho={c['rho']:.2f} (p={c['p']:.2g}); "
                     f"vs excess over the test family's own model: rho={c['rho_excess']:.2f} "
                     f"(p={c['p_excess']:.2g}), {c['cells']} cells; without cauchy: "
                     f"rho={c['rho_without_cauchy']:.2f} (p={c['p_without_cauchy']:.2g})")
    return "\n".join(lines)


def _task_heatmap(fig, ax, matrix: np.ndarray, per_family: int) -> None:
    image = ax.imshow(matrix, cmap="Blues")
    for edge in range(per_family, matrix.shape[0], per_family):
        ax.axhline(edge - 0.5, color="k", lw=0.6)
        ax.axvline(edge - 0.5, color="k", lw=0.6)
    centres = [per_family * i + (per_family - 1) / 2 for i in range(len(FAMILIES))]
    ax.set_xticks(centres, FAMILIES, rotation=45, fontsize=7)
    ax.set_yticks(centres, FAMILIES, fontsize=7)
    ax.set_title(f"EMD between tasks ({matrix.shape[0]} x {matrix.shape[0]})", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)


def _family_heatmap(fig, ax, families: np.ndarray) -> None:
    image = ax.imshow(families, cmap="Blues")
    for (i, j), v in np.ndenumerate(families):
        ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=6,
                color="w" if v > np.nanmean(families) * 1.5 else "k")
    ax.set_xticks(range(len(FAMILIES)), FAMILIES, rotation=45, fontsize=7)
    ax.set_yticks(range(len(FAMILIES)), FAMILIES, fontsize=7)
    ax.set_title("mean EMD per family block", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)


def _scatter(ax, families: np.ndarray, transfer: dict, correlation: dict) -> None:
    order = [transfer["families"].index(f) for f in FAMILIES]
    grid = np.asarray(transfer["grids"]["relative_mean"], dtype=float)[np.ix_(order, order)]
    for (i, j), v in np.ndenumerate(grid):
        if i != j:
            ax.scatter(families[i, j], v, s=12, color="tab:red" if "cauchy" in
                       (FAMILIES[i], FAMILIES[j]) else "tab:blue")
            ax.annotate(f"{FAMILIES[j][:3]}>{FAMILIES[i][:3]}", (families[i, j], v),
                        fontsize=5)
    ax.axhline(1.0, color="k", ls=":", lw=1)
    ax.set_xlabel("EMD between train and test family", fontsize=8)
    ax.set_ylabel("transfer eq. (20), train>test", fontsize=8)
    rho = correlation.get("relative_mean", {}).get("rho", float("nan"))
    ax.set_title(f"transfer vs EMD, Spearman rho={rho:.2f}", fontsize=8)


def plot(result: dict, path: str | Path, transfer: dict | None = None) -> None:
    """Task and family EMD heatmaps, and the transfer scatter if given."""
    panels = 3 if transfer is not None else 2
    fig = figure(figsize=(4.2 * panels, 4.0), layout="constrained")
    axes = fig.subplots(1, panels)
    families = np.asarray(result["family_emd"])
    _task_heatmap(fig, axes[0], np.asarray(result["emd"]), result["settings"]["tasks"])
    _family_heatmap(fig, axes[1], families)
    if transfer is not None:
        _scatter(axes[2], families, transfer, result.get("transfer_correlation") or {})
    s = result["settings"]
    fig.suptitle(f"Task dissimilarity (paper Fig. 9), n={s['n']} d={s['d']} k={s['k']}; "
                 "light = low EMD", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe dissimilarity``."""
    p = probe_parser("dissimilarity", __doc__, PRESETS,
                     "small: 4 tasks per family (Fig. 9, default); paper: 16 (Fig. 19)")
    p.add_argument("--tasks", type=int, help="tasks per family")
    p.add_argument("--n", type=int, help="points per task")
    p.add_argument("--d", type=int, help="data dimension")
    p.add_argument("--k", type=int, help="number of clusters (initial centres)")
    p.add_argument("--transfer", help="JSON of 'skformer probe transfer' to compare with")
    add_run_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe dissimilarity``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    transfer = json.loads(Path(args.transfer).read_text()) if args.transfer else None
    base = None if transfer is None else {key: transfer["settings"][key]
                                          for key in ("n", "d", "k")}
    settings = preset_settings(args, PRESETS, base=base)
    settings.update(transfer=args.transfer, scale=0.1)
    result = timed_run("dissimilarity", "paper B Fig. 9 / 19", args, settings, run)
    if transfer is not None:
        result["transfer_correlation"] = compare_with_transfer(
            np.asarray(result["family_emd"]), transfer)
    return publish(result, args, format_summary,
                   lambda res, path: plot(res, path, transfer))


if __name__ == "__main__":
    raise SystemExit(main())
