"""The learned one-layer model: its contract, the exact warm start, multi-step modes."""

import numpy as np
import pytest
import torch

from skformer.nn import LearnedKMeansModel
from skformer.reference import lloyd_step


def _task(seed=0, n=60, d=2, k=3):
    g = torch.Generator().manual_seed(seed)
    means = torch.rand(k, d, generator=g, dtype=torch.float64)
    x = means[torch.arange(n) % k] + 0.02 * torch.randn(n, d, generator=g, dtype=torch.float64)
    return x[None], x[None, :k].clone()


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
def test_warm_start_tends_to_lloyd(embedding):
    """At a large scale the softened construction is one Lloyd step (oracle)."""
    x, c = _task()
    model = LearnedKMeansModel.from_exact(2, 3, embedding=embedding, scale=200.0).double()
    model.eval()
    ref, _ = lloyd_step(x[0].numpy(), c[0].numpy())
    np.testing.assert_allclose(model.step(x, c)[0].detach().numpy(), ref, atol=1e-6)


def test_softer_warm_start_is_further_from_lloyd():
    x, c = _task()
    ref = torch.from_numpy(lloyd_step(x[0].numpy(), c[0].numpy())[0])
    errors = []
    for scale in (4.0, 20.0, 200.0):
        model = LearnedKMeansModel.from_exact(2, 3, scale=scale).double().eval()
        with torch.no_grad():
            errors.append(float((model.step(x, c)[0] - ref).abs().max()))
    assert errors[0] > errors[1] > errors[2]


@pytest.mark.parametrize("embedding, width", [("binary", 6), ("onehot", 8), ("none", 3)])
def test_shapes_and_width(embedding, width):
    model = LearnedKMeansModel(3, 5, embedding=embedding)
    assert model.layer.embed_dim == width
    x = torch.rand(2, 40, 3)
    c = x[:, :5]
    assert model.step(x, c).shape == (2, 5, 3)
    assert model.iterate(x, c, 3).shape == (2, 4, 5, 3)
    assert LearnedKMeansModel(**model.config).config == model.config


def test_reembedding_and_naive_iteration_share_the_first_step():
    x, c = _task()
    model = LearnedKMeansModel.from_exact(2, 3, scale=4.0).double().eval()
    re = model.iterate(x, c, 3)
    naive = model.iterate(x, c, 3, reembed=False)
    torch.testing.assert_close(re[:, :2], naive[:, :2])
    assert not torch.allclose(re[:, 3], naive[:, 3])


def test_gradients_reach_all_twelve_projections():
    model = LearnedKMeansModel(2, 3, dropout=0.0)
    x, c = _task()
    model.float()(x.float(), c.float()).square().sum().backward()
    grads = [p.grad for name, p in model.named_parameters() if name.endswith("weight")]
    assert len(grads) == 12 and all(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: LearnedKMeansModel(2, 3, embedding="gray"), "embedding must be one of"),
        (lambda: LearnedKMeansModel(2, 3, activation="hardmax"), "'softmax' or 'sparsemax'"),
        (lambda: LearnedKMeansModel.from_exact(2, 3, embedding="none"), "needs the 'binary'"),
        (lambda: LearnedKMeansModel(2, 3)(torch.zeros(1, 4, 3), torch.zeros(1, 3, 3)),
         r"Expected x of shape \(b, n, 2\)"),
    ],
)
def test_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("alpha, beta", [(1e-3, 0.0), (50.0, -3.0), (1.0, 1e3)])
def test_normalised_model_is_equivariant_to_units(alpha, beta):
    """Scale-free assignment: an affine change of units of points and centres (one
    positive scale) changes nothing but the units of the output (exact construction
    weights, so no bias breaks the symmetry)."""
    model = LearnedKMeansModel.from_exact(3, 4, scale=1.0, normalise=True, schedule=2,
                                          temperature=(3.0, 10.0, 10.0)).double().eval()
    x, c = _task(seed=2, d=3, k=4)
    with torch.no_grad():
        for step in (0, 1):
            ref = model(x, c, step=step)
            got = model(alpha * x + beta, alpha * c + beta, step=step)
            torch.testing.assert_close(got, alpha * ref + beta, rtol=1e-9,
                                       atol=1e-9 * max(alpha, abs(beta)))


def test_schedule_rows_and_config():
    model = LearnedKMeansModel.from_exact(2, 3, normalise=True, schedule=3,
                                          temperature=(1.0, 2.0, 4.0))
    assert model.log_temperature.shape == (3, 3)
    assert model.temperature(0).tolist() == pytest.approx([1.0, 2.0, 4.0])
    assert torch.equal(model.temperature(10), model.temperature(2))
    assert LearnedKMeansModel(2, 3).temperature(0) is None
    rebuilt = LearnedKMeansModel(**model.config)
    assert rebuilt.config == model.config and rebuilt.schedule == 3
    with pytest.raises(ValueError, match="schedule must be an int >= 0"):
        LearnedKMeansModel(2, 3, schedule=-1)

