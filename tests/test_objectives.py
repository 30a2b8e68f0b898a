"""The multi-step objective: its terms on a hand-made task, and the unrolled steps equal
the model's own iteration."""

import pytest
import torch

from skformer.nn import LearnedKMeansModel
from skformer.objectives import multistep_terms, step_weights, unroll


def test_step_weights_grow_to_one():
    w = step_weights(10)
    assert w[0] == pytest.approx(0.01) and w[-1] == pytest.approx(1.0)
    assert torch.all(w[1:] > w[:-1])
    assert step_weights(1).tolist() == [1.0]


def test_terms_by_hand():
    x = torch.tensor([[[0.0], [2.0], [10.0], [12.0]]])
    good, bad = torch.tensor([[[1.0], [11.0]]]), torch.tensor([[[0.0], [12.0]]])
    # costs: good 4, bad 8; Lloyd after one and after two steps both cost 4
    terms = multistep_terms([bad, good], x, torch.tensor([4.0]), torch.tensor([4.0]),
                            one_step_weight=0.5)
    w = step_weights(2)
    expected = (w[0] * 2.0 + w[1] * 1.0) / w.sum() + 0.5 * 2.0
    assert terms.objective.item() == pytest.approx(expected.item())
    assert terms.final.item() == 1.0 and terms.first.item() == 2.0


@pytest.mark.parametrize("normalise, schedule", [(False, 0), (True, 4)])
def test_unroll_equals_iterate(normalise, schedule):
    model = LearnedKMeansModel.from_exact(3, 4, scale=2.0, normalise=normalise,
                                          schedule=schedule, temperature=(2.0, 5.0, 9.0)
                                          if schedule else None).double().eval()
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(2, 50, 3, generator=gen, dtype=torch.float64)
    c = x[:, :4] + 0.01
    steps = unroll(model, x, c, 5)
    with torch.no_grad():
        expected = model.iterate(x, c, 5)
    for t, got in enumerate(steps, start=1):
        torch.testing.assert_close(got, expected[:, t], rtol=1e-9, atol=1e-9)


def test_gradients_reach_the_schedule():
    model = LearnedKMeansModel.from_exact(2, 3, scale=1.0, normalise=True, schedule=3,
                                          temperature=(2.0, 5.0, 5.0))
    x = torch.rand(4, 30, 2, generator=torch.Generator().manual_seed(1))
    out = unroll(model, x, x[:, :3] + 0.01, 3)
    lloyd = torch.ones(4)
    multistep_terms(out, x, lloyd, lloyd).objective.mean().backward()
    assert model.log_temperature.grad is not None
    assert bool((model.log_temperature.grad != 0).any())
