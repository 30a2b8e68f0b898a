"""Loss-gap surfaces: the smoothed training loss against the true k-means loss (Fig. 5).

The paper's claim
-----------------
Paper B, Fig. 5 ("training loss gap surfaces") shows the landscape of the gap
``L~_Omega^tau - L`` between the smoothed loss the model is trained on and the k-means
loss it is judged by, at ``tau = 0.1``. The theory behind it (paper B App. H, spec §3.2,
§3.4): both smoothings are upper bounds, ``L~ >= L``; the NE (softmax) bound is tight
only as ``tau -> 0``, while the L2 (sparsemax) bound is *exactly* tight for every point
whose margin between its two nearest centres is at least ``tau`` -- so the L2 gap is
smaller, and zero over much of the landscape when clusters are well separated. The gap
``C^tau_Omega`` enters the generalisation bound of the k-means objective.

Our reading of the figure
-------------------------
The paper's text available to this project gives only the caption, not the axes. We read
"training loss surface" in the usual sense of loss-landscape plots (Li et al., 2018): the
loss as a function of the **model parameters** on the plane through the trained weights
``theta*`` spanned by two random, filter-normalised directions,
``theta(a, b) = theta* + a u + b v`` (each row of ``u`` and ``v`` rescaled to the norm of
the same row of the weight; biases by the whole bias norm). The surface is the gap of
the model's output centres, averaged over tasks and points. A second panel shows the gap
at ``theta*`` against ``tau``.

Protocol
--------
For every model, draw ``tasks`` random tasks of ``n`` points (the training distribution;
initial centres: ``k`` random points). At every grid point ``(a, b)`` in
``[-span, span]^2`` run one model step and compute, in float64 and per point,
``r_j = ||x - c_j||^2``, the k-means loss ``min_j r_j``, and the NE and L2 smoothed
losses ``<P(r / tau), r>`` (:func:`skformer.losses.smoothed_kmeans_loss` on one point at
a time). Record the mean per-point gap of each, the mean relative gap ``(L~ - L) / L``
per task, the smallest per-point gap (theory: ``>= 0``) and the fraction of points where
the L2 gap is zero, with the fraction whose margin ``r_(2) - r_(1)`` is at least ``tau``
(theory: the same fraction).

The ``small`` preset (default, about a minute on one CPU thread) uses the shipped models
for ``(d, k) = (4, 6)`` and ``(32, 10)`` (BN embedding, L2 loss), 32 tasks of
``n = 256`` (their training size) and a 21 x 21 grid with ``span = 1``. The ``paper``
preset trains the six configurations ``{NE, L2} x {OH, BN, NA}`` for ``(4, 6)`` with the
paper's protocol (cold start, ``n = 512``, 10,000 steps; for a GPU) and uses 320 tasks
and a 41 x 41 grid.

Run ``skformer probe loss-gap --out loss_gap.json --plot loss_gap.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks.probes._common import (
    SOURCES,
    add_run_options,
    add_shape_options,
    config_label,
    figure,
    obtain_model,
    parse_probe_args,
    preset_settings,
    probe_parser,
    publish,
    seeded_generator,
    timed_run,
)
from benchmarks.probes.multistep import ALL_CONFIGS
from skformer.losses import kmeans_cost, pairwise_sq_dist, smoothed_kmeans_loss
from skformer.tasks import TaskConfig, sample_tasks

__all__ = ["PRESETS", "format_summary", "gap_stats", "main", "plot", "point_gaps",
           "random_directions", "run", "surface", "tau_curve"]

ZERO = 1e-12
"""Per-point gaps at most this (float64 rounding of the distances) count as zero."""

PRESETS: dict[str, dict] = {
    "small": dict(d=[4, 32], k=[6, 10], n=256, tasks=32, grid=21, span=1.0, tau=0.1,
                  taus=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0], source="shipped",
                  configs=["binary:l2"], steps=None),
    "paper": dict(d=[4], k=[6], n=512, tasks=320, grid=41, span=1.0, tau=0.1,
                  taus=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0], source="paper",
                  configs=list(ALL_CONFIGS), steps=None),
}
"""Settings of ``--preset``; every option given on the command line overrides them."""


def random_directions(model: torch.nn.Module, generator: torch.Generator
                      ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Two random filter-normalised directions in parameter space (Li et al., 2018).

    Parameters
    ----------
    model : torch.nn.Module
    generator : torch.Generator
        A CPU generator; the directions are moved to the parameters' device.

    Returns
    -------
    u, v : dict of str to Tensor
        Same names and shapes as ``model.named_parameters()``. Each row of a matrix
        direction has the norm of the same row of the weight; a vector direction has the
        norm of the whole parameter.
    """
    def one() -> dict[str, torch.Tensor]:
        out = {}
        for name, p in model.named_parameters():
            g = torch.randn(p.shape, generator=generator, dtype=torch.float64)
            w = p.detach().double().cpu()
            if g.ndim >= 2:
                g = g * (w.norm(dim=-1, keepdim=True) / g.norm(dim=-1, keepdim=True))
            else:
                g = g * (w.norm() / g.norm())
            out[name] = g.to(device=p.device, dtype=p.dtype)
        return out

    return one(), one()


