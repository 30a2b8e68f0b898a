"""Reproduce the learning findings of paper B on a CPU, over several seeds.

Three measurements, each writing JSON records and (with matplotlib) a figure:

``one-step``
    Fast-preset models (warm start from the exact construction, short Adam run) for
    L2 and NE losses, OH and BN embeddings, ``d`` in {4, 32}, ``k`` in {6, 10},
    ``tau = 0.1``: the relative validation loss of eq. (20) before and after training
    (below 1 beats one Lloyd step).
``convergence``
    The paper's cold start (PyTorch's default initialisation) for OH against BN with the
    L2 loss: relative validation loss against training steps, at a small and a large
    ``d`` (a reduced budget: the paper trains 10,000 steps at n = 512).
``multistep``
    The one-step models of ``one-step`` (d = 32, k = 10, L2) applied 20 times on their
    validation tasks, re-embedding at every step and by naive iteration of eq. (4),
    against 20 Lloyd steps from the same initial centres: the median k-means cost per
    step.

Run ``skformer bench learning {one-step,convergence,multistep} --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

__all__ = ["convergence", "multistep", "one_step"]


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


def multistep(one_step_records: list[dict], n_steps: int = 20, n_tasks: int = 320) -> list[dict]:
    """Cost per step of re-embedded and naive iteration, and of Lloyd's algorithm."""
    from skformer.losses import kmeans_cost, lloyd_step
    from skformer.nn.learned import LearnedKMeansModel
    from skformer.tasks import TaskConfig, sample_tasks

    out = []
    for rec in one_step_records:
        if rec.get("state") is None:
            continue
        model = LearnedKMeansModel(rec["d"], rec["k"], embedding=rec["embedding"])
        model.load_state_dict({n: torch.tensor(v) for n, v in rec["state"].items()})
        model.eval()
        gen = torch.Generator().manual_seed(10_000 + rec["seed"])
        tasks = sample_tasks(
            TaskConfig(n_points=512, n_features=rec["d"], n_clusters=rec["k"]), n_tasks,
            generator=gen,
        )
        curves = {"reembed": [], "naive": [], "lloyd": []}
        with torch.no_grad():
            for s in range(0, n_tasks, 32):
                x, c = tasks.x[s : s + 32], tasks.centres[s : s + 32]
                re = model.iterate(x, c, n_steps)
                nv = model.iterate(x, c, n_steps, reembed=False)
                lc, costs = c, [kmeans_cost(x, c)]
                for _ in range(n_steps):
                    lc = lloyd_step(x, lc, generator=gen)
                    costs.append(kmeans_cost(x, lc))
                curves["lloyd"].append(torch.stack(costs, 1))
                curves["reembed"].append(
                    torch.stack([kmeans_cost(x, re[:, t]) for t in range(n_steps + 1)], 1)
                )
                curves["naive"].append(
                    torch.stack([kmeans_cost(x, nv[:, t]) for t in range(n_steps + 1)], 1)
                )
        rows = {name: torch.cat(v) for name, v in curves.items()}  # (tasks, T + 1)
        out.append(
            {
                "d": rec["d"], "k": rec["k"], "embedding": rec["embedding"], "seed": rec["seed"],
                **{f"{name}_median_cost": v.median(0).values.tolist() for name, v in rows.items()},
                "final_ratio_reembed_over_lloyd": float((rows["reembed"][:, -1]
                                                         / rows["lloyd"][:, -1]).mean()),
                "final_ratio_naive_over_lloyd": float((rows["naive"][:, -1]
                                                       / rows["lloyd"][:, -1]).mean()),
            }
        )
    return out


def _plots(kind: str, records: list[dict], out: Path) -> Path | None:
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
    elif kind == "convergence":
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
    else:
        fig, ax = plt.subplots(figsize=(5, 3.6))
        styles = {"reembed": "-", "naive": "--", "lloyd": ":"}
        for rec in records:
            colour = "tab:orange" if rec["embedding"] == "binary" else "tab:blue"
            for name, ls in styles.items():
                if name == "lloyd" and rec["embedding"] != "binary":
                    continue
                label = "Lloyd" if name == "lloyd" else (
                    f"{'BN' if rec['embedding'] == 'binary' else 'OH'}:L2 {name}")
                ax.plot(rec[f"{name}_median_cost"], ls=ls,
                        color="k" if name == "lloyd" else colour,
                        label=label if rec["seed"] == 0 else None, alpha=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("median k-means cost (validation tasks)")
        ax.set_title(f"20 steps, d={records[0]['d']}, k={records[0]['k']}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench learning", description=__doc__.splitlines()[0]
    )
    parser.add_argument("measurement", choices=("one-step", "convergence", "multistep"))
    parser.add_argument("--out", default="learning-results", help="output folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", type=int, default=64,
                        help="multistep: validation tasks per model (the paper uses 320)")
    parser.add_argument("--losses", nargs="+", default=["l2", "ne"], choices=("l2", "ne"),
                        help="one-step: the losses to train with")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps (one-step: the fast preset's; convergence: 600)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = {} if args.steps is None else {"steps": args.steps}
    if args.measurement == "one-step":
        def report(rec: dict) -> None:
            print(f"d={rec['d']} k={rec['k']} {rec['loss']} {rec['embedding']} "
                  f"seed={rec['seed']}: {rec['before']:.3f} -> {rec['after']:.3f} "
                  f"({rec['seconds']:.0f} s)", flush=True)

        records = one_step(
            seeds=tuple(args.seeds), losses=tuple(args.losses), on_record=report, **extra
        )
    elif args.measurement == "convergence":
        records = convergence(seeds=tuple(args.seeds), **extra)
        for rec in records:
            h = rec["history"]
            print(f"d={rec['d']} {rec['embedding']} seed={rec['seed']}: "
                  f"{h[0]['val_relative']:.3f} -> {h[-1]['val_relative']:.3f} "
                  f"({rec['seconds']:.0f} s)", flush=True)
    else:
        source = out / "one-step.json"
        if not source.is_file():
            parser.error(f"run 'one-step' first: {source} is missing")
        records = multistep(json.loads(source.read_text()), n_tasks=args.tasks)
        for rec in records:
            print(f"{rec['embedding']} seed={rec['seed']}: after 20 steps, re-embedded / "
                  f"Lloyd = {rec['final_ratio_reembed_over_lloyd']:.3f}, naive / Lloyd = "
                  f"{rec['final_ratio_naive_over_lloyd']:.3f}", flush=True)
    (out / f"{args.measurement}.json").write_text(json.dumps(records))
    figure = _plots(args.measurement, records, out)
    if figure is not None:
        print(f"figure: {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
