"""Reports of the KMeans benchmark: medians over seeds, markdown tables and a figure.

See :mod:`benchmarks.versus_kmeans` for the protocol.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.versus_kmeans.data import BUNDLED
from benchmarks.versus_kmeans.runs import ContextRecord, Record

__all__ = [
    "RATIO_RTOL",
    "ContextSummary",
    "Summary",
    "format_context",
    "format_summary",
    "plot_summary",
    "summarise",
    "summarise_context",
]

RATIO_RTOL = 1e-6
"""An inertia ratio counts as ``<= 1`` up to this relative tolerance (summation order
alone moves the inertia of the same fixed point by about 1e-7 in float32)."""


@dataclass(frozen=True)
class Summary:
    """Medians over the seeds of one data set."""

    dataset: str
    n: int
    d: int
    k: int
    seeds: int
    inertia_ratio_median: float
    inertia_ratio_mean: float
    inertia_ratio_max: float
    learned_selected: int
    """Seeds whose result came from the learned run."""
    ratio_le_1: int
    """Seeds whose inertia ratio is ``<= 1`` (up to :data:`RATIO_RTOL`)."""
    fraction_ratio_le_1: float
    ours_ari_median: float
    kmeans_ari_median: float
    ours_nmi_median: float
    kmeans_nmi_median: float
    time_ratio_median: float
    kmeans_fit_ms_median: float
    ours_fit_ms_median: float
    kmeans_n_iter_median: float
    ours_n_learned_steps_median: float
    ours_n_lloyd_steps_median: float


@dataclass(frozen=True)
class ContextSummary:
    """Medians over seeds for one ``(max_context, finish)``."""

    n: int
    d: int
    k: int
    max_context: int | None
    finish: str
    seeds: int
    relative_inertia_median: float
    relative_inertia_max: float
    fit_ms_median: float
    n_learned_steps_median: float
    n_lloyd_steps_median: float


def _median(records, field: str) -> float:
    return float(statistics.median(getattr(r, field) for r in records))


def summarise(records: Sequence[Record]) -> list[Summary]:
    """Medians over seeds per ``(dataset, n, d, k)``, in order of first appearance."""
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault((r.dataset, r.n, r.d, r.k), []).append(r)
    out = []
    for (name, n, d, k), rs in groups.items():
        le_1 = sum(r.inertia_ratio <= 1.0 + RATIO_RTOL for r in rs)
        med = {f: _median(rs, f) for f in (
            "inertia_ratio", "ours_ari", "kmeans_ari", "ours_nmi", "kmeans_nmi", "time_ratio",
            "kmeans_fit_ms", "ours_fit_ms", "kmeans_n_iter", "ours_n_learned_steps",
            "ours_n_lloyd_steps")}
        out.append(Summary(
            dataset=name, n=n, d=d, k=k, seeds=len(rs), ratio_le_1=le_1,
            inertia_ratio_mean=float(statistics.fmean(r.inertia_ratio for r in rs)),
            inertia_ratio_max=max(r.inertia_ratio for r in rs),
            learned_selected=sum(r.ours_selected == "learned" for r in rs),
            fraction_ratio_le_1=le_1 / len(rs), **{f"{f}_median": v for f, v in med.items()},
        ))
    return out


def format_summary(summaries: Sequence[Summary]) -> str:
    """A markdown table of :func:`summarise`'s output."""
    lines = [
        "| dataset | n | d | k | inertia ratio mean / max | learned run kept | "
        "ARI ours / KMeans | NMI ours / KMeans | time ratio | KMeans ms | ours ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.dataset} | {s.n:,} | {s.d} | {s.k} | {s.inertia_ratio_mean:.5f} / "
            f"{s.inertia_ratio_max:.5f} | {s.learned_selected}/{s.seeds} | "
            f"{s.ours_ari_median:.3f} / {s.kmeans_ari_median:.3f} | "
            f"{s.ours_nmi_median:.3f} / {s.kmeans_nmi_median:.3f} | "
            f"{s.time_ratio_median:.2f} | {s.kmeans_fit_ms_median:.1f} | "
            f"{s.ours_fit_ms_median:.1f} |"
        )
    return "\n".join(lines)


