"""The exact transformer against the NumPy Lloyd oracle against KMeans.

Every layer of :class:`ExactLloydModel` must be one Lloyd iteration: the same centres
(max abs error <= 1e-9 in float64) and the same labels, step after step, for the
literal attention (``dense``, OH and BN) and the structured path (``fused``).
"""

import math

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans

from skformer.nn import ExactLloydModel, exact_lloyd_layer
from skformer.reference import lloyd_step

ATOL = 1e-9


def make_task(rng, n, d, k, *, empty=False):
    """Blobs in [0, 1]^d and k initial centres drawn from the points.

    With ``empty=True`` some centres are duplicates (the copy never wins a point)
    and some lie far away, so clusters are empty at every step.
    """
    means = rng.random((max(2, k // 3), d))
    X = means[rng.integers(len(means), size=n)] + 0.05 * rng.normal(size=(n, d))
    C0 = X[rng.choice(n, k, replace=False)].copy()
    if empty and k >= 3:
        C0[1] = C0[0]
        C0[-1] = 10.0 + rng.random(d)
    return X, C0


def run_against_reference(X, C0, T, *, path, embedding, weight=None):
    """Step model and oracle side by side; return how many clusters were empty."""
    k, d = C0.shape
    model = ExactLloydModel(d, k, embedding=embedding, path=path)
    x, c = torch.from_numpy(X)[None], torch.from_numpy(C0)[None]
    w = None if weight is None else torch.from_numpy(weight)[None]
    ref, n_empty = C0, 0
    for t in range(T):
        out = model(x, c, w)
        ref, ref_labels = lloyd_step(X, ref, weight)
        mass = np.bincount(ref_labels, weights=weight, minlength=k)
        n_empty += int(np.sum(mass == 0))
        np.testing.assert_array_equal(out.labels[0].numpy(), ref_labels, err_msg=f"step {t + 1}")
        np.testing.assert_allclose(out.centres[0].numpy(), ref, rtol=0, atol=ATOL)
        c = out.centres
    return n_empty


DENSE_GRID = [(40, 1, 1), (80, 2, 2), (100, 3, 3), (150, 5, 7), (200, 16, 16), (120, 128, 7)]


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("n, d, k", DENSE_GRID)
@pytest.mark.parametrize("empty", [False, True])
def test_dense_attention_is_lloyd(rng, embedding, n, d, k, empty):
    X, C0 = make_task(rng, n, d, k, empty=empty)
    n_empty = run_against_reference(X, C0, 20, path="dense", embedding=embedding)
    if empty and k >= 3:
        assert n_empty > 0  # the test did exercise empty clusters


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
def test_dense_attention_is_lloyd_for_many_clusters(rng, embedding):
    X, C0 = make_task(rng, 300, 3, 100, empty=True)
    assert run_against_reference(X, C0, 4, path="dense", embedding=embedding) > 0


@pytest.mark.slow
@pytest.mark.parametrize("embedding", ["binary", "onehot"])
def test_dense_attention_is_lloyd_for_1000_clusters(rng, embedding):
    X, C0 = make_task(rng, 1100, 2, 1000, empty=True)
    assert run_against_reference(X, C0, 2, path="dense", embedding=embedding) > 0


FUSED_GRID = [
    (5_000, 1, 7),
    (20_000, 2, 1000),
    (30_000, 128, 16),
    (100_000, 8, 100),
    (2_000, 64, 3),
    (500, 4, 1),
]


@pytest.mark.parametrize("n, d, k", FUSED_GRID)
@pytest.mark.parametrize("empty", [False, True])
def test_fused_is_lloyd(rng, n, d, k, empty):
    X, C0 = make_task(rng, n, d, k, empty=empty)
    T = 20 if n * k <= 1e6 else 5
    n_empty = run_against_reference(X, C0, T, path="fused", embedding="binary")
    if empty and k >= 3:
        assert n_empty > 0


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("k", [2, 7, 16])
def test_dense_and_fused_agree_with_weights(rng, embedding, k):
    X, C0 = make_task(rng, 150, 3, k, empty=True)
    weight = rng.random(150)
    weight[rng.random(150) < 0.2] = 0.0
    for path in ("dense", "fused"):
        run_against_reference(X, C0, 10, path=path, embedding=embedding, weight=weight)


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("T", [1, 5, 20])
def test_model_equals_kmeans_without_empty_clusters(rng, embedding, T):
    X, C0 = make_task(rng, 400, 4, 7)
    ref = C0
    for _ in range(T):
        ref, labels = lloyd_step(X, ref)
        assert np.bincount(labels, minlength=7).min() > 0
    km = KMeans(7, init=C0, n_init=1, algorithm="lloyd", tol=0, max_iter=T).fit(X)
    model = ExactLloydModel(4, 7, embedding=embedding, path="dense")
    c = torch.from_numpy(C0)[None]
    for _ in range(T):
        c = model.step(torch.from_numpy(X)[None], c)
    np.testing.assert_allclose(c[0].numpy(), km.cluster_centers_, rtol=0, atol=ATOL)


def test_batched_tasks_are_independent(rng):
    tasks = [make_task(rng, 90, 3, 5) for _ in range(4)]
    x = torch.from_numpy(np.stack([t[0] for t in tasks]))
    c = torch.from_numpy(np.stack([t[1] for t in tasks]))
    for path in ("dense", "fused"):
        out = ExactLloydModel(3, 5, path=path)(x, c)
        for i, (X, C0) in enumerate(tasks):
            ref, labels = lloyd_step(X, C0)
            np.testing.assert_allclose(out.centres[i].numpy(), ref, atol=ATOL, rtol=0)
            np.testing.assert_array_equal(out.labels[i].numpy(), labels)


def test_ties_go_to_the_lowest_centre_index():
    X = np.array([[0.0], [1.0], [2.0], [1.0]])
    C0 = np.array([[0.0], [2.0]])
    ref, labels = lloyd_step(X, C0)
    np.testing.assert_array_equal(labels, [0, 0, 1, 0])
    for embedding in ("binary", "onehot"):
        for path in ("dense", "fused"):
            out = ExactLloydModel(1, 2, embedding=embedding, path=path)(
                torch.from_numpy(X)[None], torch.from_numpy(C0)[None]
            )
            np.testing.assert_array_equal(out.labels[0].numpy(), labels)
            np.testing.assert_allclose(out.centres[0].numpy(), ref)


def test_paper_tie_rule_drops_tied_points():
    """Averaging hardmax writes the mean of the tied codes: the point joins no mean."""
    X = torch.tensor([[[0.0], [1.0], [2.0]]], dtype=torch.float64)
    C0 = torch.tensor([[[0.0], [2.0]]], dtype=torch.float64)
    model = ExactLloydModel(1, 2, path="dense", tie_break="average")
    torch.testing.assert_close(model.step(X, C0), C0)


@pytest.mark.parametrize(
    "embedding, expected", [("onehot", [0.55, 0.5]), ("binary", [0.05, 0.0])]
)
def test_paper_empty_rule(embedding, expected):
    """Theorem 2.1 verbatim: an empty cluster's centre is not kept (spec section 2.9)."""
    X = torch.tensor([[[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.1, 1.0]]], dtype=torch.float64)
    C0 = torch.tensor([[[0.0, 0.0], [1.0, 1.0], [9.0, 9.0]]], dtype=torch.float64)
    model = ExactLloydModel(2, 3, embedding=embedding, path="dense", empty="paper")
    torch.testing.assert_close(model.step(X, C0)[0, 2], torch.tensor(expected, dtype=torch.float64))
    keep = ExactLloydModel(2, 3, embedding=embedding, path="dense")
    torch.testing.assert_close(keep.step(X, C0)[0, 2], C0[0, 2])


def test_float32_close_to_reference(rng):
    X, C0 = make_task(rng, 3000, 6, 8)
    x, c = torch.from_numpy(X).float()[None], torch.from_numpy(C0).float()[None]
    out = ExactLloydModel(6, 8).to(torch.float32)(x, c)
    ref, labels = lloyd_step(X, C0)
    assert out.centres.dtype == torch.float32
    np.testing.assert_allclose(out.centres[0].numpy(), ref, atol=1e-5)


def test_layer_widths_and_weights():
    layer = exact_lloyd_layer(32, 1000, embedding="binary", empty="paper")
    assert layer.embed_dim == 32 + 10
    assert exact_lloyd_layer(32, 1000, embedding="onehot", empty="paper").embed_dim == 1032
    assert layer.points_to_centres.gamma == math.inf
    assert layer.points_to_centres.q_proj.bias is None
    assert not any(p.requires_grad for p in layer.parameters())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(embedding="none"), "needs a cluster-index embedding"),
        (dict(path="sparse"), "path must be one of"),
        (dict(empty="relocate"), "empty must be one of"),
        (dict(empty="paper"), "fused path implements"),
        (dict(tie_break="average"), "fused path implements"),
    ],
)
def test_model_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ExactLloydModel(2, 3, **kwargs)


def test_shape_mismatch_error():
    with pytest.raises(ValueError, match=r"Expected x of shape \(b, n, 2\)"):
        ExactLloydModel(2, 3)(torch.zeros(1, 5, 3), torch.zeros(1, 3, 3))
