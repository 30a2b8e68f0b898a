"""Streamed learned steps: equal to the layer's forward pass, block by block.

Oracle first: with the whole point set as context, a streamed step equals
``LearnedKMeansModel.forward`` in eval mode, whatever the chunking; partial softmaxes
merge exactly. Then sample weights as multiplicities, and the errors.
"""

import pytest
import torch

from skformer.nn import LearnedKMeansModel
from skformer.nn.attention import distance_attention
from skformer.nn.softmax import merge_partials, softmax_partial
from skformer.nn.streaming import prepare_points, streamed_step


@pytest.mark.parametrize("d, k", [(1, 2), (2, 3), (5, 8), (16, 10)])
@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("chunk_rows", [None, 1, 7, 64])
def test_streamed_step_equals_forward(trained_like, global_random_seed, d, k, embedding,
                                      chunk_rows):
    model = trained_like(d, k, global_random_seed, embedding)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(2, 150, d, generator=gen, dtype=torch.float64)
    c = x[:, :k] + 0.01
    prepared = prepare_points(model, x, chunk_rows=chunk_rows)
    got = streamed_step(model, prepared, c, chunk_rows=chunk_rows)
    torch.testing.assert_close(got, model(x, c), rtol=1e-10, atol=1e-10)


def test_integer_weights_are_repeated_points(trained_like, global_random_seed):
    """A point of weight w counts as w copies, in A2's context and in A3's keys."""
    model = trained_like(3, 4, global_random_seed)
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(1, 40, 3, generator=gen, dtype=torch.float64)
    w = torch.randint(0, 4, (1, 40), generator=gen).double()
    w[0, 0] = 1.0
    c = x[:, :4] + 0.01
    weighted = streamed_step(model, prepare_points(model, x, x, w), c, w, chunk_rows=9)
    repeated = x[:, torch.repeat_interleave(torch.arange(40), w[0].long())]
    expected = streamed_step(model, prepare_points(model, repeated), c)
    torch.testing.assert_close(weighted, expected, rtol=1e-10, atol=1e-10)


def test_context_is_the_keys_of_a2(trained_like, global_random_seed):
    """A context equal to all points is the default; a sub-sample changes the step."""
    model = trained_like(2, 3, global_random_seed)
    x = torch.rand(1, 100, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    c = x[:, :3]
    full = streamed_step(model, prepare_points(model, x, x), c)
    torch.testing.assert_close(full, streamed_step(model, prepare_points(model, x), c))
    sub = streamed_step(model, prepare_points(model, x, x[:, ::10]), c)
    assert not torch.allclose(sub, full)
    assert (sub - full).abs().max() < 0.1  # A2 is a small correction of the points


@pytest.mark.parametrize("split", [1, 5, 13])
def test_partials_merge_exactly(split):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, generator=gen, dtype=torch.float64),
               torch.randn(2, 14, 4, generator=gen, dtype=torch.float64),
               torch.randn(2, 14, 5, generator=gen, dtype=torch.float64))
    w = torch.rand(2, 14, generator=gen, dtype=torch.float64)
    a = softmax_partial(q, k[:, :split], v[:, :split], gamma=2.0, key_weight=w[:, :split])
    b = softmax_partial(q, k[:, split:], v[:, split:], gamma=2.0, key_weight=w[:, split:])
    expected = distance_attention(q, k, v, gamma=2.0, key_weight=w)
    torch.testing.assert_close(merge_partials(a, b).result(), expected)
    torch.testing.assert_close(merge_partials(b, a).result(), expected)


def test_partial_over_no_key_is_zero():
    q, k, v = torch.randn(1, 2, 3), torch.randn(1, 4, 3), torch.randn(1, 4, 3)
    part = softmax_partial(q, k, v, key_weight=torch.zeros(1, 4))
    assert torch.equal(part.result(), torch.zeros(1, 2, 3))


def test_sparsemax_models_are_refused():
    model = LearnedKMeansModel(2, 3, activation="sparsemax")
    with pytest.raises(ValueError, match="Streamed steps need softmax attention"):
        prepare_points(model, torch.rand(1, 10, 2))


def test_silent_points_to_points_attention_is_skipped_exactly(trained_like,
                                                             global_random_seed):
    """The exact construction's A2 writes V2 [x ; 0] = 0: skipping it changes nothing."""
    from skformer.nn.streaming import a2_is_silent

    model = LearnedKMeansModel.from_exact(4, 5, scale=2.0, normalise=True, schedule=3,
                                          temperature=(3.0, 20.0, 20.0)).double().eval()
    assert a2_is_silent(model) and not a2_is_silent(trained_like(4, 5, global_random_seed))
    gen = torch.Generator().manual_seed(global_random_seed)
    x = torch.rand(2, 120, 4, generator=gen, dtype=torch.float64)
    c = x[:, :5] + 0.01
    prepared = prepare_points(model, x, chunk_rows=17)
    for step in range(4):
        torch.testing.assert_close(streamed_step(model, prepared, c, step=step),
                                   model(x, c, step=step), rtol=1e-10, atol=1e-10)