def summarise_context(records: Sequence[ContextRecord]) -> list[ContextSummary]:
    """Medians over seeds per ``(finish, max_context)``."""
    groups: dict[tuple, list[ContextRecord]] = {}
    for r in records:
        groups.setdefault((r.finish, r.max_context), []).append(r)
    return [
        ContextSummary(
            n=rs[0].n, d=rs[0].d, k=rs[0].k, max_context=max_context, finish=finish,
            seeds=len(rs), relative_inertia_median=_median(rs, "relative_inertia"),
            relative_inertia_max=max(r.relative_inertia for r in rs),
            fit_ms_median=_median(rs, "fit_ms"),
            n_learned_steps_median=_median(rs, "n_learned_steps"),
            n_lloyd_steps_median=_median(rs, "n_lloyd_steps"),
        )
        for (finish, max_context), rs in groups.items()
    ]


def format_context(summaries: Sequence[ContextSummary]) -> str:
    """A markdown table of :func:`summarise_context`'s output."""
    lines = ["| finish | max_context | inertia / all keys (median, max) | fit ms | "
             "learned steps | Lloyd steps |", "|---|---|---|---|---|---|"]
    for s in summaries:
        context = "all" if s.max_context is None else str(s.max_context)
        lines.append(f"| {s.finish} | {context} | {s.relative_inertia_median:.5f}, "
                     f"{s.relative_inertia_max:.5f} | {s.fit_ms_median:.1f} | "
                     f"{s.n_learned_steps_median:g} | {s.n_lloyd_steps_median:g} |")
    return "\n".join(lines)


def _label(s) -> str:
    return s.dataset if s.dataset in BUNDLED else f"{s.dataset}\nn={s.n:,} d={s.d}"


def plot_summary(records: Sequence[Record], path: str, title: str = "") -> None:
    """Save one figure with three panels to ``path``: the inertia ratio per data set (one
    dot per seed, a bar at the median), median ARI of both estimators (paired bars), and
    the fit time ratio (log scale)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting requires matplotlib. Install with: pip install matplotlib"
        ) from exc
    summaries = summarise(records)
    if not summaries:
        raise ValueError("nothing to plot: no records.")
    keys = [(s.dataset, s.n, s.d, s.k) for s in summaries]
    xs = np.arange(len(summaries))
    jitter = np.random.default_rng(0)
    fig = Figure(figsize=(max(8.0, 1.1 * len(summaries)), 10), layout="constrained")
    ratio_ax, ari_ax, time_ax = fig.subplots(3, 1, sharex=True)
    for ax, field in ((ratio_ax, "inertia_ratio"), (time_ax, "time_ratio")):
        for x, key in zip(xs, keys, strict=True):
            values = [getattr(r, field) for r in records if (r.dataset, r.n, r.d, r.k) == key]
            ax.scatter(x + jitter.uniform(-0.15, 0.15, len(values)), values, s=14,
                       color="C0", alpha=0.7)
            ax.hlines(statistics.median(values), x - 0.3, x + 0.3, color="C3")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ratio_ax.set_ylabel("inertia ratio, ours / KMeans")
    ratio_ax.set_title("inertia ratio per seed (red: median; below 1: better than KMeans)")
    time_ax.set_yscale("log")
    time_ax.set_ylabel("fit time ratio, ours / KMeans")
    time_ax.set_title("fit time ratio per seed (log scale)")
    ari_ax.bar(xs - 0.2, [s.kmeans_ari_median for s in summaries], 0.4, label="KMeans",
               color="C7")
    ari_ax.bar(xs + 0.2, [s.ours_ari_median for s in summaries], 0.4,
               label="TransformerKMeans", color="C0")
    ari_ax.set_ylabel("ARI (median over seeds)")
    ari_ax.set_title("adjusted Rand index against the true labels")
    ari_ax.legend(fontsize=8)
    time_ax.set_xticks(xs, [_label(s) for s in summaries], rotation=45, ha="right",
                       fontsize=8)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=120)
