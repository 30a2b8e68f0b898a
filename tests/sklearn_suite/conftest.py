"""Collection rules of scikit-learn's KMeans suite run against skformer.

``test_kmeans_suite.py`` exposes scikit-learn's tests once per estimator; this file

* provides the ``global_dtype`` fixture of scikit-learn's own ``conftest.py``
  (float32 and float64, both always run);
* deselects the cases parametrized with ``MiniBatchKMeans``, which skformer does not
  reimplement (the run's summary says so: ``tests/conftest.py``);
* marks the cases where skformer deviates from KMeans by design as strict ``xfail``:
  the table :data:`DEVIATIONS` below. Each mark says which exception the deviation
  raises, so a case that fails in another way (a ``TypeError`` of sparse input while
  it is refused, say) is still reported as a failure;
* filters the warnings a deviation makes where KMeans makes none, in those cases only
  (:data:`EXPECTED_WARNINGS`).

The hook acts only on the tests of this folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.cluster import MiniBatchKMeans

HERE = Path(__file__).parent


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def global_dtype(request):
    """The dtype of the data, as scikit-learn's fixture of the same name."""
    return request.param


def _raised(exc_type, match=None, context=None):
    """What the xfail mark expects: ``exc_type`` (whose message matches ``match``),
    or, with ``context``, ``exc_type`` raised while an exception of type ``context``
    (matching ``match``) was being handled. Without ``pytest.RaisesExc`` (pytest <
    8.4) only the type is checked."""
    if not hasattr(pytest, "RaisesExc"):
        return exc_type
    if context is None:
        return pytest.RaisesExc(exc_type, match=match)
    return pytest.RaisesExc(
        exc_type,
        check=lambda exc: isinstance(exc.__context__, context)
        and (match is None or match in str(exc.__context__)),
    )


_ELKAN = (
    "algorithm='elkan' is refused by design: skformer's layers are Lloyd iterations",
    _raised(ValueError, match="algorithm='elkan'"),
)
_ELKAN_IN_WARNS = (
    _ELKAN[0] + " (the ValueError is raised inside pytest.warns, which reports it as "
    "'DID NOT WARN')",
    _raised(pytest.fail.Exception, match="algorithm='elkan'", context=ValueError),
)
_EMPTY_CLUSTER = (
    "an empty cluster keeps its previous centre (the attention layer averages the "
    "points of a cluster and nothing else); KMeans relocates it to a far-away point",
    AssertionError,
)
_VERBOSE = (
    "verbose output goes to stderr through the 'skformer' logger, not to stdout, "
    "with skformer's own messages",
    AssertionError,
)

_LEARNED_RUN = (
    "in the learned mode (learned_starts=1) a start's result may be its learned run - "
    "learned steps, then Lloyd steps - where that ends with a lower inertia: max_iter "
    "then bounds each kind of step, so max_iter=1 is not one Lloyd step, and n_iter_ "
    "counts the learned steps too",
    AssertionError,
)

BOTH = ("exact", "transformer", "learned")  # every estimator of the suite
FAST = ("exact", "transformer")  # the estimators that run KMeans' Lloyd run only

DESELECTED_REASON = ("the MiniBatchKMeans cases of scikit-learn's KMeans suite "
                     "(tests/sklearn_suite): skformer does not reimplement MiniBatchKMeans")

# The deliberate deviations: (sklearn test name or "*" for any, estimators, the
# parameters a case must have (None: every case), (reason, expected exception)).
# The first row that matches a case applies. Estimators (all with device="cpu"):
# "exact" is ExactLloydTransformer, "transformer" TransformerKMeans in its default fast
# mode (n_iter_ is KMeans'), "learned" TransformerKMeans with learned_starts=1.
DEVIATIONS = (
    # test                                  estimators  case                      deviation
    ("test_relocating_with_duplicates",     BOTH, {"algorithm": "elkan"},      _ELKAN_IN_WARNS),
    ("*",                                   BOTH, {"algo": "elkan"},           _ELKAN),
    ("*",                                   BOTH, {"algorithm": "elkan"},      _ELKAN),
    ("test_kmeans_relocated_clusters",      BOTH, {"algo": "lloyd"},           _EMPTY_CLUSTER),
    # In the learned mode the generic model's soft steps give the empty centre points
    # (its learned run is kept): the test passes there, as KMeans' relocation does.
    ("test_kmeans_empty_cluster_relocated", FAST, None,                        _EMPTY_CLUSTER),
    ("test_kmeans_verbose",                 BOTH, {"algorithm": "lloyd"},      _VERBOSE),
    ("test_k_means_1_iteration",       ("learned",), {"algo": "lloyd"},        _LEARNED_RUN),
)  # fmt: skip


# Warnings a deviation makes where KMeans makes none, filtered in those cases only:
# (sklearn test name, estimators, the parameters a case must have, filter).
_FEWER_CLUSTERS = "ignore:Number of distinct clusters:sklearn.exceptions.ConvergenceWarning"
EXPECTED_WARNINGS = (
    # An empty cluster kept (not relocated) leaves fewer distinct labels than clusters.
    ("test_kmeans_relocated_clusters",      BOTH, None,                      _FEWER_CLUSTERS),
    ("test_kmeans_empty_cluster_relocated", BOTH, None,                      _FEWER_CLUSTERS),
    # max_iter=2 bounds the learned steps too: a kept learned run may hold an empty
    # cluster (KMeans would have relocated it).
    ("test_kmeans_predict",           ("learned",), {"max_iter": 2},         _FEWER_CLUSTERS),
)  # fmt: skip


def _matches(estimator: str, test: str, params: dict, name: str, estimators, case) -> bool:
    return (name in ("*", test) and estimator in estimators
            and all(key in params and params[key] == value
                    for key, value in (case or {}).items()))


def _deviation(estimator: str, test: str, params: dict):
    for name, estimators, case, (reason, raises) in DEVIATIONS:
        if _matches(estimator, test, params, name, estimators, case):
            return pytest.mark.xfail(reason=reason, raises=raises, strict=True)
    return None


def pytest_collection_modifyitems(config, items):
    kept, deselected = [], []
    for item in items:
        if item.path.parent != HERE or not isinstance(item, pytest.Function):
            kept.append(item)
            continue
        params = item.callspec.params if hasattr(item, "callspec") else {}
        if any(value is MiniBatchKMeans for value in params.values()):
            deselected.append(item)
            continue
        kept.append(item)
        # The suite's functions live in modules "_suite_<estimator>".
        estimator = item.function.__module__.removeprefix("_suite_")
        mark = _deviation(estimator, item.function.__name__, params)
        if mark is not None:
            item.add_marker(mark)
        for name, estimators, case, action in EXPECTED_WARNINGS:
            if _matches(estimator, item.function.__name__, params, name, estimators, case):
                item.add_marker(pytest.mark.filterwarnings(action))
    if deselected:
        for item in deselected:  # the reason, for the run's summary (tests/conftest.py)
            item.user_properties.append(("deselected", DESELECTED_REASON))
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
