"""The paper's one-step learning findings on a CPU, over several seeds.

Two measurements, each writing JSON records and (with matplotlib) a figure:

``one-step``
    Fast-preset models (warm start from the exact construction, short Adam run) for
    L2 and NE losses, OH and BN embeddings, ``d`` in {4, 32}, ``k`` in {6, 10},
    ``tau = 0.1``: the relative validation loss of eq. (20) before and after training
    (below 1 beats one Lloyd step).
``convergence``
    The paper's cold start (PyTorch's default initialisation) for OH against BN with the
    L2 loss: relative validation loss against training steps, at a small and a large
    ``d`` (a reduced budget: the paper trains 10,000 steps at n = 512).

Run ``skformer bench learning {one-step,convergence} --out DIR`` (the multi-step
measurement of the shipped models is :mod:`benchmarks.learning.heldout`; naive against
re-embedded iteration is the probe ``skformer probe multistep``).
"""

from __future__ import annotations

import statistics
from pathlib import Path

__all__ = ["convergence", "one_step", "plot"]


def one_step(
    ds=(4, 32), ks=(6, 10), seeds=(0, 1, 2), losses=("l2", "ne"), embeddings=("binary", "onehot"),
    on_record=None, keep_state_for=((32, 10),), **overrides,
) -> list[dict]:
    """Train fast-preset models; one record per (d, k, loss, embedding, seed).

    ``on_record(record)`` is called as each model finishes (progress reporting). The
    weights of the L2 models of the shapes in ``keep_state_for`` are kept in their
    records (for :func:`multistep`).
    """
    from skformer.training import TrainingConfig, train

    records = []
    for d in ds:
        for k in ks:
            for loss in losses:
                for emb in embeddings:
                    for seed in seeds:
                        cfg = TrainingConfig.fast(
                            d, k, loss=loss, embedding=emb, seed=seed, tau=0.1, **overrides
                        )
                        res = train(cfg)
                        records.append(
                            {
                                "d": d, "k": k, "loss": loss, "embedding": emb, "seed": seed,
                                "steps": cfg.steps, "seconds": res.seconds,
                                "before": res.history[0]["val_relative"],
                                "after": res.last_val_relative,
                                "state": {n: t.tolist() for n, t in res.model.state_dict().items()}
                                if (d, k) in keep_state_for and loss == "l2" else None,
                            }
                        )
                        if on_record is not None:
                            on_record(records[-1])
    return records


def convergence(
    ds=(4, 32), k=6, seeds=(0, 1, 2), steps=600, n_points=128, **overrides
) -> list[dict]:
    """Cold-start training curves of OH and BN (L2, tau = 0.1)."""
    from skformer.training import TrainingConfig, train

    records = []
    for d in ds:
        for emb in ("onehot", "binary"):
            for seed in seeds:
                cfg = TrainingConfig.paper(
                    d, k, embedding=emb, loss="l2", tau=0.1, seed=seed, steps=steps,
                    n_points=n_points, n_val_tasks=64, **overrides,
                )
                res = train(cfg)
                records.append(
                    {"d": d, "k": k, "embedding": emb, "seed": seed, "n_points": n_points,
                     "seconds": res.seconds, "history": res.history}
                )
    return records


def plot(kind: str, records: list[dict], out: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    path = out / f"{kind}.png"
    if kind == "one-step":
        groups = sorted({(r["d"], r["k"]) for r in records})
        fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.2), sharey=True,
                                 squeeze=False)
        axes = axes[0]
        for ax, (d, k) in zip(axes, groups, strict=True):
            labels, values = [], []
            for loss in ("l2", "ne"):
                for emb in ("binary", "onehot"):
                    sel = [r["after"] for r in records
                           if (r["d"], r["k"], r["loss"], r["embedding"]) == (d, k, loss, emb)]
                    if sel:
                        labels.append(f"{'BN' if emb == 'binary' else 'OH'}:{loss.upper()}")
                        values.append(sel)
            ax.boxplot(values, tick_labels=labels)
            ax.axhline(1.0, color="k", ls=":", lw=1)
            ax.set_title(f"d={d}, k={k}")
            ax.tick_params(axis="x", labelrotation=45)
        axes[0].set_ylabel("relative validation loss (1 = one Lloyd step)")
    else:
        ds = sorted({r["d"] for r in records})
        fig, axes = plt.subplots(1, len(ds), figsize=(4.5 * len(ds), 3.4), squeeze=False)
        axes = axes[0]
        for ax, d in zip(axes, ds, strict=True):
            for emb, colour in (("onehot", "tab:blue"), ("binary", "tab:orange")):
                runs = [r["history"] for r in records if r["d"] == d and r["embedding"] == emb]
                if not runs:
                    continue
                steps = [row["step"] for row in runs[0]]
                vals = [[row["val_relative"] for row in h] for h in runs]
                med = [statistics.median(v) for v in zip(*vals, strict=True)]
                lo = [min(v) for v in zip(*vals, strict=True)]
                hi = [max(v) for v in zip(*vals, strict=True)]
                label = "OH" if emb == "onehot" else "BN"
                ax.plot(steps, med, color=colour, label=f"{label}:L2 (median)")
                ax.fill_between(steps, lo, hi, color=colour, alpha=0.2)
            ax.axhline(1.0, color="k", ls=":", lw=1)
            ax.set_yscale("log", base=2)
            ax.set_title(f"cold start, d={d}, k={records[0]['k']}")
            ax.set_xlabel("training step")
            ax.legend()
        axes[0].set_ylabel("relative validation loss")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
