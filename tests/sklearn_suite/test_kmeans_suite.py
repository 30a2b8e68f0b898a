"""scikit-learn's own KMeans tests, run against skformer's two estimators.

The test module ``sklearn/cluster/tests/test_k_means.py`` of the *installed*
scikit-learn is loaded from the package (nothing of it is copied into this
repository), its ``from sklearn.cluster import KMeans`` is removed with :mod:`ast`,
and it is executed once per estimator with the global ``KMeans`` bound to

* :class:`skformer.ExactLloydTransformer` (module ``_suite_exact``),
* :class:`skformer.TransformerKMeans` with ``device="cpu"`` by default (module
  ``_suite_transformer``; the estimator's own default is ``device="auto"``), and
* the same in its learned mode, ``learned_starts=1`` by default (module
  ``_suite_learned``).

Each test function of the suite that concerns KMeans' public behaviour is exposed
here as ``test_exact__<name>``, ``test_transformer__<name>`` and
``test_learned__<name>`` (``<name>``: the sklearn name without its ``test_`` prefix),
with its parametrization; the
``global_random_seed`` fixture comes from ``tests/conftest.py`` and ``global_dtype``
from ``tests/sklearn_suite/conftest.py``. Tests that do not apply are not collected:
they are listed, each with the reason, in :data:`EXCLUDED` below.

Where the suite is parametrized over estimators, the ``MiniBatchKMeans`` cases are
deselected, and the deliberate deviations of skformer from KMeans are strict
``xfail`` marks: both are applied by ``tests/sklearn_suite/conftest.py``, whose
table ``DEVIATIONS`` says, for each deviation, which tests (and parameters) of which
estimator show it and why. Anything else that fails is a bug (or a deviation not yet
recorded there).

The module skips when the installed scikit-learn ships without its tests (some
distributions strip them); a test name of :data:`EXCLUDED` that a scikit-learn
version does not have is simply ignored.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from skformer import ExactLloydTransformer, TransformerKMeans

SUITE = "sklearn.cluster.tests.test_k_means"

# Tests of the suite that are not collected, and why.
_PRIVATE = "tests a private helper of sklearn.cluster, not the estimator"
_MINIBATCH = "MiniBatchKMeans only"
_ELKAN = "algorithm='elkan' only (refused by design: skformer's layers are Lloyd iterations)"
EXCLUDED = {
    # private helpers of sklearn.cluster._k_means_common / sklearn.cluster._kmeans
    "test_relocate_empty_clusters": _PRIVATE + " (_relocate_empty_clusters_dense/sparse)",
    "test_euclidean_distance": _PRIVATE + " (_euclidean_dense/sparse_dense_wrapper)",
    "test_inertia": _PRIVATE + " (_inertia_dense/_inertia_sparse)",
    "test_is_same_clustering": _PRIVATE + " (_is_same_clustering)",
    "test_minibatch_update_consistency": _PRIVATE + " (_mini_batch_step, _labels_inertia)",
    "test_minibatch_reassign": _PRIVATE + " (_mini_batch_step, _labels_inertia)",
    "test_sample_weight_init": "calls KMeans' private method _init_centroids",
    "test_sample_weight_zero": "calls KMeans' private method _init_centroids",
    # sklearn's functions, not the estimator
    "test_k_means_function": "tests the sklearn.cluster.k_means function",
    "test_kmeans_plusplus_wrong_params": "tests the sklearn.cluster.kmeans_plusplus function",
    "test_kmeans_plusplus_output": "tests the sklearn.cluster.kmeans_plusplus function",
    "test_kmeans_plusplus_norms": "tests the sklearn.cluster.kmeans_plusplus function",
    "test_kmeans_plusplus_dataorder": "tests the sklearn.cluster.kmeans_plusplus function",
    # MiniBatchKMeans
    "test_minibatch_kmeans_partial_fit_init": _MINIBATCH,
    "test_minibatch_kmeans_verbose": _MINIBATCH,
    "test_minibatch_kmeans_warning_init_size": _MINIBATCH,
    "test_minibatch_sensible_reassign": _MINIBATCH,
    "test_minibatch_with_many_reassignments": _MINIBATCH,
    "test_minibatch_kmeans_init_size": _MINIBATCH,
    "test_minibatch_declared_convergence": _MINIBATCH,
    "test_minibatch_iter_steps": _MINIBATCH,
    # algorithm="elkan"
    "test_kmeans_elkan_results": _ELKAN + "; compares elkan with lloyd",
    "test_kmeans_elkan_iter_attribute": _ELKAN,
    "test_warning_elkan_1_cluster": _ELKAN + "; a warning of elkan",
}
# Kept although it touches sklearn.utils: test_result_equal_in_diff_n_threads only
# limits the OpenMP threads (threadpoolctl) around two fits and compares the labels,
# which is a property of the estimator.


def _is_excluded(name: str) -> bool:
    # A MiniBatchKMeans test added by a later scikit-learn is left out as well.
    return name in EXCLUDED or "minibatch" in name


def _with_defaults(cls: type, **defaults) -> type:
    """A subclass of ``cls``, of the same name, whose keyword defaults are ``defaults``.

    scikit-learn reads the parameters off the signature of ``__init__`` (``get_params``,
    ``clone``), so the subclass gets a copy of ``cls.__init__`` with those keyword
    defaults changed; a wrapper with ``**kwargs`` would not be a valid estimator.
    """
    init = cls.__init__
    cpu_init = types.FunctionType(
        init.__code__, init.__globals__, init.__name__, init.__defaults__, init.__closure__
    )
    cpu_init.__kwdefaults__ = {**init.__kwdefaults__, **defaults}
    cpu_init.__doc__ = init.__doc__
    cpu_init.__qualname__ = f"{cls.__name__}.__init__"
    namespace = {
        "__init__": cpu_init,
        "__module__": __name__,
        "__doc__": f"{cls.__name__} with the defaults {defaults}.",
    }
    return type(cls.__name__, (cls,), namespace)


ESTIMATORS = {
    "exact": ExactLloydTransformer,
    "transformer": _with_defaults(TransformerKMeans, device="cpu"),
    # The slower, better mode: a learned run per start besides the Lloyd run.
    "learned": _with_defaults(TransformerKMeans, device="cpu", learned_starts=1),
}


class _UnbindKMeans(ast.NodeTransformer):
    """Removes every import that binds the name ``KMeans``."""

    def __init__(self):
        self.removed = 0

    def visit_ImportFrom(self, node: ast.ImportFrom):
        kept = [alias for alias in node.names if (alias.asname or alias.name) != "KMeans"]
        self.removed += len(node.names) - len(kept)
        if not kept:
            return None
        node.names = kept
        return node


def _suite_source() -> tuple[str, str]:
    """The path and source text of the installed suite; skips the module without it."""
    try:
        spec = importlib.util.find_spec(SUITE)
    except ImportError:
        spec = None
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        pytest.skip(
            f"the installed scikit-learn ships without its tests ({SUITE} not found)",
            allow_module_level=True,
        )
    return spec.origin, Path(spec.origin).read_text(encoding="utf-8")


def _load_suite(tag: str, estimator: type, path: str, source: str) -> types.ModuleType:
    """The suite executed as module ``_suite_<tag>``, with ``KMeans`` bound to
    ``estimator``."""
    tree = ast.parse(source, filename=path)
    unbind = _UnbindKMeans()
    tree = ast.fix_missing_locations(unbind.visit(tree))
    if unbind.removed != 1:
        raise RuntimeError(f"{path}: expected one import of KMeans, found {unbind.removed}")
    try:  # pytest's assertion rewriting, for informative failures (private API)
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:
        pass
    else:
        rewrite_asserts(tree, source.encode(), path)
    module = types.ModuleType(f"_suite_{tag}", f"{SUITE} with KMeans = {estimator!r}")
    module.__file__ = path
    module.KMeans = estimator
    sys.modules[module.__name__] = module  # so that pickle and inspect find what it defines
    exec(compile(tree, path, "exec"), module.__dict__)
    if module.KMeans is not estimator:
        raise RuntimeError(f"{path} rebinds KMeans: the suite would not test {estimator}")
    return module


def _expose(namespace: dict) -> None:
    """Puts the suite's tests into ``namespace``, once per estimator."""
    path, source = _suite_source()
    for tag, estimator in ESTIMATORS.items():
        module = _load_suite(tag, estimator, path, source)
        for name, obj in vars(module).items():
            if name.startswith("test_") and isinstance(obj, types.FunctionType) \
                    and not _is_excluded(name):
                namespace[f"test_{tag}__{name[len('test_'):]}"] = obj


_expose(globals())
