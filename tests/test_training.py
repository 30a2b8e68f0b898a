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
