"""Numbers, tables and the figure of the shapes benchmark.

The measures (:func:`headroom`, :func:`captured`), the judgement against the targets
(:func:`summarise`), one markdown row per shape (:func:`format_row`), the peers' table
(:func:`format_peers`) and the figure (:func:`plot_records`). See :mod:`benchmarks.shapes`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.shapes.peer_runs import PEERS
from benchmarks.shapes.stats import captured, headroom, median

if TYPE_CHECKING:  # pragma: no cover
    from benchmarks.shapes.runs import ShapeRecord

__all__ = ["CAPTURED_TARGET", "HEADER", "LARGE_K", "RATIO_TARGET", "ROOM", "Summary",
           "captured", "format_peers", "format_row", "format_summary", "headroom", "median",
           "plot_records", "summarise"]

ROOM = 0.10
"""Headroom from which the captured share is judged."""
CAPTURED_TARGET = 0.25
"""Target: the learned steps capture at least this share wherever the headroom is at
least :data:`ROOM`."""
LARGE_K = 32
"""Shapes with at least this many clusters are judged on the k-means++ ratio."""
RATIO_TARGET = 0.995
"""Target: the median over shapes with ``k >= LARGE_K`` of the median (over seeds) ratio
learned-finished-by-Lloyd / Lloyd from k-means++ starts is at most this."""




@dataclass(frozen=True)
class Summary:
    """The run against the two targets, and the estimator's contract."""

    shapes: int
    room: list[str]
    """Shapes whose headroom is at least :data:`ROOM`."""
    captured_misses: list[str]
    """Of those, the shapes whose captured share is below :data:`CAPTURED_TARGET`."""
    captured_median: float | None
    """Median captured share over the shapes of :attr:`room`."""
    large_k: list[str]
    """Shapes with ``k >= LARGE_K`` and k-means++ seeds."""
    ratio_median_large_k: float | None
    """Median over :attr:`large_k` of their median learned-then-Lloyd / Lloyd ratio."""
    estimator_ratio_median_large_k: float | None
    ratio_met: bool | None
    """``ratio_median_large_k <= RATIO_TARGET`` (None without such shapes)."""
    captured_met: bool | None
    """No miss among :attr:`room` (None without such shapes)."""
    violations: list[str]
    """``"shape seed s: ratio"`` for every estimator ratio above ``1 + TOLERANCE``."""
    skipped: list[str]
    """Shapes whose first fit ran no learned steps, with the reason."""


def summarise(records: Sequence[ShapeRecord]) -> Summary:
    """Judge ``records`` against the targets."""
    room = [r for r in records if r.headroom is not None and r.headroom >= ROOM]
    misses = [r.name for r in room if r.captured is None or r.captured < CAPTURED_TARGET]
    large = [r for r in records if r.k >= LARGE_K and r.ratio_median is not None]
    ratio = median(r.ratio_median for r in large)
    return Summary(
        shapes=len(records), room=[r.name for r in room], captured_misses=misses,
        captured_median=median(r.captured for r in room if r.captured is not None),
        large_k=[r.name for r in large], ratio_median_large_k=ratio,
        estimator_ratio_median_large_k=median(r.estimator_ratio_median for r in large),
        ratio_met=None if ratio is None else ratio <= RATIO_TARGET,
        captured_met=None if not room else not misses,
        violations=[f"{r.name} seed {s.seed}: {s.estimator_ratio:.12g}"
                    for r in records for s in r.plusplus_seeds if s.violation],
        skipped=[f"{r.name}: {r.learned_skipped}" for r in records if not r.learned],
    )


