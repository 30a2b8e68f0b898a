"""Random clustering tasks: the noise against torch.distributions, then properties, then errors."""

import dataclasses

import numpy as np
import pytest
import torch
from scipy import stats

from skformer.tasks import (
    FAMILIES,
    TaskBatch,
    TaskConfig,
    minmax_scale,
    sample_tasks,
    standard_noise,
)

SMALL = TaskConfig(n_points=40, n_features=3, n_clusters=4)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# --- oracle: each family's noise has torch.distributions' law --------------------------------

_DISTRIBUTIONS = {
    "normal": torch.distributions.Normal(0.0, 1.0),
    "cauchy": torch.distributions.Cauchy(0.0, 1.0),
    "gumbel": torch.distributions.Gumbel(0.0, 1.0),
    "laplace": torch.distributions.Laplace(0.0, 1.0),
    "lognormal": torch.distributions.LogNormal(0.0, 1.0),
}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_noise_matches_torch_distribution(family, dtype):
    z = standard_noise(family, (20_000,), generator=_gen(0), dtype=dtype)
    assert z.dtype == dtype
    assert torch.isfinite(z).all()
    sample = z.exp() if family == "lognormal" else z
    dist = _DISTRIBUTIONS[family]

    def cdf(v):
        return dist.cdf(torch.as_tensor(v, dtype=torch.float64)).numpy()

    assert stats.kstest(sample.double().numpy(), cdf).pvalue > 1e-3


@pytest.mark.parametrize("family", ["laplace", "gumbel", "cauchy"])
def test_noise_is_finite_at_the_ends_of_the_uniform(family, monkeypatch):
    # torch.rand can return exactly 0 and values just below 1.
    edges = torch.tensor([0.0, 1.0 - 2.0**-24, 0.5])
    monkeypatch.setattr(torch, "rand", lambda *a, **kw: edges.clone())
    z = standard_noise(family, (3,), generator=_gen(0))
    assert torch.isfinite(z).all()
    assert z[0] < 0 < z[1]


def test_noise_rejects_unknown_family():
    with pytest.raises(ValueError, match="family must be one of"):
        standard_noise("uniform", (3,), generator=_gen(0))


# --- properties of sample_tasks --------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_shapes_dtypes_and_unit_cube(family, dtype):
    config = dataclasses.replace(SMALL, family=family)
    batch = sample_tasks(config, 5, generator=_gen(1), dtype=dtype)
    assert isinstance(batch, TaskBatch)
    assert batch.x.shape == (5, 40, 3) and batch.centres.shape == (5, 4, 3)
    assert batch.x.dtype == batch.centres.dtype == dtype
    assert not torch.isnan(batch.x).any()
    assert (batch.x >= 0).all() and (batch.x <= 1).all()
    # every task and dimension is stretched to exactly [0, 1]
    assert torch.equal(batch.x.amin(dim=1), torch.zeros(5, 3, dtype=dtype))
    assert torch.equal(batch.x.amax(dim=1), torch.ones(5, 3, dtype=dtype))


def test_half_precision_is_supported():
    batch = sample_tasks(SMALL, 2, generator=_gen(0), dtype=torch.bfloat16)
    assert batch.x.dtype == torch.bfloat16
    assert (batch.x >= 0).all() and (batch.x <= 1).all()


def test_centres_are_the_first_distinct_points():
    batch = sample_tasks(SMALL, 6, generator=_gen(2))
    assert torch.equal(batch.centres, batch.x[:, :4])
    for task in batch.centres:
        assert torch.unique(task, dim=0).shape[0] == 4


