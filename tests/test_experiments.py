"""Smoke tests of the learning benchmarks at tiny sizes (their real runs are benchmarks),
with one oracle: a model that is Lloyd's algorithm ties Lloyd's algorithm."""

import json

import pytest
import torch

from benchmarks.learning import main, paper
from benchmarks.learning.heldout import evaluate_model, heldout_tasks
from benchmarks.learning.report import check_targets, plot, rst_table, table
from benchmarks.learning.ship import evaluate_folder, heldout_index, train_grid
from skformer.nn import LearnedKMeansModel
from skformer.store import read_model, shipped_index, write_index

TINY = dict(steps=2, eval_every=2, n_val_tasks=8, n_points=32, batch_size=4)


def test_learning_one_step(tmp_path):
    records = paper.one_step(ds=(2,), ks=(3,), seeds=(0,), losses=("l2",),
                             embeddings=("binary", "onehot"), keep_state_for=(), **TINY)
    assert {r["embedding"] for r in records} == {"binary", "onehot"}
    assert all(r["before"] > 0 for r in records)
    pytest.importorskip("matplotlib")
    assert paper.plot("one-step", records, tmp_path).is_file()


def test_learning_convergence_curves(tmp_path):
    records = paper.convergence(ds=(2,), k=3, seeds=(0,), steps=2, n_points=32,
                                eval_every=2, batch_size=4)
    assert [row["step"] for row in records[0]["history"]] == [0, 2]
    pytest.importorskip("matplotlib")
    assert paper.plot("convergence", records, tmp_path).is_file()


def test_heldout_tasks_are_reproducible_and_shape_specific():
    a = heldout_tasks(2, 3, "normal", 4)
    b = heldout_tasks(2, 3, "normal", 4)
    c = heldout_tasks(2, 3, "laplace", 4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[2], b[2])
    assert not torch.equal(a[0], c[0])


def test_lloyd_model_ties_lloyd():
    """The exact construction at a huge scale is Lloyd's step: ratio 1, nothing captured."""
    model = LearnedKMeansModel.from_exact(2, 3, scale=1e4, dropout=0.0).double()
    records = evaluate_model(model.float(), n_tasks=6, n_steps=5)
    assert {(r["family"], r["start"]) for r in records} == {
        ("normal", "random"), ("normal", "k-means++"), ("laplace", "random"),
        ("laplace", "k-means++")}
    for r in records:
        assert r["ratio"][1] == pytest.approx(1.0, abs=1e-3)
        assert r["headroom"] >= -1e-6
        assert r["captured"] is None or abs(r["captured"]) < 0.05
        assert len(r["model_curve"]) == len(r["lloyd_curve"]) == 6
    text = table(records)
    assert "d" in text.splitlines()[0] and len(text.splitlines()) == 5
    assert len(check_targets(records)) == 4
    assert rst_table(records).count("   * - 2") == 1  # one row for the shape


def test_ship_grid_index_and_cli(tmp_path, capsys):
    results = train_grid(tmp_path, (2,), (3,), overrides=dict(schedule_search=2, **TINY),
                         log=lambda line: None)
    assert results[0]["d"] == 2 and "val_multistep" in results[0]
    records = evaluate_folder(tmp_path, n_tasks=4)
    index = write_index(tmp_path, heldout=heldout_index(records))
    entry = json.loads(index.read_text())[0]
    assert entry["training"]["val_multistep"] > 0
    assert set(entry["heldout"]) >= {"tasks", "normal/random", "laplace/k-means++",
                                     "normal/one_step"}
    stored = read_model(tmp_path / entry["file"])
    assert stored.model.schedule == 10 and stored.model.normalise
    assert main(["multistep", "--weights", str(tmp_path), "--tasks", "4",
                 "--out", str(tmp_path / "out")]) == 0
    assert "captured" in capsys.readouterr().out
    assert (tmp_path / "out" / "multistep.json").is_file()
    pytest.importorskip("matplotlib")
    assert plot(records, tmp_path / "f.png").is_file()


def test_shipped_index_lists_models():
    assert all("file" in e for e in shipped_index())


def test_choices_variant_and_summary():
    from benchmarks.learning.choices import VARIANTS, run_variant, summary

    assert "recipe" in VARIANTS and "no schedule search" in VARIANTS
    records = run_variant("random starts only", 2, 3, n_tasks=4,
                          budget=dict(schedule_search=2, **TINY))
    assert {r["variant"] for r in records} == {"random starts only"}
    assert "random starts only" in summary(records).splitlines()[1]