@torch.no_grad()
def point_gaps(x: torch.Tensor, c: torch.Tensor, tau: float) -> dict[str, torch.Tensor]:
    """Per-point k-means loss, NE and L2 smoothed losses and margin, in float64.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    tau : float

    Returns
    -------
    dict of str to Tensor of shape (b, n)
        ``loss`` (``min_j r_j``), ``ne`` and ``l2`` (``<P(r / tau), r>``) and ``margin``
        (second smallest minus smallest ``r_j``; ``inf`` when ``k = 1``).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [0.48]]])
    >>> g = point_gaps(x, torch.tensor([[[0.0], [1.0]]]), tau=0.1)
    >>> g["margin"]
    tensor([[1.0000, 0.0400]], dtype=torch.float64)
    >>> g["l2"] - g["loss"]  # tight where the margin is >= tau
    tensor([[0.0000, 0.0120]], dtype=torch.float64)
    """
    b, n, d = x.shape
    xp = x.double().reshape(b * n, 1, d)  # one "task" per point
    cp = c.double().repeat_interleave(n, dim=0)  # (b n, k, d)
    r = pairwise_sq_dist(xp, cp)[:, 0]  # (b n, k)
    top = r.topk(min(2, r.shape[-1]), dim=-1, largest=False).values
    margin = top[:, 1] - top[:, 0] if r.shape[-1] > 1 else torch.full_like(top[:, 0], np.inf)
    out = {"loss": kmeans_cost(xp, cp), "margin": margin}
    for kind in ("ne", "l2"):
        out[kind] = smoothed_kmeans_loss(xp, cp, tau=tau, kind=kind, reduction="none")
    return {name: v.reshape(b, n) for name, v in out.items()}


def gap_stats(gaps: dict[str, torch.Tensor], tau: float) -> dict[str, float]:
    """Summary of :func:`point_gaps` over tasks and points.

    Returns
    -------
    dict of str to float
        ``loss`` (mean per-point k-means loss), ``gap_ne`` / ``gap_l2`` (mean per-point
        gap), ``rel_gap_ne`` / ``rel_gap_l2`` (mean over tasks of ``(L~ - L) / L``),
        ``min_gap_ne`` / ``min_gap_l2`` (smallest per-point gap), ``tight_l2`` (fraction
        of points with zero L2 gap) and ``margin_ge_tau`` (fraction with margin >= tau).
    """
    out = {"loss": float(gaps["loss"].mean())}
    task_loss = gaps["loss"].sum(-1)
    for kind in ("ne", "l2"):
        gap = gaps[kind] - gaps["loss"]
        out[f"gap_{kind}"] = float(gap.mean())
        out[f"rel_gap_{kind}"] = float((gap.sum(-1) / task_loss.clamp_min(1e-300)).mean())
        out[f"min_gap_{kind}"] = float(gap.min())
    out["tight_l2"] = float(((gaps["l2"] - gaps["loss"]) <= ZERO).double().mean())
    out["margin_ge_tau"] = float((gaps["margin"] >= tau).double().mean())
    return out


def _centres(model, params, x, c, batch_size: int = 32) -> torch.Tensor:
    return torch.cat([torch.func.functional_call(model, params, (x[s : s + batch_size],
                                                                 c[s : s + batch_size]))
                      for s in range(0, x.shape[0], batch_size)])


def _stats(x, c, tau: float, batch_size: int = 32) -> dict[str, float]:
    parts = [point_gaps(x[s : s + batch_size], c[s : s + batch_size], tau)
             for s in range(0, x.shape[0], batch_size)]
    return gap_stats({key: torch.cat([p[key] for p in parts]) for key in parts[0]}, tau)


