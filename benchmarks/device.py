"""Every GPU measurement of the project, in one prepared command (under 8 minutes).

``skformer bench device --out-dir DIR`` runs, on ``--device`` (default ``cuda``):

1. ``equality``: the same problems on the CPU and on the device - ``batch_k_means``
   (float32 and float64, a ragged list, per-problem k), ``ExactLloydTransformer``,
   ``TransformerKMeans`` (fast and learned): the share of identical labels, the largest
   relative difference of the centres and of the inertia;
2. ``batch``: ``skformer bench batch`` on the device (the KMeans loops on the CPU, on a
   subset of problems);
3. ``kmeans``: ``skformer bench kmeans`` (whole fits against KMeans) on the device;
4. ``cost``: ``skformer bench cost --grid table1`` (one-hot against binary) on the device.

Each part writes ``DIR/<part>.json`` (and its printed table to ``DIR/<part>.txt``); a
part that would start after ``--budget`` seconds is skipped and said so, so the whole
run ends in time. ``--tiny`` runs every part at toy sizes (seconds, on the CPU too):
what CI runs to keep this script working where no GPU is lent.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time
from pathlib import Path

import numpy as np

__all__ = ["equality", "main"]


def _max_rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    scale = np.maximum(np.abs(a[keep]).max(initial=0.0), 1e-300)
    return float(np.abs(a[keep] - b[keep]).max(initial=0.0) / scale)


def _compare(name: str, cpu, dev) -> dict:
    """Labels, centres and inertia of the same work on the CPU and the device."""
    lab_cpu, lab_dev = (np.concatenate([np.ravel(np.asarray(v)) for v in r["labels"]])
                        for r in (cpu, dev))
    return {"case": name, "same_labels": float(np.mean(lab_cpu == lab_dev)),
            "centres_max_rel_diff": _max_rel(*(np.concatenate([np.ravel(c) for c in r["centres"]])
                                               for r in (cpu, dev))),
            "inertia_max_rel_diff": _max_rel(cpu["inertia"], dev["inertia"])}


def _batch_case(device: str, X, k, **kwargs) -> dict:
    from skformer import batch_k_means

    r = batch_k_means(X, k, random_state=0, device=device, **kwargs)
    as_np = (lambda v: np.asarray(v.cpu()) if hasattr(v, "cpu") else np.asarray(v))  # noqa: E731
    listed = isinstance(r.labels, list)
    return {"labels": [as_np(v) for v in r.labels] if listed else as_np(r.labels),
            "centres": [as_np(v) for v in r.cluster_centers] if listed
            else as_np(r.cluster_centers), "inertia": as_np(r.inertia)}


def _estimator_case(device: str, Estimator, X, k, **kwargs) -> dict:
    est = Estimator(k, random_state=0, device=device, **kwargs).fit(X)
    return {"labels": est.labels_, "centres": est.cluster_centers_, "inertia": [est.inertia_]}


def equality(device: str, tiny: bool) -> list[dict]:
    """Each case run on the CPU and on ``device``; see the module docstring."""
    from sklearn.datasets import load_digits

    from skformer import ExactLloydTransformer, TransformerKMeans

    from .batch.data import make_batch

    b, n = (16, 64) if tiny else (1024, 256)
    rows = []
    batch = make_batch(b, n, 8, 6, seed=1)
    ragged = make_batch(b, n, 8, 6, ragged=True, seed=2)
    listed = [ragged.problem(i).astype(np.float64) for i in range(b)]
    ks = np.random.default_rng(0).integers(2, 7, size=b)
    cases = {
        "batch_k_means float32": lambda dev: _batch_case(dev, batch.X, 6),
        "batch_k_means float64": lambda dev: _batch_case(dev, batch.X.astype(np.float64), 6),
        "batch_k_means ragged list, per-problem k": lambda dev: _batch_case(dev, listed, ks),
    }
    X = load_digits().data[: 300 if tiny else None]
    cases["ExactLloydTransformer digits"] = lambda dev: _estimator_case(
        dev, ExactLloydTransformer, X, 10)
    cases["TransformerKMeans digits"] = lambda dev: _estimator_case(
        dev, TransformerKMeans, X, 10)
    cases["TransformerKMeans learned_starts=1 digits"] = lambda dev: _estimator_case(
        dev, TransformerKMeans, X, 10, learned_starts=1)
    for name, case in cases.items():
        rows.append(_compare(name, case("cpu"), case(device)))
    return rows


def _main_of(part: str):
    if part == "batch":
        from .batch import main
    elif part == "kmeans":
        from .versus_kmeans.cli import main
    else:
        from .cost.cli import main
    return main


def _argv(part: str, device: str, tiny: bool, out: Path) -> list[str]:
    if part == "batch":
        sizes = (["--shapes", "64,32,3,4", "8,200,4,16", "--peer-problems", "8"] if tiny
                 else ["--loop-problems", "256", "--peer-problems", "256"])
        return [*sizes, "--reps", "1" if tiny else "3", "--device", device, "--learned",
                "--out", str(out)]
    if part == "kmeans":
        sizes = (["--datasets", "iris", "blobs-iso", "--n", "2000", "--d", "8", "--seeds", "1"]
                 if tiny else ["--n", "1e5", "1e6", "--d", "32", "--seeds", "3"])
        return [*sizes, "--device", device, "--out", str(out)]
    sizes = (["--d", "4", "--k", "3", "--batch", "2", "--n", "32", "--reps", "1",
              "--warmup", "0"] if tiny else ["--grid", "table1", "--reps", "5", "--warmup", "2"])
    return [*sizes, "--device", device, "--out", str(out)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skformer bench device",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out-dir", required=True, help="folder for the results")
    parser.add_argument("--budget", type=float, default=450.0,
                        help="seconds after which no further part starts (default 450)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (CI, any device)")
    parser.add_argument("--parts", nargs="+", default=["equality", "batch", "kmeans", "cost"],
                        choices=["equality", "batch", "kmeans", "cost"])
    args = parser.parse_args(argv)

    import torch

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    summary = {"device": args.device, "torch": torch.__version__, "parts": {}}
    if args.device.startswith("cuda") and torch.cuda.is_available():
        summary["gpu"] = torch.cuda.get_device_name()
    for part in args.parts:
        elapsed = time.perf_counter() - start
        if elapsed > args.budget:
            summary["parts"][part] = (f"skipped: {elapsed:.0f} s spent of a "
                                      f"{args.budget:.0f} s budget")
            print(f"# {part}: {summary['parts'][part]}", flush=True)
            continue
        t = time.perf_counter()
        log = io.StringIO()
        try:
            if part == "equality":
                rows = equality(args.device, args.tiny)
                (out_dir / "equality.json").write_text(json.dumps(rows, indent=1))
                for row in rows:
                    print(json.dumps(row), file=log)
            else:
                with contextlib.redirect_stdout(log):
                    _main_of(part)(_argv(part, args.device, args.tiny, out_dir / f"{part}.json"))
            status = "done"
        except Exception as exc:  # one part's failure must not lose the others
            status = f"failed: {type(exc).__name__}: {exc}"
        (out_dir / f"{part}.txt").write_text(log.getvalue())
        summary["parts"][part] = f"{status} in {time.perf_counter() - t:.0f} s"
        print(f"# {part}: {summary['parts'][part]}\n{log.getvalue()}", flush=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(v.startswith(("done", "skipped")) for v in summary["parts"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
