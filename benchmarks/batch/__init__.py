"""Benchmark: many small clustering problems in one call, against a loop of KMeans.

``skformer bench batch`` times :func:`skformer.batch_k_means` on batches of generated
problems (:mod:`.data`) against the faster of a plain loop of ``KMeans(n_init=1)`` and
the same loop under ``joblib.Parallel(n_jobs=-1)``, and against the batched peers
torch_kmeans and fast-pytorch-kmeans (the ``bench`` extra), at the same ``n_init`` (1).
Each batch comes twice: every problem of length ``n``, and ragged (lengths uniform in
``[n/2, n]``; the peers have no masks and do not run there).

In one process, methods alternate within each repetition, after a warm-up on a few
problems; the table gives medians. The peers run on the whole batch where their
temporaries (``b x n x k x d`` values) fit in 2**28 values; otherwise on its first
problems (as many as fit, or ``--peer-problems``), their time scaled to the whole batch
(linear in the number of problems, which flatters them: a batch runs until its slowest
problem stops) and their inertia compared with the loop's on those problems. Inertia is the
literal sum of squared distances of each method's own labels and centres, in float64.

``--learned`` also times ``batch_k_means(learned_starts=1)``. With a CUDA device the
same batches run there too (``--device cuda``; the loop stays on the CPU).
``--memory`` measures the extra peak memory of one call at (4096, 1024, 32, 64) in a
fresh interpreter, against the size of X.

Run it with ``skformer bench batch [--out FILE.json] [--plot FILE.png]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics

import numpy as np

from .data import SHAPES, make_batch
from .report import plot, print_table
from .runs import PEERS, literal_inertia, run_method

__all__ = ["main", "measure", "measure_memory"]

# The batched peers build (b, n, k, d) temporaries: at most this many values at once.
_PEER_VALUES = 2**28


def _available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def measure(shape, *, ragged: bool, reps: int, seed: int, peer_problems: int,
            loop_problems: int | None, learned: bool, device: str,
            peers: bool = True) -> dict:
    """Median times and mean inertias of every method on one batch (see the module
    docstring). Times are seconds for the whole batch."""
    b, n, d, k = shape
    batch = make_batch(b, n, d, k, ragged=ragged, seed=seed)
    loop_m = b if loop_problems is None else min(b, loop_problems)
    peer_m = min(b, peer_problems or b, max(1, _PEER_VALUES // (n * k * d)))
    plan = {"loop": (loop_m, "cpu", {}), "joblib": (loop_m, "cpu", {}),
            "batch": (b, device, {})}
    if learned:
        plan["batch_learned"] = (b, device, {"learned_starts": 1})
    if peers and not ragged:
        plan.update({name: (peer_m, device, {}) for name in PEERS if _available(name)})
    times: dict[str, list[float]] = {name: [] for name in plan}
    inertia: dict[str, np.ndarray] = {}
    for rep in range(reps + 1):  # round 0 warms up on a few problems
        for name, (m, dev, options) in plan.items():
            method = "batch" if name.startswith("batch") else name
            run = run_method(method, batch, m if rep else min(m, 8), seed, dev, **options)
            if rep:
                times[name].append(run.seconds * b / m)
                inertia.setdefault(name, literal_inertia(batch, run))
    out = {"b": b, "n": n, "d": d, "k": k, "ragged": ragged, "device": device,
           "loop_problems": loop_m, "peer_problems": peer_m}
    for name, values in times.items():
        out[f"{name}_s"] = statistics.median(values)
    loop = inertia["loop"]
    best_loop = min(out["loop_s"], out["joblib_s"])
    out["best_loop_s"] = best_loop
    for name in plan:
        if name in ("loop", "joblib"):
            continue
        m = min(len(inertia[name]), len(loop))
        out[f"{name}_inertia_ratio"] = float(inertia[name][:m].mean() / loop[:m].mean())
        if name.startswith("batch"):
            out[f"{name}_speedup"] = best_loop / out[f"{name}_s"]
        else:  # a peer: how much slower than batch_k_means
            out[f"{name}_over_batch"] = out[f"{name}_s"] / out["batch_s"]
    return out


class _BatchCall:
    """``fit(X)`` calls :func:`skformer.batch_k_means` (for the memory child)."""

    def __init__(self, k: int):
        self.k = k

    def fit(self, X):
        from skformer import batch_k_means

        batch_k_means(X, self.k, random_state=0, device="cpu")
        return self


def _memory_case(b: int, n: int, d: int, k: int):
    """``(call, X)`` of the memory measurement."""
    return _BatchCall(k), make_batch(b, n, d, k).X


def measure_memory(b: int = 4096, n: int = 1024, d: int = 32, k: int = 64) -> dict | None:
    """Extra peak resident memory of one call on a float32 batch, over X's bytes."""
    from benchmarks._memory import fit_peak_memory

    res = fit_peak_memory(f"{__name__}:_memory_case", b, n, d, k)
    if res is None:
        return None
    return {"b": b, "n": n, "d": d, "k": k, **res,
            "over_x": res["peak_bytes"] / res["x_nbytes"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skformer bench batch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=None, metavar="B,N,D,K",
                        help="batches to run (default: the four of the issue)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ragged", action="store_true", help="skip the ragged batches")
    parser.add_argument("--peer-problems", type=int, default=None,
                        help="at most this many problems for the peers (default: all that "
                             "fit 2**28 values of temporaries); their time is scaled to b")
    parser.add_argument("--no-peers", action="store_true",
                        help="skip torch_kmeans and fast-pytorch-kmeans")
    parser.add_argument("--loop-problems", type=int, default=None,
                        help="problems the KMeans loops run on (default: all)")
    parser.add_argument("--learned", action="store_true",
                        help="also time batch_k_means(learned_starts=1)")
    parser.add_argument("--device", default="cpu", help="where batch_k_means and the peers run")
    parser.add_argument("--memory", action="store_true",
                        help="measure extra peak memory at (4096, 1024, 32, 64)")
    parser.add_argument("--out", help="write the records as JSON to this file")
    parser.add_argument("--plot", help="draw the speed-ups to this image file")
    args = parser.parse_args(argv)

    import torch

    shapes = (SHAPES if args.shapes is None
              else [tuple(int(v) for v in s.split(",")) for s in args.shapes])
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, device {args.device}; medians of "
          f"{args.reps} reps after a warm-up")
    records = []
    for shape in shapes:
        for ragged in (False,) if args.no_ragged else (False, True):
            records.append(measure(shape, ragged=ragged, reps=args.reps, seed=args.seed,
                                   peer_problems=args.peer_problems,
                                   loop_problems=args.loop_problems, learned=args.learned,
                                   device=args.device, peers=not args.no_peers))
            print_table(records[-1:], header=len(records) == 1)
    memory = measure_memory() if args.memory else None
    if memory is not None:
        print(f"\n# memory: one call at (b, n, d, k) = (4096, 1024, 32, 64), float32 X of "
              f"{memory['x_nbytes'] / 2**20:.0f} MiB: extra peak {memory['over_x']:.2f}x X "
              f"({memory['method']})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": platform.processor() or platform.machine(),
                       "threads": torch.get_num_threads(), "records": records,
                       "memory": memory}, f, indent=1)
    if args.plot:
        plot(records, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
