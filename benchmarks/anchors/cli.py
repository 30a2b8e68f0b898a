"""Benchmark: the best clustering per CPU-second, side by side with the anchors.

The command line ``skformer bench anchors``; see :mod:`benchmarks.anchors`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from benchmarks._records import write_records
from benchmarks.anchors.data import (
    DEFAULT,
    ENV_VAR,
    GROUPS,
    QUICK,
    SETS,
    available,
    fritzke_folder,
    select,
    tiny,
)
from benchmarks.anchors.report import (
    format_set,
    format_targets,
    plot,
    summarise,
    to_markdown,
    to_rst,
)
from benchmarks.anchors.runs import (
    METHOD_GROUPS,
    METHODS,
    AnchorRecord,
    limit_all_threads,
    run_set,
    select_methods,
    split_available,
)

__all__ = ["main"]

PROG = "skformer bench anchors"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description=__doc__.splitlines()[0]
        + " Every method on every data set, seeds interleaved in one process: each "
        "method's median gap to the best inertia known (the lowest of every run), its "
        "median time and its ratios to Breathing K-Means per seed; the learned mode's "
        "targets.")
    p.add_argument("--datasets", nargs="+", metavar="NAME",
                   help="data sets or groups (" + ", ".join(GROUPS) + "), of: "
                   + ", ".join(SETS) + " (default: all, Intrusion only on request)")
    p.add_argument("--methods", nargs="+", metavar="NAME",
                   help="methods or groups (" + ", ".join(METHOD_GROUPS) + "), of: "
                   + ", ".join(METHODS) + " (default: all)")
    p.add_argument("--seeds", type=int, default=None,
                   help="random_state 0 .. SEEDS-1 of every method (default: 3; 1 with "
                        "--quick)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads of every method (OpenMP, BLAS, torch, faiss) "
                        "(default: the libraries' own, what a user gets)")
    p.add_argument("--fritzke-data", metavar="DIR",
                   help=f"the folder of Fritzke's data sets, NAME.csv or NAME.zip (a copy "
                        f"of data/ of gittar/breathing-k-means; default: ${ENV_VAR}); "
                        "without it they are skipped")
    p.add_argument("--quick", action="store_true",
                   help="tiny versions of the data sets (a few hundred rows, k <= 8), by "
                        "default of " + ", ".join(QUICK) + "; 1 seed: seconds")
    p.add_argument("--device", default="cpu", help="TransformerKMeans' device (default: cpu)")
    p.add_argument("--list", action="store_true", help="print the data sets and methods")
    p.add_argument("--out", metavar="FILE.json",
                   help="write machine, versions, threads, load and every record as JSON "
                        "(rewritten after every data set)")
    p.add_argument("--rst", metavar="FILE", help="write the table as an rst list-table")
    p.add_argument("--markdown", metavar="FILE",
                   help="write the README's compact table (markdown)")
    p.add_argument("--plot", metavar="FILE.png", help="save the figure (needs matplotlib)")
    p.add_argument("--from-json", metavar="FILE.json",
                   help="run nothing: report (tables, --rst, --markdown, --plot) from a "
                        "saved --out")
    return p


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark: print a table per data set and the targets; write ``--out``,
    ``--rst``, ``--markdown`` and ``--plot``. Returns 0, or 2 on invalid options or where
    no data set can run (only Fritzke's asked for, and no folder)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    if args.from_json:
        return _report_saved(args)
    try:
        sets = select(args.datasets or (QUICK if args.quick else DEFAULT))
        methods = select_methods(args.methods or ("all",))
    except ValueError as exc:
        parser.error(str(exc))
    if args.quick:
        sets = [tiny(s) for s in sets]
    if args.list:
        for s in sets:
            print(f"{s.name}: n={s.n:,} d={s.d} k={s.k} ({s.group}) {s.description}")
        for m in methods:
            print(f"{m.name}: {m.label} (needs {m.package})")
        return 0
    folder = fritzke_folder(args.fritzke_data)
    runnable, note = available(sets, folder)
    if not runnable:
        return _error(f"no data set to run: {note}")
    if note:
        print(f"# {note}", flush=True)
    methods, missing = split_available(methods)
    for package, why in missing.items():
        print(f"# methods needing {package} skipped: {why} (pip install "
              '".[bench]" in the checkout installs the peers)', flush=True)
    if not methods:
        return _error("no method to run: " + "; ".join(missing.values()))
    from benchmarks.versus_kmeans.runs import machine_info

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        return _error(str(exc))
    with limit_all_threads(args.threads):
        return _run(args, runnable, methods, folder, machine,
                    {"fritzke": note, "packages": missing})


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for dist in ("numpy", "scipy", "scikit-learn", "torch", "skformer", "bkmeans",
                 "faiss-cpu", "threadpoolctl"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _threads() -> dict:
    from benchmarks.equal_time.cli import _threads_used

    out = _threads_used()
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        out["faiss"] = faiss.omp_get_max_threads()
    return out


def _run(args, sets, methods, folder, machine: dict, skipped: dict) -> int:
    from benchmarks.equal_time.cli import _load_text, _source
    from benchmarks.equal_time.runs import load

    started = time.perf_counter()
    payload: dict = {
        "machine": {**machine, "threads_used": _threads(), "source": _source()},
        "versions": _versions(), "options": {**vars(args), "fritzke_data": None
                                             if folder is None else str(folder)},
        "methods": [m.name for m in methods], "skipped": skipped,
        "loadavg_before": load(), "loadavg_after": None, "wall_seconds": None,
        "datasets": [], "records": []}
    m = payload["machine"]
    print(f"# {m['device_name']}, {m['cpu_count']} CPUs, threads {m['threads_used']}; "
          f"{len(sets)} data sets x {len(methods)} methods x {args.seeds} seeds; load "
          f"{_load_text(payload['loadavg_before'])}", flush=True)
    records: list[AnchorRecord] = []
    seeds = list(range(args.seeds))
    for s in sets:
        before, t = load(), time.perf_counter()
        try:
            X = s.load(folder)
        except (OSError, ValueError) as exc:
            return _error(f"data set {s.name}: {exc}")
        if len(X) < s.k:
            return _error(f"data set {s.name}: {len(X)} rows, fewer than k={s.k}")
        loaded = time.perf_counter() - t
        new = run_set(X, name=s.name, group=s.group, k=s.k, seeds=seeds, methods=methods,
                      device=args.device)
        records += new
        payload["datasets"].append({
            "dataset": s.name, "group": s.group, "n": X.shape[0], "d": X.shape[1],
            "k": s.k, "description": s.description, "seeds": len(seeds),
            "load_seconds": loaded, "seconds": time.perf_counter() - t,
            "loadavg_before": before, "loadavg_after": load()})
        print("\n" + format_set(summarise(new)[0]) + f"\n# {time.perf_counter() - t:.0f} s, "
              f"load {_load_text(load())}", flush=True)
        payload["records"] = [asdict(r) for r in records]
        write_records(args.out, payload)
    payload["loadavg_after"] = load()
    payload["wall_seconds"] = time.perf_counter() - started
    write_records(args.out, payload)
    _report(args, records, title=_title(m))
    print(f"\n# wall {payload['wall_seconds']:.0f} s; load before "
          f"{_load_text(payload['loadavg_before'])}, after "
          f"{_load_text(payload['loadavg_after'])}")
    return 0


def _title(machine: dict) -> str:
    threads = ", ".join(f"{lib} {n}" for lib, n in machine.get("threads_used", {}).items())
    return f"{machine.get('device_name', '?')}, threads: {threads or '?'}"


def _report(args, records: list[AnchorRecord], title: str) -> None:
    summaries = summarise(records)
    print("\n# the learned mode's targets\n" + format_targets(summaries))
    if args.rst:
        with open(args.rst, "w") as f:
            f.write(to_rst(summaries))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(to_markdown(summaries))
    if args.plot and summaries:
        plot(summaries, args.plot, title=f"gap to the best inertia known against fit time: "
                                         f"medians over seeds, {title}")


def _report_saved(args) -> int:
    """Tables, targets and files of a saved run (an unfinished one too: the records are
    written after every data set)."""
    try:
        with open(args.from_json) as f:
            payload = json.load(f)
        records = [AnchorRecord(**{**r, "warnings": tuple(r.get("warnings", ()))})
                   for r in payload["records"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return _error(f"--from-json {args.from_json}: not a saved run ({exc})")
    for s in summarise(records):
        print("\n" + format_set(s))
    _report(args, records, title=_title(payload.get("machine", {})))
    return 0
