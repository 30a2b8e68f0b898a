"""Command-line interface: ``skformer <command> [options]``.

Commands
--------
demo
    Cluster a scikit-learn bundled data set (or generated overlapping blobs) with
    :class:`skformer.TransformerKMeans`, :class:`skformer.ExactLloydTransformer` and
    :class:`sklearn.cluster.KMeans`, and print a comparison table.
cluster
    Cluster the rows of a CSV or ``.npy`` file with :class:`skformer.TransformerKMeans`
    and write one label per row, e.g. ``skformer cluster data.csv -k 5 -o labels.csv``.
pretrain
    Train learned models for one shape or a grid of shapes and save them, e.g.
    ``skformer pretrain --d 32 --k 10``.
bench
    Run a benchmark, e.g. ``skformer bench exact --n 100000 --k 10 100``.
probe
    Run one of the paper's probes of the learned model, e.g.
    ``skformer probe multistep --plot multistep.png``.

``bench`` and ``probe`` run modules of the ``benchmarks`` package, which lives beside
``skformer/`` in the source repository and is not installed; they find it from a source
checkout and otherwise say how to get it and exit with status 3 (:mod:`skformer._cli_bench`).
``cluster`` reads and writes its files through :mod:`skformer._cli_io` (the input read
once: pipes, ``-``, gzip) and parses them in :mod:`skformer._cli_table`.

The parser is built from one sub-parser per command, so that later commands
(``cluster``, ``pretrain``, ``bench``, ``probe``) plug in by adding a ``_add_<name>``
function to :data:`_COMMANDS`. This module and :mod:`skformer._cli_bench` are the only
places in skformer that print.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

from skformer._cli_bench import CHECKOUT, NO_CHECKOUT_STATUS, add_bench, add_probe
from skformer._version import __version__

DATASETS = ("iris", "wine", "breast_cancer", "digits", "blobs")
# Data sets whose features have very different scales are standardised before clustering.
_STANDARDISED = frozenset({"wine", "breast_cancer"})


class _Row(NamedTuple):
    """One line of the demo table."""

    method: str
    inertia: float
    ari: float
    nmi: float
    n_iter: int
    fit_ms: float


def _load_dataset(name: str):
    """Return ``(X, y)`` for a scikit-learn bundled data set, standardised where useful,
    or ``"blobs"``: 2,000 points in 8 dimensions from 10 overlapping Gaussian blobs (the
    README's data, where Lloyd's algorithm often stops in a poor local optimum)."""
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    if name == "blobs":
        return datasets.make_blobs(n_samples=2000, n_features=8, centers=10,
                                   cluster_std=4.0, random_state=1)
    loaders = {
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
        "digits": datasets.load_digits,
    }
    X, y = loaders[name](return_X_y=True)
    if name in _STANDARDISED:
        X = StandardScaler().fit_transform(X)
    return X, y


def _timed_fit(estimator, X, y, method: str) -> _Row:
    """Fit ``estimator`` on ``X`` (once untimed, to leave out one-off costs such as
    imports and thread pools, then timed) and score its labels against ``y``."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    estimator.fit(X)
    start = time.perf_counter()
    estimator.fit(X)
    fit_ms = 1000.0 * (time.perf_counter() - start)
    labels = estimator.labels_
    return _Row(
        method=method,
        inertia=float(estimator.inertia_),
        ari=float(adjusted_rand_score(y, labels)),
        nmi=float(normalized_mutual_info_score(y, labels)),
        n_iter=int(estimator.n_iter_),
        fit_ms=fit_ms,
    )


def _format_table(rows: Sequence[_Row]) -> str:
    """Render rows as a fixed-width, right-aligned text table."""
    header = ("method", "inertia", "ARI", "NMI", "n_iter", "fit [ms]")
    cells = [
        (r.method, f"{r.inertia:.4f}", f"{r.ari:.4f}", f"{r.nmi:.4f}", str(r.n_iter),
         f"{r.fit_ms:.1f}")
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]

    def line(values: Sequence[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = (v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(c) for c in cells)])


