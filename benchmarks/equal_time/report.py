"""Reports of the equal-time benchmark: KMeans' curve, the equal-time judge, tables, figure.

See :mod:`benchmarks.equal_time` for the protocol.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from benchmarks.equal_time.runs import KINDS, FitRecord, Method
from benchmarks.versus_kmeans.data import BUNDLED
from benchmarks.versus_kmeans.report import RATIO_RTOL

__all__ = [
    "FASTER",
    "INTERPOLATED",
    "SLOWER",
    "CurvePoint",
    "EqualTime",
    "Gap",
    "Point",
    "Summary",
    "format_curves",
    "format_gaps",
    "format_points",
    "gaps_to_best",
    "kmeans_at_time",
    "label",
    "needs_n_init",
    "plot_summary",
    "summarise",
]

_PEER_COLOURS = {"bkm": "C6", "faiss": "C8", "long": "C9"}
_PEER_NAMES = {"bkm": "Breathing K-Means", "faiss": "faiss k-means (label: nredo)",
               "long": "long search: Breathing K-Means (n_init=10)"}
_MIN_SPAN = 2e-3
"""The figure's smallest span of relative inertia."""
FASTER = "faster than one KMeans run"
SLOWER = "slower than the largest n_init"
INTERPOLATED = "interpolated"


class EqualTime(NamedTuple):
    """KMeans' inertia at a given time, read off its curve (:func:`kmeans_at_time`)."""

    inertia: float
    status: str
    """:data:`INTERPOLATED`, :data:`FASTER` (the time is below the smallest ``n_init``'s:
    that point's inertia) or :data:`SLOWER` (above the largest ``n_init``'s: that point's
    inertia, flagged because KMeans would have had time for more restarts)."""
    lower: int | None
    """``n_init`` of the curve point at or below the time (None when faster)."""
    upper: int | None
    """``n_init`` of the curve point at or above the time (None when slower)."""


def kmeans_at_time(n_inits: Sequence[int], seconds: Sequence[float],
                   inertias: Sequence[float], t: float) -> EqualTime:
    """KMeans' inertia at time ``t``: linear in ``log(time)`` between the bracketing points.

    Parameters
    ----------
    n_inits, seconds, inertias : sequences of the same length m
        KMeans' curve: per ``n_init``, the median fit time and the median inertia.
    t : float
        The time to read the curve at (seconds, > 0).

    Returns
    -------
    EqualTime

    Notes
    -----
    The points are taken in order of ``n_init`` and their times made non-decreasing by a
    running maximum (a median time below that of fewer restarts is noise: it counts as
    that time). Between bracketing points ``(t_i, I_i)`` and ``(t_j, I_j)``,
    ``I = I_i + (I_j - I_i) * log(t / t_i) / log(t_j / t_i)``; where several brackets hold
    ``t`` (equal times) the one of most restarts is used. The inertias are taken as
    given, monotone or not. Below the first time the first inertia is returned
    (:data:`FASTER`), above the last time the last one (:data:`SLOWER`).

    Examples
    --------
    >>> kmeans_at_time([1, 2, 4], [1.0, 2.0, 4.0], [10.0, 8.0, 7.0], 2 ** 0.5)
    EqualTime(inertia=9.0, status='interpolated', lower=1, upper=2)
    >>> kmeans_at_time([1, 2, 4], [1.0, 2.0, 4.0], [10.0, 8.0, 7.0], 0.5).status
    'faster than one KMeans run'
    """
    if not len(n_inits) == len(seconds) == len(inertias) >= 1:
        raise ValueError("n_inits, seconds and inertias must have the same length >= 1.")
    if not t > 0 or min(seconds) <= 0:
        raise ValueError("times must be positive.")
    order = sorted(range(len(n_inits)), key=lambda i: n_inits[i])
    ns = [int(n_inits[i]) for i in order]
    inertia = [float(inertias[i]) for i in order]
    ts, top = [], 0.0
    for i in order:
        top = max(top, float(seconds[i]))
        ts.append(top)
    if t < ts[0]:
        return EqualTime(inertia[0], FASTER, None, ns[0])
    if t > ts[-1]:
        return EqualTime(inertia[-1], SLOWER, ns[-1], None)
    if len(ns) == 1:
        return EqualTime(inertia[0], INTERPOLATED, ns[0], ns[0])
    for i in range(len(ns) - 2, -1, -1):
        if ts[i] <= t <= ts[i + 1]:
            if ts[i] == ts[i + 1]:
                return EqualTime(inertia[i + 1], INTERPOLATED, ns[i], ns[i + 1])
            w = math.log(t / ts[i]) / math.log(ts[i + 1] / ts[i])
            return EqualTime(inertia[i] + w * (inertia[i + 1] - inertia[i]), INTERPOLATED,
                             ns[i], ns[i + 1])
    raise AssertionError("unreachable: t lies within the curve's times")


