"""Generalisation across k and across d: the shape-generic models on held-out tasks.

Dimension legend: ``b`` tasks, ``n`` points, ``k`` clusters, ``d`` features.

The paper names its limitation: a model is tied to one ``(d, k)``. Two measurements of
how far the shape-generic models (:mod:`skformer.store.generic`) go past it, on the
held-out tasks of :mod:`benchmarks.learning.heldout` (``n = max(512, 16 k)`` points),
20 re-embedded steps against 20 Lloyd steps from the same starts:

- **across k**: at each ``k`` the generic schedule of its code width against the model
  trained for exactly that ``(d, k)`` where one is shipped (``d <= 64, k <= 16``), and
  at larger ``k``, where no per-k model exists, against Lloyd's algorithm;
- **across d**: the generic model on the full width against the same model stepped in
  the top 64 principal directions of each task, its centres lifted back as the means of
  the rows they assign (:func:`skformer.nn.projection.lift`), both scored in the full
  space.

Each record: ``kind`` ("k" or "d"), ``d``, ``k``, ``family``, ``start``, ``model`` (the
variant), ``ratio20`` (mean over tasks of the cost after 20 steps over Lloyd's),
``headroom`` and ``captured`` (as in :mod:`benchmarks.learning.heldout`).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["across_d", "across_k", "plot", "summary"]

STEPS = 20


@torch.no_grad()
def _score(x, final, lloyd_final, best) -> dict:
    from skformer.losses import kmeans_cost

    cost = kmeans_cost(x, final).double()
    room = float(lloyd_final.sum() - best.sum())
    return {
        "ratio20": float((cost / lloyd_final).mean()),
        "headroom": float(1 - (best / lloyd_final).mean()),
        "captured": (float((lloyd_final.sum() - cost.sum()) / room)
                     if room > 1e-6 * float(lloyd_final.sum()) else None),
    }


def _tasks(d, k, family, n_tasks):
    from .heldout import best_known, heldout_tasks

    x, random_c, kpp_c, gen = heldout_tasks(d, k, family, n_tasks, n_points=max(512, 16 * k))
    return x, {"random": random_c, "k-means++": kpp_c}, gen, best_known(x, k)


def _lloyd(x, c0, gen):
    from skformer.losses import lloyd_costs

    return lloyd_costs(x, c0, STEPS, generator=gen)[:, -1].double()


@torch.no_grad()
def across_k(ds=(8, 32), ks=(3, 4, 6, 8, 10, 12, 16, 24, 32, 64, 128), n_tasks=16,
             families=("normal", "laplace"), on_record=None) -> list[dict]:
    """Generic against per-k models (where shipped) at each ``(d, k)``."""
    from skformer.store import find_model, read_model, shipped_dir
    from skformer.store.generic import generic_model

    records = []
    for d in ds:
        for k in ks:
            models = {"generic": generic_model(d, k)[0]}
            path = find_model(d, k)
            if path is not None and path.parent == shipped_dir():
                models["per-k"] = read_model(path).model
            for family in families:
                x, starts, gen, best = _tasks(d, k, family, n_tasks)
                for start, c0 in starts.items():
                    lloyd = _lloyd(x, c0, torch.Generator().manual_seed(0))
                    for name, model in models.items():
                        final = model.eval().iterate(x, c0, STEPS)[:, -1]
                        rec = {"kind": "k", "d": d, "k": k, "family": family, "start": start,
                               "model": name, **_score(x, final, lloyd, best)}
                        records.append(rec)
                        if on_record is not None:
                            on_record(rec)
    return records


@torch.no_grad()
def across_d(ds=(96, 128, 256), ks=(16, 32), width=64, n_tasks=12,
             families=("normal", "laplace"), on_record=None) -> list[dict]:
    """The generic model at full width against its steps in ``width`` principal
    directions, scored in the full space."""
    from skformer.nn.projection import lift, principal_subspace
    from skformer.store.generic import generic_model

    records = []
    for d in ds:
        for k in ks:
            full, projected = generic_model(d, k)[0], generic_model(width, k)[0]
            for family in families:
                x, starts, gen, best = _tasks(d, k, family, n_tasks)
                sub = principal_subspace(x.double(), None, width)
                z = sub.project(x.double()).float()
                for start, c0 in starts.items():
                    lloyd = _lloyd(x, c0, torch.Generator().manual_seed(0))
                    finals = {
                        "full": full.eval().iterate(x, c0, STEPS)[:, -1],
                        "projected": lift(x.double(), None, z.double(), projected.eval()
                                          .iterate(z, sub.project(c0.double()).float(),
                                                   STEPS)[:, -1].double(),
                                          c0.double()).float(),
                    }
                    for name, final in finals.items():
                        rec = {"kind": "d", "d": d, "k": k, "family": family, "start": start,
                               "model": name, **_score(x, final, lloyd, best)}
                        records.append(rec)
                        if on_record is not None:
                            on_record(rec)
    return records


def summary(records: list[dict]) -> str:
    """One line per (kind, d, k, start): each variant's ratio and captured share, mean
    over the families."""
    rows, keys = {}, []
    for r in records:
        key = (r["kind"], r["d"], r["k"], r["start"])
        if key not in rows:
            rows[key], keys = {}, [*keys, key]
        rows[key].setdefault(r["model"], []).append(r)
    lines = [f"{'':2} {'d':>4} {'k':>4} {'start':>9}  variant: ratio20 (captured)"]
    for key in keys:
        parts = []
        for name, rs in rows[key].items():
            cap = [r["captured"] for r in rs if r["captured"] is not None]
            parts.append(f"{name}: {np.mean([r['ratio20'] for r in rs]):.4f} "
                         f"({np.mean(cap):.2f})" if cap else
                         f"{name}: {np.mean([r['ratio20'] for r in rs]):.4f} (-)")
        lines.append(f"{key[0]:2} {key[1]:>4} {key[2]:>4} {key[3]:>9}  " + ", ".join(parts))
    return "\n".join(lines)


def plot(records: list[dict], path):
    """Two panels: ratio to Lloyd against k (generic, per-k), and against d (full,
    projected); random starts, mean over families. None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, kind, xkey, title in ((axes[0], "k", "k", "across k (d = 8 and 32)"),
                                  (axes[1], "d", "d", "across d (k = 16 and 32)")):
        sel = [r for r in records if r["kind"] == kind and r["start"] == "random"]
        groups = sorted({(r["model"], r["d"] if kind == "k" else r["k"]) for r in sel})
        for model, other in groups:
            pts = {}
            for r in sel:
                if r["model"] == model and (r["d"] if kind == "k" else r["k"]) == other:
                    pts.setdefault(r[xkey], []).append(r["ratio20"])
            xs = sorted(pts)
            label = f"{model}, {'d' if kind == 'k' else 'k'} = {other}"
            ax.plot(xs, [np.mean(pts[v]) for v in xs], marker="o", label=label)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xkey)
        ax.set_ylabel("cost after 20 steps / Lloyd's (random starts)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
