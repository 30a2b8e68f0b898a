"""Principal subspaces and lifting centres back (skformer/nn/projection.py)."""

import numpy as np
import pytest
import torch

from skformer.nn.projection import lift, principal_subspace


def _rows(seed, b, r, d, rank=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, r, d, generator=g, dtype=torch.float64)
    if rank is not None:  # rows in a subspace of that rank, plus an offset
        x = x[..., :rank] @ torch.randn(b, rank, d, generator=g, dtype=torch.float64)
    return x + 3.0


def _projector(basis):
    return basis @ basis.transpose(-1, -2)


@pytest.mark.parametrize(("r", "d"), [(200, 12), (10, 40)])  # covariance, Gram paths
def test_subspace_matches_numpy_svd(r, d):
    """Oracle: the span of the top right singular vectors of the centred rows."""
    x = _rows(0, 2, r, d)
    width = 5
    sub = principal_subspace(x, None, width)
    for i in range(2):
        centred = x[i].numpy() - x[i].numpy().mean(0)
        vt = np.linalg.svd(centred, full_matrices=False)[2][:width]
        np.testing.assert_allclose(_projector(sub.basis[i]).numpy(), vt.T @ vt, atol=1e-8)
        np.testing.assert_allclose(sub.mean[i].numpy(), x[i].numpy().mean(0), atol=1e-12)
        np.testing.assert_allclose(sub.basis[i].T @ sub.basis[i], np.eye(width), atol=1e-8)


def test_weights_act_as_repeated_rows():
    x = _rows(1, 1, 30, 6)
    w = torch.randint(1, 4, (1, 30), generator=torch.Generator().manual_seed(2)).double()
    repeated = torch.repeat_interleave(x[0], w[0].long(), dim=0).unsqueeze(0)
    a, b = principal_subspace(x, w, 3), principal_subspace(repeated, None, 3)
    torch.testing.assert_close(a.mean, b.mean)
    torch.testing.assert_close(_projector(a.basis), _projector(b.basis), atol=1e-8, rtol=0)


def test_padded_rows_of_weight_zero_change_nothing():
    x = _rows(3, 1, 20, 8)
    padded = torch.cat([x, torch.full((1, 5, 8), 1e3, dtype=torch.float64)], 1)
    w = torch.cat([torch.ones(1, 20), torch.zeros(1, 5)], 1).double()
    a, b = principal_subspace(x, None, 4), principal_subspace(padded, w, 4)
    torch.testing.assert_close(_projector(a.basis), _projector(b.basis), atol=1e-8, rtol=0)


def test_fewer_rows_than_directions_pad_with_zero_columns():
    x = _rows(4, 1, 3, 10)
    sub = principal_subspace(x, None, 6)
    assert sub.basis.shape == (1, 10, 6)
    torch.testing.assert_close(sub.embed(sub.project(x)), x)  # 3 rows span <= 2 directions


def test_rows_in_a_subspace_are_kept_exactly():
    x = _rows(5, 2, 50, 20, rank=4)
    sub = principal_subspace(x, None, 4)
    torch.testing.assert_close(sub.embed(sub.project(x)), x)


def test_lift_is_the_mean_of_the_rows_each_centre_assigns():
    x = _rows(6, 1, 40, 5)
    sub = principal_subspace(x, None, 2)
    z = sub.project(x)
    centres = z[:, :3]
    fallback = torch.full((1, 3, 5), -7.0, dtype=torch.float64)
    out = lift(x, None, z, centres, fallback)
    labels = torch.cdist(z, centres).argmin(-1)[0]
    for j in range(3):
        torch.testing.assert_close(out[0, j], x[0, labels == j].mean(0))


def test_lift_keeps_the_fallback_of_a_centre_without_rows():
    x = torch.tensor([[[0.0, 1.0], [1.0, 1.0]]], dtype=torch.float64)
    centres = torch.tensor([[[0.5], [100.0]]], dtype=torch.float64)
    fallback = torch.tensor([[[9.0, 9.0], [4.0, 2.0]]], dtype=torch.float64)
    out = lift(x, None, x[..., :1], centres, fallback)
    torch.testing.assert_close(out[0, 1], fallback[0, 1])
    torch.testing.assert_close(out[0, 0], torch.tensor([0.5, 1.0], dtype=torch.float64))
