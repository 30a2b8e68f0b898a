"""Distance attention: chunked computation against the literal formula, tie rules."""

import math

import pytest
import torch
from entmax import sparsemax

from skformer.nn import DistanceAttention, distance_attention, sqdist


def _naive(q, k, v, gamma, act):
    s = -(gamma / math.sqrt(q.shape[-1])) * ((q[:, :, None] - k[:, None]) ** 2).sum(-1)
    p = torch.softmax(s, -1) if act == "softmax" else sparsemax(s, dim=-1)
    return p @ v


@pytest.fixture
def qkv(global_random_seed):
    g = torch.Generator().manual_seed(global_random_seed)
    shape = dict(dtype=torch.float64, generator=g)
    q = torch.randn(2, 7, 5, **shape)
    return q, torch.randn(2, 11, 5, **shape), torch.randn(2, 11, 3, **shape)


@pytest.mark.parametrize("act", ["softmax", "sparsemax"])
@pytest.mark.parametrize("chunk", [None, (3, 4), (1, 1)])
def test_chunked_equals_literal(qkv, act, chunk):
    q, k, v = qkv
    out = distance_attention(q, k, v, gamma=2.0, activation=act, chunk_size=chunk)
    torch.testing.assert_close(out, _naive(q, k, v, 2.0, act), rtol=1e-12, atol=1e-12)


def test_sqdist_forms_agree(qkv):
    q, k, _ = qkv
    torch.testing.assert_close(sqdist(q, k), sqdist(q, k, exact=True), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("chunk", [None, (2, 3)])
def test_key_weight_is_multiplicity(qkv, chunk):
    q, k, v = qkv
    reps = torch.tensor([1, 2, 0, 3, 1, 1, 2, 1, 1, 4, 1])
    w = reps.to(q.dtype).expand(2, -1)
    out = distance_attention(q, k, v, key_weight=w, chunk_size=chunk)
    dup = distance_attention(q, k.repeat_interleave(reps, 1), v.repeat_interleave(reps, 1))
    torch.testing.assert_close(out, dup, rtol=1e-12, atol=1e-12)
    hard = distance_attention(q, k, v, gamma=math.inf, activation="hardmax", key_weight=w)
    hard_dup = distance_attention(
        q, k.repeat_interleave(reps, 1), v.repeat_interleave(reps, 1),
        gamma=math.inf, activation="hardmax",
    )
    torch.testing.assert_close(hard, hard_dup)


@pytest.mark.parametrize("chunk", [None, (1, 1), (2, 2)])
def test_hardmax_tie_rules(chunk):
    q = torch.tensor([[[1.0], [0.0]]])
    k = torch.tensor([[[0.0], [2.0], [2.0], [0.0]]])
    v = torch.tensor([[[1.0], [2.0], [4.0], [8.0]]])
    kw = dict(gamma=math.inf, activation="hardmax", chunk_size=chunk)
    avg = distance_attention(q, k, v, tie_break="average", **kw)
    first = distance_attention(q, k, v, tie_break="first", **kw)
    torch.testing.assert_close(avg, torch.tensor([[[15 / 4], [9 / 2]]]))
    torch.testing.assert_close(first, torch.tensor([[[1.0], [1.0]]]))


def test_hardmax_is_the_limit_of_softmax(qkv):
    q, k, v = qkv
    hard = distance_attention(q, k, v, gamma=math.inf, activation="hardmax")
    soft = distance_attention(q, k, v, gamma=1e6)
    torch.testing.assert_close(soft, hard, rtol=1e-6, atol=1e-6)


def test_absent_keys_give_zero_output():
    q, k, v = torch.ones(1, 2, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 2)
    w = torch.zeros(1, 3)
    for act, g in [("softmax", 1.0), ("hardmax", math.inf)]:
        out = distance_attention(q, k, v, gamma=g, activation=act, key_weight=w)
        assert torch.equal(out, torch.zeros(1, 2, 2))


def test_softmax_gradcheck():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 3, 2, dtype=torch.float64, generator=g, requires_grad=True)
               for _ in range(3))

    def f(q, k, v):
        return distance_attention(q, k, v, gamma=1.5, chunk_size=(2, 2))

    assert torch.autograd.gradcheck(f, (q, k, v))


def test_module_dropout_only_in_training():
    att = DistanceAttention(4, dropout=0.5)
    x, y = torch.randn(1, 6, 4), torch.randn(1, 5, 4)
    att.eval()
    assert torch.equal(att(x, y), att(x, y))
    att.train()
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    assert torch.equal(att(x, y, generator=g1), att(x, y, generator=g2))
    assert not torch.allclose(att(x, y), att.eval()(x, y))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(activation="relu"), "activation must be one of"),
        (dict(activation="softmax", gamma=math.inf), "gamma=inf is only meaningful"),
        (dict(activation="sparsemax", key_weight=torch.ones(1, 2)), "not supported with"),
        (dict(activation="hardmax", tie_break="last"), "tie_break must be one of"),
    ],
)
def test_errors(kwargs, match):
    q = torch.zeros(1, 2, 3)
    with pytest.raises(ValueError, match=match):
        distance_attention(q, q, q, **kwargs)
