"""Benchmark: one learned step against one compiled Lloyd step on the same rows.

A fit with ``learned_starts=1`` runs the learned model's steps on its *context* (all
rows, or a seeded sample of ``max_context="auto"`` rows) in the model frame, at each of
:data:`~skformer._fit.learned.TEMPERATURE_SCALES`, then Lloyd steps on all the data.
This script sets up the context exactly as a fit does (the model of
:func:`~skformer.store.selection.choose_model` for ``(d, k)``, the rows of
:func:`~skformer._fit.learned.context_indices`, the model frame, the stepper of
:class:`~skformer._fit.learned.LearnedPhase`), records the centres of every learned step
of a learned search from k-means++ centres, and then times, in one process and in turns:

- ``learned``: :meth:`~skformer.nn.inference.LearnedStepper.step` from each recorded
  state (its scale and step index), float32, as the fit runs it;
- ``general``: the same step by the stepper's general path (every projection applied,
  what the stepper ran before the closed form of
  :mod:`skformer.nn.selector_step`), with ``--general``;
- ``lloyd``: the compiled Lloyd step (:class:`~skformer._fit.engine.compiled.GridStep`,
  without row bounds: one pass computing each row's nearest centre and the cluster sums)
  on the same context rows, in the fit frame, in float64 (what a fit on float64 data
  runs) and in float32, from the same centres;

each with ``torch.set_num_threads(t)`` and ``t`` compiled threads for every ``t`` of
``--threads`` (NumPy's BLAS held to one thread, as in a fit). A state's time is the
median of ``--reps`` repetitions; a step's time is the mean over the states (a learned
phase's time over its steps). The ratio is ``learned / lloyd`` (float64 Lloyd), of wall
times and of the process's CPU times (with one thread the CPU time is the step's own,
what a shared machine's other work does not inflate).

Run it with ``python -m benchmarks.learned_step [--shapes china digits blobs]
[--threads 1 2] [--reps 5] [--general] [--out FILE.json]``.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

import numpy as np
import torch

from benchmarks._records import write_records

__all__ = ["SHAPES", "Case", "main", "measure", "setup"]


def _china() -> tuple[np.ndarray, int]:
    from benchmarks.shapes.data import china_pixels

    return china_pixels(20_000), 64


def _digits() -> tuple[np.ndarray, int]:
    from sklearn.datasets import load_digits

    return load_digits().data.astype(np.float64), 50


def _blobs() -> tuple[np.ndarray, int]:
    from sklearn.datasets import make_blobs

    return make_blobs(20_000, 16, centers=64, random_state=0)[0], 64


# name: () -> (X, k)
SHAPES = {"china": _china, "digits": _digits, "blobs": _blobs}


class Case:
    """A shape's context, stepper, Lloyd rows and the recorded learned states."""

    def __init__(self, name: str, X: np.ndarray, k: int, seed: int = 0):
        from sklearn.cluster import kmeans_plusplus
        from sklearn.utils import check_random_state

        from skformer._fit.frame import ModelFrame
        from skformer._fit.learned import (
            LearnedPhase,
            LearnedSetup,
            auto_context,
            context_indices,
            learned_loop,
            project_context,
        )
        from skformer.store.selection import choose_model

        self.name, (self.n, self.d), self.k = name, X.shape, k
        choice = choose_model(self.d, k)
        model = choice.model
        context = auto_context(k, model.layer.embed_dim)
        setup = LearnedSetup(model, choice.padding, context, choice.project)
        rows = X - X.mean(0)  # the fit frame (no scale at these magnitudes)
        idx = context_indices(self.n, context, check_random_state(seed))
        if idx is not None:
            rows = rows[idx]
        subspace = seen = None
        if setup.project is not None:
            subspace, seen = project_context(rows, None, setup.project, "cpu")
        lo, hi = (rows.min(0), rows.max(0)) if seen is None else (seen.min(0), seen.max(0))
        frame = ModelFrame.of(lo, hi, setup.padding, "cpu")
        phase = LearnedPhase(setup, rows, None, frame, subspace, seen)
        self.model, self.stepper, self.frame, self.rows = model, phase.stepper, frame, rows
        self.origin = choice.origin
        start = kmeans_plusplus(rows, k, random_state=seed)[0]
        z = frame.to_model(torch.from_numpy(start)).unsqueeze(0)
        self.states: list[tuple[float, int, torch.Tensor]] = []

        def objective(z, active):
            return torch.tensor([phase.objective(z)], dtype=torch.float64)

        for f in setup.temperature_scales:
            scaled = self.stepper.scaled(f)

            def step(z, i, active, scaled=scaled, f=f):
                self.states.append((f, i, z.clone()))
                return scaled.step(z, i)

            learned_loop(step, objective, z.clone(), schedule=model.schedule, max_iter=300,
                         tol=torch.tensor([1e-4 / frame.scale**2], dtype=torch.float64),
                         rel_tol=1e-4, d=self.d)

    def lloyd_centres(self, z: torch.Tensor) -> np.ndarray:
        """Fit-frame centres (k, d) of a model-frame state."""
        return self.frame.to_fit(z[0], torch.float64).numpy()


def setup(names) -> list[Case]:
    """The cases of the named shapes (:data:`SHAPES`)."""
    return [Case(name, *SHAPES[name]()) for name in names]


