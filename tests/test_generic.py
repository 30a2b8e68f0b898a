"""Shape-generic models: the schedule-driven construction (nn/learned.py), its training
(training/generic.py) and its files (store/generic.py)."""

import math

import pytest
import torch

from skformer.nn.embedding import index_width
from skformer.nn.learned import LearnedKMeansModel
from skformer.store import ModelStoreError, locations
from skformer.store.generic import (
    code_bits,
    find_schedule,
    generic_filename,
    generic_model,
    read_schedule,
    save_schedule,
)
from skformer.training.generic import GenericConfig, code_clusters, train_generic

SCHEDULE = torch.log(torch.tensor([[4.0, 20.0, 20.0], [0.8, 3.0, 9.0], [120.0, 40.0, 40.0]]))


def _reference(d, k, schedule):
    """The per-shape construction the generic one must equal: from_exact at scale 1 with
    each step's multipliers set to the effective temperatures times sqrt(e)."""
    model = LearnedKMeansModel.from_exact(d, k, scale=1.0, normalise=True,
                                          schedule=len(schedule), dropout=0.0)
    width = d + index_width("binary", k)
    with torch.no_grad():
        model.log_temperature.copy_(schedule + math.log(math.sqrt(width)))
    return model.eval()


def _tasks(seed, d, k, n=120, b=2):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(b, n, d, generator=g)
    return x, x[:, :k].clone()


# -- the construction ------------------------------------------------------------------


@pytest.mark.parametrize(("d", "k"), [(1, 2), (3, 7), (5, 16), (40, 33)])
def test_from_schedule_equals_the_per_shape_construction(d, k):
    x, c = _tasks(0, d, k)
    ours = LearnedKMeansModel.from_schedule(d, k, SCHEDULE).eval()
    ref = _reference(d, k, SCHEDULE)
    torch.testing.assert_close(ours.iterate(x, c, 4), ref.iterate(x, c, 4))


def test_effective_schedule_inverts_from_schedule():
    model = LearnedKMeansModel.from_schedule(7, 300, SCHEDULE)
    torch.testing.assert_close(model.effective_schedule(), SCHEDULE)


def test_one_schedule_serves_every_k_of_a_code_width():
    """k = 9 ... 16 share four code columns: each model is the per-k reference."""
    for k in (9, 12, 16):
        x, c = _tasks(k, 4, k)
        generic = LearnedKMeansModel.from_schedule(4, k, SCHEDULE).eval()
        assert generic.layer.embed_dim == 4 + 4
        torch.testing.assert_close(generic.iterate(x, c, 3), _reference(4, k, SCHEDULE)
                                   .iterate(x, c, 3))


@pytest.mark.parametrize(("schedule", "match"), [
    (torch.zeros(3), r"shape \(S, 3\)"),
    (torch.zeros(0, 3), r"S >= 1"),
    (torch.zeros(2, 4), r"shape \(S, 3\)"),
])
def test_from_schedule_rejects_bad_schedules(schedule, match):
    with pytest.raises(ValueError, match=match):
        LearnedKMeansModel.from_schedule(2, 3, schedule)


# -- training --------------------------------------------------------------------------

TINY = dict(features=(2, 3), steps=4, search=3, batch_size=4, n_val_batches=2,
            eval_every=2, min_points=24, points_per_cluster=4, unroll=3, schedule=3)


def test_training_is_reproducible_and_returns_its_best_validation():
    a = train_generic(GenericConfig(bits=3, seed=5, **TINY))
    b = train_generic(GenericConfig(bits=3, seed=5, **TINY))
    torch.testing.assert_close(a.log_effective, b.log_effective)
    best = min(a.history, key=lambda row: row["val_score"])
    assert a.val_ratio == best["val_ratio"] and a.log_effective.shape == (3, 3)


def test_a_warm_start_is_the_first_candidate():
    init = SCHEDULE.exp().tolist()
    result = train_generic(GenericConfig(bits=2, init=init, **{**TINY, "search": 0,
                                                                  "steps": 0}))
    torch.testing.assert_close(result.log_effective, SCHEDULE)


@pytest.mark.parametrize(("params", "match"), [
    (dict(bits=0), "bits must be an int >= 1"),
    (dict(bits=2, features=()), "features must be widths >= 1"),
    (dict(bits=2, families=("uniform",)), "families must be among"),
    (dict(bits=2, schedule=2, init=[[1, 1, 1]]), r"init must have shape \(2, 3\)"),
    (dict(bits=2, batch_size=0), "batch_size must be >= 1"),
    (dict(bits=2, learn=("speed",)), "learn must name"),
    (dict(bits=2, step_size=True, learn=("step_size",)),
     "temperatures are not learned needs init"),
    (dict(bits=2, learn=("step_size",)), "needs step_size=True"),
    (dict(bits=2, tiling_share=1.5), r"tiling_share must be in \[0, 1\]"),
    (dict(bits=2, objective="last"), "objective must be 'multistep' or 'final'"),
    (dict(bits=2, schedule=2, init_step_size=(1.0,)), "init_step_size must be 2 positive"),
])
def test_config_errors(params, match):
    with pytest.raises(ValueError, match=match):
        GenericConfig(**params)


