"""The one exact Lloyd kernel (``skformer.nn.kernel.exact_step``).

Oracle first: per problem, the kernel's step equals the NumPy reference step on that
problem's own rows and centres, with weights, padded rows, padded centres and empty
clusters. Then properties: a problem's numbers do not depend on the other problems of
the batch nor on the block sizes (bitwise), padding never changes a result, and the
inertia is the literal one.
"""

import numpy as np
import pytest
import torch

from skformer.nn.kernel import Workspace, exact_step
from skformer.reference import lloyd_step as reference_step


def ragged_batch(rng, b, n, d, k, dtype=torch.float64):
    """A padded batch: problem i has ``lengths[i]`` rows and ``ks[i]`` centres (its
    first rows); padding is zeros."""
    lengths = rng.integers(k, n + 1, size=b)
    ks = rng.integers(1, k + 1, size=b)
    x = np.zeros((b, n, d))
    for i, m in enumerate(lengths):
        x[i, :m] = rng.normal(size=(m, d)) * 3 + rng.normal(size=d) * 10
    c = np.zeros((b, k, d))
    for i, (m, kk) in enumerate(zip(lengths, ks, strict=True)):
        c[i, :kk] = x[i, rng.choice(m, kk, replace=False)]
    mask = np.arange(n)[None] < lengths[:, None]
    cmask = np.arange(k)[None] < ks[:, None]
    w = rng.uniform(0.1, 3, size=(b, n)) * mask
    t = lambda a: torch.from_numpy(a).to(dtype)  # noqa: E731
    return (t(x), t(c), torch.from_numpy(mask), torch.from_numpy(cmask), t(w), lengths, ks)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [3, 20])  # the one-hot and the scatter-add sums
def test_each_problem_is_the_reference_step(global_random_seed, weighted, k):
    rng = np.random.default_rng(global_random_seed)
    x, c, mask, cmask, w, lengths, ks = ragged_batch(rng, 7, 60, 4, k)
    out = exact_step(x, c, mask=mask, centre_mask=cmask, weight=w if weighted else None,
                     inertia=True)
    new = out.centres(c)
    for i, (m, kk) in enumerate(zip(lengths, ks, strict=True)):
        wi = w[i, :m].numpy() if weighted else None
        ref, labels = reference_step(x[i, :m].numpy(), c[i, :kk].numpy(), sample_weight=wi)
        np.testing.assert_array_equal(out.labels[i, :m].numpy(), labels)
        assert (out.labels[i, m:] == -1).all()
        np.testing.assert_allclose(new[i, :kk].numpy(), ref, rtol=1e-12, atol=1e-12)
        # padded centres keep their value and gather no mass
        assert torch.equal(new[i, kk:], c[i, kk:]) and (out.mass[i, kk:] == 0).all()
        diff = x[i, :m].numpy() - c[i, labels].numpy()
        literal = (np.square(diff).sum(1) * (1.0 if wi is None else wi)).sum()
        assert float(out.inertia[i]) == pytest.approx(literal, rel=1e-12)


def test_empty_cluster_keeps_its_centre():
    x = torch.tensor([[[0.0], [1.0], [10.0]]], dtype=torch.float64)
    c = torch.tensor([[[0.0], [10.0], [50.0]]], dtype=torch.float64)
    out = exact_step(x, c)
    assert out.mass.tolist() == [[2.0, 1.0, 0.0]]
    assert out.centres(c).ravel().tolist() == [0.5, 10.0, 50.0]


