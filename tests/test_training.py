"""The training loop: reproducibility, checkpoints and resumption, configuration errors."""

import pytest
import torch

from skformer.training import TrainingConfig, init_model, train

TINY = dict(steps=4, eval_every=2, n_val_tasks=8, n_points=32, batch_size=4)


def test_history_and_checkpoints(tmp_path):
    result = train(TrainingConfig.fast(2, 3, **TINY), out_dir=tmp_path)
    assert [row["step"] for row in result.history] == [0, 2, 4]
    assert {"last.pt", "best.pt", "history.csv"} <= {p.name for p in tmp_path.iterdir()}
    assert result.best_val_relative == min(r["val_relative"] for r in result.history)
    assert not result.model.training


def test_same_seed_same_run_other_seed_other_run():
    a = train(TrainingConfig.fast(2, 3, **TINY))
    b = train(TrainingConfig.fast(2, 3, **TINY))
    c = train(TrainingConfig.fast(2, 3, seed=1, **TINY))
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert [r["val_relative"] for r in a.history] != [r["val_relative"] for r in c.history]


def test_resume_continues_the_same_run(tmp_path):
    full = train(TrainingConfig.fast(2, 3, **TINY))
    train(TrainingConfig.fast(2, 3, **{**TINY, "steps": 2}), out_dir=tmp_path)
    resumed = train(TrainingConfig.fast(2, 3, **TINY), out_dir=tmp_path, resume=True)
    for pa, pb in zip(full.model.parameters(), resumed.model.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    assert [r["step"] for r in resumed.history] == [0, 2, 4]


def test_resume_refuses_another_configuration(tmp_path):
    train(TrainingConfig.fast(2, 3, **TINY), out_dir=tmp_path)
    with pytest.raises(ValueError, match="trained with another configuration"):
        train(TrainingConfig.fast(2, 3, tau=0.5, **TINY), out_dir=tmp_path, resume=True)


def test_random_init_uses_its_generator_only():
    state = torch.get_rng_state()
    cfg = TrainingConfig.paper(4, 3)
    a = init_model(cfg, torch.Generator().manual_seed(0))
    b = init_model(cfg, torch.Generator().manual_seed(0))
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is untouched
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_fast_preset_beats_its_untrained_start():
    cfg = TrainingConfig.fast(4, 3, steps=30, eval_every=30, n_val_tasks=32, n_points=64)
    result = train(cfg)
    assert result.history[0]["val_relative"] < 1.0  # the warm start is a softened Lloyd step
    assert result.history[-1]["val_relative"] < 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(loss="l1"), "loss must be 'l2' or 'ne'"),
        (dict(init="zeros"), "init must be 'random' or 'exact'"),
        (dict(init="exact", embedding="none"), "needs the 'binary' or 'onehot'"),
        (dict(steps=0), "steps must be >= 1"),
        (dict(family="uniform"), "family"),
    ],
)
def test_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainingConfig(4, 3, **kwargs)


# -- the multi-step recipe ---------------------------------------------------------------

MULTI = dict(steps=4, eval_every=2, n_val_tasks=8, n_points=32, batch_size=4,
             schedule_search=3)


def test_multistep_run_returns_its_best_checkpoint():
    from skformer.training import validation_set
    from skformer.training.loop import _streams
    from skformer.training.validation import _validate

    cfg = TrainingConfig.multistep(2, 3, **MULTI)
    result = train(cfg)
    scores = [row["val_score"] for row in result.history]
    best = result.best
    assert best["val_score"] == min(scores) and best["val_multistep"] is not None
    assert result.best_val_relative == best["val_relative"]
    # The returned weights are the best checkpoint's: re-validating gives its score.
    gens = _streams(cfg.seed)
    val = validation_set(cfg, gens["val"], gens["baseline"])
    assert _validate(result.model, cfg, val)["val_score"] == pytest.approx(best["val_score"])


def test_schedule_training_leaves_the_projections_alone():
    cfg = TrainingConfig.multistep(2, 3, **MULTI)
    trained = train(cfg).model
    exact = init_model(cfg, torch.Generator())
    for (name, p), q in zip(trained.layer.named_parameters(), exact.layer.parameters(),
                            strict=True):
        assert torch.equal(p, q), name
    assert trained.log_temperature.requires_grad and trained.layer.points_to_centres.normalise


def test_schedule_search_never_starts_worse_than_the_warm_start():
    from skformer.training import search_schedule
    from skformer.training.loop import _streams

    scores = []
    for n in (0, 8):
        cfg = TrainingConfig.multistep(3, 4, **{**MULTI, "schedule_search": n})
        model = init_model(cfg, torch.Generator()).eval()
        scores.append(search_schedule(model, cfg, _streams(0), "cpu"))
    assert scores[1] <= scores[0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(objective="two-step"), "objective must be one of"),
        (dict(trainable="some"), "trainable must be one of"),
        (dict(trainable="schedule"), "needs schedule >= 1 and init='exact'"),
        (dict(kmeanspp_share=1.5), r"kmeanspp_share must be in \[0, 1\]"),
        (dict(families=("normal", "uniform")), "families must be among"),
        (dict(init_temperature=(1.0, 2.0)), "init_temperature must be 3 positive"),
        (dict(unroll=0), "unroll must be >= 1"),
    ],
)
def test_multistep_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainingConfig(4, 3, **kwargs)


def test_config_round_trips_through_json():
    import json

    cfg = TrainingConfig.multistep(8, 5)
    assert TrainingConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
