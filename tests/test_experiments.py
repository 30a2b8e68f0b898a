"""Smoke tests of the experiment drivers at tiny sizes (their real runs are benchmarks)."""

import json

import pytest

from benchmarks import learning

TINY = dict(steps=2, eval_every=2, n_val_tasks=8, n_points=32, batch_size=4)


def test_learning_one_step_then_multistep(tmp_path):
    records = learning.one_step(
        ds=(2,), ks=(3,), seeds=(0,), losses=("l2",), embeddings=("binary", "onehot"),
        keep_state_for=((2, 3),), **TINY,
    )
    assert {r["embedding"] for r in records} == {"binary", "onehot"}
    assert all(r["state"] is not None and r["before"] > 0 for r in records)
    curves = learning.multistep(json.loads(json.dumps(records)), n_steps=3, n_tasks=8)
    assert len(curves) == 2
    assert all(len(c["lloyd_median_cost"]) == 4 for c in curves)
    pytest.importorskip("matplotlib")
    assert learning._plots("multistep", curves, tmp_path).is_file()
    assert learning._plots("one-step", records, tmp_path).is_file()


def test_learning_convergence_curves(tmp_path):
    records = learning.convergence(ds=(2,), k=3, seeds=(0,), steps=2, n_points=32,
                                   eval_every=2, batch_size=4)
    assert [row["step"] for row in records[0]["history"]] == [0, 2]
    pytest.importorskip("matplotlib")
    assert learning._plots("convergence", records, tmp_path).is_file()
