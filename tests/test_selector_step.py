"""The closed-form learned step of models at the exact construction
(skformer.nn.selector_step): which models take it, and that it is their step.

Oracle first: for models built by ``from_schedule`` (the shape-generic models) and
``from_exact`` (query and key scale 3, with and without A1's normalisation), both
embeddings, with and without sample weights, A1's normaliser on the points or on a
context apart, at the schedule's first and last rows and beyond, and at sharper
temperatures (``scaled``), a step of :class:`LearnedStepper` (closed form) equals
:func:`streamed_step` (itself tested against the layer's forward pass) to float64
rounding, and its general path to float32 rounding in float32. A batch with padded rows
and the ``problems`` index steps each problem as alone. Then the centres computed again
from their maximum score (a centre far from every point's soft code, a problem without
weight), and the models that must keep the general path.
"""

import pytest
import torch

from skformer.nn import LearnedKMeansModel
from skformer.nn import selector_step as selector
from skformer.nn.inference import LearnedStepper
from skformer.nn.selector_step import SelectorStep, selector_scales
from skformer.nn.streaming import prepare_points, streamed_step


def _model(kind, d, k, embedding, seed):
    gen = torch.Generator().manual_seed(seed)
    if kind == "schedule":  # a shape-generic model: learned temperatures and step sizes
        log_effective = torch.rand(3, 3, generator=gen, dtype=torch.float64) * 3 + 1
        log_step = torch.rand(3, generator=gen, dtype=torch.float64) * 0.5
        model = LearnedKMeansModel.from_schedule(d, k, log_effective, log_step_size=log_step,
                                                 embedding=embedding)
    else:
        normalise = kind == "exact-normalised"
        model = LearnedKMeansModel.from_exact(d, k, scale=3.0, embedding=embedding,
                                              normalise=normalise, schedule=3,
                                              temperature=(4.0, 2.0, 3.0) if normalise
                                              else (0.5, 0.3, 0.4))
    return model.double().eval()


def _general(stepper: LearnedStepper) -> LearnedStepper:
    """The stepper on its general path (the maps of every projection)."""
    general = LearnedStepper.__new__(LearnedStepper)
    general.__dict__.update(stepper.__dict__, closed=None)
    return general


@pytest.mark.parametrize("kind", ["schedule", "exact-normalised", "exact"])
@pytest.mark.parametrize("d, k", [(1, 2), (2, 3), (5, 8), (3, 13)])
@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("context", [False, True])
def test_the_closed_form_is_the_streamed_step(global_random_seed, kind, d, k, embedding,
                                              weighted, context):
    model = _model(kind, d, k, embedding, global_random_seed)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 150, d, generator=gen, dtype=torch.float64)
    w = torch.rand(1, 150, generator=gen, dtype=torch.float64) + 0.1 if weighted else None
    ctx = x[:, ::3] if context else None
    cw = None if w is None or not context else w[:, ::3]
    prepared = prepare_points(model, x, ctx, cw if context else w, keep_tokens=False)
    stepper = LearnedStepper(model, prepared, w)
    assert stepper.closed is not None
    c = x[:, :k] + 0.01
    for step in (0, 2, 7):  # the schedule's first and last rows, and beyond it
        expected = streamed_step(model, prepared, c, w, step=step)
        torch.testing.assert_close(stepper.step(c, step), expected, rtol=1e-9, atol=1e-10)
        c = expected
    # Sharper (the learned run's temperature scales), against the general path's step:
    # a scaled stepper is the sharper model (test_inference), up to the rounding of the
    # temperatures, which a step can amplify beyond the float64 rounding of its own.
    for step in (0, 2, 7):
        expected = _general(stepper).scaled(4.0).step(c, step)
        torch.testing.assert_close(stepper.scaled(4.0).step(c, step), expected, rtol=1e-9,
                                   atol=1e-10)
        c = expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_batch_with_padding_steps_each_problem_as_alone(global_random_seed, dtype):
    # What batch_k_means relies on: padded rows weigh 0; a problem's step is the same
    # alone, in the batch, or in a subset picked by index; and it is the general step.
    model = _model("schedule", 3, 6, "binary", global_random_seed).to(dtype)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(4, 120, 3, generator=gen, dtype=torch.float64).to(dtype)
    w = (torch.rand(4, 120, generator=gen, dtype=torch.float64) + 0.1).to(dtype)
    w[1, 80:] = 0.0  # padding
    x[1, 80:] = 0.0
    c = x[:, :6] + 0.01
    tol = {"rtol": 2e-5, "atol": 2e-5} if dtype == torch.float32 else {}
    batch = LearnedStepper(model, prepare_points(model, x, None, w, keep_tokens=False), w)
    assert batch.closed is not None
    for step in (0, 5):
        together = batch.scaled(2.0).step(c, step)
        torch.testing.assert_close(together, _general(batch).scaled(2.0).step(c, step),
                                   **tol)
        subset = batch.scaled(2.0).step(c[[3, 1]], step, torch.tensor([3, 1]))
        torch.testing.assert_close(subset, together[[3, 1]], **tol)
        for i in range(4):
            alone = LearnedStepper(model, prepare_points(model, x[i : i + 1], None,
                                                         w[i : i + 1], keep_tokens=False),
                                   w[i : i + 1]).scaled(2.0).step(c[i : i + 1], step)
            torch.testing.assert_close(together[i : i + 1], alone, **tol)


