"""Benchmark: the learned mode at users' shapes.

The command line ``skformer bench shapes``; see :mod:`benchmarks.shapes`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from benchmarks._records import write_records
from benchmarks.equal_time.cli import _source
from benchmarks.shapes.data import PRESETS, SHAPES, select
from benchmarks.shapes.peer_runs import select_peers, skipped_note
from benchmarks.shapes.report import (
    HEADER,
    format_peers,
    format_row,
    format_summary,
    plot_records,
    summarise,
)
from benchmarks.shapes.runs import ShapeRecord, records_from_dict, run_shape, warm_up

__all__ = ["main"]

VIOLATION_STATUS = 1
"""Exit status where the estimator's inertia exceeded Lloyd's from a k-means++ start."""


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        select(names)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return names


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skformer bench shapes", description=__doc__.splitlines()[0]
        + " Per shape: first-fit time and which model ran; the share of the headroom below "
        "Lloyd (20 steps from random starts) that 20 learned steps capture; the ratio to "
        "Lloyd's run from k-means++ starts; the learned fit's time over KMeans'; the peers' "
        "gap to the best inertia known and their time.")
    p.add_argument("--preset", choices=tuple(PRESETS), default="full",
                   help="the grid: full (" + ", ".join(PRESETS["full"]) + ") or quick ("
                   + ", ".join(PRESETS["quick"]) + "; seconds) (default: full)")
    p.add_argument("--shapes", type=_names, metavar="NAME[,NAME...]",
                   help="these shapes instead of the preset's, of: " + ", ".join(SHAPES))
    p.add_argument("--seeds", type=int, default=3,
                   help="seeds 0 .. SEEDS-1 of the random and k-means++ starts (default: 3)")
    p.add_argument("--device", default="cpu",
                   help="TransformerKMeans' device (default: cpu)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads of every estimator, faiss' included (default: the "
                        "libraries' own)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="no tiny fit before the first shape (then the first shape's "
                        "first_fit_s includes loading the compiled Lloyd kernel)")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="no peers section (KMeans n_init 1 and 10, TransformerKMeans "
                        "learned_starts=1, and where installed Breathing K-Means, faiss' "
                        "k-means and the long search; default: run it, one fit of each per "
                        "seed)")
    p.add_argument("--list", action="store_true", help="print the shapes and exit")
    p.add_argument("--out", metavar="FILE.json",
                   help="write the records and the summary as JSON (after every shape)")
    p.add_argument("--plot", metavar="FILE.png", help="save the figure (needs matplotlib)")
    p.add_argument("--from-json", metavar="FILE.json",
                   help="run nothing: print the table and draw --plot from a saved --out")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark: print one table row per shape and the summary; write ``--out``
    and ``--plot``. Returns 0; 1 where the estimator's inertia exceeded Lloyd's from a
    k-means++ start by more than 1e-9 (relative); 2 where the device is not available."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.seeds < 0:
        parser.error("--seeds must be >= 0")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    if args.from_json:
        return _replot(args)
    shapes = select(args.shapes or PRESETS[args.preset])
    if args.list:
        for s in shapes:
            print(f"{s.name}: n={s.n:,} d={s.d} k={s.k} ({s.group}) {s.description}")
        return 0
    from benchmarks.equal_time.runs import load
    from benchmarks.peers import limit_all_threads
    from benchmarks.versus_kmeans.runs import machine_info

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench shapes: error: {exc}", file=sys.stderr)
        return 2
    peers, missing = select_peers(args.peers)  # imported before the threads are limited
    with limit_all_threads(args.threads):
        return _run(args, shapes, {**machine, "source": _source()}, load, peers, missing)


def _replot(args) -> int:
    """The table, the targets and the figure of a saved run (an unfinished one too: the
    records are written after every shape)."""
    with open(args.from_json) as f:
        payload = json.load(f)
    records = [records_from_dict(r) for r in payload["records"]]
    print(HEADER)
    for r in records:
        print(format_row(r))
    print("\n# targets\n" + format_summary(summarise(records)))
    _print_peers(records)
    done, planned = len(records), len(payload.get("shapes_run") or records)
    if args.plot and records:
        plot_records(records, args.plot, title=(
            f"TransformerKMeans(learned_starts=1) at users' shapes: {done} of {planned} "
            f"shapes, {payload['machine']['device_name']}"))
    return 0


def _print_peers(records) -> None:
    table = format_peers(records)
    if table is not None:
        print("\n# peers: median over seeds of the gap to the best inertia known on the "
              "shape (inertia / best - 1) / median fit seconds\n" + table, flush=True)


def _run(args, shapes, machine: dict, load, peers, missing: dict) -> int:
    started = time.perf_counter()
    payload: dict = {"machine": machine, "options": vars(args),
                     "shapes_run": [s.name for s in shapes], "loadavg_before": load(),
                     "peers": [p.name for p in peers], "peers_skipped": missing,
                     "warm_up_s": None, "wall_seconds": None, "summary": None, "records": []}
    print(f"# {machine['device_name']} ({machine['device']}), {machine['cpu_count']} CPUs, "
          f"torch {machine['torch']}, scikit-learn {machine['sklearn']}; "
          f"{len(shapes)} shapes, seeds 0..{args.seeds - 1}", flush=True)
    note = skipped_note(missing)
    if note is not None:
        print(note, flush=True)
    if args.warm_up:
        payload["warm_up_s"] = warm_up(args.device, peers)
    print(HEADER, flush=True)
    records: list[ShapeRecord] = []
    bits: set[int] = set()
    for shape in shapes:
        records.append(run_shape(shape, list(range(args.seeds)), device=args.device,
                                 bits_seen=bits, peers=peers))
        print(format_row(records[-1]), flush=True)
        payload["records"] = [asdict(r) for r in records]
        payload["summary"] = asdict(summarise(records))
        write_records(args.out, payload)  # rewritten after every shape
    summary = summarise(records)
    payload["wall_seconds"] = time.perf_counter() - started
    payload["loadavg_after"] = load()
    write_records(args.out, payload)
    print("\n# targets\n" + format_summary(summary))
    _print_peers(records)
    print(f"\n# wall {payload['wall_seconds']:.0f} s", flush=True)
    if args.plot and records:
        plot_records(records, args.plot, title=(
            "TransformerKMeans(learned_starts=1) at users' shapes: "
            f"seeds 0..{args.seeds - 1}, {machine['device_name']}"))
    return VIOLATION_STATUS if summary.violations else 0
