"""Tests of the convergence, multistep, length and loss-gap probes (paper Figs. 2, 6, 12, 5)."""

import json
import sys

import numpy as np
import pytest
import torch

from benchmarks.probes import convergence, length, loss_gap, multistep
from benchmarks.probes._common import obtain_model
from skformer.cli import main as cli_main
from skformer.losses import kmeans_cost, relative_loss
from skformer.store import load_model
from skformer.tasks import TaskConfig, sample_tasks


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plot_args(tmp_path, name: str) -> list[str]:
    return ["--plot", str(tmp_path / f"{name}.png")] if _has_matplotlib() else []


def _check_png(tmp_path, name: str) -> None:
    if _has_matplotlib():
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _strict_json(path):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(path.read_text(), parse_constant=refuse)


def _check_common(data: dict, probe: str) -> None:
    assert data["probe"] == probe
    assert data["seconds"] >= 0
    assert {"device_name", "torch", "threads", "platform"} <= set(data["machine"])
    assert data["settings"]["preset"] == "small"


# -------------------------------------------------------------------------- convergence

CONVERGENCE_TINY = ["--d", "2", "--k", "3", "--n", "12", "--steps", "4", "--eval-every", "2",
                    "--val-tasks", "4", "--n-seeds", "2", "--batch-size", "2", "--quiet"]


@pytest.fixture(scope="module")
def convergence_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("convergence")
    argv = [*CONVERGENCE_TINY, "--out", str(folder / "c.json"),
            *_plot_args(folder, "convergence")]
    assert convergence.main(argv) == 0
    return folder


def test_convergence_main_writes_json_and_png(convergence_run):
    data = _strict_json(convergence_run / "c.json")
    _check_common(data, "convergence")
    assert data["settings"]["steps"] == 4 and data["settings"]["tau"] == [0.1]
    assert len(data["records"]) == 6 * 2  # six configurations x two seeds
    assert len(data["summary"]) == 6
    configs = {(r["embedding"], r["loss"]) for r in data["summary"]}
    assert configs == set(convergence.CONFIGS)
    for row in data["summary"]:
        assert row["val"]["step"] == [0, 2, 4]
        assert row["final_median"] == row["val"]["median"][-1]
        assert row["final_q25"] <= row["final_median"] <= row["final_q75"]
        assert row["below_one"] == (row["final_median"] < 1)
        assert row["train"]["median"][0] is None  # no training loss before step 1
    _check_png(convergence_run, "convergence")


def test_convergence_configurations_of_a_seed_share_validation_tasks(convergence_run):
    # A seed fixes the validation tasks and OH/BN/NA differ only in the model, so the
    # NE and L2 runs of one embedding and seed start from the same model: same step-0 loss.
    data = _strict_json(convergence_run / "c.json")
    start = {(r["embedding"], r["loss"], r["seed"]): r["history"][0]["val_relative"]
             for r in data["records"]}
    for embedding in ("onehot", "binary", "none"):
        for seed in (0, 1):
            assert start[(embedding, "ne", seed)] == start[(embedding, "l2", seed)]


def test_curve_band_is_median_and_quartiles():
    histories = [[{"step": 0, "v": float(v)}, {"step": 5, "v": float(2 * v)}] for v in (1, 2, 3)]
    band = convergence.curve_band(histories, "v")
    assert band == {"step": [0, 5], "median": [2.0, 4.0], "q25": [1.5, 3.0],
                    "q75": [2.5, 5.0]}


# ---------------------------------------------------------------------------- multistep

MULTISTEP_TINY = ["--d", "2", "--k", "3", "--n", "24", "--tasks", "6", "--horizon", "3"]