def _verdict(transformer: _Row, kmeans: _Row) -> str:
    """One line comparing a transformer's inertia with KMeans'."""
    if kmeans.inertia == 0.0:
        ratio = 1.0 if transformer.inertia == 0.0 else float("inf")
    else:
        ratio = transformer.inertia / kmeans.inertia
    if abs(ratio - 1.0) <= 1e-6:
        word = "same objective as KMeans"
    elif ratio < 1.0:
        word = "lower objective than KMeans (a better local optimum)"
    else:
        word = "higher objective than KMeans (a worse local optimum)"
    return f"inertia ratio {transformer.method} / KMeans = {ratio:.6f}: {word}."


def _run_demo(args: argparse.Namespace) -> int:
    """Compare TransformerKMeans and ExactLloydTransformer with KMeans on one data set."""
    import numpy as np
    from sklearn.cluster import KMeans

    from skformer import ExactLloydTransformer, TransformerKMeans

    X, y = _load_dataset(args.dataset)
    k = args.n_clusters if args.n_clusters is not None else len(np.unique(y))
    n, d = X.shape
    print(f"skformer {__version__} demo: dataset={args.dataset} n_samples={n} "
          f"n_features={d} n_clusters={k} embedding={args.embedding} seed={args.seed} "
          f"n_init={args.n_init}")

    common = dict(n_clusters=k, random_state=args.seed, n_init=args.n_init)
    learned_name = f"TransformerKMeans({args.embedding}, learned_starts=1)"
    estimators = {
        f"TransformerKMeans({args.embedding})": TransformerKMeans(
            embedding=args.embedding, **common),
        learned_name: TransformerKMeans(
            embedding=args.embedding, learned_starts=1, verbose=int(args.verbose), **common),
        f"ExactLloydTransformer({args.embedding})": ExactLloydTransformer(
            embedding=args.embedding, **common),
        "KMeans(lloyd)": KMeans(algorithm="lloyd", **common),
    }
    try:
        rows = [_timed_fit(est, X, y, name) for name, est in estimators.items()]
    except (ValueError, LookupError) as exc:  # e.g. more clusters than samples
        print(f"skformer demo: error: {exc}", file=sys.stderr)
        return 2
    learned = estimators[learned_name]
    print()
    print(_format_table(rows))
    print()
    print("TransformerKMeans' default (fast) mode is KMeans' run by the exact transformer; "
          "learned_starts=1 adds a learned run from the same start, keeps the better, and "
          "moves centres from where there are too many to where one is missing "
          "(breathing k-means) while that lowers the inertia, with 64 clusters or more "
          "runs the learned steps once more from there, then moves single points where "
          "that lowers it (Hartigan's moves).")
    if not learned.learned_used_:
        print(f"The learned run was skipped: {learned.learned_skipped_}. The Lloyd run: "
              f"{learned.n_lloyd_steps_} exact Lloyd steps.")
    elif learned.selected_run_ == "learned":
        print(f"The learned run was kept: {learned.n_learned_steps_} learned steps, then "
              f"{learned.n_lloyd_steps_} exact Lloyd steps.")
    else:
        print("The learned run did not end below the Lloyd run from this start: the Lloyd "
              f"run was kept ({learned.n_lloyd_steps_} exact Lloyd steps).")
    if learned.n_breathing_cycles_:
        print(f"Global moves: {learned.n_breathing_cycles_} breathing cycles, "
              + ("which lowered the inertia further." if learned.breathing_improved_
                 else "none of which lowered the inertia."))
    if learned.learned_polish_improved_:
        print("The learned steps from the end of the global moves lowered the inertia "
              "further (learned_polish).")
    if learned.n_hartigan_moves_:
        print(f"Single-point moves (Hartigan's): {learned.n_hartigan_moves_} points moved "
              "to the cluster where each lowered the inertia most, which Lloyd's steps "
              "cannot do.")
    if learned.selected_run_ != "learned" and args.dataset != "blobs":
        print("Where Lloyd's algorithm already finds a good optimum the learned run rarely "
              "changes the result; it acts most on data with many overlapping clusters "
              "(try --dataset blobs).")
    print(_verdict(rows[0], rows[-1]))
    print(_verdict(rows[1], rows[-1]))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _columns(text: str) -> tuple[int, ...]:
    """``1,3`` -> ``(1, 3)``: column numbers counted from 1."""
    try:
        columns = tuple(int(part) for part in text.split(","))
    except ValueError:
        columns = ()
    if not columns or min(columns) < 1:
        raise argparse.ArgumentTypeError(
            f"expected column numbers counted from 1, separated by commas, got {text!r}")
    return columns