@pytest.fixture
def redone(monkeypatch):
    """The centres computed again from their maximum score, per call."""
    calls = []
    exact = SelectorStep._exact_a3

    def spy(self, update, redo, *args):
        calls.append(redo.clone())
        return exact(self, update, redo, *args)

    monkeypatch.setattr(SelectorStep, "_exact_a3", spy)
    return calls


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_centre_far_from_every_soft_code_is_computed_from_its_maximum(
        global_random_seed, dtype, redone):
    # Centre 3 lies far from the points: no point's soft code comes near its code, so
    # at sharp temperatures all its A3 weights underflow without the shift by their
    # maximum; it moves to the mean of the points whose codes are nearest its code.
    model = LearnedKMeansModel.from_schedule(
        2, 4, torch.full((2, 3), 5.0, dtype=torch.float64)).to(dtype).eval()
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 200, 2, generator=gen, dtype=torch.float64).to(dtype)
    w = (torch.rand(1, 200, generator=gen, dtype=torch.float64) + 0.1).to(dtype)
    c = torch.cat([x[:, :3], torch.full((1, 1, 2), 30.0, dtype=dtype)], 1)
    stepper = LearnedStepper(model, prepare_points(model, x, None, w), w).scaled(8.0)
    got = stepper.step(c, 1)
    assert redone and redone[-1][0, 3]
    expected = _general(stepper).step(c, 1)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
    torch.testing.assert_close(got, expected, **tol)
    assert torch.isfinite(got).all()


def test_a_problem_without_weight_moves_by_a4_alone(redone):
    # A padded batch's empty problem: every point weighs 0, so A3 adds nothing (as the
    # general step's empty softmax) and the centres move by A4 only.
    model = _model("schedule", 2, 3, "binary", 0)
    x = torch.rand(2, 50, 2, generator=torch.Generator().manual_seed(0),
                   dtype=torch.float64)
    w = torch.ones(2, 50, dtype=torch.float64)
    w[1] = 0.0
    stepper = LearnedStepper(model, prepare_points(model, x, None, w), w)
    c = x[:, :3] + 0.01
    got = stepper.step(c, 0)
    assert redone and redone[-1][1].all()
    torch.testing.assert_close(got, _general(stepper).step(c, 0))