def test_centres_are_a_uniform_subset(global_random_seed):
    # the permutation is uniform: every position is a centre about k/n of the time
    config = TaskConfig(n_points=8, n_features=1, n_clusters=2)
    g = _gen(global_random_seed)
    hits = np.zeros(3)
    for _ in range(20):
        batch = sample_tasks(config, 50, generator=g)
        ranks = batch.x[..., 0].argsort(dim=1).argsort(dim=1)[:, :2]  # rank of each centre
        hits += np.bincount((ranks.flatten() * 3 // 8).numpy(), minlength=3)
    # 2000 centres over 3 rank bins of sizes 3/8, 3/8, 2/8
    expected = 2000 * np.array([3, 3, 2]) / 8
    assert stats.chisquare(hits, expected).pvalue > 1e-4


def test_same_seed_same_tasks_bitwise():
    a = sample_tasks(SMALL, 3, generator=_gen(7))
    b = sample_tasks(SMALL, 3, generator=_gen(7))
    assert torch.equal(a.x, b.x) and torch.equal(a.centres, b.centres)
    c = sample_tasks(SMALL, 3, generator=_gen(8))
    assert not torch.equal(a.x, c.x)


def test_generator_advances_between_batches():
    g = _gen(0)
    first = sample_tasks(SMALL, 2, generator=g)
    second = sample_tasks(SMALL, 2, generator=g)
    assert not torch.equal(first.x, second.x)


@pytest.mark.parametrize("switch", ["isotropic", "equal_weights", "family", "scale"])
def test_switches_change_the_data(switch):
    other = {"isotropic": False, "equal_weights": False, "family": "laplace", "scale": 0.2}
    config = dataclasses.replace(SMALL, **{switch: other[switch]})
    assert not torch.equal(
        sample_tasks(SMALL, 2, generator=_gen(3)).x,
        sample_tasks(config, 2, generator=_gen(3)).x,
    )


def test_smaller_scale_gives_tighter_clusters():
    # two components per task: min-max scaling puts them near 0 and 1 in every dimension,
    # and the smaller the scale, the fewer points lie in between
    def middle_share(scale):
        config = TaskConfig(n_points=400, n_features=2, n_clusters=2, scale=scale)
        x = sample_tasks(config, 16, generator=_gen(0), dtype=torch.float64).x
        return float(((x > 0.2) & (x < 0.8)).double().mean())

    assert middle_share(0.001) < 0.05 < middle_share(0.3)


def test_unequal_weights_give_unequal_clusters():
    config = TaskConfig(n_points=2000, n_features=1, n_clusters=2, scale=0.001)
    sizes = []
    for equal in (True, False):
        cfg = dataclasses.replace(config, equal_weights=equal)
        x = sample_tasks(cfg, 64, generator=_gen(0), dtype=torch.float64).x[..., 0]
        share = (x < 0.5).double().mean(dim=1)  # two tight clusters at 0 and 1
        sizes.append(float((share - 0.5).abs().mean()))
    assert sizes[0] < 0.05 < sizes[1]


def test_minmax_scale_constant_and_non_finite_dimensions():
    x = torch.tensor([[[1.0, 5.0, 0.0], [3.0, 5.0, float("inf")], [2.0, 5.0, 1.0]]])
    out = minmax_scale(x)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out[0, :, 0], torch.tensor([0.0, 1.0, 0.5]))
    assert torch.equal(out[0, :, 1], torch.zeros(3))
    assert ((out >= 0) & (out <= 1)).all()


def test_result_device_follows_argument():
    batch = sample_tasks(SMALL, 2, generator=_gen(0), device="cpu")
    assert batch.x.device.type == "cpu"


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"family": "uniform"}, ValueError, "family must be one of"),
        ({"n_points": 3, "n_clusters": 4}, ValueError, "n_points=3 should be >= n_clusters=4"),
        ({"n_clusters": 0}, ValueError, "n_clusters must be >= 1"),
        ({"n_features": 0}, ValueError, "n_features must be >= 1"),
        ({"scale": 0.0}, ValueError, "scale must be a finite number > 0"),
        ({"scale": -1.0}, ValueError, "scale must be a finite number > 0"),
        ({"scale": float("nan")}, ValueError, "scale must be a finite number > 0"),
        ({"n_points": 10.5}, TypeError, "n_points must be an int"),
    ],
)
def test_config_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        TaskConfig(**kwargs)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SMALL.scale = 1.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"batch_size": 0}, ValueError, "batch_size must be an int >= 1"),
        ({"generator": 0}, TypeError, "generator must be a torch.Generator"),
        ({"dtype": torch.int64}, ValueError, "dtype must be a floating dtype"),
        ({"config": {"n_points": 5}}, TypeError, "config must be a TaskConfig"),
    ],
)
def test_sample_tasks_errors(kwargs, error, match):
    args = {"config": SMALL, "batch_size": 2, "generator": _gen(0)} | kwargs
    config, batch_size = args.pop("config"), args.pop("batch_size")
    with pytest.raises(error, match=match):
        sample_tasks(config, batch_size, **args)


def test_kmeans_plusplus_picks_points_spread_over_groups():
    from skformer.tasks import kmeans_plusplus

    gen = torch.Generator().manual_seed(0)
    groups = torch.tensor([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]])
    x = (groups[torch.arange(90) % 3] + torch.rand(90, 2, generator=gen)).unsqueeze(0)
    x = x.expand(5, -1, -1).contiguous()
    c = kmeans_plusplus(x, 3, generator=torch.Generator().manual_seed(1))
    assert c.shape == (5, 3, 2)
    for task in range(5):
        assert all(bool((x[task] == centre).all(-1).any()) for centre in c[task])
        nearest = torch.cdist(c[task], groups).argmin(-1)
        assert sorted(nearest.tolist()) == [0, 1, 2]  # one centre per group
    again = kmeans_plusplus(x, 3, generator=torch.Generator().manual_seed(1))
    assert torch.equal(c, again)


def test_kmeans_plusplus_errors():
    from skformer.tasks import kmeans_plusplus

    with pytest.raises(ValueError, match="n_clusters must be in"):
        kmeans_plusplus(torch.rand(1, 3, 2), 4, generator=torch.Generator())


def test_fewer_components_than_clusters_tile_them():
    """n_components=1: every point comes from one normal component, so after min-max
    scaling the points gather near the box's middle (mean absolute deviation about
    0.8 / 6 of the range), where eight components spread over it."""
    def spread(components):
        config = TaskConfig(n_points=400, n_features=2, n_clusters=8,
                            n_components=components)
        batch = sample_tasks(config, 3, generator=torch.Generator().manual_seed(0))
        assert batch.x.shape == (3, 400, 2) and batch.centres.shape == (3, 8, 2)
        return float((batch.x - batch.x.mean(1, keepdim=True)).abs().mean())

    assert spread(1) < 0.16 < spread(None)


@pytest.mark.parametrize("components", [0, 2.5, True])
def test_n_components_errors(components):
    with pytest.raises(ValueError, match="n_components must be an int >= 1 or None"):
        TaskConfig(n_components=components)