def _add_demo(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="compare TransformerKMeans and ExactLloydTransformer with KMeans",
        description=(
            "Fit skformer.TransformerKMeans, skformer.ExactLloydTransformer and "
            "sklearn.cluster.KMeans on a data set bundled with scikit-learn (or generated "
            "blobs) and print inertia, ARI, NMI, iterations and fit time."
        ),
    )
    p.add_argument("--dataset", choices=DATASETS, default="iris",
                   help="data set to cluster (default: %(default)s); wine and breast_cancer "
                        "are standardised; blobs: 2,000 generated points in 8 dimensions "
                        "from 10 overlapping clusters, where the learned run often wins")
    p.add_argument("--n-clusters", type=_positive_int, default=None, metavar="K",
                   help="number of clusters (default: the number of classes)")
    p.add_argument("--embedding", choices=("binary", "onehot"), default="binary",
                   help="cluster-index embedding of the transformers (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="random_state of all estimators (default: %(default)s)")
    p.add_argument("--n-init", type=_positive_int, default=1, metavar="N",
                   help="runs from different initial centres, best kept (default: %(default)s)")
    p.add_argument("--verbose", action="store_true",
                   help="log TransformerKMeans' steps (and any pretraining) on stderr")
    p.set_defaults(func=_run_demo)


def _run_cluster(args: argparse.Namespace) -> int:
    """Cluster the rows of a file; labels to stdout (or --out), a summary to stderr."""
    from skformer._cli_io import check_outputs, write_centres, write_labels
    from skformer._cli_table import TableError, TableWarning, read_table

    def error(message: str) -> int:
        print(f"skformer cluster: error: {message}", file=sys.stderr)
        return 2

    # Before reading the input (a pipe can be read once) and before a fit that may be long.
    problem = check_outputs(args.file, {"-o": args.out, "--centers": args.centers})
    if problem is not None:
        return error(problem)
    try:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", TableWarning)
            X = read_table(args.file, args.delimiter, args.header, args.skip_columns)
    except TableError as exc:
        return error(str(exc))
    except OSError as exc:
        return error(f"cannot read {args.file}: {exc}")
    for note in notes:
        if issubclass(note.category, TableWarning):
            print(f"skformer cluster: note: {note.message}", file=sys.stderr)
        else:  # another library's warning, shown as it would have been
            warnings.showwarning(note.message, note.category, note.filename, note.lineno)

    from skformer import TransformerKMeans

    scaler = None
    if args.standardise:
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler()
        X = scaler.fit_transform(X)
    estimator = TransformerKMeans(
        n_clusters=args.n_clusters, embedding=args.embedding, n_init=args.n_init,
        learned_starts=args.learned_starts, random_state=args.seed, device=args.device,
        verbose=int(args.verbose),
    )
    start = time.perf_counter()
    try:
        labels = estimator.fit_predict(X)
    except (ValueError, LookupError) as exc:
        return error(str(exc))
    seconds = time.perf_counter() - start
    centres = estimator.cluster_centers_
    if scaler is not None:  # in the input's units, as the user reads them
        centres = scaler.inverse_transform(centres)
    try:
        write_labels(labels, args.out)
        if args.centers is not None:
            write_centres(centres, args.centers)
    except OSError as exc:
        return error(f"cannot write {exc.filename or args.out or 'stdout'}: "
                     f"{exc.strerror or exc}")
    units = " (of the standardised features)" if scaler is not None else ""
    learned = ""
    if args.learned_starts:
        learned = (f", {estimator.selected_run_} run kept"
                   if estimator.learned_used_ else
                   f", learned steps skipped: {estimator.learned_skipped_}")
    print(f"skformer cluster: {X.shape[0]} rows x {X.shape[1]} features -> "
          f"{args.n_clusters} clusters, inertia {estimator.inertia_:.6g}{units}, "
          f"{estimator.n_learned_steps_} learned + {estimator.n_lloyd_steps_} Lloyd steps"
          f"{learned}, {seconds:.2f} s", file=sys.stderr)
    return 0


def _add_cluster(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster",
        help="cluster the rows of a CSV or .npy file with TransformerKMeans",
        description=(
            "Read a 2-D numeric table (CSV or other delimited text, or a .npy array), fit "
            "skformer.TransformerKMeans, and write the cluster label of each row, one per "
            "line and in the input's order, to stdout or --out. A summary goes to stderr. "
            "The input is read once, front to back, into a float array (its text is "
            "parsed as it arrives, never held whole): a file, '-' (standard input), a pipe "
            "or a process substitution such as <(zcat data.csv.gz); gzip data is "
            "decompressed (known by its first bytes, whatever the name); text is UTF-8, "
            "with or without a byte-order mark. "
            "Every data line is a row: blank lines and lines starting with '#' are skipped, "
            "and a first line is a header only with --header, or when it holds a field "
            "that is neither a number nor a missing-value marker (NA, nan, ...) and every "
            "later line is numbers. Numbers are read as numpy.loadtxt reads them (1.5, "
            "-2e3): digit separators (1_000, 1,000) are not numbers, and nan, inf and "
            "missing values are errors. Every column is a feature unless left out with "
            "--skip-columns (a column of names or IDs, or the index column that pandas' "
            "df.to_csv() writes first). Errors name the input's line and column. An output "
            "that is the input or another output is refused before the input is read. "
            "Errors exit with status 2."
        ),
    )
    p.add_argument("file", help="input: a path (.npy, or delimited text: CSV by default; "
                                "gzip-compressed or not) or '-' for standard input")
    p.add_argument("-k", "--n-clusters", type=_positive_int, default=8, metavar="K",
                   help="number of clusters (default: %(default)s)")
    p.add_argument("-o", "--out", default=None, metavar="FILE",
                   help="labels file, .npy or text (default: stdout)")
    p.add_argument("--centers", default=None, metavar="FILE",
                   help="also write the cluster centres (.npy or CSV), in the input's "
                        "units; CSV values are the shortest decimals that read back as "
                        "the same floating-point numbers (0.1, not 0.10000000000000001)")
    p.add_argument("--delimiter", default=",",
                   help="text delimiter, one character (default: ','); ' ' splits on any "
                        "run of spaces or tabs, '\\t' is a tab; not '\"' (fields may be "
                        "quoted), '#' (comments) or a character of numbers")
    p.add_argument("--skip-columns", type=_columns, default=(), metavar="C[,C...]",
                   help="columns to leave out, counted from 1 as the error messages count "
                        "them, e.g. 1 for the index column of pandas' df.to_csv() or an "
                        "ID column; their fields may be text (default: none)")
    p.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="the first line is (--header) or is not (--no-header) a header "
                        "(default: a header only when unambiguous)")
    p.add_argument("--standardise", action="store_true",
                   help="standardise the features first (zero mean, unit variance); "
                        "--centers are still written in the input's units")
    p.add_argument("--learned-starts", type=_non_negative_int, default=0, metavar="L",
                   help="TransformerKMeans' learned_starts: learned runs per start, "
                        "beside the Lloyd run; the run of lowest inertia is kept "
                        "(default: %(default)s, KMeans' run only)")
    p.add_argument("--embedding", choices=("binary", "onehot"), default="binary",
                   help="cluster-index embedding (default: %(default)s)")
    p.add_argument("--n-init", type=_positive_int, default=1, metavar="N",
                   help="runs from different initial centres (default: %(default)s)")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="random_state (default: none, a different run each time)")
    p.add_argument("--device", default="auto",
                   help="cpu, cuda, cuda:N or auto (default: %(default)s)")
    p.add_argument("--verbose", action="store_true",
                   help="log the steps (and any pretraining) on stderr")
    p.set_defaults(func=_run_cluster)


