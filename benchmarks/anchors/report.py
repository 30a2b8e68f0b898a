"""Reports of the anchors benchmark: gaps to the best inertia known, times, the targets of
the learned mode, and the tables (text, rst, markdown) and figure.

See :mod:`benchmarks.anchors` for the protocol.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.anchors.runs import METHODS, AnchorRecord
from benchmarks.equal_time.report import FASTER, SLOWER, kmeans_at_time

__all__ = [
    "BKM_INERTIA_TARGET",
    "BKM_TIME_TARGET",
    "CEILING",
    "EQUAL_TIME_TARGET",
    "GAP_TARGET",
    "MARKDOWN_COLUMNS",
    "ROOM",
    "TARGET_METHOD",
    "Row",
    "SetSummary",
    "Targets",
    "format_set",
    "format_targets",
    "label",
    "plot",
    "summarise",
    "to_markdown",
    "to_rst",
]

TARGET_METHOD = "learned"
"""The mode the targets judge: ``TransformerKMeans(n_clusters=k, learned_starts=1)``."""
BKM_INERTIA_TARGET = 1.0005
"""Its inertia over Breathing K-Means' (paired per seed, median): at most this."""
BKM_TIME_TARGET = 1.0
"""Its time over Breathing K-Means' (paired per seed, median): at most this."""
GAP_TARGET = 0.2
"""Its median gap to the best inertia known, in per cent: at most this."""
ROOM = 1.0
"""Where KMeans(n_init=1)'s median gap is at least this (per cent) ..."""
EQUAL_TIME_TARGET = 0.99
"""... its median inertia over KMeans' curve read at its median time: at most this."""
CEILING = 1.001
"""... and everywhere at most this."""
MARKDOWN_COLUMNS = ("kmeans-1", "kmeans-10", "bkm", "learned")
"""The README's table: KMeans (n_init=1), KMeans (n_init=10), Breathing K-Means,
TransformerKMeans (learned_starts=1)."""
_MARKDOWN_HEADS = ("KMeans (n_init=1)", "KMeans (n_init=10)", "Breathing K-Means",
                   "TransformerKMeans (learned_starts=1)")


@dataclass(frozen=True)
class Row:
    """One method on one data set: medians over the seeds."""

    method: str
    seeds: int
    gap: float
    """Median over the seeds of ``inertia / best - 1``, in per cent."""
    seconds: float
    """Median fit time."""
    inertia: float
    """Median inertia."""
    time_ratio_bkm: float | None
    """Median over the seeds of its time over Breathing K-Means' of the same seed (None
    without ``bkm`` records)."""
    inertia_ratio_bkm: float | None
    """The same for the inertia."""
    equal_time: float | None
    """``inertia`` over KMeans' curve (per ``n_init``, median time and inertia) read at
    ``seconds`` (:func:`benchmarks.equal_time.report.kmeans_at_time`); None for KMeans
    itself or without a curve."""
    equal_time_status: str | None


@dataclass(frozen=True)
class Targets:
    """The learned mode's targets on one data set; a value None was not measured."""

    inertia_ratio_bkm: float | None
    time_ratio_bkm: float | None
    gap: float
    equal_time: float | None
    equal_time_bound: float
    """:data:`EQUAL_TIME_TARGET` where KMeans(n_init=1)'s gap is at least :data:`ROOM`
    per cent, else :data:`CEILING`."""

    @property
    def checks(self) -> dict[str, bool | None]:
        """Each target: met (True), missed (False) or not measured (None)."""
        def le(value, bound):
            return None if value is None else bool(value <= bound)
        return {"inertia/bkm": le(self.inertia_ratio_bkm, BKM_INERTIA_TARGET),
                "time/bkm": le(self.time_ratio_bkm, BKM_TIME_TARGET),
                "gap": le(self.gap, GAP_TARGET),
                "equal time": le(self.equal_time, self.equal_time_bound)}

    @property
    def met(self) -> bool:
        """Every measured target met."""
        return all(v is not False for v in self.checks.values())


@dataclass(frozen=True)
class SetSummary:
    """One data set: the best inertia known and every method's row."""

    dataset: str
    group: str
    n: int
    d: int
    k: int
    best: float
    """The lowest inertia of any run of any method and seed (the long search included)."""
    best_by: str
    """``"METHOD, seed S"``: the run that reached it."""
    kmeans_1_gap: float | None
    """KMeans(n_init=1)'s median gap (per cent), None where it did not run."""
    rows: list[Row]
    targets: Targets | None
    """The learned mode's targets (None where it did not run)."""


def _median(values) -> float:
    return float(statistics.median(values))


def _ratio(a: float, b: float) -> float:
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return float(a) / float(b)


def _paired(mine: Sequence[AnchorRecord], ref: dict[int, AnchorRecord], attr: str
            ) -> float | None:
    ratios = [_ratio(getattr(r, attr), getattr(ref[r.seed], attr)) for r in mine
              if r.seed in ref]
    return _median(ratios) if ratios else None


