"""scikit-learn's estimator checks, with the expected failures it declares for KMeans."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skformer import ExactLloydTransformer, TransformerKMeans

# The only checks scikit-learn itself marks as expected failures for KMeans: k-means++
# draws its initial centres with weights, so sample weights are not equivalent to
# repeating or removing samples.
KMEANS_XFAILS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "sample_weight is not equivalent to removing/repeating samples (as for KMeans)."
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "sample_weight is not equivalent to removing/repeating samples (as for KMeans)."
    ),
}


# Checks whose data have fewer distinct points than the default n_clusters=8: KMeans'
# ConvergenceWarning is the expected answer there.
DUPLICATE_POINTS = {"check_sample_weights_shape", "check_sample_weights_not_overwritten"}


def _expected_failed_checks(estimator):
    return KMEANS_XFAILS


@parametrize_with_checks(
    [
        ExactLloydTransformer(),
        ExactLloydTransformer(n_clusters=3, embedding="onehot", n_init=2, max_iter=5),
        ExactLloydTransformer(n_clusters=2, path="dense", init="random", n_init=2),
        TransformerKMeans(),
        TransformerKMeans(n_clusters=3, init="random", n_init=2, max_iter=5, device="cpu"),
        TransformerKMeans(n_clusters=2, finish="none", learned_starts=1, max_context=16,
                          device="cpu"),
    ],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        if getattr(check, "func", check).__name__ in DUPLICATE_POINTS:
            warnings.filterwarnings("ignore", "Number of distinct clusters",
                                    ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("name", sorted(KMEANS_XFAILS))
def test_xfails_are_the_kmeans_ones(name):
    """Our expected failures are exactly those scikit-learn declares for KMeans."""
    from sklearn.cluster import KMeans
    from sklearn.utils._test_common.instance_generator import _get_expected_failed_checks

    assert name in _get_expected_failed_checks(KMeans())