def test_multistep_main_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert multistep.main([*MULTISTEP_TINY, "--out", str(out),
                           *_plot_args(tmp_path, "multistep")]) == 0
    data = _strict_json(out)
    _check_common(data, "multistep")
    assert data["models"][0]["file"] == "d2_k3_binary_l2.safetensors"
    assert data["models"][0]["training_config"]["n_points"] == 256
    (record,) = data["records"]
    assert record["config"] == "binary:l2"
    for kind in ("to_start", "to_lloyd"):
        assert set(record[kind]) == set(multistep.METHODS)
        for band in record[kind].values():
            assert len(band["median"]) == 3 + 1
    assert set(record["final_to_lloyd"]) == {"reembed", "naive"}
    assert 0 <= record["reembed_beats_lloyd"] <= 1
    _check_png(tmp_path, "multistep")
    assert "multistep probe" in capsys.readouterr().out


def test_multistep_all_methods_share_step_zero():
    model = load_model(4, 6, pretrain=False)
    batch = sample_tasks(TaskConfig(n_points=40, n_features=4, n_clusters=6), 5,
                         generator=torch.Generator().manual_seed(1))
    costs = multistep.cost_paths(model, batch.x, batch.centres, 4,
                                 generator=torch.Generator().manual_seed(2))
    assert {name: c.shape for name, c in costs.items()} == {m: (5, 5) for m in multistep.METHODS}
    expected = kmeans_cost(batch.x, batch.centres).double().numpy()
    for name in multistep.METHODS:
        np.testing.assert_array_equal(costs[name][:, 0], expected)
    # Lloyd's cost never increases (no empty cluster re-seeded from distinct points)
    assert np.all(np.diff(costs["lloyd"], axis=1) <= 1e-4 * costs["lloyd"][:, :1])
    summary = multistep.summarise_costs(costs)
    assert summary["start_equal"]
    for method in multistep.METHODS:
        assert summary["to_start"][method]["median"][0] == 1.0
        assert summary["to_lloyd"][method]["median"][0] == 1.0


