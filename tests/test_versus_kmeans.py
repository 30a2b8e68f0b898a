"""The KMeans comparison benchmark: data sets, records, summaries, context, CLI."""

import json
import math
import sys
from dataclasses import fields

import numpy as np
import pytest

from benchmarks import versus_kmeans as vk
from skformer.cli import main


@pytest.fixture(scope="module")
def iris_records():
    return vk.compare(vk.load_bundled("iris"), [0, 1], n_init=1, device="cpu")


@pytest.mark.parametrize("make", [vk.blobs_iso, vk.blobs_aniso, vk.blobs_unequal])
def test_generators_are_deterministic_with_the_advertised_shape(make):
    a = make(300, d=4, k=5, seed=3)
    b = make(300, d=4, k=5, seed=3)
    c = make(300, d=4, k=5, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    assert a.X.shape == (300, 4) and a.X.dtype == np.float64 and a.y.shape == (300,)
    assert set(np.unique(a.y)) == set(range(5)) and a.n_clusters == 5
    assert a.name == make.__name__.replace("_", "-") and a.description
    assert make(50, d=3, k=2, seed=0, dtype=np.float32).X.dtype == np.float32


def test_generated_cluster_sizes_and_spreads():
    assert sorted(np.bincount(vk.blobs_iso(303, d=2, k=3).y)) == [101, 101, 101]
    unequal = vk.blobs_unequal(550, d=2, k=10, cluster_std=1.0, seed=0)
    assert np.bincount(unequal.y).tolist() == [10 * (j + 1) for j in range(10)]
    spread = [unequal.X[unequal.y == j].std() for j in (0, 9)]
    assert spread[0] > 2 * spread[1]  # std 1.5 against 0.5
    assert vk.default_std(8) == pytest.approx(1.4 * math.sqrt(8))


def test_make_datasets_expands_generated_sets_over_n_and_d():
    sets = list(vk.make_datasets(["wine", "blobs-aniso"], ns=[40, 60], ds=[2, 3], k=4))
    assert [(s.name, *s.X.shape) for s in sets] == [
        ("wine", 178, 13), ("blobs-aniso", 40, 2), ("blobs-aniso", 40, 3),
        ("blobs-aniso", 60, 2), ("blobs-aniso", 60, 3)]
    assert abs(sets[0].X.mean()) < 1e-12  # standardised
    with pytest.raises(ValueError, match="data set must be one of"):
        list(vk.make_datasets(["nope"]))


def test_records_and_summary_are_sane(iris_records):
    r0, r1 = iris_records
    assert r0.kmeans_first and not r1.kmeans_first
    for r in iris_records:
        assert (r.dataset, r.n, r.d, r.k) == ("iris", 150, 4, 3)
        assert r.inertia_ratio > 0 and r.time_ratio > 0
        assert r.inertia_ratio == pytest.approx(r.ours_inertia / r.kmeans_inertia)
        for v in (r.kmeans_ari, r.ours_ari, r.kmeans_nmi, r.ours_nmi):
            assert -1.0 <= v <= 1.0
        assert r.kmeans_n_iter >= 1 and r.ours_n_learned_steps + r.ours_n_lloyd_steps >= 1
    (s,) = vk.summarise(iris_records)
    assert {f.name for f in fields(vk.Summary)} >= {
        "inertia_ratio_median", "fraction_ratio_le_1", "ours_ari_median",
        "kmeans_ari_median", "time_ratio_median", "kmeans_fit_ms_median"}
    assert s.seeds == 2 and 0 <= s.ratio_le_1 <= 2 and 0.0 <= s.fraction_ratio_le_1 <= 1.0
    assert s.inertia_ratio_median == pytest.approx(
        np.median([r.inertia_ratio for r in iris_records]))
    # The plain Lloyd run competes in every fit: never above KMeans (same starts).
    assert s.inertia_ratio_max <= 1.0 + 1e-9
    assert 0 <= s.learned_selected <= s.seeds
    assert all(r.ours_selected in ("lloyd", "learned") for r in iris_records)
    table = vk.format_summary([s])
    assert "| iris | 150 | 4 | 3 |" in table and table.count("\n") == 2


def test_context_experiment_is_relative_to_all_keys():
    records = vk.context_experiment(300, 4, 3, seeds=[0, 1], contexts=[64],
                                    finishes=["none"])
    assert {(r.max_context, r.seed) for r in records} == {(64, 0), (64, 1), (None, 0),
                                                          (None, 1)}
    assert all(r.relative_inertia == 1.0 for r in records if r.max_context is None)
    assert all(r.relative_inertia > 0 and r.n_lloyd_steps == 0 for r in records)
    summaries = vk.summarise_context(records)
    assert [(s.max_context, s.seeds) for s in summaries] == [(64, 2), (None, 2)]
    assert "| none | all |" in vk.format_context(summaries)


def test_cli_writes_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    argv = ["bench", "kmeans", "--datasets", "iris", "blobs-iso", "--n", "300", "--d", "4",
            "--k", "3", "--seeds", "2", "--context", "--context-n", "300", "--context-d",
            "4", "--contexts", "64", "none", "--out", str(out), "--plot", str(png)]
    assert main(argv) == 0
    payload = json.loads(out.read_text())
    assert {"machine", "options", "records", "summaries", "context", "memory"} <= set(payload)
    assert {"platform", "cpu_count", "torch", "sklearn", "threads"} <= set(payload["machine"])
    assert len(payload["records"]) == 4
    assert [s["dataset"] for s in payload["summaries"]] == ["iris", "blobs-iso"]
    assert len(payload["context"]["summaries"]) == 4  # 2 finishes x 2 contexts
    assert png.stat().st_size > 0
    printed = capsys.readouterr().out
    assert "| blobs-iso | 300 | 4 | 3 |" in printed and "| lloyd | 64 |" in printed


def test_cli_reports_a_missing_model(capsys, monkeypatch, tmp_path):
    from skformer.store import locations

    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path))  # an empty cache: k=7 not stored
    # No shipped weights either (every shape has a generic model where they are shipped).
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "no-shipped-weights")
    assert main(["bench", "kmeans", "--datasets", "blobs-iso", "--n", "50", "--d", "3",
                 "--k", "7", "--seeds", "1", "--learned-starts", "1"]) == 2
    assert "skformer pretrain" in capsys.readouterr().err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_peak_memory_in_a_fresh_process():
    record = vk.peak_memory("ours", n=20_000, d=32, k=10)
    assert record.x_nbytes == 20_000 * 32 * 4 and record.method in ("VmHWM", "ru_maxrss")
    assert record.peak_bytes > 0 and record.over_x == record.peak_bytes / record.x_nbytes


def test_kmeans_can_be_timed_on_one_blas_thread(monkeypatch):
    # --kmeans-blas-threads: KMeans' fit runs under threadpoolctl's limit, ours as it is.
    import threadpoolctl

    seen = []
    original = threadpoolctl.threadpool_limits

    def spy(limits=None, user_api=None):
        seen.append((limits, user_api))
        return original(limits=limits, user_api=user_api)

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", spy)
    records = vk.compare(vk.load_bundled("iris"), [0], n_init=1, device="cpu", warmup=False,
                         kmeans_blas_threads=1)
    assert sorted(seen, key=str) == [(1, "blas"), (None, "blas")]
    assert records[0].inertia_ratio == pytest.approx(1.0)
