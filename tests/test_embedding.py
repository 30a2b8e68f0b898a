"""Cluster-index embeddings: widths, codes, decoding."""

import math

import pytest
import torch

from skformer.nn import decode_index, embed_centres, embed_points, index_codes, index_width


@pytest.mark.parametrize(
    "k, bits", [(1, 0), (2, 1), (3, 2), (4, 2), (6, 3), (25, 5), (100, 7), (400, 9), (1000, 10)]
)
def test_binary_width_is_ceil_log2(k, bits):
    assert index_width("binary", k) == bits == (math.ceil(math.log2(k)) if k > 1 else 0)
    assert index_width("onehot", k) == k
    assert index_width("none", k) == 0


def test_binary_codes_follow_the_paper_b6():
    expected = torch.tensor([[0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]])
    assert torch.equal(index_codes("binary", 6, dtype=torch.int64).T, expected)


@pytest.mark.parametrize("kind", ["binary", "onehot"])
@pytest.mark.parametrize("k", [1, 2, 5, 16, 1000])
def test_codes_are_distinct_and_decode(kind, k):
    codes = index_codes(kind, k)
    assert codes.shape == (k, index_width(kind, k))
    if k > 1:
        assert torch.unique(codes, dim=0).shape[0] == k
    assert torch.equal(decode_index(codes, kind, k), torch.arange(k))


def test_token_layout():
    x = torch.randn(2, 5, 3)
    c = torch.randn(2, 4, 3)
    points, centres = embed_points(x, "binary", 4), embed_centres(c, "binary")
    assert points.shape == (2, 5, 5) and centres.shape == (2, 4, 5)
    assert torch.equal(points[..., :3], x) and torch.all(points[..., 3:] == 0)
    assert torch.equal(centres[0, :, 3:], index_codes("binary", 4))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: index_width("gray", 3), "embedding must be one of"),
        (lambda: index_width("binary", 0), "n_clusters must be >= 1"),
        (lambda: decode_index(torch.zeros(2, 0), "none", 3), "carries no cluster index"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