def test_multistep_step_one_is_the_models_single_step():
    model = load_model(4, 6, pretrain=False)
    batch = sample_tasks(TaskConfig(n_points=40, n_features=4, n_clusters=6), 3,
                         generator=torch.Generator().manual_seed(4))
    costs = multistep.cost_paths(model, batch.x, batch.centres, 2,
                                 generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        one = kmeans_cost(batch.x, model(batch.x, batch.centres)).double().numpy()
    # re-embedded and naive iteration agree on the first step
    np.testing.assert_allclose(costs["reembed"][:, 1], one, rtol=1e-6)
    np.testing.assert_allclose(costs["naive"][:, 1], one, rtol=1e-6)


def test_multistep_shipped_source_refuses_unshipped_configuration():
    with pytest.raises(ValueError, match="ships 'binary:l2' models trained on normal"):
        obtain_model("shipped", 2, 3, "onehot:ne")


# ------------------------------------------------------------------------------- length

LENGTH_TINY = ["--d", "2", "--k", "3", "--n", "16", "48", "--tasks", "6",
               "--multistep-tasks", "3", "--horizon", "2"]


def test_length_main_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "l.json"
    assert length.main([*LENGTH_TINY, "--out", str(out), *_plot_args(tmp_path, "length")]) == 0
    data = _strict_json(out)
    _check_common(data, "length")
    (record,) = data["records"]
    assert record["n_train"] == 256
    assert [row["n"] for row in record["by_n"]] == [16, 48]
    for row in record["by_n"]:
        assert row["relative"]["n"] == 6 and row["multistep"]["n"] == 3
    _check_png(tmp_path, "length")
    assert "length probe" in capsys.readouterr().out


def test_length_relative_loss_is_eq20(tmp_path):
    # The probe's eq. (20) mean equals relative_loss on the same seeded tasks.
    out = tmp_path / "l.json"
    length.main(["--d", "2", "--k", "3", "--n", "40", "--tasks", "5", "--multistep-tasks", "1",
                 "--horizon", "1", "--seed", "7", "--out", str(out)])
    row = _strict_json(out)["records"][0]["by_n"][0]
    gens = [length.seeded_generator(7, 2, 3, 40, s) for s in range(2)]
    batch = sample_tasks(TaskConfig(n_points=40, n_features=2, n_clusters=3), 5,
                         generator=gens[0])
    model = load_model(2, 3, pretrain=False)
    with torch.no_grad():
        expected = relative_loss(batch.x, batch.centres, model(batch.x, batch.centres),
                                 generator=gens[1])
    assert row["relative"]["mean"] == pytest.approx(float(expected), rel=1e-6)


# ----------------------------------------------------------------------------- loss gap

GAP_TINY = ["--d", "2", "--k", "3", "--n", "16", "--tasks", "3", "--grid", "3",
            "--taus", "0.01", "0.1", "1"]


def test_loss_gap_main_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "g.json"
    assert loss_gap.main([*GAP_TINY, "--out", str(out), *_plot_args(tmp_path, "loss_gap")]) == 0
    data = _strict_json(out)
    _check_common(data, "loss-gap")
    (record,) = data["records"]
    surf = record["surface"]
    assert surf["axis"] == [-1.0, 0.0, 1.0]
    for key in ("loss", "gap_ne", "gap_l2", "tight_l2", "margin_ge_tau"):
        assert np.asarray(surf[key]).shape == (3, 3)
    assert record["at_trained"]["gap_ne"] == surf["gap_ne"][1][1]
    assert [row["tau"] for row in record["tau_curve"]] == [0.01, 0.1, 1.0]
    _check_png(tmp_path, "loss_gap")
    assert "loss-gap probe" in capsys.readouterr().out


def test_loss_gap_theory_holds_on_the_surface(tmp_path):
    out = tmp_path / "g.json"
    loss_gap.main([*GAP_TINY, "--out", str(out)])
    record = _strict_json(out)["records"][0]
    surf = record["surface"]
    # both smoothings are upper bounds of the k-means loss (up to float64 rounding)
    assert np.min(surf["min_gap_ne"]) >= -1e-12
    assert np.min(surf["min_gap_l2"]) >= -1e-12
    # the L2 bound is tight exactly where the margin is at least tau
    np.testing.assert_array_equal(surf["tight_l2"], surf["margin_ge_tau"])
    # the NE gap grows with the temperature
    ne = [row["gap_ne"] for row in record["tau_curve"]]
    assert ne == sorted(ne)


def test_point_gaps_properties(rng):
    x = torch.as_tensor(rng.random((2, 30, 3)))
    c = torch.as_tensor(rng.random((2, 4, 3)))
    for tau in (0.02, 0.3):
        g = loss_gap.point_gaps(x, c, tau)
        assert (g["ne"] - g["loss"] >= -1e-12).all()
        assert (g["l2"] - g["loss"] >= -1e-12).all()
        tight = (g["l2"] - g["loss"]) <= loss_gap.ZERO
        assert torch.equal(tight, g["margin"] >= tau)
        torch.testing.assert_close(g["loss"].sum(-1), kmeans_cost(x, c))


def test_random_directions_are_filter_normalised():
    model = load_model(2, 3, pretrain=False)
    u, v = loss_gap.random_directions(model, torch.Generator().manual_seed(0))
    for name, p in model.named_parameters():
        assert u[name].shape == p.shape
        if p.ndim == 2:
            torch.testing.assert_close(u[name].norm(dim=-1), p.detach().norm(dim=-1))
        else:
            torch.testing.assert_close(v[name].norm(), p.detach().norm())
    assert not torch.equal(u["layer.points_to_centres.q_proj.weight"],
                           v["layer.points_to_centres.q_proj.weight"])


# ----------------------------------------------------------------------------- common


def test_cli_dispatches_to_the_probes(tmp_path):
    out = tmp_path / "g.json"
    assert cli_main(["probe", "loss-gap", *GAP_TINY, "--out", str(out)]) == 0
    assert _strict_json(out)["probe"] == "loss-gap"


@pytest.mark.parametrize("module", [convergence, multistep, length, loss_gap])
def test_plot_without_matplotlib_says_how_to_install(module, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        module.main(["--plot", str(tmp_path / "x.png")])


@pytest.mark.parametrize("module", [multistep, length, loss_gap])
def test_unpaired_shapes_are_refused(module):
    with pytest.raises(SystemExit, match="paired"):
        module.main(["--d", "2", "4", "--k", "3"])