def summarise(records: Sequence[AnchorRecord]) -> list[SetSummary]:
    """Per data set (in order of first appearance) and method (in the order of
    :data:`~benchmarks.anchors.runs.METHODS`, unknown ones last): gaps to the best known,
    medians, ratios to Breathing K-Means paired per seed, the reading at equal time on
    KMeans' curve, and the learned mode's :class:`Targets`."""
    sets: dict[str, list[AnchorRecord]] = {}
    for r in records:
        sets.setdefault(r.dataset, []).append(r)
    order = {name: i for i, name in enumerate(METHODS)}
    out = []
    for name, rs in sets.items():
        best_run = min(rs, key=lambda r: r.inertia)
        best = best_run.inertia
        by_method: dict[str, list[AnchorRecord]] = {}
        for r in rs:
            by_method.setdefault(r.method, []).append(r)
        bkm = {r.seed: r for r in by_method.get("bkm", [])}
        curve = sorted((m[0].n_init, _median(r.seconds for r in m),
                        _median(r.inertia for r in m))
                       for m in by_method.values() if m[0].family == "kmeans")
        rows = []
        for method in sorted(by_method, key=lambda m: order.get(m, len(order))):
            mine = by_method[method]
            seconds, inertia = (_median(r.seconds for r in mine),
                                _median(r.inertia for r in mine))
            at = None
            if curve and mine[0].family != "kmeans" and seconds > 0:
                at = kmeans_at_time([c[0] for c in curve], [c[1] for c in curve],
                                    [c[2] for c in curve], seconds)
            rows.append(Row(
                method=method, seeds=len(mine),
                gap=100.0 * _median(_ratio(r.inertia, best) - 1.0 for r in mine),
                seconds=seconds, inertia=inertia,
                time_ratio_bkm=_paired(mine, bkm, "seconds") if bkm else None,
                inertia_ratio_bkm=_paired(mine, bkm, "inertia") if bkm else None,
                equal_time=None if at is None else _ratio(inertia, at.inertia),
                equal_time_status=None if at is None else at.status))
        by_name = {row.method: row for row in rows}
        k1 = by_name.get("kmeans-1")
        kmeans_1_gap = None if k1 is None else k1.gap
        ours = by_name.get(TARGET_METHOD)
        targets = None if ours is None else Targets(
            inertia_ratio_bkm=ours.inertia_ratio_bkm, time_ratio_bkm=ours.time_ratio_bkm,
            gap=ours.gap, equal_time=ours.equal_time,
            equal_time_bound=EQUAL_TIME_TARGET
            if kmeans_1_gap is not None and kmeans_1_gap >= ROOM else CEILING)
        first = rs[0]
        out.append(SetSummary(name, first.group, first.n, first.d, first.k, best,
                              f"{best_run.method}, seed {best_run.seed}", kmeans_1_gap,
                              rows, targets))
    return out


# --------------------------------------------------------------------------- tables


def label(method: str) -> str:
    """A method's name in tables: :attr:`Method.label`, or the name itself."""
    m = METHODS.get(method)
    return method if m is None else m.label


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _equal_time(row: Row) -> str:
    if row.equal_time is None:
        return "-"
    flag = {FASTER: " (<n_init=1)", SLOWER: " (>curve)"}.get(row.equal_time_status, "")
    return f"{row.equal_time:.4f}{flag}"


_HEAD = ("method", "gap %", "time s", "time/bkm", "inertia/bkm", "/KMeans at equal time")


def format_set(s: SetSummary) -> str:
    """The plain-text table of one data set, then its targets line."""
    lines = [f"## {s.dataset} ({s.group}) n={s.n:,} d={s.d} k={s.k}: best known "
             f"{s.best:.6g} ({s.best_by})",
             f"{_HEAD[0]:<14} {_HEAD[1]:>8} {_HEAD[2]:>9} {_HEAD[3]:>9} {_HEAD[4]:>12}  "
             f"{_HEAD[5]}"]
    for r in s.rows:
        lines.append(f"{r.method:<14} {r.gap:>8.3f} {r.seconds:>9.3f} "
                     f"{_num(r.time_ratio_bkm, '.2f'):>9} {_num(r.inertia_ratio_bkm, '.4f'):>12}"
                     f"  {_equal_time(r)}")
    if s.targets is not None:
        lines.append(f"targets ({TARGET_METHOD}): {_targets_text(s.targets)}")
    return "\n".join(lines)


def _targets_text(t: Targets) -> str:
    mark = {True: "met", False: "MISSED", None: "not measured"}
    c = t.checks
    return (f"inertia/bkm {_num(t.inertia_ratio_bkm, '.4f')} "
            f"<= {BKM_INERTIA_TARGET} {mark[c['inertia/bkm']]}; time/bkm "
            f"{_num(t.time_ratio_bkm, '.2f')} <= {BKM_TIME_TARGET:g} {mark[c['time/bkm']]}; "
            f"gap {t.gap:.3f} % <= {GAP_TARGET} % {mark[c['gap']]}; equal time "
            f"{_num(t.equal_time, '.4f')} <= {t.equal_time_bound} {mark[c['equal time']]}")


