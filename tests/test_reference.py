"""The NumPy oracle against scikit-learn's KMeans (the oracle of the oracle)."""

import numpy as np
import pytest
from sklearn.cluster import KMeans

from skformer.reference import assign, lloyd, lloyd_step


@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize("n_iter", [1, 5, 20])
def test_lloyd_matches_kmeans(rng, k, n_iter):
    X = rng.normal(size=(300, 3))
    C0 = X[rng.choice(300, k, replace=False)]
    ours = lloyd(X, C0, n_iter)
    km = KMeans(k, init=C0, n_init=1, max_iter=n_iter, tol=0, algorithm="lloyd").fit(X)
    assert ours.n_empty == 0
    np.testing.assert_allclose(ours.centers, km.cluster_centers_, atol=1e-12)
    assert ours.inertia[-1] == pytest.approx(km.inertia_, rel=1e-10)


def test_assign_ties_go_to_lowest_index():
    X = np.array([[1.0], [3.0]])
    labels, sq = assign(X, np.array([[0.0], [2.0], [4.0]]))
    np.testing.assert_array_equal(labels, [0, 1])
    np.testing.assert_array_equal(sq, [1.0, 1.0])


def test_empty_cluster_keeps_its_centre():
    X = np.array([[0.0], [1.0], [10.0]])
    new, labels = lloyd_step(X, np.array([[0.0], [10.0], [100.0]]))
    np.testing.assert_array_equal(new.ravel(), [0.5, 10.0, 100.0])
    np.testing.assert_array_equal(labels, [0, 0, 1])


def test_zero_weight_cluster_is_empty():
    X = np.array([[0.0], [1.0], [10.0]])
    new, _ = lloyd_step(X, np.array([[0.0], [10.0]]), sample_weight=np.array([1.0, 3.0, 0.0]))
    np.testing.assert_allclose(new.ravel(), [0.75, 10.0])


def test_inertia_history_is_non_increasing(rng):
    X = rng.random((500, 4))
    res = lloyd(X, X[:9], 15)
    assert np.all(np.diff(res.inertia) <= 1e-12)