@torch.no_grad()
def surface(model, x: torch.Tensor, c: torch.Tensor, *, grid: int, span: float, tau: float,
            generator: torch.Generator) -> dict:
    """The gap statistics on a ``grid x grid`` plane through the trained weights.

    Parameters
    ----------
    model : LearnedKMeansModel
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
        Initial centres; the model's step from them is scored.
    grid : int
        Points per axis.
    span : float
        The plane covers ``[-span, span]^2`` in units of the directions.
    tau : float
    generator : torch.Generator
        Source of the two directions.

    Returns
    -------
    dict
        ``axis`` (the grid coordinates) and, for every statistic of :func:`gap_stats`, a
        ``grid x grid`` nested list (rows: ``b``, columns: ``a``).
    """
    model.eval()
    base = {name: p.detach() for name, p in model.named_parameters()}
    u, v = random_directions(model, generator)
    axis = np.linspace(-span, span, grid)
    maps: dict[str, np.ndarray] = {}
    for i, b in enumerate(axis):
        for j, a in enumerate(axis):
            params = {name: base[name] + a * u[name] + b * v[name] for name in base}
            stats = _stats(x, _centres(model, params, x, c), tau)
            for key, value in stats.items():
                maps.setdefault(key, np.zeros((grid, grid)))[i, j] = value
    return {"axis": axis.tolist(), **{key: m.tolist() for key, m in maps.items()}}


@torch.no_grad()
def tau_curve(model, x: torch.Tensor, c: torch.Tensor, taus) -> list[dict]:
    """The gap statistics at the trained weights for every temperature in ``taus``."""
    model.eval()
    centres = torch.cat([model(x[s : s + 32], c[s : s + 32]) for s in range(0, x.shape[0], 32)])
    return [{"tau": float(t), **_stats(x, centres, float(t))} for t in taus]


def run(settings: dict, device) -> dict:
    """Surfaces and temperature curves of every (shape, configuration)."""
    models, records = [], []
    for d, k in zip(settings["d"], settings["k"], strict=True):
        batch = sample_tasks(TaskConfig(n_points=settings["n"], n_features=d, n_clusters=k),
                             settings["tasks"], generator=seeded_generator(settings["seed"], d, k),
                             device=device)
        for config in settings["configs"]:
            model, info = obtain_model(settings["source"], d, k, config, seed=settings["seed"],
                                       steps=settings["steps"], device=device)
            models.append({"d": d, "k": k, "config": config, **info})
            surf = surface(model, batch.x, batch.centres, grid=settings["grid"],
                           span=settings["span"], tau=settings["tau"],
                           generator=seeded_generator(settings["seed"], d, k, 1))
            centre = settings["grid"] // 2
            records.append({
                "d": d, "k": k, "config": config, "surface": surf,
                "at_trained": {key: surf[key][centre][centre] for key in surf if key != "axis"},
                "tau_curve": tau_curve(model, batch.x, batch.centres, settings["taus"]),
            })
    return {"models": models, "records": records}


def format_summary(result: dict) -> str:
    """A text table: the gaps at the trained weights and over the whole surface."""
    s = result["settings"]
    lines = [f"loss-gap probe (paper Fig. 5), preset {s['preset']}: {s['tasks']} tasks of "
             f"n={s['n']}, tau={s['tau']:g}, {s['grid']}x{s['grid']} grid (span "
             f"{s['span']:g}), {result['seconds']:.0f} s on {result['machine']['device_name']}",
             f"{'d':>3} {'k':>3}  {'model':<6} {'loss/pt':>9} {'NE gap/pt':>10} "
             f"{'L2 gap/pt':>10} {'NE rel':>7} {'L2 rel':>7} {'L2 tight':>8} "
             f"{'margin>=tau':>11} {'min gap (surface)':>18}"]
    for r in result["records"]:
        a = r["at_trained"]
        low = min(np.min(r["surface"]["min_gap_ne"]), np.min(r["surface"]["min_gap_l2"]))
        lines.append(
            f"{r['d']:>3} {r['k']:>3}  {config_label(r['config']):<6} {a['loss']:>9.4f} "
            f"{a['gap_ne']:>10.2e} {a['gap_l2']:>10.2e} {a['rel_gap_ne']:>7.3f} "
            f"{a['rel_gap_l2']:>7.3f} {a['tight_l2']:>8.3f} {a['margin_ge_tau']:>11.3f} "
            f"{low:>18.1e}")
    lines.append("(at the trained weights; 'rel' = mean (L~ - L) / L; 'L2 tight' = fraction "
                 "of points with zero L2 gap; theory: gap >= 0, L2 tight <=> margin >= tau)")
    return "\n".join(lines)


