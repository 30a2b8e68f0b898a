"""Benchmark: how far a perfect move proposer would take the learned mode.

The learned mode (``TransformerKMeans(learned_starts=1)``) ends where its breathing
cycles stop improving: Fritzke's rule, which adds a centre beside the one of largest
*error* and removes the one of least *utility*, finds no better move. This benchmark asks
whether better single moves exist there, and where they rank under that rule. From the
learned mode's centres it tries **every swap** (remove centre ``i``, add one beside
centre ``j``: ``k (k - 1)`` of them), each screened by a few Lloyd steps; the best few
run to a fixed point and the lowest is taken if it lowers the inertia; then again, up to
``--rounds`` swaps.

A proposer that named these swaps would reach the gaps reported here for one warm Lloyd
run each; finding them by trial costs ``k (k - 1)`` screened runs per swap, which the
report states beside the fit's own time. The swaps' ranks under Fritzke's rule say how
far from its first choice they lie (error rank 0: the largest error; utility rank 0: the
least utility; neighbour rank 0: the removed centre is the nearest other centre of the
one split).

Run ``skformer bench swaps --fritzke-data DIR`` (the sets where the learned mode's median
gap was above 0.2 % in ``benchmarks/results/anchors.json``, 3 seeds, 3 swaps);
``--nearest N`` screens only the swaps that remove one of the ``N`` centres nearest the
split one (``k N``: what a local proposer would keep); ``--quick`` runs a tiny set in
seconds. The best inertia known per set is read from the
anchors' results (``--best-known``); a set missing there is judged against the lowest
inertia of this run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from benchmarks._records import write_records
from benchmarks.anchors.data import available, fritzke_folder, select, tiny
from benchmarks.anchors.runs import limit_all_threads
from skformer.reference import centre_costs

__all__ = ["DEFAULT_SETS", "SwapSearch", "SwapStep", "best_swap", "main", "swap_search"]

PROG = "skformer bench swaps"
DEFAULT_SETS = ("Cloud", "uniform", "Spam", "correlated", "randangles", "rice", "china-k64",
                "digits-k50")
"""The sets where the learned mode's median gap to the best known was above 0.2 %."""
RESULTS = Path(__file__).resolve().parents[1] / "results" / "anchors.json"
# The new centre's offset from its parent, per coordinate: a normal draw of this share of
# the parent's root-mean-square error per feature. Larger than the breathing cycles' tie
# breaker (1 %): a screen of three Lloyd steps must see the split start.
OFFSET = 0.1