def format_targets(summaries: Sequence[SetSummary]) -> str:
    """One line per data set with the learned mode's targets, and a count."""
    judged = [s for s in summaries if s.targets is not None]
    if not judged:
        return f"no {TARGET_METHOD!r} runs: no targets judged"
    lines = [f"{s.dataset:<18} {'met' if s.targets.met else 'MISSED':<7} "
             + _targets_text(s.targets) for s in judged]
    met = sum(s.targets.met for s in judged)
    lines.append(f"every target met on {met} of {len(judged)} data sets")
    return "\n".join(lines)


def _data(s: SetSummary) -> str:
    return f"{s.dataset} ({s.n}, {s.d}, {s.k})"


def to_rst(summaries: Sequence[SetSummary], title: str = "") -> str:
    """Every data set's rows as one rst ``list-table`` (for docs/benchmarks.rst)."""
    heads = ["data (n, d, k)", "method", "gap to best known (%)", "time (s)",
             "time / BKM", "inertia / BKM", "inertia / KMeans at equal time"]
    lines = [f".. list-table::{' ' + title if title else ''}", "   :header-rows: 1", ""]
    lines += ["   * - " + heads[0]] + [f"     - {h}" for h in heads[1:]]
    for s in summaries:
        for i, r in enumerate(s.rows):
            cells = [_data(s) if i == 0 else "", label(r.method), f"{r.gap:.2f}",
                     f"{r.seconds:.3g}", _num(r.time_ratio_bkm, ".2f"),
                     _num(r.inertia_ratio_bkm, ".4f"), _equal_time(r)]
            lines.append(f"   * - {cells[0]}".rstrip())
            lines += [f"     - {c}" for c in cells[1:]]
    return "\n".join(lines) + "\n"


def to_markdown(summaries: Sequence[SetSummary]) -> str:
    """The README's compact table: a row per data set; KMeans (n_init=1), KMeans
    (n_init=10), Breathing K-Means and TransformerKMeans (learned_starts=1); cells
    ``gap % / time s``."""
    lines = ["| data (n, d, k) | " + " | ".join(_MARKDOWN_HEADS) + " |",
             "|---" * (len(_MARKDOWN_HEADS) + 1) + "|"]
    for s in summaries:
        rows = {r.method: r for r in s.rows}
        cells = [f"{rows[m].gap:.2f} % / {rows[m].seconds:.2g} s" if m in rows else "-"
                 for m in MARKDOWN_COLUMNS]
        lines.append(f"| {_data(s)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- figure


_COLOURS = {"bkm": "C3", "faiss": "C2", "long": "C5", "skformer": "C0"}


def plot(summaries: Sequence[SetSummary], path: str, title: str = "") -> None:
    """Save a grid of panels, one per data set: each method's median gap to the best
    known (per cent, symmetric-log axis) against its median time (log axis); KMeans'
    curve as a line labelled by ``n_init``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("skformer bench anchors --plot requires matplotlib. "
                          "Install with: pip install matplotlib") from exc
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if not summaries:
        raise ValueError("nothing to plot: no records.")
    ncols = min(4, len(summaries))
    nrows = math.ceil(len(summaries) / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.3 * nrows + 0.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for i, (ax, s) in enumerate(zip(axes, summaries, strict=False)):
        family = {r.method: METHODS[r.method].family if r.method in METHODS else "other"
                  for r in s.rows}
        curve = [r for r in s.rows if family[r.method] == "kmeans"]
        if curve:
            ax.plot([r.seconds for r in curve], [r.gap for r in curve], "-o", color="C7",
                    ms=3, label="KMeans (n_init)")
            for r in curve:
                ax.annotate(r.method.removeprefix("kmeans-"), (r.seconds, r.gap),
                            textcoords="offset points", xytext=(0, 4), fontsize=6,
                            color="C7", ha="center")
        for r in s.rows:
            if family[r.method] == "kmeans":
                continue
            colour = _COLOURS.get(family[r.method], "C8")
            ax.scatter([r.seconds], [r.gap], s=24, color=colour, zorder=3,
                       marker="s" if r.method == TARGET_METHOD else "o")
            ax.annotate(r.method, (r.seconds, r.gap), textcoords="offset points",
                        xytext=(4, -8), fontsize=6, color=colour)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("symlog", linthresh=0.1)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_ylim(bottom=0.0)  # a gap is never negative
        ax.set_title(f"{s.dataset} (n={s.n:,}, d={s.d}, k={s.k})", fontsize=8)
        ax.tick_params(labelsize=6)
        if i >= len(summaries) - ncols:
            ax.set_xlabel("median fit time (s)", fontsize=7)
        if i % ncols == 0:
            ax.set_ylabel("median gap to best known (%)", fontsize=7)
    for ax in axes[len(summaries):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=110)
