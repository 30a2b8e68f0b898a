"""Learning benchmarks: the paper's one-step findings, and the multi-step measurement of
the shipped models on held-out tasks.

``skformer bench learning one-step``
    Fast-preset models (one-step objective): relative validation loss of eq. (20).
``skformer bench learning convergence``
    Cold-start training curves, OH against BN (a reduced budget of the paper's).
``skformer bench learning multistep``
    Every shipped model (or ``--weights DIR``) on held-out tasks, normal and laplace,
    from random and k-means++ starts: ratio to Lloyd's algorithm after 1, 5, 10 and 20
    re-embedded steps, the headroom and the share of it captured, the one-step loss;
    a table, the targets checked, JSON records and a figure in the style of Fig. 6.
``skformer bench learning choices``
    Each choice of the multi-step recipe switched off in turn (and the one-step
    preset), trained at a few shapes and measured on the held-out tasks.
``skformer bench learning ship``
    Train the grid of shipped models (``--out``, default the package's weights folder),
    then measure them as ``multistep`` does and write the figures into ``index.json``.
``skformer bench learning ship-generic``
    Train the shipped shape-generic schedules, one per code width (``--bits``, default
    1 to 10), into ``--out`` (default the package's weights folder).
``skformer bench learning generic``
    Generalisation across k (generic against per-k models) and across d (full width
    against 64 principal directions) on held-out tasks: a table, JSON and a figure.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["main"]


def _multistep(args) -> int:
    from skformer.store import shipped_dir

    from .report import check_targets, plot, table
    from .ship import evaluate_folder, write_records

    folder = Path(args.weights) if args.weights else shipped_dir()
    records = evaluate_folder(folder, n_tasks=args.tasks, n_jobs=args.n_jobs)
    if args.d or args.k:
        records = [r for r in records if (not args.d or r["d"] in args.d)
                   and (not args.k or r["k"] in args.k)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_records(records, out / "multistep.json")
    print(table(records))
    print()
    for line in check_targets(records):
        print(line)
    figure = plot(records, out / "multistep.png")
    if figure is not None:
        print(f"figure: {figure}")
    return 0


def _ship(args) -> int:
    from skformer.store import write_index

    from .report import check_targets
    from .ship import GRID_D, GRID_K, evaluate_folder, heldout_index, train_grid, write_records

    folder = Path(args.out)
    overrides = {} if args.steps is None else {"steps": args.steps}
    train_grid(folder, args.d or GRID_D, args.k or GRID_K, n_jobs=args.n_jobs,
               skip_existing=args.skip_existing, overrides=overrides)
    records = evaluate_folder(folder, n_tasks=args.tasks, n_jobs=args.n_jobs)
    write_records(records, folder / "heldout.json")
    index = write_index(folder, heldout=heldout_index(records))
    for line in check_targets(records):
        print(line)
    print(f"index: {index}")
    return 0


def _choices(args) -> int:
    from joblib import Parallel, delayed

    from .choices import VARIANTS, run_variant, summary
    from .ship import write_records

    shapes = list(zip(args.d or (8, 32, 64), args.k or (16, 10, 16), strict=True))
    names = args.variants or list(VARIANTS)
    budget = {} if args.steps is None else {"steps": args.steps}
    jobs = (delayed(run_variant)(name, d, k, n_tasks=args.tasks, budget=budget)
            for name in names for d, k in shapes)
    records = [r for part in Parallel(n_jobs=args.n_jobs)(jobs) for r in part]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_records(records, out / "choices.json")
    print(summary(records))
    return 0


def _paper(args) -> int:
    from .paper import convergence, one_step, plot

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = {} if args.steps is None else {"steps": args.steps}
    if args.measurement == "one-step":
        def report(rec: dict) -> None:
            print(f"d={rec['d']} k={rec['k']} {rec['loss']} {rec['embedding']} "
                  f"seed={rec['seed']}: {rec['before']:.3f} -> {rec['after']:.3f} "
                  f"({rec['seconds']:.0f} s)", flush=True)

        records = one_step(seeds=tuple(args.seeds), losses=tuple(args.losses),
                           on_record=report, **extra)
    else:
        records = convergence(seeds=tuple(args.seeds), **extra)
        for rec in records:
            h = rec["history"]
            print(f"d={rec['d']} {rec['embedding']} seed={rec['seed']}: "
                  f"{h[0]['val_relative']:.3f} -> {h[-1]['val_relative']:.3f} "
                  f"({rec['seconds']:.0f} s)", flush=True)
    (out / f"{args.measurement}.json").write_text(json.dumps(records))
    figure = plot(args.measurement, records, out)
    if figure is not None:
        print(f"figure: {figure}")
    return 0


def _ship_generic(args) -> int:
    from skformer.store.generic import generic_filename, pretrain_generic, pretrain_step_sizes

    folder = Path(args.out)
    for bits in args.bits or range(1, 11):
        target = folder / generic_filename(bits)
        if args.stage in ("all", "temperature"):
            stored = pretrain_generic(bits, path=target, progress=args.progress)
            _report_generic(bits, "temperatures", stored)
        if args.stage in ("all", "step-size"):
            stored = pretrain_step_sizes(bits, source=target if target.is_file() else None,
                                         path=target, progress=args.progress)
            _report_generic(bits, "step sizes", stored)
    return 0


def _report_generic(bits: int, stage: str, stored) -> None:
    meta = stored.metadata
    unroll = (meta.get("training_config") or {}).get("unroll", 10)
    print(f"{bits} bits, {stage}: k in {meta['clusters']}, validation cost after {unroll} "
          f"steps {meta['val_ratio']:.4f} of Lloyd's, {meta['training']['seconds']:.0f} s "
          f"-> {stored.path}", flush=True)


def _generic(args) -> int:
    from .generic import across_d, across_k, plot, summary

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def report(r: dict) -> None:
        print(f"{r['kind']} d={r['d']} k={r['k']} {r['family']} {r['start']} "
              f"{r['model']}: {r['ratio20']:.4f}", flush=True)

    records = across_k(n_tasks=args.tasks, on_record=report)
    records += across_d(n_tasks=max(4, args.tasks * 3 // 4), on_record=report)
    (out / "generic.json").write_text(json.dumps(records, indent=1))
    print(summary(records))
    figure = plot(records, out / "generic.png")
    if figure is not None:
        print(f"figure: {figure}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skformer bench learning",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("measurement",
                        choices=("one-step", "convergence", "multistep", "choices", "ship",
                                 "ship-generic", "generic"))
    parser.add_argument("--out", default=None,
                        help="output folder (ship: the weights folder to write)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="one-step, convergence: training seeds")
    parser.add_argument("--losses", nargs="+", default=["l2", "ne"], choices=("l2", "ne"),
                        help="one-step: the losses to train with")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps (one-step: the fast preset's; convergence: 600; "
                             "ship: the shipped budget)")
    parser.add_argument("--weights", default=None,
                        help="multistep: a folder of models (default: the shipped ones)")
    parser.add_argument("--tasks", type=int, default=48,
                        help="multistep, ship: held-out tasks per family")
    parser.add_argument("--d", type=int, nargs="+", default=None, help="only these d")
    parser.add_argument("--k", type=int, nargs="+", default=None, help="only these k")
    parser.add_argument("--n-jobs", type=int, default=1, help="models in parallel")
    parser.add_argument("--skip-existing", action="store_true",
                        help="ship: keep the models already in --out")
    parser.add_argument("--variants", nargs="+", default=None,
                        help="choices: the variants to run (default: all)")
    parser.add_argument("--bits", type=int, nargs="+", default=None,
                        help="ship-generic: the code widths to train (default 1 to 10)")
    parser.add_argument("--progress", action="store_true", help="ship-generic: progress bars")
    parser.add_argument("--stage", choices=("all", "temperature", "step-size"), default="all",
                        help="ship-generic: train the temperatures, then the step sizes on "
                             "them (all), or one stage")
    args = parser.parse_args(argv)
    if args.measurement in ("ship", "ship-generic"):
        if args.out is None:
            from skformer.store import shipped_dir

            args.out = str(shipped_dir())
        return _ship(args) if args.measurement == "ship" else _ship_generic(args)
    args.out = args.out or "learning-results"
    if args.measurement == "multistep":
        return _multistep(args)
    if args.measurement == "choices":
        return _choices(args)
    if args.measurement == "generic":
        return _generic(args)
    return _paper(args)


if __name__ == "__main__":
    raise SystemExit(main())