def needs_n_init(n_inits: Sequence[int], inertias: Sequence[float], target: float,
                 rtol: float = RATIO_RTOL) -> int | None:
    """The smallest ``n_init`` whose inertia is ``<= target`` (up to ``rtol``), or None.

    Examples
    --------
    >>> needs_n_init([1, 2, 4], [10.0, 8.0, 7.0], 8.0), needs_n_init([1, 2], [3.0, 2.0], 1.0)
    (2, None)
    """
    for n, inertia in sorted(zip(n_inits, inertias, strict=True)):
        if inertia <= target * (1.0 + rtol):
            return int(n)
    return None


@dataclass(frozen=True)
class CurvePoint:
    """KMeans with one ``n_init`` on one data set: medians over the seeds."""

    dataset: str
    n: int
    d: int
    k: int
    n_init: int
    seeds: int
    seconds_median: float
    inertia_median: float
    n_iter_median: float
    inertia_mean: float
    """The mean over the seeds: unlike the median, it shows a seed's poor local optimum."""


@dataclass(frozen=True)
class Point:
    """TransformerKMeans with one ``learned_starts``, or a peer, on one data set, judged
    against KMeans' curve at equal time (medians over the seeds)."""

    dataset: str
    n: int
    d: int
    k: int
    learned_starts: int | None
    """TransformerKMeans' ``learned_starts``; None for a peer."""
    seeds: int
    seconds_median: float
    inertia_median: float
    n_iter_median: float
    n_learned_steps_median: float | None
    """None for a peer."""
    learned_kept: int
    """Seeds whose result came from a learned run (``selected_run_ == "learned"``; 0 for
    a peer)."""
    learned_skipped: str | None
    """Why no learned run was made, if so for every seed (else None)."""
    time_ratio: float
    """``seconds_median`` over KMeans(n_init=1)'s median time."""
    inertia_ratio_n_init_1: float
    """``inertia_median`` over KMeans(n_init=1)'s median inertia."""
    kmeans_equal_time_inertia: float
    equal_time_ratio: float
    """``inertia_median / kmeans_equal_time_inertia``: below 1, the learned mode wins at
    equal time."""
    equal_time_status: str
    bracket: tuple[int | None, int | None]
    match_n_init: int | None
    """The smallest ``n_init`` whose KMeans median inertia is ``<= inertia_median``
    (None: no ``n_init`` of the curve matches)."""
    match_time_ratio: float | None
    """``seconds_median`` over the median time of KMeans with ``match_n_init``."""
    inertia_mean: float
    equal_time_ratio_mean: float
    """The same judge on mean inertias (KMeans' mean-inertia curve read at our median
    time): a secondary view that counts the seeds that end in a poor local optimum."""
    match_n_init_mean: int | None
    """:attr:`match_n_init` on mean inertias."""
    method: str = "ours"
    """The method's kind: ``"ours"`` or a peer's (``"bkm"``, ``"faiss"``, ``"long"``)."""
    label: str = ""
    """The method's name in tables (:attr:`~benchmarks.equal_time.runs.Method.label`)."""


@dataclass(frozen=True)
class Gap:
    """One method (KMeans with one ``n_init``, TransformerKMeans with one
    ``learned_starts``, or a peer) on one data set: its gap to the best inertia known."""

    dataset: str
    n: int
    d: int
    k: int
    method: str
    """The method's kind (:data:`~benchmarks.equal_time.runs.KINDS`)."""
    label: str
    """Its name in tables (:attr:`~benchmarks.equal_time.runs.Method.label`)."""
    seeds: int
    gap_median: float
    """Median over the seeds of ``inertia / best - 1``, in per cent."""
    gap_mean: float
    """The same mean over the seeds (shows a seed's poor local optimum), in per cent."""
    seconds_median: float
    time_ratio: float | None
    """``seconds_median`` over KMeans(n_init=1)'s median time (None without it)."""
    best: float
    """The best inertia known on the data set: the lowest of every run of every method
    and seed (the long search's included)."""
    best_by: str
    """``"LABEL, seed S"``: the run that reached it."""


class Summary(NamedTuple):
    """:func:`summarise`'s result: KMeans' curves, the points judged against them
    (TransformerKMeans' and the peers') and every method's gap to the best known."""

    curves: list[CurvePoint]
    points: list[Point]
    gaps: list[Gap]


