"""Losses: oracles (NumPy brute force, the Lloyd reference), then properties, then errors."""

import numpy as np
import pytest
import torch

from skformer import reference
from skformer.losses import (
    kmeans_cost,
    lloyd_costs,
    lloyd_step,
    pairwise_sq_dist,
    relative_loss,
    smoothed_kmeans_loss,
)
from skformer.tasks import TaskConfig, sample_tasks

KINDS = ["ne", "l2"]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _tasks(seed, b=3, n=30, d=2, k=4):
    config = TaskConfig(n_points=n, n_features=d, n_clusters=k)
    return sample_tasks(config, b, generator=_gen(seed), dtype=torch.float64)


def _brute_sq_dist(x, c):
    x, c = np.asarray(x), np.asarray(c)
    return ((x[:, :, None, :] - c[:, None, :, :]) ** 2).sum(-1)


def _separated(seed, b=2, per=10, d=2, k=3, noise=0.01):
    """Tight clusters around far-apart centres; returns the points and the true centres."""
    g = _gen(seed)
    centres = 10.0 * torch.rand(b, k, d, generator=g, dtype=torch.float64)
    centres[:, :, 0] += 5.0 * torch.arange(k, dtype=torch.float64)  # >= 5 apart
    labels = torch.arange(k).repeat_interleave(per)
    x = centres[:, labels] + noise * torch.randn(b, k * per, d, generator=g, dtype=torch.float64)
    return x, centres


# --- oracles ---------------------------------------------------------------------------------


def test_pairwise_sq_dist_matches_brute_force(global_random_seed):
    x, c = _tasks(global_random_seed)
    r = pairwise_sq_dist(x, c)
    assert r.shape == (3, 30, 4)
    assert (r >= 0).all()
    np.testing.assert_allclose(r.numpy(), _brute_sq_dist(x, c), atol=1e-12)


def test_pairwise_sq_dist_is_clamped_at_zero():
    x = torch.full((1, 1, 3), 0.1, dtype=torch.float32) * 3
    assert pairwise_sq_dist(x, x.clone()).item() >= 0.0