class DenseLloyd:
    """Lloyd's steps on dense ``X`` (n, d) in float64, distances by the BLAS form.

    Faster than :mod:`skformer.reference` (SciPy's literal sums) by the matrix product,
    which the ``k (k - 1)`` screened runs per swap need; differences of rounding only.
    """

    def __init__(self, X: np.ndarray):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.n = len(self.X)
        self._xx = np.einsum("ij,ij->i", self.X, self.X)
        self._rows = np.arange(self.n)

    def distances(self, c: np.ndarray) -> np.ndarray:
        """(n, k) squared distances, clipped at 0."""
        d = self._xx[:, None] - 2.0 * (self.X @ c.T) + np.einsum("ij,ij->i", c, c)[None]
        return np.maximum(d, 0.0, out=d)

    def assign(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels (n,) and the nearest squared distances (n,)."""
        d = self.distances(c)
        labels = d.argmin(1)
        return labels, d[self._rows, labels]

    def means(self, c: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Each cluster's mean; an empty cluster keeps its centre."""
        k = len(c)
        members = sp.csr_matrix((np.ones(self.n), (labels, self._rows)), shape=(k, self.n))
        counts = np.bincount(labels, minlength=k)
        out = c.copy()
        full = counts > 0
        out[full] = (members @ self.X)[full] / counts[full, None]
        return out

    def run(self, c: np.ndarray, max_steps: int) -> tuple[np.ndarray, float]:
        """At most ``max_steps`` steps from ``c``, stopping where the inertia stops
        falling; the centres and their inertia."""
        last = np.inf
        for _ in range(max_steps):
            labels, nearest = self.assign(c)
            inertia = float(nearest.sum())
            if inertia >= last * (1.0 - 1e-12):
                return c, inertia
            last = inertia
            c = self.means(c, labels)
        return c, float(self.assign(c)[1].sum())


@dataclass
class SwapStep:
    """One swap taken: the inertia after it and where it ranks under Fritzke's rule."""

    inertia: float
    removed: int
    beside: int
    error_rank: int
    """Rank of the split centre by error (0: the largest, Fritzke's first choice)."""
    utility_rank: int
    """Rank of the removed centre by utility (0: the least, Fritzke's first choice)."""
    neighbour_rank: int
    """Rank of the removed centre among the split centre's other centres by distance
    (0: its nearest)."""
    screen_rank: int
    """Its rank in the screen (0: the lowest inertia after the screen's steps)."""


@dataclass
class SwapSearch:
    """The greedy search from one start."""

    start_inertia: float
    steps: list[SwapStep] = field(default_factory=list)
    candidates: int = 0
    """Swaps screened, in all rounds."""
    seconds: float = 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank in increasing order (0: the smallest; the first of equal ones)."""
    return np.argsort(np.argsort(values, kind="stable"), kind="stable")


def best_swap(lloyd: DenseLloyd, c: np.ndarray, rng: np.random.Generator, *,
              screen_steps: int = 3, finalists: int = 8, max_steps: int = 300,
              nearest: int | None = None) -> tuple[np.ndarray, SwapStep | None, int]:
    """The best swap from ``c`` (k, d) that lowers the inertia, if any.

    Every swap (remove ``i``, add beside ``j``, for ``j`` with two rows or more; with
    ``nearest``, ``i`` only among the ``nearest`` centres nearest ``j``) runs
    ``screen_steps`` Lloyd steps; the ``finalists`` lowest run to a fixed point (at most
    ``max_steps``). Returns the new centres (``c`` where no swap helps), the step (None
    where none helps) and the number of swaps screened.

    Examples
    --------
    >>> X = np.array([[0.0], [0.2], [5.0], [5.2], [10.0], [10.2]])
    >>> c = np.array([[0.0], [0.2], [7.6]])   # two share a cluster; only 2 has two rows
    >>> new, step, screened = best_swap(DenseLloyd(X), c, np.random.default_rng(0))
    >>> sorted(np.round(new.ravel(), 1).tolist()), round(step.inertia, 2), screened
    ([0.1, 5.1, 10.1], 0.06, 2)
    """
    k = len(c)
    labels, own = lloyd.assign(c)
    start = float(own.sum())
    counts = np.bincount(labels, minlength=k)
    # once per round, beside the k (k - 1) screened runs: the package's own definitions
    error, utility = centre_costs(lloyd.X, c)
    spread = np.sqrt(error / np.maximum(counts, 1) / c.shape[1])
    between = cdist(c, c, "sqeuclidean")
    np.fill_diagonal(between, np.inf)
    screened = []
    for j in np.flatnonzero(counts >= 2).tolist():
        new = c[j] + rng.normal(scale=OFFSET * spread[j] + 1e-12, size=c.shape[1])
        others = np.argsort(between[j], kind="stable")[:k - 1]
        for i in others[:nearest].tolist():
            trial = c.copy()
            trial[i] = new
            screened.append((lloyd.run(trial, screen_steps)[1], i, j, new))
    order = sorted(range(len(screened)), key=lambda t: screened[t][0])
    best_c, best_inertia, best = c, start, None
    for rank, t in enumerate(order[:finalists]):
        _, i, j, new = screened[t]
        trial = c.copy()
        trial[i] = new
        ended, inertia = lloyd.run(trial, max_steps)
        if inertia < best_inertia * (1.0 - 1e-9):
            best_c, best_inertia = ended, inertia
            best = SwapStep(inertia, i, j, int(_ranks(-error)[j]), int(_ranks(utility)[i]),
                            int(_ranks(between[j])[i]), rank)
    return best_c, best, len(screened)


def swap_search(X: np.ndarray, c: np.ndarray, *, rounds: int, rng: np.random.Generator,
                screen_steps: int = 3, finalists: int = 8,
                nearest: int | None = None) -> tuple[np.ndarray, SwapSearch]:
    """Up to ``rounds`` best swaps (:func:`best_swap`, with its ``nearest``) from ``c``,
    greedily; stops at the first round where none lowers the inertia.

    Examples
    --------
    >>> X = np.array([[0.0], [0.2], [5.0], [5.2], [10.0], [10.2]])
    >>> end, search = swap_search(X, np.array([[0.0], [0.2], [7.6]]), rounds=3,
    ...                           rng=np.random.default_rng(0))
    >>> round(search.start_inertia, 2), [round(s.inertia, 2) for s in search.steps]
    (25.04, [0.06])
    """
    lloyd = DenseLloyd(X)
    t0 = time.perf_counter()
    c = np.asarray(c, dtype=np.float64)
    search = SwapSearch(float(lloyd.assign(c)[1].sum()))
    for _ in range(rounds):
        c, step, screened = best_swap(lloyd, c, rng, screen_steps=screen_steps,
                                      finalists=finalists, nearest=nearest)
        search.candidates += screened
        if step is None:
            break
        search.steps.append(step)
    search.seconds = time.perf_counter() - t0
    return c, search


def _best_known(path: Path | None) -> dict[str, float]:
    """The lowest inertia per data set of an anchors results file (empty where none)."""
    if path is None or not path.is_file():
        return {}
    best: dict[str, float] = {}
    for r in json.loads(path.read_text())["records"]:
        if r["inertia"] is not None:
            best[r["dataset"]] = min(best.get(r["dataset"], np.inf), r["inertia"])
    return best


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0] + (
        " Every swap tried from the learned mode's end, greedily; the gap to the best "
        "inertia known after each, and the swaps' ranks under Fritzke's rule."))
    p.add_argument("--datasets", nargs="+", metavar="NAME",
                   help="data sets of skformer bench anchors (default: "
                   + ", ".join(DEFAULT_SETS) + ")")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..S-1 (default 3)")
    p.add_argument("--rounds", type=int, default=None, help="swaps per start (default 3)")
    p.add_argument("--nearest", type=int, default=None, metavar="N",
                   help="remove only one of the N centres nearest the one split (default: "
                   "any centre): the k N swaps of a local proposer")
    p.add_argument("--fritzke-data", metavar="DIR", help="the folder of Fritzke's data sets")
    p.add_argument("--best-known", metavar="JSON", default=str(RESULTS),
                   help="anchors results whose lowest inertia per set is the best known "
                   "(default: benchmarks/results/anchors.json)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for every library (default 1)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny set (300 rows, k <= 8), one seed, one swap: seconds")
    p.add_argument("--out", metavar="JSON", help="write the records here")
    return p


def _record(s, seed: int, fit_seconds: float, fit_inertia: float,
            search: SwapSearch) -> dict:
    return {"dataset": s.name, "n": s.n, "d": s.d, "k": s.k, "seed": seed,
            "fit_seconds": fit_seconds, "fit_inertia": fit_inertia, **asdict(search)}


def _summary(records: list[dict], best: dict[str, float], rounds: int) -> list[str]:
    """One line per set: median gaps after 0..rounds swaps, ranks, cost."""
    lines = []
    for name in dict.fromkeys(r["dataset"] for r in records):
        rs = [r for r in records if r["dataset"] == name]
        ref = best[name]
        gaps = []
        for t in range(rounds + 1):
            # a start stopped early keeps its last inertia
            at = [([r["start_inertia"]] + [s["inertia"] for s in r["steps"]])[
                min(t, len(r["steps"]))] for r in rs]
            gaps.append(100.0 * (statistics.median(at) / ref - 1.0))
        steps = [s for r in rs for s in r["steps"]]
        ranks = {key: statistics.median([s[key] for s in steps]) if steps else None
                 for key in ("error_rank", "utility_rank", "neighbour_rank")}
        found = sum(len(r["steps"]) for r in rs)
        cost = (sum(r["seconds"] for r in rs) / found) if found else None
        fit = statistics.median(r["fit_seconds"] for r in rs)
        lines.append(f"{name}: median gap % after 0..{rounds} swaps "
                     + " ".join(f"{g:.3f}" for g in gaps)
                     + f"; median ranks: error {ranks['error_rank']}, utility "
                     f"{ranks['utility_rank']}, neighbour {ranks['neighbour_rank']}"
                     + (f"; {cost:.1f} s per swap found against a {fit:.3f} s fit"
                        if cost else "; no swap found"))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the search on each set and seed; print a line per set; write ``--out``."""
    parser = _parser()
    args = parser.parse_args(argv)
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if min(seeds, rounds, args.threads, 1 if args.nearest is None else args.nearest) < 1:
        parser.error("--seeds, --rounds, --threads and --nearest must be >= 1")
    try:
        sets = select(args.datasets or (("digits-k10",) if args.quick else DEFAULT_SETS))
    except ValueError as exc:
        parser.error(str(exc))
    if args.quick:
        sets = [tiny(s) for s in sets]
    folder = fritzke_folder(args.fritzke_data)
    sets, note = available(sets, folder)
    if note:
        print(f"# {note}", flush=True)
    if not sets:
        print(f"{PROG}: no data set to run", file=sys.stderr)
        return 2
    from skformer import TransformerKMeans

    best = _best_known(Path(args.best_known) if args.best_known else None)
    records: list[dict] = []
    with limit_all_threads(args.threads):
        for s in sets:
            X = s.load(folder)
            for seed in range(seeds):
                t0 = time.perf_counter()
                model = TransformerKMeans(n_clusters=s.k, learned_starts=1,
                                          random_state=seed).fit(X)
                fit_seconds = time.perf_counter() - t0
                _, search = swap_search(X, model.cluster_centers_, rounds=rounds,
                                        rng=np.random.default_rng(seed),
                                        nearest=args.nearest)
                records.append(_record(s, seed, fit_seconds, float(model.inertia_), search))
                write_records(args.out, {"best_known": best, "nearest": args.nearest,
                                         "records": records})
            if s.name not in best:
                best[s.name] = min(min([r["start_inertia"]] + [t["inertia"] for t in r["steps"]])
                                   for r in records if r["dataset"] == s.name)
                print(f"# {s.name}: not in {args.best_known}; judged against this run's "
                      "lowest inertia", flush=True)
            print(_summary([r for r in records if r["dataset"] == s.name], best, rounds)[0],
                  flush=True)
    write_records(args.out, {"best_known": best, "nearest": args.nearest,
                             "records": records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
