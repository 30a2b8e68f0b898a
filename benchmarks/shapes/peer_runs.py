"""The peers section of the shapes benchmark: what users compare the learned mode with.

Per shape and seed, one fit of each peer of :data:`PEERS`: KMeans with ``n_init`` 1 and
10, ``TransformerKMeans(k, learned_starts=1)`` as users call it, and where installed
Breathing K-Means and faiss' k-means with ``nredo`` 1 and 10 (:mod:`benchmarks.peers`),
and a long search, Breathing K-Means with ``n_init=10``, which is there to lower the best
inertia known. Every inertia is :func:`skformer._base.labels_inertia` of the fitted
centres on all of X (one evaluator for every method). The best known is the lowest
inertia of every run on the shape, the shape's ``KMeans(k, n_init=10, random_state=0)``
included (:func:`best_known`); each peer's gap is the median over the seeds of
``inertia / best - 1`` (:func:`peer_rows`).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks import peers
from benchmarks.peers import Method, split_available
from benchmarks.shapes.stats import median

__all__ = ["PEERS", "PeerRow", "PeerRun", "best_known", "peer_rows",
           "run_peers", "select_peers", "skipped_note", "warm_up_peers"]


_TK = "TransformerKMeans"
# bkmeans' n_init is the k-means++ runs of its first KMeans, not whole breathing runs:
# the long search costs about KMeans(n_init=10) more than one BKM fit.
PEERS: dict[str, Method] = {m.name: m for m in [
    Method("kmeans-1", "kmeans", "KMeans (n_init=1)", "sklearn.cluster",
           peers.builds("kmeans", 1), 1),
    Method("kmeans-10", "kmeans", "KMeans (n_init=10)", "sklearn.cluster",
           peers.builds("kmeans", 10), 10),
    Method("learned", "skformer", f"{_TK} (learned_starts=1)", "skformer",
           peers.builds("skformer", learned_starts=1)),
    Method("bkm", "bkm", "Breathing K-Means", "bkmeans", peers.builds("bkm", 1)),
    Method("faiss-1", "faiss", "faiss k-means (nredo=1)", "faiss", peers.builds("faiss", 1)),
    Method("faiss-10", "faiss", "faiss k-means (nredo=10)", "faiss",
           peers.builds("faiss", 10)),
    Method("long", "long", "long search (Breathing K-Means, n_init=10)", "bkmeans",
           peers.builds("bkm", 10)),
]}
"""The peers, each fitted once per seed, in the order of a seed's first round (later
rounds rotate it: :func:`benchmarks.equal_time.runs.fit_order`)."""


@dataclass(frozen=True)
class PeerRun:
    """One timed fit of a peer on the shape."""

    method: str
    seed: int
    inertia: float
    """:func:`skformer._base.labels_inertia` of the fitted centres on all of X."""
    seconds: float
    """Wall time of ``fit``."""


@dataclass(frozen=True)
class PeerRow:
    """One peer on one shape: medians over its seeds."""

    method: str
    seeds: int
    gap: float
    """Median over the seeds of ``inertia / best_known - 1`` (0: the best known)."""
    seconds: float
    """Median wall time of a fit."""


def select_peers(enabled: bool = True) -> tuple[list[Method], dict[str, str]]:
    """The peers to run (of :data:`PEERS`) whose package imports
    (:func:`benchmarks.peers.split_available`), and ``{package: why}`` of those that do not;
    none and ``{}`` where ``enabled`` is False."""
    if not enabled:
        return [], {}
    return split_available(list(PEERS.values()))


def skipped_note(missing: Mapping[str, str]) -> str | None:
    """One line naming the packages whose peers are skipped, and the extra that installs
    them; None where nothing is missing.

    Examples
    --------
    >>> skipped_note({}) is None
    True
    >>> note = skipped_note({"bkmeans": "No module named 'bkmeans'"})
    >>> note.split(";")[0]
    '# peers skipped, not installed: bkmeans (bkm, long)'
    >>> "[bench]" in note
    True
    """
    if not missing:
        return None
    names = {p: ", ".join(x.name for x in PEERS.values() if x.package == p)
             for p in missing}
    return ("# peers skipped, not installed: "
            + ", ".join(f"{p} ({n})" if n else p for p, n in names.items())
            + '; pip install ".[bench]" in the checkout installs them')


def best_known(runs: Iterable[PeerRun]) -> tuple[float, str] | None:
    """The lowest inertia of ``runs`` and ``"METHOD, seed S"`` of the run that reached it
    (the first such run); None without runs.

    Examples
    --------
    >>> best_known([PeerRun("a", 0, 3.0, 1.0), PeerRun("b", 1, 2.0, 1.0)])
    (2.0, 'b, seed 1')
    """
    best = min(runs, key=lambda r: r.inertia, default=None)
    return None if best is None else (best.inertia, f"{best.method}, seed {best.seed}")


def _gap(inertia: float, best: float) -> float:
    if best <= 0:
        return 0.0 if inertia <= best else np.inf
    return inertia / best - 1.0


def peer_rows(runs: Sequence[PeerRun], best: float) -> list[PeerRow]:
    """Per method (in order of first appearance in ``runs``): its seeds, the median gap
    ``inertia / best - 1`` and the median seconds.

    Examples
    --------
    >>> rows = peer_rows([PeerRun("a", 0, 11.0, 2.0), PeerRun("a", 1, 13.0, 4.0)], 10.0)
    >>> [(r.method, r.seeds, round(r.gap, 12), r.seconds) for r in rows]
    [('a', 2, 0.2, 3.0)]
    """
    by_method: dict[str, list[PeerRun]] = {}
    for r in runs:
        by_method.setdefault(r.method, []).append(r)
    return [PeerRow(method, len(rs), median(_gap(r.inertia, best) for r in rs),
                    median(r.seconds for r in rs)) for method, rs in by_method.items()]


def _fit(peer: Method, X: np.ndarray, k: int, seed: int, device: str) -> PeerRun:
    from skformer._base import labels_inertia

    est = peer.build(k, int(seed), device)
    gc.collect()  # no collection of an earlier fit's garbage inside this one's time
    start = time.perf_counter()
    est.fit(X)
    seconds = time.perf_counter() - start
    centres = np.asarray(est.cluster_centers_, dtype=np.float64)
    return PeerRun(peer.name, int(seed), float(labels_inertia(X, centres)[1]), seconds)


def run_peers(X: np.ndarray, k: int, seeds: Sequence[int], peer_list: Sequence[Method], *,
              device: str = "cpu", done: Sequence[PeerRun] = ()) -> list[PeerRun]:
    """One fit of every peer of ``peer_list`` per seed; the round of the seed at index
    ``i`` is ``peer_list`` rotated left by ``i``.

    ``done`` holds runs already made (the shape's ``KMeans(k, n_init=10,
    random_state=0)`` is seed 0's ``kmeans-10``): each stands for the fit of its method
    and seed, which is not made again.
    """
    from benchmarks.equal_time.runs import fit_order

    if not peer_list:
        return []
    made = {(r.method, r.seed): r for r in done}
    runs = []
    for i, seed in enumerate(seeds):
        for peer in fit_order(list(peer_list), i):
            run = made.get((peer.name, int(seed)))
            runs.append(run if run is not None else _fit(peer, X, k, seed, device))
    return runs


def warm_up_peers(peer_list: Sequence[Method], device: str = "cpu") -> None:
    """Fit every peer once on tiny data, so that the first shape's times do not pay for
    their libraries' first calls."""
    X = np.random.default_rng(0).standard_normal((64, 2))
    for peer in peer_list:
        peer.build(2, 0, device).fit(X)