def test_kmeans_cost_matches_brute_force(global_random_seed):
    x, _ = _tasks(global_random_seed)
    c = torch.rand(3, 5, 2, generator=_gen(global_random_seed + 1), dtype=torch.float64)
    expected = _brute_sq_dist(x, c).min(-1).sum(-1)
    np.testing.assert_allclose(kmeans_cost(x, c).numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("shape", [(30,), (3, 30)])
def test_kmeans_cost_weighted_matches_brute_force(rng, shape):
    x, c = _tasks(0)
    w = rng.random(shape)
    expected = (_brute_sq_dist(x, c).min(-1) * w).sum(-1)
    got = kmeans_cost(x, c, sample_weight=torch.from_numpy(w))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_kmeans_cost_is_exactly_zero_on_the_centres():
    x = torch.rand(2, 5, 3, generator=_gen(0))
    assert torch.equal(kmeans_cost(x, x.flip(1)), torch.zeros(2))


def test_lloyd_step_matches_reference(global_random_seed):
    x, c = _tasks(global_random_seed, b=4, n=50, d=3, k=5)
    got = lloyd_step(x, c, generator=_gen(0))  # step 1 from data points: no empty cluster
    for t in range(4):
        expected, labels = reference.lloyd_step(x[t].numpy(), c[t].numpy())
        assert np.bincount(labels, minlength=5).min() > 0
        np.testing.assert_allclose(got[t].numpy(), expected, atol=1e-12)


def test_lloyd_costs_match_reference(global_random_seed):
    x, c = _tasks(global_random_seed, b=3, n=60, d=2, k=4)
    costs = lloyd_costs(x, c, 6)  # generator=None: keep previous centre, as the reference
    assert costs.shape == (3, 7)
    for t in range(3):
        expected = reference.lloyd(x[t].numpy(), c[t].numpy(), 6).inertia
        np.testing.assert_allclose(costs[t].numpy(), expected, rtol=1e-10)


# --- smoothed loss ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tau", [1.0, 0.1, 0.01])
def test_smoothed_loss_bounds_kmeans_cost(global_random_seed, kind, tau):
    x, c = _tasks(global_random_seed)
    c = c + 0.05 * torch.randn(c.shape, generator=_gen(1), dtype=c.dtype)
    per_task = smoothed_kmeans_loss(x, c, tau=tau, kind=kind, reduction="none")
    assert per_task.shape == (3,)
    assert (per_task >= kmeans_cost(x, c) - 1e-12).all()


def test_ne_loss_tends_to_kmeans_cost_as_tau_vanishes():
    x, c = _tasks(0)
    cost = kmeans_cost(x, c)
    gaps = [
        float((smoothed_kmeans_loss(x, c, tau=tau, kind="ne", reduction="none") - cost).max())
        for tau in (1.0, 0.1, 0.01, 1e-3, 1e-5)
    ]
    assert np.all(np.diff(gaps) <= 0)
    assert gaps[-1] < 1e-6 * float(cost.min())


def test_l2_loss_equals_kmeans_cost_when_the_margin_is_large():
    x, c = _separated(0)
    loss = smoothed_kmeans_loss(x, c, tau=0.1, kind="l2", reduction="none")
    # (equal up to the rounding of the |x|^2 - 2 x.c + |c|^2 expansion)
    np.testing.assert_allclose(loss.numpy(), kmeans_cost(x, c).numpy(), rtol=1e-9)
    # NE at the same tau is strictly above, but only by a hair
    ne = smoothed_kmeans_loss(x, c, tau=0.1, kind="ne", reduction="none")
    assert (ne >= loss).all()


def test_l2_loss_is_strictly_above_when_the_margin_is_small():
    x = torch.tensor([[[0.9]]], dtype=torch.float64)
    c = torch.tensor([[[0.0], [2.0]]], dtype=torch.float64)  # r = (0.81, 1.21)
    assert smoothed_kmeans_loss(x, c, tau=10.0, kind="l2") > 0.81 + 0.1
    assert smoothed_kmeans_loss(x, c, tau=0.1, kind="l2") == pytest.approx(0.81, rel=1e-12)


def test_reductions_agree():
    x, c = _tasks(0)
    per_task = smoothed_kmeans_loss(x, c, reduction="none")
    assert smoothed_kmeans_loss(x, c) == pytest.approx(float(per_task.mean()), rel=1e-12)
    assert smoothed_kmeans_loss(x, c, reduction="sum") == pytest.approx(
        float(per_task.sum()), rel=1e-12
    )


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_flows_to_the_centres(kind):
    x, c = _tasks(0)
    c = (c + 0.05).requires_grad_()
    smoothed_kmeans_loss(x, c, tau=0.5, kind=kind).backward()
    assert c.grad is not None and torch.isfinite(c.grad).all()
    assert c.grad.abs().sum() > 0


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_descent_lowers_the_loss(kind):
    x, c0 = _tasks(0)
    c = (c0 + 0.05).requires_grad_()
    before = smoothed_kmeans_loss(x, c, tau=0.1, kind=kind)
    before.backward()
    with torch.no_grad():
        after = smoothed_kmeans_loss(x, c - 1e-3 * c.grad, tau=0.1, kind=kind)
    assert after < before


def test_gradcheck_ne():
    g = _gen(0)
    x = torch.rand(2, 5, 2, generator=g, dtype=torch.float64)
    c = torch.rand(2, 3, 2, generator=g, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda cc: smoothed_kmeans_loss(x, cc, tau=0.3, kind="ne"), (c,)
    )


# --- Lloyd step: ties, empty clusters, reproducibility ---------------------------------------


def test_lloyd_step_ties_go_to_lowest_index_and_empty_keeps_centre():
    x = torch.tensor([[[1.0], [3.0]]], dtype=torch.float64)
    c = torch.tensor([[[0.0], [2.0], [4.0]]], dtype=torch.float64)
    new = lloyd_step(x, c)
    np.testing.assert_array_equal(new.ravel().numpy(), [1.0, 3.0, 4.0])


def test_lloyd_step_has_no_gradient():
    x, c = _tasks(0)
    c = c.requires_grad_()
    assert not lloyd_step(x, c).requires_grad


def _with_empties():
    """Tasks whose centres 2 and 3 duplicate 0 and 1, so clusters 2 and 3 are empty."""
    x, c = _tasks(5, b=4, n=30, d=2, k=4)
    c = torch.cat([c[:, :2], c[:, :2]], dim=1)
    return x, c


def test_empty_clusters_are_reseeded_on_distinct_data_points():
    x, c = _with_empties()
    kept = lloyd_step(x, c)
    new = lloyd_step(x, c, generator=_gen(0))
    torch.testing.assert_close(new[:, :2], kept[:, :2], rtol=0, atol=0)  # filled: the mean
    torch.testing.assert_close(kept[:, 2:], c[:, 2:], rtol=0, atol=0)  # None: keep previous
    for t in range(4):
        for j in (2, 3):
            assert (new[t, j] == x[t]).all(-1).any(), "a re-seeded centre is a point of its task"
        assert not torch.equal(new[t, 2], new[t, 3])


def test_reseeding_is_reproducible_with_the_generator():
    x, c = _with_empties()
    a = lloyd_step(x, c, generator=_gen(1))
    b = lloyd_step(x, c, generator=_gen(1))
    assert torch.equal(a, b)
    other = lloyd_step(x, c, generator=_gen(2))
    assert not torch.equal(a, other)


# --- relative loss and the multi-step baseline -----------------------------------------------


@pytest.mark.parametrize("empties", [False, True])
def test_relative_loss_is_one_for_one_lloyd_step(empties):
    x, c = _with_empties() if empties else _tasks(0)
    c_model = lloyd_step(x, c, generator=_gen(3))
    per_task = relative_loss(x, c, c_model, generator=_gen(3), reduction="none")
    assert torch.equal(per_task, torch.ones_like(per_task))
    assert relative_loss(x, c, c_model, generator=_gen(3)).item() == 1.0


def test_relative_loss_matches_its_definition():
    x, c = _tasks(0)
    c_model = c + 0.01
    expected = kmeans_cost(x, c_model) / kmeans_cost(x, lloyd_step(x, c))
    torch.testing.assert_close(relative_loss(x, c, c_model, reduction="none"), expected)
    torch.testing.assert_close(relative_loss(x, c, c_model), expected.mean())


def test_relative_loss_of_more_lloyd_steps_is_at_most_one():
    x, c = _tasks(0, n=60)
    c_model = c
    for _ in range(5):
        c_model = lloyd_step(x, c_model)
    assert (relative_loss(x, c, c_model, reduction="none") <= 1 + 1e-12).all()


def test_relative_loss_zero_over_zero_is_one():
    x = torch.rand(2, 4, 3, generator=_gen(0), dtype=torch.float64)  # n == k: Lloyd cost 0
    ratio = relative_loss(x, x, x.flip(1), reduction="none")
    assert torch.equal(ratio, torch.ones(2, dtype=torch.float64))
    worse = relative_loss(x, x, x + 1.0, reduction="none")
    assert torch.isinf(worse).all()


def test_relative_loss_gradient_reaches_the_model_centres():
    x, c = _tasks(0)
    c_model = (c + 0.01).requires_grad_()
    relative_loss(x, c, c_model).backward()
    assert c_model.grad is not None and c_model.grad.abs().sum() > 0


def test_lloyd_costs_non_increasing_and_start_at_the_initial_cost(global_random_seed):
    x, c = _tasks(global_random_seed, b=4, n=80, d=3, k=5)
    costs = lloyd_costs(x, c, 8)  # keep previous centre: Lloyd's never increases the cost
    assert costs.shape == (4, 9)
    torch.testing.assert_close(costs[:, 0], kmeans_cost(x, c))
    assert (costs.diff(dim=1) <= 1e-12).all()


def test_lloyd_costs_reseeding_only_matters_when_a_cluster_empties():
    x, c = _separated(0)
    c = x[:, [0, 10, 20]]  # one point of each tight cluster: no cluster ever empties
    torch.testing.assert_close(lloyd_costs(x, c, 4, generator=_gen(0)), lloyd_costs(x, c, 4))
    x, c = _with_empties()
    reseeded = lloyd_costs(x, c, 4, generator=_gen(0))
    assert not torch.equal(reseeded, lloyd_costs(x, c, 4))
    torch.testing.assert_close(reseeded[:, 0], lloyd_costs(x, c, 0)[:, 0])


def test_lloyd_costs_zero_steps():
    x, c = _tasks(0)
    torch.testing.assert_close(lloyd_costs(x, c, 0), kmeans_cost(x, c)[:, None])


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "softmax"}, "kind must be 'ne' or 'l2', got 'softmax'"),
        ({"tau": 0.0}, "tau must be > 0"),
        ({"tau": -0.1}, "tau must be > 0"),
        ({"tau": float("nan")}, "tau must be > 0"),
        ({"reduction": "max"}, "reduction must be one of"),
    ],
)
def test_smoothed_loss_errors(kwargs, match):
    x, c = _tasks(0)
    with pytest.raises(ValueError, match=match):
        smoothed_kmeans_loss(x, c, **kwargs)


@pytest.mark.parametrize(
    "x_shape, c_shape, match",
    [
        ((5, 2), (3, 2), "must be 3-D"),
        ((2, 5, 2), (3, 3, 2), "must agree in the batch"),
        ((2, 5, 2), (2, 3, 4), "must agree in the batch"),
    ],
)
@pytest.mark.parametrize("func", [pairwise_sq_dist, kmeans_cost, lloyd_step])
def test_shape_errors(func, x_shape, c_shape, match):
    with pytest.raises(ValueError, match=match):
        func(torch.zeros(x_shape), torch.zeros(c_shape))


@pytest.mark.parametrize("n_steps", [-1, 1.5])
def test_lloyd_costs_errors(n_steps):
    x, c = _tasks(0)
    with pytest.raises(ValueError, match="n_steps must be an int >= 0"):
        lloyd_costs(x, c, n_steps)