def test_float32_steps_of_a_shipped_generic_model_agree_with_the_general_path(
        global_random_seed):
    from skformer.store.generic import generic_model

    found = generic_model(3, 20)
    if found is None:
        pytest.skip("no shape-generic schedule is shipped")
    model = found[0]
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 2000, 3, generator=gen)
    stepper = LearnedStepper(model, prepare_points(model, x, keep_tokens=False))
    assert stepper.closed is not None
    c = x[:, :20] + 0.01
    for step in range(12):
        expected = _general(stepper).step(c, step)
        torch.testing.assert_close(stepper.step(c, step), expected, rtol=1e-4, atol=1e-4)
        c = expected


@pytest.mark.parametrize("case", [
    "random weights", "a bias", "a noisy selector", "A2 not silent", "sparsemax",
    "no code", "scale 0",
])
def test_models_off_the_construction_keep_the_general_path(case):
    model = LearnedKMeansModel.from_exact(3, 5, scale=2.0, schedule=2)
    layer = model.layer
    with torch.no_grad():
        if case == "random weights":
            model = LearnedKMeansModel(3, 5)
        elif case == "a bias":
            layer.centres_to_points.k_proj.bias[4] = 1e-3
        elif case == "a noisy selector":
            layer.points_to_centres.q_proj.weight[0, 1] = 1e-6
        elif case == "A2 not silent":
            layer.points_to_points.v_proj.weight[3, 0] = 0.5
        elif case == "sparsemax":
            model = LearnedKMeansModel.from_exact(3, 5, activation="sparsemax")
        elif case == "no code":
            model = LearnedKMeansModel(3, 5, embedding="none", bias=False)
        elif case == "scale 0":
            model = LearnedKMeansModel.from_exact(3, 5, scale=0.0)
    assert selector_scales(model) is None


def test_the_construction_is_recognised_at_any_scale_and_dtype():
    scales = selector_scales(LearnedKMeansModel.from_exact(3, 5, scale=2.5,
                                                           embedding="onehot").double())
    assert scales[:3] == (2.5, 2.5, 2.5)
    generic = LearnedKMeansModel.from_schedule(4, 9, torch.zeros(2, 3))
    assert selector_scales(generic)[:3] == (1.0, 1.0, 1.0)
    stepper = LearnedStepper(generic.eval(), prepare_points(generic, torch.rand(1, 30, 4)))
    assert isinstance(stepper.closed, selector.SelectorStep)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_measured_step_gives_the_objective_at_its_input(global_random_seed, weighted,
                                                           dtype):
    # The objective the learned loop weighs centres by, found on the way (A1's nearest
    # distances): sum_i w_i min_j |x_i - c_j|^2 against the direct sum, for the whole
    # batch and for problems picked by index; the step is the unmeasured step.
    model = _model("schedule", 3, 6, "binary", global_random_seed).to(dtype)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(3, 90, 3, generator=gen, dtype=torch.float64)
    w = torch.rand(3, 90, generator=gen, dtype=torch.float64) + 0.1 if weighted else None
    c = x[:, :6] + 0.01
    exact = torch.cdist(x, c).square().amin(-1)
    exact = (exact if w is None else exact * w).sum(-1)
    x, c = x.to(dtype), c.to(dtype)
    w = None if w is None else w.to(dtype)
    stepper = LearnedStepper(model, prepare_points(model, x, None, w, keep_tokens=False), w)
    assert stepper.measures
    rtol = 1e-4 if dtype == torch.float32 else 1e-10
    new, value = stepper.measured_step(c, 1)
    assert value.dtype == torch.float64
    torch.testing.assert_close(value, exact, rtol=rtol, atol=0.0)
    torch.testing.assert_close(new, stepper.step(c, 1), rtol=0.0, atol=0.0)
    some, part = stepper.measured_step(c[[2, 0]], 1, torch.tensor([2, 0]))
    torch.testing.assert_close(part, value[[2, 0]], rtol=rtol, atol=0.0)
    torch.testing.assert_close(some, new[[2, 0]], rtol=rtol, atol=rtol)
    # The general path measures nothing: the loop then weighs the centres itself.
    general = _general(stepper)
    assert not general.measures and general.measured_step(c, 1)[1] is None