def test_a_problem_does_not_depend_on_the_batch_nor_the_blocks(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    x, c, mask, cmask, w, *_ = ragged_batch(rng, 9, 50, 3, 6, dtype=torch.float32)
    whole = exact_step(x, c, mask=mask, centre_mask=cmask, weight=w, inertia=True)
    ordered = exact_step(x, c, mask=mask, centre_mask=cmask, weight=w, one_hot=False)
    for budget in (6, 13 * 6, 50 * 6 * 4, 2**20):  # 2 rows, 13 rows, 4 problems, all
        blocks = exact_step(x, c, mask=mask, centre_mask=cmask, weight=w, inertia=True,
                            budget=budget, workspace=Workspace())
        assert torch.equal(blocks.labels, whole.labels)
        torch.testing.assert_close(blocks.sums, whole.sums, rtol=1e-6, atol=1e-5)
        # the scatter-add sums the rows in their order: the same bits in any blocks
        scattered = exact_step(x, c, mask=mask, centre_mask=cmask, weight=w, budget=budget,
                               one_hot=False)
        assert torch.equal(scattered.sums, ordered.sums)
        assert torch.equal(scattered.mass, ordered.mass)
    for i in (0, 4, 8):
        alone = exact_step(x[i : i + 1], c[i : i + 1], mask=mask[i : i + 1],
                           centre_mask=cmask[i : i + 1], weight=w[i : i + 1], inertia=True)
        for a, b in zip(whole, alone, strict=True):
            assert torch.equal(a[i : i + 1], b)


def test_padding_changes_nothing(global_random_seed):
    """The same problem padded with garbage-free rows and extra centres: same result."""
    rng = np.random.default_rng(global_random_seed)
    x = torch.from_numpy(rng.normal(size=(1, 40, 3)))
    c = x[:, :5].clone()
    plain = exact_step(x, c, inertia=True)
    xp = torch.cat([x, torch.full((1, 9, 3), 1e6, dtype=x.dtype)], 1)
    cp = torch.cat([c, torch.zeros(1, 2, 3, dtype=x.dtype)], 1)
    padded = exact_step(xp, cp, mask=torch.arange(49)[None] < 40,
                        centre_mask=torch.arange(7)[None] < 5, inertia=True)
    assert torch.equal(padded.labels[:, :40], plain.labels)
    assert torch.equal(padded.sums[:, :5], plain.sums)
    assert torch.equal(padded.mass[:, :5], plain.mass)
    assert float(padded.inertia) == pytest.approx(float(plain.inertia), rel=1e-15)


def test_float64_sums_of_float32_points():
    x = torch.rand(2, 1000, 3)
    c = x[:, :4].clone()
    out = exact_step(x, c, sums_dtype=torch.float64)
    assert out.sums.dtype == out.mass.dtype == torch.float64
    ref = exact_step(x.double(), c.double())
    assert torch.equal(out.labels, ref.labels)
    torch.testing.assert_close(out.sums, ref.sums, rtol=1e-12, atol=0)


def test_labels_only():
    x = torch.tensor([[[0.0], [3.0]]])
    out = exact_step(x, torch.tensor([[[1.0], [4.0]]]), update=False)
    assert out.labels.tolist() == [[0, 1]] and out.sums is None and out.mass is None


def test_beyond_64_centres_the_argmin_in_parts_is_the_reference(global_random_seed, monkeypatch):
    # Beyond 64 centres the nearest centre is an argmin, on torch's threads in parts of
    # rows where there are many: the same labels (first index on ties) as one argmin.
    import skformer.nn.kernel as kernel

    rng = np.random.default_rng(global_random_seed)
    x = torch.from_numpy(rng.normal(size=(1, 3000, 5)))
    c = x[:, rng.choice(3000, 90, replace=False)].clone()
    c[0, 50] = c[0, 7]  # an exact tie: centre 7 wins
    monkeypatch.setattr(kernel, "_ARGMIN_ROWS", 256)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    out = exact_step(x, c)
    ref, labels = reference_step(x[0].numpy(), c[0].numpy())
    np.testing.assert_array_equal(out.labels[0].numpy(), labels)
    assert not (out.labels == 50).any()
    np.testing.assert_allclose(out.centres(c)[0].numpy(), ref, rtol=1e-12, atol=1e-12)