HEADER = (
    "| shape | n | d | k | model | first fit s (r=1 / r=0) | learned | headroom | captured | "
    "k-means++: ratio (median) | estimator ratio (max) | time / KMeans |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)
"""The table's header: one row per shape follows (:func:`format_row`)."""


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _num(v: float | None, fmt: str = ".4f") -> str:
    return "-" if v is None else format(v, fmt)


def format_row(r: ShapeRecord) -> str:
    """One markdown row: the shape, which model ran, first-fit times, the headroom and the
    share captured from random starts, the median ratio to Lloyd from k-means++ starts,
    the estimator's largest ratio (``!`` above ``1 + 1e-9``) and the median time of the
    learned fit over KMeans'."""
    model = (r.origin or "none") + (f", {r.project} dirs" if r.project else "")
    est = _num(r.estimator_ratio_max, ".6f") + (" !" if r.violations else "")
    return (f"| {r.name} | {r.n:,} | {r.d} | {r.k} | {model} | "
            f"{r.first_fit_s:.2f} / {r.first_fit_lloyd_s:.2f} | {'yes' if r.learned else 'no'} "
            f"| {_pct(r.headroom)} | {_pct(r.captured)} | {_num(r.ratio_median)} | {est} | "
            f"{_num(r.time_ratio_median, '.2f')} |")


_PEER_HEADS = {p.name: p.label for p in PEERS.values()}


def format_peers(records: Sequence[ShapeRecord]) -> str | None:
    """A markdown table of the peers section, one row per shape with peers: the best
    inertia known and the run that reached it, then per peer (the columns of those that
    ran on some shape) its median gap to the best known and its median fit seconds;
    None where no record has peers."""
    records = [r for r in records if r.peers]
    if not records:
        return None
    ran = {row.method for r in records for row in r.peers}
    methods = [m for m in _PEER_HEADS if m in ran]
    methods += sorted(ran.difference(methods))  # a record of other peers: last
    lines = ["| shape | best known (run) | " + " | ".join(
        _PEER_HEADS.get(m, m) + ": gap / s" for m in methods) + " |",
        "|---" * (2 + len(methods)) + "|"]
    for r in records:
        rows = {row.method: row for row in r.peers}
        cells = ["-" if m not in rows else
                 f"{100 * rows[m].gap:.2f} % / {rows[m].seconds:.3g}" for m in methods]
        lines.append(f"| {r.name} | {r.best_known:.6g} ({r.best_known_by}) | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_summary(s: Summary) -> str:
    """The targets, met or not, in a few lines."""
    def verdict(met: bool | None) -> str:
        return "n/a" if met is None else ("met" if met else "NOT met")

    lines = [
        f"- captured >= {CAPTURED_TARGET:.0%} wherever headroom >= {ROOM:.0%} (random "
        f"starts, 20 steps): {verdict(s.captured_met)}; {len(s.room) - len(s.captured_misses)}"
        f"/{len(s.room)} shapes, median captured {_pct(s.captured_median)}"
        + (f"; misses: {', '.join(s.captured_misses)}" if s.captured_misses else ""),
        f"- k-means++ starts, median over shapes with k >= {LARGE_K} of the median ratio "
        f"(learned then Lloyd) / Lloyd: {_num(s.ratio_median_large_k)} against "
        f"{RATIO_TARGET}: {verdict(s.ratio_met)} ({len(s.large_k)} shapes; the estimator's "
        f"own: {_num(s.estimator_ratio_median_large_k)})",
        "- estimator inertia <= Lloyd's (1 + 1e-9) from every k-means++ start: "
        + ("yes" if not s.violations else "VIOLATED: " + "; ".join(s.violations)),
    ]
    if s.skipped:
        lines.append("- learned steps skipped: " + "; ".join(s.skipped))
    return "\n".join(lines)


def plot_records(records: Sequence[ShapeRecord], path: str, title: str = "") -> None:
    """Save a figure of four panels, one bar group per shape: (a) headroom and share
    captured from random starts, (b) ratio to Lloyd from k-means++ starts (median, seeds'
    range, the estimator's), (c) first-fit seconds, learned and fast mode, (d) time of
    the learned fit over KMeans' at the same start."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("skformer bench shapes --plot requires matplotlib. "
                          "Install with: pip install matplotlib") from exc
    import numpy as np

    if not records:
        raise ValueError("nothing to plot: no shape records.")
    names = [r.name for r in records]
    x = np.arange(len(records))
    fig = Figure(figsize=(max(9.0, 0.55 * len(records) + 3), 8.5), layout="constrained")
    FigureCanvasAgg(fig)  # Agg, whatever pyplot's backend
    (a, b), (c, e) = fig.subplots(2, 2, sharex=True)

    def nan(v):
        return math.nan if v is None else v

    w = 0.4
    a.bar(x - w / 2, [100 * nan(r.headroom) for r in records], w, color="C7",
          label="headroom: 1 - best / Lloyd (20 steps, random starts)")
    a.bar(x + w / 2, [100 * nan(r.captured) for r in records], w, color="C0",
          label="captured by 20 learned steps")
    a.axhline(100 * CAPTURED_TARGET, color="C0", lw=0.8, ls="--",
              label=f"target {CAPTURED_TARGET:.0%} (where headroom >= {ROOM:.0%})")
    top = max([100 * v for r in records for v in (r.headroom, r.captured) if v is not None],
              default=100.0)
    a.set_ylim(top=max(top, 100 * CAPTURED_TARGET) * 1.45)  # room for the legend
    a.set_ylabel("%")
    a.set_title("(a) room below Lloyd from random starts, and the share captured", fontsize=9)
    a.legend(fontsize=7, loc="upper left")

    for r, xi in zip(records, x, strict=True):
        if r.plusplus_seeds:
            lo = min(s.ratio for s in r.plusplus_seeds)
            hi = max(s.ratio for s in r.plusplus_seeds)
            b.plot([xi, xi], [lo, hi], color="C1", lw=1)
    b.scatter(x, [nan(r.ratio_median) for r in records], color="C1", zorder=3,
              label="learned, then Lloyd (median; bar: seeds' range)")
    b.scatter(x, [nan(r.estimator_ratio_max) for r in records], color="k", marker="x",
              zorder=3, label="the estimator (largest over seeds)")
    b.axhline(1.0, color="grey", lw=0.6, ls=":")
    b.axhline(RATIO_TARGET, color="C1", lw=0.8, ls="--",
              label=f"target {RATIO_TARGET} (median over k >= {LARGE_K})")
    b.set_ylabel("inertia / Lloyd's")
    b.set_title("(b) from k-means++ starts, ratio to Lloyd's run", fontsize=9)
    b.ticklabel_format(axis="y", useOffset=False)
    b.legend(fontsize=7, loc="best")

    c.bar(x - w / 2, [r.first_fit_s for r in records], w, color="C2",
          label="learned_starts=1 (first fit of the shape)")
    c.bar(x + w / 2, [r.first_fit_lloyd_s for r in records], w, color="C7",
          label="learned_starts=0 (next)")
    c.set_yscale("log")
    c.set_ylabel("seconds")
    c.set_title("(c) first fit of each shape, TransformerKMeans(random_state=0)", fontsize=9)
    c.legend(fontsize=7)

    e.bar(x, [nan(r.time_ratio_median) for r in records], 0.6, color="C3")
    e.axhline(1.0, color="grey", lw=0.6, ls=":")
    e.set_yscale("log")
    e.set_ylabel("time / KMeans' (median over seeds)")
    e.set_title("(d) learned fit (learned_starts=1) over KMeans, same k-means++ start",
                fontsize=9)
    for ax in (c, e):
        ax.set_xticks(x, [f"{n}" for n in names], rotation=60, ha="right", fontsize=7)
    for ax in (a, b, c, e):
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110)
