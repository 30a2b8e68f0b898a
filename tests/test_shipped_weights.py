"""The weights shipped inside the package: present for the documented grid, intact, and
loadable without training or network."""

import itertools

import pytest
import torch

from skformer import load_model
from skformer.store import read_model, shipped_dir, shipped_index

GRID_D = (2, 4, 8, 16, 32, 64)
GRID_K = (2, 3, 4, 5, 6, 8, 10, 16)


def test_index_covers_the_documented_grid():
    shapes = {
        (e["n_features"], e["n_clusters"])
        for e in shipped_index()
        if (e["embedding"], e["loss"]) == ("binary", "l2")
    }
    assert set(itertools.product(GRID_D, GRID_K)) <= shapes


@pytest.mark.parametrize("entry", shipped_index(), ids=lambda e: e["file"])
def test_every_shipped_file_is_intact_and_described(entry):
    stored = read_model(shipped_dir() / entry["file"])  # checks the content hash
    config = stored.metadata["model_config"]
    assert (config["n_features"], config["n_clusters"], config["embedding"]) == (
        entry["n_features"], entry["n_clusters"], entry["embedding"]
    )
    assert stored.metadata["val_relative"] == pytest.approx(entry["val_relative"])
    assert all(t.device.type == "cpu" for t in stored.model.state_dict().values())


def test_shipped_model_loads_without_pretraining(tmp_path, monkeypatch):
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path))  # an empty cache
    model = load_model(4, 3, pretrain=False)
    x = torch.rand(2, 50, 4, generator=torch.Generator().manual_seed(0))
    assert model.step(x, x[:, :3]).shape == (2, 3, 4)
    assert not list(tmp_path.iterdir())  # nothing was trained or written


def test_shipped_models_are_multistep_models_with_held_out_figures():
    for entry in shipped_index():
        assert entry["training"]["val_multistep"] > 0
        heldout = entry["heldout"]
        assert heldout["tasks"] >= 32
        for family in ("normal", "laplace"):
            for start in ("random", "k-means++"):
                figures = heldout[f"{family}/{start}"]
                assert figures["ratio20"] <= 1.005  # never worse than Lloyd (issue target)
                if start == "random" and figures["headroom"] >= 0.10:
                    assert figures["captured"] >= 0.25
    stored = read_model(shipped_dir() / "d8_k6_binary_l2.safetensors")
    assert stored.model.schedule == 10 and stored.model.normalise


def test_a_shipped_model_beats_lloyd_on_fresh_tasks():
    """Re-embedded steps of the shipped d = 8, k = 6 model end well below 20 Lloyd steps
    from the same random starts, on tasks drawn here (not the training's or the
    benchmark's seeds)."""
    from skformer.losses import kmeans_cost, lloyd_costs
    from skformer.tasks import TaskConfig, sample_tasks

    model = load_model(8, 6, pretrain=False)
    tasks = sample_tasks(TaskConfig(n_points=256, n_features=8, n_clusters=6), 24,
                         generator=torch.Generator().manual_seed(123456))
    with torch.no_grad():
        ours = kmeans_cost(tasks.x, model.iterate(tasks.x, tasks.centres, 20)[:, -1])
    lloyd = lloyd_costs(tasks.x, tasks.centres, 20)[:, -1]
    assert float((ours / lloyd).mean()) < 0.95
