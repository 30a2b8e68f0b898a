"""The ``bench`` and ``probe`` commands of ``skformer``: run a module of ``benchmarks``.

The benchmarks and the paper's probes live in the package ``benchmarks`` beside
``skformer/`` in the source repository, as scikit-learn keeps ``benchmarks/`` beside
``sklearn/``; ``pip install .`` does not install it. :func:`_import_benchmarks` finds it
from a source checkout (an editable install included, from any current directory) and,
where there is none (a wheel), says how to get it on one line and exits with status 3
(:data:`NO_CHECKOUT_STATUS`); ``skformer --help`` and ``skformer bench --help`` say so.
The probe registry is read only when ``skformer probe`` is parsed, so the other commands
never import ``benchmarks``.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["CHECKOUT", "NO_CHECKOUT_STATUS", "add_bench", "add_probe"]


# Benchmarks: name -> (module with a ``main(argv) -> int``, one-line help). The modules live
# in the ``benchmarks`` package of the source repository (see _import_benchmarks).
_BENCHMARKS = {
    "exact": (
        "benchmarks.exact_vs_kmeans",
        "ExactLloydTransformer (fused) against KMeans: time per iteration and peak memory",
    ),
    "sparse": (
        "benchmarks.sparse_vs_kmeans",
        "sparse CSR input against KMeans: exact time per iteration and memory on a "
        "1e5 x 1e4 matrix, TransformerKMeans on TF-IDF of generated text",
    ),
    "pretrain": (
        "benchmarks.pretrain_speed",
        "seconds and relative validation loss of the on-demand pretraining preset",
    ),
    "learning": (
        "benchmarks.learning",
        "the paper's learning findings: one-step loss, OH/BN convergence, multi-step",
    ),
    "cost": (
        "benchmarks.cost",
        "learned model cost, one-hot against binary embedding (paper Table 1, Figure 1)",
    ),
    "batch": (
        "benchmarks.batch",
        "batch_k_means against a loop of KMeans, joblib and the batched peers on many "
        "small problems (time, inertia, memory)",
    ),
    "device": (
        "benchmarks.device",
        "every GPU measurement in one command (CPU/GPU equality, batch, whole fits, cost), "
        "under 8 minutes; --tiny for a quick check",
    ),
    "kmeans": (
        "benchmarks.versus_kmeans",
        "TransformerKMeans against KMeans: inertia ratio, ARI/NMI, fit time on bundled and "
        "generated data",
    ),
    "shapes": (
        "benchmarks.shapes",
        "the learned mode at users' shapes (pixels, digits, embeddings, PQ sub-spaces): "
        "first-fit time, headroom captured, ratio to Lloyd from k-means++ starts",
    ),
    "pq": (
        "benchmarks.pq",
        "product-quantisation codebooks: batch_k_means against a loop of KMeans from the "
        "same starts and faiss' ProductQuantizer (time, quantisation error)",
    ),
    "equal-time": (
        "benchmarks.equal_time",
        "the learned mode at equal time: TransformerKMeans(learned_starts=r) against KMeans' "
        "inertia-time curve over n_init",
    ),
    "anchors": (
        "benchmarks.anchors",
        "the best clustering per CPU-second: TransformerKMeans' modes beside KMeans' "
        "n_init curve, Breathing K-Means and faiss on Fritzke's data sets and chosen ones "
        "(gap to the best inertia known, time)",
    ),
    "swaps": (
        "benchmarks.anchors.swaps",
        "how far a perfect move proposer would take the learned mode: every swap tried "
        "from its end, the gaps after each and their ranks under Fritzke's rule",
    ),
}

NO_CHECKOUT_STATUS = 3
"""Exit status of ``bench`` and ``probe`` where ``benchmarks`` is not importable (an
installed wheel); distinct from argparse's 2 for invalid arguments."""

CHECKOUT = ("a source checkout of skformer (the folder benchmarks/ beside skformer/, which "
            "`pip install .` does not install)")

_NO_BENCHMARKS = (
    "skformer {command}: not available in this installation (exit status {status}): the "
    "benchmarks and probes live in the folder benchmarks/ of skformer's source repository, "
    "beside skformer/, which `pip install .` does not install; clone the repository and run "
    "`pip install -e .` in it, then `skformer {command} ...`."
)


def _import_benchmarks(module: str, command: str):
    """Import ``module`` of the ``benchmarks`` package, which is not installed.

    The package is taken from, in order: ``sys.modules`` if already imported; the folder
    ``benchmarks/`` beside this package's folder (a source checkout or an editable install,
    whatever the current directory), whose parent is put first on ``sys.path``; ``sys.path``
    as it is. Where none holds it (an installed wheel), print how to get it, on one line,
    and exit with :data:`NO_CHECKOUT_STATUS`.
    """
    import importlib
    from pathlib import Path

    if "benchmarks" not in sys.modules:
        root = Path(__file__).resolve().parent.parent
        if (root / "benchmarks" / "__init__.py").is_file() and str(root) not in sys.path:
            sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise  # a module the benchmark itself imports is missing
        print(_NO_BENCHMARKS.format(command=command, status=NO_CHECKOUT_STATUS),
              file=sys.stderr)
        raise SystemExit(NO_CHECKOUT_STATUS) from None


def _run_module(args: argparse.Namespace) -> int:
    """Import the chosen benchmark's or probe's module and hand it the remaining options."""
    module = _import_benchmarks(args.registry[args.name][0], args.command)
    return int(module.main(args.options))


def _add_dispatcher(subparsers, command: str, registry, what: str, help: str) -> None:
    """``skformer COMMAND NAME [options]`` for the modules of ``registry``.

    ``registry`` maps each name to ``(module, one-line help)``, or is a function that
    returns that mapping; it is read only when ``COMMAND`` is parsed, so that
    ``skformer --help`` and the other commands never import ``benchmarks``. The parsers
    of ``subparsers`` must take ``complete`` (``skformer.cli._Parser`` does).
    """

    def complete(p: argparse.ArgumentParser) -> None:
        entries = registry() if callable(registry) else registry
        p.description = (
            f"Run {help.removeprefix('run ')}. " + " ".join(
                f"'{name}': {text}." for name, (_, text) in entries.items())
            + f" skformer {command} needs {CHECKOUT}; without it, 'skformer {command} "
            f"NAME' (--help included) says so and exits with status {NO_CHECKOUT_STATUS}."
        )
        p.add_argument("name", metavar=what.upper(), choices=list(entries))
        p.add_argument("options", nargs=argparse.REMAINDER, help=f"options of the {what}")
        p.set_defaults(func=_run_module, registry=entries)

    subparsers.add_parser(
        command, complete=complete,
        help=f"{help} (skformer {command} NAME --help for its options; needs a source "
             "checkout)",
    )


def add_bench(subparsers) -> None:
    _add_dispatcher(subparsers, "bench", _BENCHMARKS, "benchmark",
                    "run one of skformer's benchmarks")


def _probes() -> dict:
    """The probe registry, ``PROBES`` of ``benchmarks.probes``."""
    return _import_benchmarks("benchmarks.probes", "probe").PROBES


def add_probe(subparsers) -> None:
    _add_dispatcher(subparsers, "probe", _probes, "probe",
                    "run one of the paper's probes of the learned model")