# Exit status of pretrain when another run replaced a model this one saved.
_REPLACED = 1


class _Pretrained(NamedTuple):
    """What one pretraining run wrote, for its report."""

    path: object
    """The file written (a :class:`pathlib.Path`)."""
    digest: str
    """:func:`_weights_digest` of this run's model."""
    metadata: dict | None
    """This run's metadata as read back after saving; None where another run had
    already replaced the file then."""
    seconds: float


def _weights_digest(model) -> str:
    """SHA-256 of a model's tensors (sorted by name): the same weights, the same digest,
    whatever the metadata (``created`` differs between two runs of one model)."""
    import hashlib

    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode("utf-8"))
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
                      .numpy().tobytes())
    return digest.hexdigest()


def _out_path(d: int, k: int, options: dict, out: str | None, many: bool):
    """The file ``--out`` names for a shape (in it, where it is a folder or the grid has
    several shapes); None without ``--out``: the cache file of the shape."""
    from pathlib import Path

    from skformer.store import model_filename

    if out is None:
        return None
    path = Path(out)
    if many and path.exists() and not path.is_dir():
        raise ValueError(f"--out {out} is not a folder: a grid of shapes is written to "
                         "one (new or existing)")
    if many or path.is_dir():  # a symbolic link to a folder is a folder here
        path = path / model_filename(d, k, options["embedding"], options["loss"])
    return path