def test_code_widths():
    assert [code_clusters(b) for b in (1, 2, 5)] == [(2, 2), (3, 4), (17, 32)]
    assert [code_bits(k) for k in (2, 3, 4, 5, 1024, 1025)] == [1, 2, 2, 3, 10, 11]
    assert GenericConfig(bits=9, max_clusters=300).clusters == (257, 300)


# -- step sizes ------------------------------------------------------------------------

STEPS = torch.log(torch.tensor([1.0, 1.5, 1.8]))


@pytest.mark.parametrize(("d", "k"), [(1, 2), (3, 7), (40, 33)])
def test_a_step_size_scales_the_move_of_every_centre(d, k):
    """One step with step size s is c + s (F(c) - c), F the unit step, on every path: the
    layer (iterate), the inference stepper and the streamed step."""
    from skformer.nn.inference import LearnedStepper
    from skformer.nn.streaming import prepare_points, streamed_step

    x, c = _tasks(1, d, k)
    unit = LearnedKMeansModel.from_schedule(d, k, SCHEDULE).eval()
    sized = LearnedKMeansModel.from_schedule(d, k, SCHEDULE, log_step_size=STEPS).eval()
    prepared = prepare_points(sized, x)
    stepper = LearnedStepper(sized, prepared)
    for step in (1, 2, 5):  # step 5 uses the last row
        size = STEPS[min(step, 2)].exp()
        expected = c + size * (unit(x, c, step=step) - c)
        torch.testing.assert_close(sized(x, c, step=step), expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(stepper.step(c, step), expected, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(streamed_step(sized, prepared, c, step=step), expected,
                                   atol=1e-4, rtol=1e-4)


def test_unit_step_sizes_are_eq4():
    x, c = _tasks(2, 3, 5)
    unit = LearnedKMeansModel.from_schedule(3, 5, SCHEDULE).eval()
    ones = LearnedKMeansModel.from_schedule(3, 5, SCHEDULE,
                                            log_step_size=torch.zeros(3)).eval()
    torch.testing.assert_close(ones.iterate(x, c, 4), unit.iterate(x, c, 4))
    assert unit.log_step_size is None and unit.step_size(0) is None
    assert ones.config["step_size"] and not unit.config["step_size"]


@pytest.mark.parametrize(("make", "match"), [
    (lambda: LearnedKMeansModel(2, 3, step_size=True), "step_size=True needs a schedule"),
    (lambda: LearnedKMeansModel.from_schedule(2, 3, SCHEDULE, log_step_size=torch.zeros(2)),
     r"log_step_size must have shape \(3,\)"),
])
def test_step_size_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_learning_only_step_sizes_keeps_the_temperatures():
    init = SCHEDULE.exp().tolist()
    result = train_generic(GenericConfig(bits=3, init=init, step_size=True,
                                         learn=("step_size",),
                                         init_step_size=(1.2, 1.2, 1.2), **TINY))
    torch.testing.assert_close(result.log_effective, SCHEDULE)
    assert result.log_step_size.shape == (3,)
    assert not torch.allclose(result.log_step_size, torch.full((3,), math.log(1.2)))


def test_constant_step_sizes_are_searched_first():
    """With no random candidates and no Adam step, a start of small steps (0.3: a third
    of the way to each mean) loses to a constant step size of the grid on the cost
    after three steps."""
    from skformer.training.generic import STEP_SIZE_GRID

    init = SCHEDULE.exp().tolist()
    result = train_generic(GenericConfig(
        bits=3, init=init, step_size=True, learn=("step_size",), objective="final",
        init_step_size=(0.3, 0.3, 0.3), **{**TINY, "search": 0, "steps": 0}))
    sizes = result.log_step_size.exp()
    assert any(torch.allclose(sizes, torch.full((3,), s)) for s in STEP_SIZE_GRID)


def test_no_step_sizes_trains_the_temperatures_alone():
    result = train_generic(GenericConfig(bits=2, step_size=False, **TINY))
    assert result.log_step_size is None and result.log_effective.shape == (3, 3)


def test_tiling_batches_have_fewer_components_than_clusters(monkeypatch):
    import skformer.training.generic as generic

    seen = []
    real = generic.sample_tasks
    monkeypatch.setattr(generic, "sample_tasks",
                        lambda task, *a, **kw: seen.append(task) or real(task, *a, **kw))
    for share in (1.0, 0.0):
        config = GenericConfig(bits=6, tiling_share=share, **TINY)
        for i in range(6):
            generic._draw_batch(config, i, generic._streams(i))
    tiling, paper = seen[:6], seen[6:]
    assert all(1 <= t.n_components <= t.n_clusters // 8 and t.scale == 0.2 for t in tiling)
    assert all(t.n_components is None and t.scale == 0.1 for t in paper)


def test_step_sizes_stage_keeps_the_source_temperatures(tmp_path):
    from skformer.store.generic import pretrain_step_sizes

    source = save_schedule(tmp_path / "src.safetensors", SCHEDULE, bits=3, clusters=(5, 8),
                           features=(2, 4), val_ratio=0.9)
    stored = pretrain_step_sizes(3, source=source, path=tmp_path / generic_filename(3),
                                 **{**TINY, "search": 1, "steps": 1})
    torch.testing.assert_close(stored.log_effective, SCHEDULE)
    assert stored.log_step_size.shape == (3,)
    assert stored.metadata["temperature_training"]["val_ratio"] == 0.9
    assert stored.metadata["training_config"]["learn"] == ["step_size"]


# -- files -----------------------------------------------------------------------------


def test_schedule_file_round_trip(tmp_path):
    path = save_schedule(tmp_path / generic_filename(3), SCHEDULE, bits=3, clusters=(5, 8),
                         features=(2, 4), val_ratio=0.9)
    stored = read_schedule(path)
    torch.testing.assert_close(stored.log_effective, SCHEDULE)
    assert stored.metadata["clusters"] == [5, 8] and stored.metadata["val_ratio"] == 0.9


@pytest.mark.parametrize(("damage", "match"), [
    (lambda b: b[:20], "truncated|not a safetensors"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "content hash mismatch"),
    (lambda b: b"not a file at all", "not a safetensors"),
])
def test_a_damaged_schedule_file_is_refused(tmp_path, damage, match):
    path = save_schedule(tmp_path / "s.safetensors", SCHEDULE, bits=3, clusters=(5, 8),
                         features=(2,))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ModelStoreError, match=match):
        read_schedule(path)


def test_step_sizes_round_trip_and_build_the_model(tmp_path):
    path = save_schedule(tmp_path / generic_filename(3), SCHEDULE, bits=3, clusters=(5, 8),
                         features=(2,), log_step_size=STEPS)
    stored = read_schedule(path)
    torch.testing.assert_close(stored.log_step_size, STEPS)
    model = stored.model(4, 7)
    torch.testing.assert_close(model.log_step_size.detach(), STEPS)


def test_a_schedule_with_misshapen_step_sizes_is_refused(tmp_path):
    path = save_schedule(tmp_path / "s.safetensors", SCHEDULE, bits=3, clusters=(5, 8),
                         features=(2,), log_step_size=torch.zeros(2))
    with pytest.raises(ModelStoreError, match=r"'log_step_size' must have shape \(3,\)"):
        read_schedule(path)


def test_a_model_file_is_not_a_schedule(tmp_path):
    from skformer.store import save_model

    path = save_model(tmp_path / "m.safetensors", LearnedKMeansModel.from_exact(2, 3))
    with pytest.raises(ModelStoreError, match="not a skformer schedule"):
        read_schedule(path)


def test_a_code_width_without_its_own_file_uses_the_nearest_narrower(tmp_path, monkeypatch):
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "shipped")
    monkeypatch.setattr(locations, "cache_dir", lambda: tmp_path / "cache")
    assert find_schedule(4) is None and generic_model(3, 12) is None
    save_schedule(tmp_path / "cache" / generic_filename(2), SCHEDULE, bits=2,
                  clusters=(3, 4), features=(2,))
    assert find_schedule(4).name == "generic_b2.safetensors"
    model, metadata = generic_model(3, 12)
    assert metadata["bits"] == 2 and model.n_clusters == 12


def test_every_code_width_up_to_1024_clusters_ships_and_the_weights_stay_small():
    shipped = locations.shipped_dir()
    for bits in range(1, 11):
        stored = read_schedule(shipped / generic_filename(bits))
        assert stored.metadata["bits"] == bits and stored.log_effective.shape[1] == 3
    total = sum(p.stat().st_size for p in shipped.iterdir() if p.is_file())
    assert total < 25 * 2**20


def test_pretraining_writes_its_own_file_and_starts_from_a_narrower_width(tmp_path,
                                                                           monkeypatch):
    """A warm start from the shipped schedule of a narrower width reads that file and
    writes only the target."""
    from skformer.store.generic import pretrain_generic

    shipped = tmp_path / "shipped"
    monkeypatch.setattr(locations, "shipped_dir", lambda: shipped)
    narrower = save_schedule(shipped / generic_filename(2), SCHEDULE, bits=2,
                             clusters=(3, 4), features=(2,))
    before = narrower.read_bytes()
    target = tmp_path / "out" / generic_filename(3)
    stored = pretrain_generic(3, path=target, warm_start=2, **{**TINY, "search": 0,
                                                               "steps": 0})
    assert narrower.read_bytes() == before and stored.path == target
    torch.testing.assert_close(stored.log_effective, SCHEDULE)
    assert stored.metadata["bits"] == 3 and stored.metadata["clusters"] == [5, 8]
