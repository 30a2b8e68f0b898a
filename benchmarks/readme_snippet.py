"""The learned mode on the data of the README's example: kept runs, inertia, time.

The data: ``make_blobs(n_samples=2000, n_features=8, centers=10, cluster_std=4.0,
random_state=1)``. For each seed (default 0 to 9), with that ``random_state``:
``TransformerKMeans`` in the fast mode (KMeans' run), in the learned mode
(``learned_starts=1``), ``KMeans(n_init=1)`` and ``KMeans(n_init=3)``.

Every figure about this data in docs/benchmarks.rst ("From the README", where the
README's figures moved) comes from here: how many learned runs were kept, the learned
mode's mean inertia below KMeans' (and that it is never above), its time relative to the
fast mode, and ``KMeans(n_init=3)``'s inertia and time relative to the learned mode.
``tests/test_readme.py`` checks that the page quotes the committed result,
``benchmarks/results/readme_snippet.json``.

Times: one warm-up round (imports, loading the model and the compiled kernels), then
``--reps`` rounds, each fitting the timed estimators of every seed back to back in an
order that rotates each round; a seed's time is its median over the rounds, and a ratio
is the median over the seeds of the seeds' ratios (paired: same seed, same start).

Run from the repository root::

    python -m benchmarks.readme_snippet --out benchmarks/results/readme_snippet.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

__all__ = ["DATA", "main", "measure", "summarise"]

DATA = dict(n_samples=2000, n_features=8, centers=10, cluster_std=4.0, random_state=1)
TIMED = ("fast", "learned", "kmeans_n_init3")


def _estimators(seed: int) -> dict:
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    k = DATA["centers"]
    return {
        "fast": TransformerKMeans(n_clusters=k, random_state=seed),
        "learned": TransformerKMeans(n_clusters=k, random_state=seed, learned_starts=1),
        "kmeans_n_init3": KMeans(n_clusters=k, n_init=3, random_state=seed),
    }


def measure(seeds, reps: int) -> list[dict]:
    """One record per seed: each estimator's inertia and median fit time (ms), the run
    the learned mode kept, and KMeans(n_init=1)'s inertia."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(**DATA)
    seeds = list(seeds)
    times = {seed: {name: [] for name in TIMED} for seed in seeds}
    fitted = {}
    for rep in range(reps + 1):  # the first round warms up
        names = TIMED[rep % len(TIMED):] + TIMED[:rep % len(TIMED)]
        for seed in seeds:
            estimators = _estimators(seed)
            for name in names:
                start = time.perf_counter()
                estimators[name].fit(X)
                if rep:
                    times[seed][name].append(1e3 * (time.perf_counter() - start))
            fitted[seed] = estimators
    records = []
    for seed in seeds:
        est = fitted[seed]
        kmeans = KMeans(n_clusters=DATA["centers"], n_init=1, random_state=seed).fit(X)
        records.append({
            "seed": seed,
            "inertia_fast": float(est["fast"].inertia_),
            "inertia_learned": float(est["learned"].inertia_),
            "inertia_kmeans": float(kmeans.inertia_),
            "inertia_kmeans_n_init3": float(est["kmeans_n_init3"].inertia_),
            "selected_run": est["learned"].selected_run_,
            "learned_skipped": est["learned"].learned_skipped_,
            **{f"ms_{name}": statistics.median(times[seed][name]) for name in TIMED},
        })
    return records


def summarise(records: list[dict]) -> dict:
    """The figures on this data, from the per-seed records of :func:`measure`."""
    def ratios(num: str, den: str) -> list[float]:
        return [r[num] / r[den] for r in records]

    learned_fast = ratios("ms_learned", "ms_fast")
    return {
        "seeds": [r["seed"] for r in records],
        "learned_kept": sum(r["selected_run"] == "learned" for r in records),
        # Mean over the seeds of 1 - inertia(learned) / inertia(KMeans(n_init=1)), in %.
        "learned_below_kmeans_percent": 100 * (1 - statistics.mean(
            ratios("inertia_learned", "inertia_kmeans"))),
        "learned_never_above_kmeans": all(
            r["inertia_learned"] <= r["inertia_kmeans"] * (1 + 1e-12) for r in records),
        "time_learned_over_fast_median": statistics.median(learned_fast),
        "time_learned_over_fast_min": min(learned_fast),
        "time_learned_over_fast_max": max(learned_fast),
        "time_learned_over_fast_median_seeds_0_4": statistics.median(
            [x for x, r in zip(learned_fast, records, strict=True) if r["seed"] < 5]),
        "kmeans_n_init3_below_learned_percent": 100 * (1 - statistics.mean(
            ratios("inertia_kmeans_n_init3", "inertia_learned"))),
        "time_kmeans_n_init3_over_learned_median": statistics.median(
            ratios("ms_kmeans_n_init3", "ms_learned")),
    }


def _machine() -> dict:
    import numpy
    import sklearn
    import torch

    return {"processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(), "numpy": numpy.__version__,
            "scikit-learn": sklearn.__version__, "torch": torch.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme_snippet",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, metavar="N",
                        help="the seeds 0 to N-1 (default: %(default)s)")
    parser.add_argument("--reps", type=int, default=15,
                        help="timed rounds after one warm-up round (default: %(default)s)")
    parser.add_argument("--out", help="write the settings, records and summary as JSON")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    records = measure(range(args.seeds), args.reps)
    load_after = os.getloadavg()
    summary = summarise(records)
    print("| seed | KMeans | learned (run kept) | KMeans(n_init=3) | ms fast | ms learned "
          "| ms KMeans(n_init=3) |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['seed']} | {r['inertia_kmeans']:.0f} | {r['inertia_learned']:.0f} "
              f"({r['selected_run']}) | {r['inertia_kmeans_n_init3']:.0f} | "
              f"{r['ms_fast']:.1f} | {r['ms_learned']:.1f} | {r['ms_kmeans_n_init3']:.1f} |")
    s = summary
    print(f"learned run kept for {s['learned_kept']} of {len(records)} seeds; inertia "
          f"{s['learned_below_kmeans_percent']:.1f} % below KMeans' on average (never above: "
          f"{s['learned_never_above_kmeans']})")
    print(f"learned / fast time: median {s['time_learned_over_fast_median']:.1f} "
          f"(seeds {s['time_learned_over_fast_min']:.1f} to "
          f"{s['time_learned_over_fast_max']:.1f}; seeds 0 to 4: "
          f"{s['time_learned_over_fast_median_seeds_0_4']:.1f})")
    print(f"KMeans(n_init=3): inertia {s['kmeans_n_init3_below_learned_percent']:.1f} % below "
          f"the learned mode's on average, time {s['time_kmeans_n_init3_over_learned_median']:.2f}"
          " of it (median)")
    if args.out:
        # The load averages (1, 5, 15 min) around the run: other work on a shared machine
        # slows the fits unequally (the OpenMP threads of KMeans, torch's), so the ratios
        # of a loaded machine are not comparable.
        payload = {"data": DATA, "reps": args.reps, "machine": _machine(),
                   "loadavg_before": load_before, "loadavg_after": load_after,
                   "summary": summary, "records": records}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