def _pretrain_one(d: int, k: int, options: dict, out: str | None, many: bool) -> _Pretrained:
    """Pretrain one shape (a joblib task) and read back what it wrote."""
    from skformer.store import cache_dir, model_filename, pretrain, read_model

    path = _out_path(d, k, options, out, many)
    start = time.perf_counter()
    model = pretrain(d, k, path=path, **options)
    seconds = time.perf_counter() - start
    if path is None:
        path = cache_dir() / model_filename(d, k, options["embedding"], options["loss"])
    # Another run of this shape may have saved its model over this one since (the save
    # is atomic: the file is one run's or the other's, whole): only this run's weights
    # vouch for the statistics read back.
    digest = _weights_digest(model)
    stored = read_model(path)
    mine = stored.metadata if _weights_digest(stored.model) == digest else None
    return _Pretrained(path, digest, mine, seconds)


def _statistics(metadata: dict) -> str:
    """The validation figures of a model's metadata, as the report prints them."""
    line = f"relative validation loss {metadata['val_relative']:.4f} (1.0 = one Lloyd step)"
    multistep = (metadata.get("training") or {}).get("val_multistep")
    if multistep is not None:
        line += f", after 10 steps {multistep:.4f} of Lloyd's cost"
    return line


def _report(shape: tuple[int, int], result: _Pretrained) -> bool:
    """Print where the model of ``shape`` is and its figures; False where the file no
    longer holds this run's model (another run replaced it: say which one is kept)."""
    from skformer.store import ModelStoreError, read_model

    d, k = shape
    print(f"d={d} k={k}: {result.path}")
    # Read again when reporting, not only after saving: a run that started later may
    # have finished since (the other shapes of a grid take time).
    try:
        now = read_model(result.path)
    except FileNotFoundError:
        kept = "none: the file was removed"
    except (ModelStoreError, OSError) as exc:
        kept = f"none readable ({exc})"
    else:
        if _weights_digest(now.model) == result.digest:  # this run's model (or its twin)
            print(f"  {_statistics(now.metadata)}, {result.seconds:.1f} s")
            return True
        kept = (f"the other run's model ({_statistics(now.metadata)}; created "
                f"{now.metadata.get('created', '?')})")
    mine = "figures unknown" if result.metadata is None else _statistics(result.metadata)
    print(f"  another run replaced this model at {result.path}; kept: {kept}. This run's "
          f"model ({mine}, {result.seconds:.1f} s) is not on disk.")
    return False


def _run_pretrain(args: argparse.Namespace) -> int:
    """Pretrain every (d, k) of the grid and report where each model went."""
    from joblib import Parallel, delayed

    from skformer.store import check_pretrain

    shapes = list(dict.fromkeys((d, k) for d in args.d for k in args.k))  # each once
    options = dict(embedding=args.embedding, loss=args.loss, preset=args.preset,
                   seed=args.seed, progress=args.progress, overwrite=args.overwrite)
    if args.steps is not None:
        options["steps"] = args.steps
    many = len(shapes) > 1
    try:
        # Every shape and file is checked before the first is trained.
        for d, k in shapes:
            check_pretrain(d, k, path=_out_path(d, k, options, args.out, many),
                           **{key: v for key, v in options.items() if key != "progress"})
        results = Parallel(n_jobs=args.n_jobs)(
            delayed(_pretrain_one)(d, k, options, args.out, many) for d, k in shapes
        )
    except (ValueError, OSError) as exc:  # an invalid configuration, an unwritable folder
        print(f"skformer pretrain: error: {exc}", file=sys.stderr)
        return 2
    kept = [_report(shape, result) for shape, result in zip(shapes, results, strict=True)]
    return 0 if all(kept) else _REPLACED


