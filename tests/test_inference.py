"""The inference stepper (skformer.nn.inference): equal to the streamed step, and a
problem's step the same alone or in a batch.

Oracle first: for trained-like models (every weight and bias perturbed, so no map is
zero), both embeddings, with and without A1's normalisation, a step schedule read
before, at and beyond its end, sample weights and a context sample, a step of
:class:`LearnedStepper` equals :func:`streamed_step` (itself tested against the layer's
forward pass) to float64 rounding, and to float32 rounding in float32; a stepper scaled
by ``f`` equals the model whose temperatures are ``f`` times its own. Then the errors.
"""

import pytest
import torch

from skformer.nn import LearnedKMeansModel
from skformer.nn.inference import LearnedStepper
from skformer.nn.streaming import prepare_points, streamed_step


@pytest.mark.parametrize("d, k", [(1, 2), (2, 3), (5, 8), (16, 10)])
@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_step_equals_the_streamed_step(trained_like, global_random_seed, d, k, embedding,
                                         normalise, weighted):
    model = trained_like(d, k, global_random_seed, embedding, normalise, schedule=3)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 150, d, generator=gen, dtype=torch.float64)
    w = torch.rand(1, 150, generator=gen, dtype=torch.float64) + 0.1 if weighted else None
    context = x[:, ::3]
    prepared = prepare_points(model, x, context, None if w is None else w[:, ::3],
                              keep_tokens=False)
    stepper = LearnedStepper(model, prepared, w)
    c = x[:, :k] + 0.01
    for step in (0, 2, 7):  # the schedule's first and last rows, and beyond it
        expected = streamed_step(model, prepared, c, w, step=step)
        torch.testing.assert_close(stepper.step(c, step), expected, rtol=1e-10,
                                   atol=1e-10)
        c = expected


def test_float32_steps_agree_to_float32_rounding(trained_like, global_random_seed):
    model = trained_like(4, 5, global_random_seed, normalise=True, schedule=2).float()
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 2048, 4, generator=gen) * 8 - 4
    prepared = prepare_points(model, x, keep_tokens=False)
    c = x[0, :5] + 0.01
    got = LearnedStepper(model, prepared).step(c[None], 1)
    torch.testing.assert_close(got, streamed_step(model, prepared, c[None], step=1),
                               rtol=1e-4, atol=1e-4)


def test_a_model_without_a_schedule_or_biases(global_random_seed):
    model = LearnedKMeansModel(3, 4, bias=False).double().eval()
    x = torch.rand(1, 60, 3, generator=torch.Generator().manual_seed(global_random_seed),
                   dtype=torch.float64)
    prepared = prepare_points(model, x)
    c = x[:, :4] + 0.01
    torch.testing.assert_close(LearnedStepper(model, prepared).step(c, 5),
                               streamed_step(model, prepared, c, step=5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_problem_steps_alike_alone_and_in_any_batch(trained_like, global_random_seed,
                                                      dtype):
    # What batch_k_means relies on to equal TransformerKMeans per problem (both step
    # with this class): a problem's step, to rounding (the products of a batch and of
    # one problem may block their sums differently), whether it is stepped alone, in a
    # batch, or in a subset of the batch picked by index.
    model = trained_like(3, 5, global_random_seed, normalise=True, schedule=2).to(dtype)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(4, 120, 3, generator=gen, dtype=torch.float64).to(dtype)
    w = (torch.rand(4, 120, generator=gen, dtype=torch.float64) + 0.1).to(dtype)
    c = x[:, :5] + 0.01
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    batch = LearnedStepper(model, prepare_points(model, x, None, w, keep_tokens=False), w)
    together = batch.step(c, 1)
    subset = batch.step(c[[1, 3]], 1, torch.tensor([1, 3]))
    for i in range(4):
        alone = LearnedStepper(model, prepare_points(model, x[i : i + 1], None,
                                                     w[i : i + 1], keep_tokens=False),
                               w[i : i + 1]).step(c[i : i + 1], 1)
        torch.testing.assert_close(together[i : i + 1], alone, rtol=tol, atol=tol)
    torch.testing.assert_close(subset, together[[1, 3]], rtol=tol, atol=tol)


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0, 4.0])
def test_a_scaled_stepper_is_the_model_at_multiplied_temperatures(global_random_seed, factor):
    # What the learned run's temperature scales rely on: multiplying the stepper's
    # temperatures by f steps as the model whose schedule is f times as sharp, with the
    # same step sizes; the stepper itself is left as it was.
    gen = torch.Generator().manual_seed(global_random_seed)
    log_effective = torch.rand(3, 3, generator=gen, dtype=torch.float64) * 3
    log_step = torch.rand(3, generator=gen, dtype=torch.float64) * 0.5
    model = LearnedKMeansModel.from_schedule(4, 6, log_effective,
                                             log_step_size=log_step).double().eval()
    sharp = LearnedKMeansModel.from_schedule(4, 6, log_effective + torch.tensor(factor).log(),
                                             log_step_size=log_step).double().eval()
    x = torch.rand(1, 200, 4, generator=gen, dtype=torch.float64)
    c = x[:, :6] + 0.01
    stepper = LearnedStepper(model, prepare_points(model, x))
    reference = LearnedStepper(sharp, prepare_points(sharp, x))
    before = stepper.step(c, 1)
    for step in (0, 2, 5):
        torch.testing.assert_close(stepper.scaled(factor).step(c, step),
                                   reference.step(c, step), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(stepper.step(c, 1), before, rtol=0, atol=0)


@pytest.mark.parametrize("factor", [0.0, -1.0, float("inf"), float("nan")])
def test_a_scale_must_be_finite_and_positive(factor):
    model = LearnedKMeansModel(2, 3).eval()
    stepper = LearnedStepper(model, prepare_points(model, torch.rand(1, 10, 2)))
    with pytest.raises(ValueError, match="factor must be a finite number > 0"):
        stepper.scaled(factor)


@pytest.mark.parametrize("case, match", [
    ("no keys and values", "keys and values"),
    ("sparsemax", "softmax attention"),
])
def test_errors(case, match):
    if case == "sparsemax":
        model = LearnedKMeansModel(2, 3, activation="sparsemax").eval()
        prepared = None
    else:
        model = LearnedKMeansModel(2, 3).eval()
        prepared = prepare_points(model, torch.rand(2, 10, 2))._replace(keys_values=None)
    with pytest.raises(ValueError, match=match):
        LearnedStepper(model, prepared)
