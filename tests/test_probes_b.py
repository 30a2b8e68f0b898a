"""Tests of the shift, transfer and dissimilarity probes (paper Figs. 7, 8, 9), at tiny sizes."""

import json
import math

import numpy as np
import pytest
import torch
from scipy.stats import wasserstein_distance

from benchmarks.probes import _common, dissimilarity, shift, transfer
from skformer.cli import main as cli_main
from skformer.losses import relative_loss
from skformer.store import load_model
from skformer.tasks import FAMILIES, sample_tasks

TINY = ["--d", "2", "--k", "3", "--n", "32", "--tasks", "8", "--horizon", "2"]


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


@pytest.fixture(scope="module")
def transfer_run(tmp_path_factory):
    """One tiny transfer run (five one-step trainings), shared by the tests below."""
    folder = tmp_path_factory.mktemp("transfer")
    argv = [*TINY, "--steps", "1", "--out", str(folder / "transfer.json"),
            *_plot_args(folder, "transfer")]
    assert transfer.main(argv) == 0
    return folder


# ------------------------------------------------------------------------------- shift


def test_shift_main_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "shift.json"
    assert shift.main([*TINY, "--out", str(out), *_plot_args(tmp_path, "shift")]) == 0
    data = _strict_json(out)
    assert data["probe"] == "shift"
    assert data["settings"]["d"] == [2] and data["settings"]["tasks"] == 8
    assert {"device_name", "torch", "threads"} <= set(data["machine"])
    assert data["models"][0]["file"] == "d2_k3_binary_l2.safetensors"
    assert [r["variant"] for r in data["records"]] == list(shift.VARIANTS)
    for record in data["records"]:
        assert len(record["per_task_relative"]) == 8
        assert set(record["relative"]) >= {"mean", "median", "q25", "q75", "below_one"}
        assert record["multistep"]["n"] == 8
    assert data["settings"]["variants"]["half_scale"]["scale"] == pytest.approx(0.05)
    assert data["settings"]["variants"]["anisotropic"]["isotropic"] is False
    _check_png(tmp_path, "shift")
    assert "shift probe" in capsys.readouterr().out


def test_shift_train_variant_equals_direct_relative_loss(tmp_path):
    out = tmp_path / "shift.json"
    shift.main(["--d", "2", "--k", "3", "--n", "32", "--tasks", "16", "--horizon", "0",
                "--seed", "3", "--out", str(out)])
    record = next(r for r in _strict_json(out)["records"] if r["variant"] == "train")
    assert record["multistep"] is None

    model = load_model(2, 3, pretrain=False)
    task_gen, (baseline, _) = shift.variant_streams(3, 2, 3, "train")
    batch = sample_tasks(shift.variant_config("train", 2, 3, 32), 16, generator=task_gen)
    with torch.no_grad():
        direct = relative_loss(batch.x, batch.centres, model(batch.x, batch.centres),
                               generator=baseline, reduction="none")
    np.testing.assert_allclose(record["per_task_relative"], direct.numpy(), rtol=1e-5)
    assert record["relative"]["mean"] == pytest.approx(float(direct.mean()), rel=1e-5)


def test_shift_variants_follow_the_spec():
    base = shift.variant_config("train", 4, 3, 16)
    assert (base.family, base.scale, base.isotropic, base.equal_weights) == (
        "normal", 0.1, True, True)
    assert shift.variant_config("unequal_weights", 4, 3, 16).equal_weights is False
    assert shift.variant_config("double_scale", 4, 3, 16).scale == pytest.approx(0.2)


def test_shift_rejects_unpaired_shapes():
    with pytest.raises(SystemExit):
        shift.main(["--d", "2", "8", "--k", "3"])


def test_shipped_source_only_for_the_training_distribution():
    with pytest.raises(ValueError, match="no shipped model for d=2, k=3, binary:l2, cauchy"):
        _common.obtain_model("shipped", 2, 3, family="cauchy")


def test_describe_and_json_handle_non_finite(tmp_path):
    summary = _common.describe([0.5, math.inf, 0.8])
    assert summary["mean"] is None and summary["n_nonfinite"] == 1
    assert summary["below_one"] == pytest.approx(2 / 3)
    _common.write_json(tmp_path / "x.json", {"a": [math.nan, 1.0], "b": math.inf})
    assert _strict_json(tmp_path / "x.json") == {"a": [None, 1.0], "b": None}