def _timed(func) -> tuple[float, float]:
    """Wall time and the process's CPU time of ``func()`` (ms)."""
    t, cpu = time.perf_counter(), time.process_time()
    func()
    return (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3


def measure(case: Case, threads: int, reps: int, general: bool = False) -> dict:
    """Mean over the recorded states of the median time (ms) of a learned step and of a
    compiled Lloyd step (float64 and float32 rows), with ``threads`` threads: wall time
    (``*_ms``) and the process's CPU time (``*_cpu_ms``; with one thread, the time the
    step ran, whatever else a shared machine runs)."""
    from skformer._fit.blas import one_blas_thread
    from skformer._fit.engine.compiled import GridStep

    torch.set_num_threads(threads)
    lloyd = {}
    for dtype in (np.float64, np.float32):
        tokens = np.ascontiguousarray(np.hstack([case.rows, np.ones((len(case.rows), 1))]),
                                      dtype=dtype)
        grid = GridStep(tokens, None, case.k, None, bounds=False)
        grid.threads = threads
        lloyd[np.dtype(dtype).name] = grid
    names = ["learned", "lloyd_float64", "lloyd_float32"] + ["general"] * general
    times: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in names}
    steppers = {f: case.stepper.scaled(f) for f, _, _ in case.states}
    plain = copy.copy(case.stepper)
    plain.closed = None
    generals = {f: plain.scaled(f) for f in steppers}
    with one_blas_thread():
        for f, i, z in case.states[:3]:  # warm-up (compiles the kernels)
            steppers[f].step(z, i)
            for grid in lloyd.values():
                grid(case.lloyd_centres(z))
        for f, i, z in case.states:
            c = case.lloyd_centres(z)
            runs = {"learned": lambda: steppers[f].step(z, i),  # noqa: B023
                    "lloyd_float64": lambda: lloyd["float64"](c),  # noqa: B023
                    "lloyd_float32": lambda: lloyd["float32"](c),  # noqa: B023
                    "general": lambda: generals[f].step(z, i)}  # noqa: B023
            runs = {name: runs[name] for name in names}
            per: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
            names = list(runs)
            for rep in range(reps):
                turn = rep % len(names)
                for name in names[turn:] + names[:turn]:
                    per[name].append(_timed(runs[name]))
            for name, values in per.items():
                times[name].append(values)
    out = {}
    for name, values in times.items():
        for i, kind in enumerate(("ms", "cpu_ms")):
            out[f"{name}_{kind}"] = statistics.fmean(
                statistics.median(t[i] for t in v) for v in values)
    for kind in ("", "_cpu"):
        out[f"ratio{kind}"] = out[f"learned{kind}_ms"] / out[f"lloyd_float64{kind}_ms"]
        out[f"ratio{kind}_float32"] = (out[f"learned{kind}_ms"]
                                       / out[f"lloyd_float32{kind}_ms"])
        if general:
            out[f"ratio{kind}_general"] = (out[f"general{kind}_ms"]
                                           / out[f"lloyd_float64{kind}_ms"])
    out["threads"] = threads
    return out


def _machine() -> dict:
    from benchmarks.cost.runs import machine_info

    info = machine_info("cpu")
    info.pop("threads", None)
    import numba

    info.update(processor=info.pop("device_name"), cpu_count=os.cpu_count(),
                numpy=np.__version__, numba=numba.__version__)
    return info


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learned_step",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--general", action="store_true",
                        help="also time the stepper's general path")
    parser.add_argument("--out", default=None, help="JSON file of the records")
    args = parser.parse_args(argv)
    payload = {"machine": _machine(), "reps": args.reps, "records": []}
    print(f"# {payload['machine']['processor']}, torch {torch.__version__}, "
          f"{payload['machine']['cpu_count']} CPUs")
    print(f"{'shape':<8} {'n':>6} {'ctx':>6} {'d':>3} {'k':>4} {'steps':>5} {'thr':>3} "
          f"{'learned ms':>10} {'lloyd64 ms':>10} {'lloyd32 ms':>10} {'ratio':>6} "
          f"{'cpu ratio':>9}" + (f" {'general':>8} {'cpu':>5}" if args.general else ""))
    for case in setup(args.shapes):
        for threads in args.threads:
            rec = measure(case, threads, args.reps, args.general)
            rec.update(shape=case.name, n=case.n, context=len(case.rows), d=case.d,
                       k=case.k, model_width=case.model.layer.embed_dim,
                       model_origin=case.origin, states=len(case.states))
            payload["records"].append(rec)
            write_records(args.out, payload)
            print(f"{case.name:<8} {case.n:>6} {len(case.rows):>6} {case.d:>3} {case.k:>4} "
                  f"{len(case.states):>5} {threads:>3} {rec['learned_ms']:>10.3f} "
                  f"{rec['lloyd_float64_ms']:>10.3f} {rec['lloyd_float32_ms']:>10.3f} "
                  f"{rec['ratio']:>6.1f} {rec['ratio_cpu']:>9.1f}"
                  + (f" {rec['ratio_general']:>8.1f} {rec['ratio_cpu_general']:>5.1f}"
                     if args.general else ""))
    return payload


if __name__ == "__main__":
    main()