def _heatmap(fig, ax, surf: dict, key: str, vmax: float, title: str) -> None:
    span = surf["axis"][-1]
    image = ax.imshow(np.asarray(surf[key]), origin="lower", cmap="magma", vmin=0.0,
                      vmax=vmax, extent=(-span, span, -span, span), aspect="auto")
    ax.contour(surf["axis"], surf["axis"], np.asarray(surf["loss"]), colors="w",
               linewidths=0.5, levels=6)
    ax.plot([0], [0], "c+", ms=8)
    ax.set_title(f"{title} (max {np.max(surf[key]):.2g})", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)


def _tau_panel(ax, record: dict) -> None:
    taus = [row["tau"] for row in record["tau_curve"]]
    for kind, colour in (("ne", "tab:red"), ("l2", "tab:blue")):
        ax.plot(taus, [max(row[f"gap_{kind}"], 1e-12) for row in record["tau_curve"]],
                marker="o", color=colour, label=f"{kind.upper()} gap / point")
    ax.plot(taus, [row["loss"] for row in record["tau_curve"]], color="k", ls=":",
            label="k-means loss / point")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tau")
    ax.set_title("at the trained weights (zero drawn at 1e-12)", fontsize=8)
    ax.legend(fontsize=6)


def plot(result: dict, path: str | Path) -> None:
    """Per model: NE and L2 gap surfaces (contours: k-means loss) and the gap against tau."""
    records = result["records"]
    fig = figure(figsize=(12, 3.2 * len(records)), layout="constrained")
    axes = fig.subplots(len(records), 3, squeeze=False)
    tau = result["settings"]["tau"]
    for row, rec in enumerate(records):
        surf = rec["surface"]
        vmax = float(np.max(surf["gap_ne"]))
        name = f"d={rec['d']}, k={rec['k']}, {config_label(rec['config'])}"
        _heatmap(fig, axes[row][0], surf, "gap_ne", vmax, f"{name}: NE gap/point, tau={tau:g}")
        _heatmap(fig, axes[row][1], surf, "gap_l2", vmax, f"{name}: L2 gap/point, tau={tau:g}")
        _tau_panel(axes[row][2], rec)
        axes[row][0].set_ylabel("direction v")
    for col in (0, 1):
        axes[-1][col].set_xlabel("direction u")
    fig.suptitle("Loss-gap surfaces (paper Fig. 5): smoothed minus k-means loss on a plane "
                 "through the trained weights (+); white contours: k-means loss", fontsize=9)
    fig.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``skformer probe loss-gap``."""
    p = probe_parser("loss-gap", __doc__, PRESETS,
                     "small: shipped models on a CPU (default); paper: the paper's setting")
    add_shape_options(p)
    p.add_argument("--n", type=int, help="points per task")
    p.add_argument("--tasks", type=int, help="tasks per shape")
    p.add_argument("--grid", type=int, help="grid points per axis of the surface")
    p.add_argument("--span", type=float, help="half-width of the plane, in direction units")
    p.add_argument("--tau", type=float, help="temperature of the surfaces")
    p.add_argument("--taus", type=float, nargs="+", help="temperatures of the tau curve")
    p.add_argument("--source", choices=SOURCES, help="shipped models, or train them now")
    p.add_argument("--configs", nargs="+", choices=ALL_CONFIGS,
                   help="model configurations embedding:loss (trained sources)")
    p.add_argument("--steps", type=int, help="training steps (trained sources)")
    add_run_options(p)
    return p


def _settings(args: argparse.Namespace) -> dict:
    settings = preset_settings(args, PRESETS)
    if settings["grid"] < 2 or not settings["tau"] > 0 or min(settings["taus"]) <= 0:
        raise SystemExit("--grid must be >= 2 and every temperature > 0.")
    settings.update(directions="random, filter-normalised (Li et al., 2018)")
    return settings


def main(argv: list[str] | None = None) -> int:
    """Run ``skformer probe loss-gap``; returns the exit status."""
    args = parse_probe_args(build_parser(), argv)
    settings = _settings(args)
    result = timed_run("loss-gap", "paper B Fig. 5", args, settings, run)
    return publish(result, args, format_summary, plot)


if __name__ == "__main__":
    raise SystemExit(main())
