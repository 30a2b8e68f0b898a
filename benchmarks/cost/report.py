"""Reports of the cost benchmark: BN against OH per ``(d, k)``, as a table and a figure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.cost.runs import EMBEDDINGS, CostRecord

__all__ = ["CostSummary", "format_record", "format_summary", "plot_summary", "summarise"]


@dataclass(frozen=True)
class CostSummary:
    """BN against OH at one ``(d, k)``: speedups are OH time / BN time."""

    d: int
    k: int
    onehot: CostRecord
    binary: CostRecord
    forward_train_speedup: float
    backward_speedup: float
    forward_eval_speedup: float
    memory_reduction: float
    """``1 - peak(BN) / peak(OH)``: 0.693 is the paper's 69.3% at k = 1000."""


def summarise(records: Sequence[CostRecord]) -> list[CostSummary]:
    """Pair OH and BN records of each ``(d, k)``: BN's speedups and memory reduction.

    Records of a ``(d, k)`` without both embeddings are left out.

    Parameters
    ----------
    records : sequence of CostRecord

    Returns
    -------
    list of CostSummary
        Sorted by ``(d, k)``.

    Notes
    -----
    ``speedup = t(OH) / t(BN)`` (above 1: BN is faster) for the training forward, the
    backward and the eval forward; ``memory_reduction = 1 - peak(BN) / peak(OH)``.
    """
    pairs: dict[tuple[int, int], dict[str, CostRecord]] = {}
    for r in records:
        slot = pairs.setdefault((r.d, r.k), {})
        if r.embedding in slot:
            raise ValueError(f"two {r.embedding} records for d={r.d}, k={r.k}.")
        slot[r.embedding] = r
    out = []
    for (d, k), slot in sorted(pairs.items()):
        if set(slot) != set(EMBEDDINGS):
            continue
        oh, bn = slot["onehot"], slot["binary"]
        out.append(
            CostSummary(
                d=d, k=k, onehot=oh, binary=bn,
                forward_train_speedup=oh.forward_train_ms / bn.forward_train_ms,
                backward_speedup=oh.backward_ms / bn.backward_ms,
                forward_eval_speedup=oh.forward_eval_ms / bn.forward_eval_ms,
                memory_reduction=1.0 - bn.peak_memory_bytes / oh.peak_memory_bytes,
            )
        )
    return out


_PLOT_METRICS = (
    ("forward_train_speedup", "forward (train) speedup, OH / BN"),
    ("backward_speedup", "backward speedup, OH / BN"),
    ("forward_eval_speedup", "forward (eval) speedup, OH / BN"),
    ("memory_reduction", "peak memory reduction (%), 1 - BN / OH"),
)


def plot_summary(summaries: Sequence[CostSummary], path: str, title: str = "") -> None:
    """Plot BN against OH and save the figure to ``path``.

    With several ``d`` and several ``k`` (the Figure 1 grid): four heatmaps over
    ``(d, k)`` (the three speedups and the memory reduction). Otherwise lines against
    ``k`` (one ``d``) or against ``d`` (one ``k``): the speedups, and the memory
    reduction on a second panel.
    """
    try:
        from matplotlib.colors import TwoSlopeNorm
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting requires matplotlib. Install with: pip install matplotlib"
        ) from exc
    if not summaries:
        raise ValueError("nothing to plot: no (d, k) has both onehot and binary records.")
    ds = sorted({s.d for s in summaries})
    ks = sorted({s.k for s in summaries})
    by_shape = {(s.d, s.k): s for s in summaries}
    if len(ds) > 1 and len(ks) > 1:
        fig = Figure(figsize=(11, 9), layout="constrained")
        axes = fig.subplots(2, 2).ravel()
        for ax, (field, label) in zip(axes, _PLOT_METRICS, strict=True):
            percent = field == "memory_reduction"
            scale, centre = (100.0, 0.0) if percent else (1.0, 1.0)
            grid = [[scale * getattr(by_shape[d, k], field) if (d, k) in by_shape else math.nan
                     for k in ks] for d in ds]
            values = [v for row in grid for v in row if not math.isnan(v)]
            norm = TwoSlopeNorm(centre, min(min(values), centre - 1e-3),
                                max(max(values), centre + 1e-3))
            image = ax.imshow(grid, cmap="RdYlGn", norm=norm, origin="lower", aspect="auto")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        text = f"{v:.1f}%" if percent else f"{v:.2f}x"
                        ax.text(j, i, text, ha="center", va="center", fontsize=8)
            ax.set_xticks(range(len(ks)), [str(k) for k in ks])
            ax.set_yticks(range(len(ds)), [str(d) for d in ds])
            ax.set_xlabel("k")
            ax.set_ylabel("d")
            ax.set_title(label)
            fig.colorbar(image, ax=ax)
    else:
        along_k = len(ds) == 1
        xs = ks if along_k else ds
        rows = [by_shape[(ds[0], x) if along_k else (x, ks[0])] for x in xs]
        fig = Figure(figsize=(10, 4), layout="constrained")
        left, right = fig.subplots(1, 2)
        for field, label in _PLOT_METRICS[:3]:
            left.plot(xs, [getattr(r, field) for r in rows], marker="o", label=label)
        left.axhline(1.0, color="grey", lw=0.8, ls="--")
        left.set_ylabel("speedup of BN (OH time / BN time)")
        left.legend(fontsize=8)
        right.plot(xs, [100 * r.memory_reduction for r in rows], marker="o", color="C3")
        right.axhline(0.0, color="grey", lw=0.8, ls="--")
        right.set_ylabel("peak memory reduction of BN (%)")
        fixed = f"d = {ds[0]}" if along_k else f"k = {ks[0]}"
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.minorticks_off()
            ax.set_xlabel("k" if along_k else "d")
            ax.set_title(fixed)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=120)


def _cell(oh: float, bn: float, ratio: str) -> str:
    return f"{oh:.2f} / {bn:.2f} [{ratio}]"


def format_summary(summaries: Sequence[CostSummary]) -> str:
    """A markdown table of :func:`summarise`'s output, laid out as the paper's Table 1."""
    lines = [
        "| d | k | e-d OH / BN | forward train ms OH / BN [speedup] | backward ms OH / BN "
        "[speedup] | forward eval ms OH / BN [speedup] | peak memory MiB OH / BN [reduction] |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        oh, bn = s.onehot, s.binary
        lines.append(
            f"| {s.d} | {s.k} | {oh.width - s.d} / {bn.width - s.d} | "
            f"{_cell(oh.forward_train_ms, bn.forward_train_ms, f'{s.forward_train_speedup:.2f}x')}"
            f" | {_cell(oh.backward_ms, bn.backward_ms, f'{s.backward_speedup:.2f}x')} | "
            f"{_cell(oh.forward_eval_ms, bn.forward_eval_ms, f'{s.forward_eval_speedup:.2f}x')}"
            f" | {_cell(oh.peak_memory_bytes / 2**20, bn.peak_memory_bytes / 2**20, f'{100 * s.memory_reduction:.1f}%')} |"  # noqa: E501
        )
    return "\n".join(lines)


def format_record(r: CostRecord) -> str:
    return (f"| {r.d} | {r.k} | {r.embedding} | {r.width} | {r.forward_train_ms:.2f} | "
            f"{r.backward_ms:.2f} | {r.forward_eval_ms:.2f} | "
            f"{r.peak_memory_bytes / 2**20:.2f} |")