def _add_pretrain(subparsers) -> None:
    p = subparsers.add_parser(
        "pretrain",
        help="train learned models and save them to the cache or a file",
        description=(
            "Train the learned k-means transformer for each (d, k) of the grid --d x --k "
            "and save it (default: the user cache, where TransformerKMeans finds it). "
            "Prints each file, its relative validation loss (paper eq. 20; below 1.0 beats "
            "one Lloyd step), for the multistep preset its cost after 10 re-embedded steps "
            "relative to 10 Lloyd steps, and the time taken. The file is read back when "
            "reporting: where another run (of the same shape, at the same time) replaced "
            "it, the report says which model is kept and the exit status is 1. "
            "--out may name a new file or a skformer model file, which is replaced "
            "atomically (a temporary file in the same folder, then a rename); any other "
            "file there is kept unless --overwrite, and a symbolic link, a folder (for "
            "one shape: the model goes into it) or a device is never replaced. Every "
            "shape and file is checked before the first is trained; errors exit with "
            "status 2."
        ),
    )
    p.add_argument("--d", type=_positive_int, nargs="+", required=True, metavar="D",
                   help="number of features, at most 1024; several values train a grid")
    p.add_argument("--k", type=_positive_int, nargs="+", required=True, metavar="K",
                   help="number of clusters; several values train a grid")
    p.add_argument("--embedding", choices=("binary", "onehot", "none"), default="binary",
                   help="cluster-index embedding (default: %(default)s)")
    p.add_argument("--loss", choices=("l2", "ne"), default="l2",
                   help="smoothed k-means loss: sparsemax (l2) or softmax (ne) "
                        "(default: %(default)s)")
    p.add_argument("--preset", choices=("multistep", "fast", "paper"), default="multistep",
                   help="multistep: the shipped models' recipe (a temperature schedule "
                        "trained for 10 re-embedded steps); fast: the one-step objective "
                        "from a warm start; paper: the paper's 10,000-step protocol "
                        "(default: %(default)s)")
    p.add_argument("--steps", type=_positive_int, default=None, metavar="N",
                   help="training steps (default: the preset's)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of initialisation and tasks (default: %(default)s)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="file to write (a folder for a grid; default: the user cache, "
                        "where the file of the shape is replaced)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a file at --out that is not a skformer model")
    p.add_argument("--n-jobs", type=int, default=1, metavar="J",
                   help="shapes trained in parallel with joblib (default: %(default)s)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="show a progress bar (default: on)")
    p.set_defaults(func=_run_pretrain)


class _Parser(argparse.ArgumentParser):
    """An argument parser that can add its arguments when it is first used.

    ``complete``, when given, is called with the parser just before it parses: the
    sub-parsers of ``bench`` and ``probe`` read their registries then, not when the
    whole command line is built.
    """

    def __init__(self, *args, complete: Callable | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._complete = complete

    def parse_known_args(self, args=None, namespace=None):
        complete, self._complete = self._complete, None
        if complete is not None:
            complete(self)
        return super().parse_known_args(args, namespace)


# Each entry adds one sub-command to the parser; later commands append here.
_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_demo,
    _add_cluster,
    _add_pretrain,
    add_bench,
    add_probe,
)


def build_parser() -> argparse.ArgumentParser:
    """Return the ``skformer`` argument parser."""
    parser = _Parser(
        prog="skformer",
        description="skformer: k-means clustering run by a transformer.",
        epilog=(
            f"bench and probe need {CHECKOUT}; the other commands work from any "
            "installation. Exit status: 0 success; 1 pretrain: another run replaced a "
            "model this one saved; 2 invalid arguments, input or options, or a failed "
            f"command; {NO_CHECKOUT_STATUS} bench or probe without a source checkout."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``skformer`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        ``0`` on success; ``1`` where ``pretrain`` saved a model that another run then
        replaced; ``2`` for an invalid input or a failed command. Invalid arguments exit
        through :class:`SystemExit` with status 2, as :mod:`argparse` does; ``bench`` and
        ``probe`` without a source checkout with status 3
        (:data:`skformer._cli_bench.NO_CHECKOUT_STATUS`).
    """
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return int(args.func(args))
    except ImportError as exc:  # a missing optional dependency: its message says what to install
        print(f"skformer {args.command}: error: {exc}", file=sys.stderr)
        return 2