# ---------------------------------------------------------------------------- transfer


def test_transfer_main_writes_a_five_by_five_grid(transfer_run):
    data = _strict_json(transfer_run / "transfer.json")
    assert data["families"] == list(FAMILIES)
    assert len(data["models"]) == 5 and len(data["records"]) == 25
    for metric in ("relative_mean", "relative_median", "multistep_mean", "multistep_median"):
        grid = np.asarray(data["grids"][metric], dtype=float)
        assert grid.shape == (5, 5) and np.isfinite(grid).all()
    assert {m["train_family"] for m in data["models"]} == set(FAMILIES)
    assert set(data["reference_untrained"]) == set(FAMILIES)
    assert data["findings"]["worst_train_family"] in FAMILIES
    _check_png(transfer_run, "transfer")


def test_transfer_grid_orientation():
    records = [{"train_family": "cauchy", "test_family": "normal", "model_seed": s,
                "relative": {"mean": float(s)}, "multistep": None} for s in (1, 2, 6)]
    grid = transfer.transfer_grid(records)
    assert grid[FAMILIES.index("normal"), FAMILIES.index("cauchy")] == 2.0  # seed median
    assert np.isnan(grid[FAMILIES.index("cauchy"), FAMILIES.index("normal")])


def test_transfer_evaluation_tasks_are_shared_and_seeded():
    a = transfer.evaluation_tasks("gumbel", 2, 3, 16, 4, seed=1, device="cpu")
    b = transfer.evaluation_tasks("gumbel", 2, 3, 16, 4, seed=1, device="cpu")
    assert torch.equal(a.x, b.x)


# ------------------------------------------------------------------------ dissimilarity


def test_dissimilarity_main_through_the_cli(tmp_path, capsys):
    out = tmp_path / "dis.json"
    argv = ["probe", "dissimilarity", "--tasks", "2", "--n", "32", "--d", "2", "--k", "3",
            "--out", str(out), *_plot_args(tmp_path, "dis")]
    assert cli_main(argv) == 0
    data = _strict_json(out)
    assert np.asarray(data["emd"]).shape == (10, 10)
    assert np.asarray(data["family_emd"]).shape == (5, 5)
    assert data["task_family"][:3] == ["normal", "normal", "cauchy"]
    assert data["findings"]["least_dissimilar_to_cauchy"] in FAMILIES
    _check_png(tmp_path, "dis")
    assert "dissimilarity probe" in capsys.readouterr().out


def test_dissimilarity_beside_transfer(transfer_run, tmp_path):
    out = tmp_path / "dis.json"
    argv = ["--tasks", "2", "--transfer", str(transfer_run / "transfer.json"),
            "--out", str(out), *_plot_args(tmp_path, "dis")]
    assert dissimilarity.main(argv) == 0
    data = _strict_json(out)
    assert (data["settings"]["n"], data["settings"]["d"], data["settings"]["k"]) == (32, 2, 3)
    correlation = data["transfer_correlation"]["relative_mean"]
    assert correlation["cells"] == 20 and -1 <= correlation["rho"] <= 1
    _check_png(tmp_path, "dis")


def test_emd_matrix_is_symmetric_with_zero_diagonal():
    samples = (dissimilarity.distance_samples("normal", tasks=2, n=24, d=2, k=3, seed=0)
               + dissimilarity.distance_samples("cauchy", tasks=2, n=24, d=2, k=3, seed=0))
    assert samples[0].shape == (24 * 3,)
    matrix = dissimilarity.emd_matrix(samples)
    np.testing.assert_array_equal(matrix, matrix.T)
    np.testing.assert_array_equal(np.diag(matrix), 0.0)
    assert (matrix[~np.eye(4, dtype=bool)] > 0).all()
    assert matrix[0, 3] == wasserstein_distance(samples[0], samples[3])


def test_family_matrix_leaves_out_the_zero_diagonal():
    matrix = np.array([[0, 1, 4, 4], [1, 0, 4, 4], [4, 4, 0, 3], [4, 4, 3, 0.0]])
    np.testing.assert_array_equal(dissimilarity.family_matrix(matrix, 2), [[1, 4], [4, 3]])