def _median(values) -> float:
    return float(statistics.median(values))


def _mean(values) -> float:
    return float(statistics.fmean(values))


def _order(method: Method) -> tuple:
    """Reports' order: by kind (:data:`KINDS`, unknown kinds last), then value."""
    return (KINDS.index(method.kind) if method.kind in KINDS else len(KINDS), method)


def gaps_to_best(records: Sequence[FitRecord]) -> list[Gap]:
    """Every method's gap to the best inertia known, per data set.

    The best known on a data set is the lowest inertia of every record of it (every
    method and seed); a method's gap is the median over its seeds of
    ``inertia / best - 1``, in per cent. Data sets come in order of first appearance,
    methods in the order of :data:`~benchmarks.equal_time.runs.KINDS`, then by value.

    Examples
    --------
    >>> from benchmarks.equal_time.runs import FitRecord
    >>> def fit(method, n_init, seed, inertia):
    ...     return FitRecord("toy", 10, 2, 3, seed, method, n_init, None, 0, inertia, 1.0, 1)
    >>> [(g.label, g.gap_median) for g in gaps_to_best([fit("kmeans", 1, 0, 110.0),
    ...                                                 fit("long", 10, 0, 100.0)])]
    [('n_init=1', 10.000000000000009), ('long', 0.0)]
    """
    out = []
    for (name, n, d, k), methods in _groups(records).items():
        runs = [r for rs in methods.values() for r in rs]
        best_run = min(runs, key=lambda r: r.inertia)
        best = best_run.inertia
        base = methods.get(Method("kmeans", 1))
        t0 = None if base is None else _median(r.seconds for r in base)
        for method in sorted(methods, key=_order):
            rs = methods[method]
            gap = [100.0 * (_ratio(r.inertia, best) - 1.0) for r in rs]
            seconds = _median(r.seconds for r in rs)
            out.append(Gap(
                dataset=name, n=n, d=d, k=k, method=method.kind, label=method.label,
                seeds=len(rs), gap_median=_median(gap), gap_mean=_mean(gap),
                seconds_median=seconds, time_ratio=None if not t0 else seconds / t0,
                best=best, best_by=f"{best_run.config.label}, seed {best_run.seed}"))
    return out


def _groups(records: Sequence[FitRecord]) -> dict[tuple, dict[Method, list[FitRecord]]]:
    groups: dict[tuple, dict[Method, list[FitRecord]]] = {}
    for r in records:
        key = (r.dataset, r.n, r.d, r.k)
        groups.setdefault(key, {}).setdefault(r.config, []).append(r)
    return groups


def summarise(records: Sequence[FitRecord]) -> Summary:
    """Medians over seeds per data set and method; each TransformerKMeans point and each
    peer judged against its data set's KMeans curve (:func:`kmeans_at_time`,
    :func:`needs_n_init`); every method's gap to the best inertia known (:func:`gaps_to_best`).

    Data sets come in order of first appearance, curve points by ``n_init``, points by
    ``learned_starts``, then the peers (Breathing K-Means, faiss by ``nredo``, the long
    search). A data set without KMeans records gets no points.
    """
    curves, points = [], []
    for (name, n, d, k), methods in _groups(records).items():
        curve = [
            CurvePoint(name, n, d, k, m.value, len(rs), _median(r.seconds for r in rs),
                       _median(r.inertia for r in rs), _median(r.n_iter for r in rs),
                       _mean(r.inertia for r in rs))
            for m, rs in sorted(methods.items()) if m.kind == "kmeans"
        ]
        curves += curve
        if not curve:
            continue
        ns = [c.n_init for c in curve]
        ts = [c.seconds_median for c in curve]
        inertias = [c.inertia_median for c in curve]
        means = [c.inertia_mean for c in curve]
        base = curve[0]
        for m in sorted(methods, key=_order):
            if m.kind == "kmeans":
                continue
            rs, ours = methods[m], m.kind == "ours"
            seconds, inertia = _median(r.seconds for r in rs), _median(r.inertia for r in rs)
            at = kmeans_at_time(ns, ts, inertias, seconds)
            match = needs_n_init(ns, inertias, inertia)
            mean = _mean(r.inertia for r in rs)
            skipped = {r.learned_skipped for r in rs}
            points.append(Point(
                dataset=name, n=n, d=d, k=k, learned_starts=m.value if ours else None,
                seeds=len(rs), seconds_median=seconds, inertia_median=inertia,
                n_iter_median=_median(r.n_iter for r in rs),
                n_learned_steps_median=_median(r.n_learned_steps for r in rs) if ours
                else None,
                learned_kept=sum(r.selected_run == "learned" for r in rs),
                learned_skipped=skipped.pop() if len(skipped) == 1 else None,
                time_ratio=seconds / base.seconds_median,
                inertia_ratio_n_init_1=_ratio(inertia, base.inertia_median),
                kmeans_equal_time_inertia=at.inertia,
                equal_time_ratio=_ratio(inertia, at.inertia), equal_time_status=at.status,
                bracket=(at.lower, at.upper), match_n_init=match,
                match_time_ratio=None if match is None else seconds / ts[ns.index(match)],
                inertia_mean=mean,
                equal_time_ratio_mean=_ratio(mean, kmeans_at_time(ns, ts, means, seconds).inertia),
                match_n_init_mean=needs_n_init(ns, means, mean), method=m.kind,
                label=m.label,
            ))
    return Summary(curves, points, gaps_to_best(records))


def _ratio(a: float, b: float) -> float:
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return float(a) / float(b)


def label(dataset: str, n: int, d: int) -> str:
    """A data set's name in tables and figures: bundled by name, generated with n and d."""
    return dataset if dataset in BUNDLED else f"{dataset} n={n:,} d={d}"


def _match(match: int | None, largest: int) -> str:
    return f"> {largest}" if match is None else str(match)


def format_points(summary: Summary) -> str:
    """A markdown table: one row per data set and ``learned_starts`` (the column ``r``),
    then one per peer (its label in that column)."""
    largest = {(c.dataset, c.n, c.d): c.n_init for c in summary.curves}
    lines = [
        "| data | r or peer | time / KMeans n_init=1 | inertia / KMeans at equal time | "
        "KMeans needs n_init | time / that KMeans | learned run kept | ours s | "
        "means: inertia / KMeans at equal time | means: KMeans needs n_init |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in summary.points:
        flag = {FASTER: " (faster)", SLOWER: " (slower than curve)"}.get(p.equal_time_status,
                                                                         "")
        match_t = "" if p.match_time_ratio is None else f"{p.match_time_ratio:.2f}"
        top = largest[p.dataset, p.n, p.d]
        if p.learned_starts is None:  # a peer
            name, kept = p.label or p.method, "-"
        else:
            name = p.learned_starts
            kept = "skipped" if p.learned_skipped and p.learned_starts else \
                f"{p.learned_kept}/{p.seeds}"
        lines.append(
            f"| {label(p.dataset, p.n, p.d)} | {name} | {p.time_ratio:.2f} | "
            f"{p.equal_time_ratio:.4f}{flag} | {_match(p.match_n_init, top)} | "
            f"{match_t} | {kept} | {p.seconds_median:.3f} | {p.equal_time_ratio_mean:.4f} | "
            f"{_match(p.match_n_init_mean, top)} |"
        )
    return "\n".join(lines)


def format_curves(summary: Summary) -> str:
    """A markdown table of KMeans' curves: median seconds and inertia per ``n_init``."""
    lines = ["| data | n_init | s | time / n_init=1 | inertia / n_init=1 | iterations | "
             "mean inertia / n_init=1's |", "|---|---|---|---|---|---|---|"]
    base: dict[tuple, CurvePoint] = {}
    for c in summary.curves:
        b = base.setdefault((c.dataset, c.n, c.d), c)
        lines.append(
            f"| {label(c.dataset, c.n, c.d)} | {c.n_init} | {c.seconds_median:.3f} | "
            f"{c.seconds_median / b.seconds_median:.2f} | "
            f"{_ratio(c.inertia_median, b.inertia_median):.4f} | {c.n_iter_median:g} | "
            f"{_ratio(c.inertia_mean, b.inertia_mean):.4f} |"
        )
    return "\n".join(lines)


def format_gaps(summary: Summary) -> str:
    """A markdown table: one row per data set and method (every one: KMeans' ``n_init``
    values, TransformerKMeans' ``learned_starts``, the peers), its median and mean gap to
    the best inertia known and its median time; the best known and the run that reached
    it on each data set's first row."""
    lines = ["| data | method | gap to best known % | mean gap % | s | time / KMeans n_init=1 "
             "| best known (run) |", "|---|---|---|---|---|---|---|"]
    first = None
    for g in summary.gaps:
        key = (g.dataset, g.n, g.d, g.k)
        best = f"{g.best:.6g} ({g.best_by})" if key != first else ""
        first = key
        ratio = "-" if g.time_ratio is None else f"{g.time_ratio:.2f}"
        lines.append(f"| {label(g.dataset, g.n, g.d)} | {g.label} | {g.gap_median:.3f} | "
                     f"{g.gap_mean:.3f} | {g.seconds_median:.3f} | {ratio} | {best} |")
    return "\n".join(lines)


def plot_summary(summary: Summary, path: str, title: str = "") -> None:
    """Save one panel per data set to ``path``: KMeans' median curve (inertia and time
    relative to KMeans(n_init=1)'s medians, log time), TransformerKMeans' points,
    labelled by ``learned_starts``, and the peers' (circles, labelled by name; hollow:
    slower than the curve's last point); dashed and crosses: the mean inertias at the
    same median times."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "skformer bench equal-time --plot requires matplotlib. "
            "Install with: pip install matplotlib"
        ) from exc
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    keys = list(dict.fromkeys((c.dataset, c.n, c.d, c.k) for c in summary.curves))
    if not keys:
        raise ValueError("nothing to plot: no KMeans records.")
    ncols = min(4, len(keys))
    nrows = math.ceil(len(keys) / ncols)
    # At least 3 legend columns wide: one or two panels would clip it.
    fig = Figure(figsize=(max(4.2 * ncols, 10.0), 3.3 * nrows + 1.2), layout="constrained")
    FigureCanvasAgg(fig)  # Agg, whatever pyplot's backend
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    starts: set[int] = set()
    kinds: set[str] = set()
    for i, (ax, key) in enumerate(zip(axes, keys, strict=False)):
        curve = [c for c in summary.curves if (c.dataset, c.n, c.d, c.k) == key]
        t0, i0 = curve[0].seconds_median, curve[0].inertia_median
        xs = [c.seconds_median / t0 for c in curve]
        ys = [_ratio(c.inertia_median, i0) for c in curve]
        ax.plot(xs, ys, "-o", color="C7", ms=4)
        ax.plot(xs, [_ratio(c.inertia_mean, i0) for c in curve], "--", color="C7", lw=0.8)
        for c, x, y in zip(curve, xs, ys, strict=True):
            ax.annotate(str(c.n_init), (x, y), textcoords="offset points", xytext=(0, 5),
                        fontsize=7, color="C7", ha="center")
        for p in (p for p in summary.points if (p.dataset, p.n, p.d, p.k) == key):
            peer = p.learned_starts is None
            if peer:
                kinds.add(p.method)
                color = _PEER_COLOURS.get(p.method, "k")
            else:
                starts.add(p.learned_starts)
                color = f"C{p.learned_starts % 6}"  # C6 and up: the peers; C7: KMeans
            hollow = p.equal_time_status == SLOWER
            x, y = p.seconds_median / t0, _ratio(p.inertia_median, i0)
            ax.scatter([x], [y], s=36, marker="o" if peer else "s", edgecolors=color,
                       facecolors="none" if hollow else color, zorder=3)
            ax.annotate(p.label if peer else f"r={p.learned_starts}", (x, y),
                        textcoords="offset points",
                        xytext=(5, -9), fontsize=7, color=color)
            ax.scatter([x], [_ratio(p.inertia_mean, i0)], s=30, marker="x", color=color,
                       zorder=3)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        lo, hi = ax.get_ylim()
        if hi - lo < _MIN_SPAN:  # differences below 0.1 % drawn flat, not magnified
            mid = (lo + hi) / 2
            ax.set_ylim(mid - _MIN_SPAN / 2, mid + _MIN_SPAN / 2)
        ax.axhline(1.0, color="grey", lw=0.6, ls=":")
        ax.set_title(label(*key[:3]), fontsize=9)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(axis="y", useOffset=False)
        if i >= len(keys) - ncols:  # the lowest panel of its column
            ax.set_xlabel("time / KMeans(n_init=1)'s", fontsize=8)
        if i % ncols == 0:
            ax.set_ylabel("inertia / KMeans(n_init=1)'s", fontsize=8)
    for ax in axes[len(keys):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color="C7", marker="o", ms=4,
                      label="KMeans, median over seeds, labelled by n_init")]
    handles += [Line2D([], [], ls="", marker="s", color=f"C{r % 6}",
                       label=f"TransformerKMeans, learned_starts={r}") for r in sorted(starts)]
    handles += [Line2D([], [], ls="", marker="o", color=_PEER_COLOURS.get(kind, "k"),
                       label=_PEER_NAMES.get(kind, kind))
                for kind in sorted(kinds, key=lambda k: _order(Method(k, 0)))]
    handles.append(Line2D([], [], ls="", marker="s", mfc="none", color="k",
                          label="hollow: slower than KMeans' largest n_init"))
    handles.append(Line2D([], [], ls="--", lw=0.8, marker="x", color="C7",
                          label="dashed, x: means over seeds (the same time axis)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110)
