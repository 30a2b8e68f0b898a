"""The equal-time benchmark: KMeans' curve read at a time, the judge, records, CLI."""

import json
import math
import sys
from dataclasses import fields

import numpy as np
import pytest
import torch

from benchmarks import equal_time as et
from skformer.cli import main

N_INITS = [1, 2, 4, 8, 16]
TIMES = [1.0, 2.0, 4.0, 8.0, 16.0]
INERTIAS = [16.0, 8.0, 4.0, 2.0, 1.0]


# --------------------------------------------------------------------------- the judge


@pytest.mark.parametrize("t, expected, lower, upper", [
    (2 ** 1.5, 6.0, 2, 4),  # halfway in log time between n_init=2 and 4
    (2 ** 3.25, 1.75, 8, 16),  # a quarter of the way from 8 to 16
    (1.0, 16.0, 1, 2),  # exactly n_init=1's time
    (4.0, 4.0, 4, 8),  # exactly a point: its inertia
    (16.0, 1.0, 8, 16),  # exactly the last time
])
def test_kmeans_at_time_interpolates_linearly_in_log_time(t, expected, lower, upper):
    at = et.kmeans_at_time(N_INITS, TIMES, INERTIAS, t)
    assert at.inertia == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert (at.status, at.lower, at.upper) == (et.INTERPOLATED, lower, upper)


def test_kmeans_at_time_outside_the_curve():
    faster = et.kmeans_at_time(N_INITS, TIMES, INERTIAS, 0.5)
    assert faster == et.EqualTime(16.0, et.FASTER, None, 1)
    assert faster.status == "faster than one KMeans run"
    slower = et.kmeans_at_time(N_INITS, TIMES, INERTIAS, 40.0)
    assert slower == et.EqualTime(1.0, et.SLOWER, 16, None)


def test_kmeans_at_time_matches_np_interp_in_log_time():
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.uniform(0.1, 2.0, 5))
    inertias = rng.uniform(1.0, 2.0, 5)
    for t in rng.uniform(times[0], times[-1], 20):
        oracle = np.interp(np.log(t), np.log(times), inertias)
        got = et.kmeans_at_time(N_INITS, times, inertias, t).inertia
        assert got == pytest.approx(oracle, rel=1e-12)


def test_kmeans_at_time_takes_points_in_order_of_n_init():
    order = [3, 0, 4, 1, 2]
    shuffled = [[v[i] for i in order] for v in (N_INITS, TIMES, INERTIAS)]
    assert et.kmeans_at_time(*shuffled, 3.0) == et.kmeans_at_time(N_INITS, TIMES, INERTIAS,
                                                                   3.0)


def test_kmeans_at_time_non_monotone_times_take_a_running_maximum():
    # n_init=4 measured faster than n_init=2: it counts as n_init=2's time (3.0).
    n_inits, times, inertias = [1, 2, 4, 8], [1.0, 3.0, 2.0, 4.0], [10.0, 8.0, 6.0, 5.0]
    at_tie = et.kmeans_at_time(n_inits, times, inertias, 3.0)
    assert at_tie == et.EqualTime(6.0, et.INTERPOLATED, 4, 8)  # most restarts at that time
    at = et.kmeans_at_time(n_inits, times, inertias, 2.0)
    assert at.inertia == pytest.approx(10.0 - 2.0 * math.log(2.0) / math.log(3.0), rel=1e-12)
    assert (at.lower, at.upper) == (1, 2)
    assert et.kmeans_at_time(n_inits, times, inertias, 0.99).status == et.FASTER
    assert et.kmeans_at_time(n_inits, times, inertias, 3.5).inertia == pytest.approx(
        6.0 - math.log(3.5 / 3.0) / math.log(4.0 / 3.0), rel=1e-12)


def test_kmeans_at_time_non_monotone_inertias_are_taken_as_given():
    at = et.kmeans_at_time([1, 2, 4], [1.0, 2.0, 4.0], [10.0, 12.0, 8.0], 2 ** 0.5)
    assert at.inertia == pytest.approx(11.0, rel=1e-12)
    assert et.kmeans_at_time([1, 2, 4], [1.0, 2.0, 4.0], [10.0, 12.0, 8.0],
                             2 ** 1.5).inertia == pytest.approx(10.0, rel=1e-12)


def test_kmeans_at_time_single_point_and_errors():
    assert et.kmeans_at_time([1], [2.0], [5.0], 2.0) == et.EqualTime(5.0, et.INTERPOLATED, 1, 1)
    assert et.kmeans_at_time([1], [2.0], [5.0], 1.0).status == et.FASTER
    assert et.kmeans_at_time([1], [2.0], [5.0], 3.0).status == et.SLOWER
    with pytest.raises(ValueError, match="same length"):
        et.kmeans_at_time([1, 2], [1.0], [1.0], 1.0)
    with pytest.raises(ValueError, match="same length"):
        et.kmeans_at_time([], [], [], 1.0)
    with pytest.raises(ValueError, match="positive"):
        et.kmeans_at_time([1], [1.0], [1.0], 0.0)


def test_needs_n_init():
    assert et.needs_n_init(N_INITS, INERTIAS, 16.0) == 1
    assert et.needs_n_init(N_INITS, INERTIAS, 5.0) == 4
    assert et.needs_n_init(N_INITS, INERTIAS, 0.5) is None
    assert et.needs_n_init(N_INITS, INERTIAS, 4.0 / (1 + 1e-7)) == 4  # rounding: a match
    assert et.needs_n_init(N_INITS, INERTIAS, 4.0 / (1 + 1e-5)) == 8
    assert et.needs_n_init([4, 1, 2], [3.0, 9.0, 3.0], 3.0) == 2  # smallest n_init
    assert et.needs_n_init([1, 2, 4], [9.0, 3.0, 4.0], 3.5) == 2  # non-monotone


# --------------------------------------------------------------------------- summaries


def _record(method, value, seed, seconds, inertia, selected=None):
    ours = method == "ours"
    return et.FitRecord(
        dataset="toy", n=100, d=2, k=3, seed=seed, method=method,
        n_init=1 if ours else value, learned_starts=value if ours else None, position=0,
        inertia=inertia, seconds=seconds, n_iter=5, selected_run=selected,
        n_learned_steps=3 if ours else None, n_lloyd_steps=2 if ours else None,
        learned_skipped=None)


def test_summarise_judges_medians_against_the_curve():
    records = []
    for seed, jitter in enumerate([1.0, 1.5, 0.5]):  # medians: the jitter 1.0 seed
        for n_init, (t, inertia) in zip(N_INITS, zip(TIMES, INERTIAS, strict=True),
                                        strict=True):
            records.append(_record("kmeans", n_init, seed, t * jitter, inertia * jitter))
        records.append(_record("ours", 0, seed, 0.5 * jitter, 16.0 * jitter, "lloyd"))
        records.append(_record("ours", 1, seed, 2 ** 1.5 * jitter, 3.0 * jitter, "learned"))
        records.append(_record("ours", 3, seed, 64.0 * jitter, 0.5 * jitter,
                               "learned" if seed else "lloyd"))
    summary = et.summarise(records)
    assert [c.n_init for c in summary.curves] == N_INITS
    assert [c.seconds_median for c in summary.curves] == TIMES
    assert [c.inertia_median for c in summary.curves] == INERTIAS
    fast, one, three = summary.points
    assert (fast.learned_starts, fast.equal_time_status, fast.equal_time_ratio) == (
        0, et.FASTER, 1.0)
    assert (fast.time_ratio, fast.match_n_init, fast.match_time_ratio) == (0.5, 1, 0.5)
    assert one.kmeans_equal_time_inertia == pytest.approx(6.0, rel=1e-12)
    assert one.equal_time_ratio == pytest.approx(0.5, rel=1e-12)  # wins at equal time
    assert one.bracket == (2, 4) and one.match_n_init == 8
    assert one.match_time_ratio == pytest.approx(2 ** 1.5 / 8.0, rel=1e-12)
    assert one.inertia_ratio_n_init_1 == 3.0 / 16.0 and one.learned_kept == 3
    assert three.equal_time_status == et.SLOWER and three.bracket == (16, None)
    assert three.equal_time_ratio == 0.5 and three.match_n_init is None
    assert three.match_time_ratio is None and three.learned_kept == 2
    assert all(p.seeds == 3 for p in summary.points)
    table = et.format_points(summary)
    assert "| toy n=100 d=2 | 1 | 2.83 | 0.5000 | 8 | 0.35 | 3/3 |" in table
    assert "0.5000 (slower than curve) | > 16 |" in table
    assert "| toy n=100 d=2 | 16 | 16.000 | 16.00 | 0.0625 | 5 |" in et.format_curves(summary)


def test_summarise_means_count_a_poor_seed_that_medians_hide():
    records = []
    for seed, poor in enumerate([1.0, 1.0, 4.0]):  # one seed's first run ends poorly
        records.append(_record("kmeans", 1, seed, 1.0, poor))
        records.append(_record("kmeans", 2, seed, 2.0, 1.0))
        records.append(_record("ours", 1, seed, 2 ** 0.5, 1.0, "learned"))
    summary = et.summarise(records)
    assert [(c.inertia_median, c.inertia_mean) for c in summary.curves] == [(1.0, 2.0),
                                                                           (1.0, 1.0)]
    (p,) = summary.points
    assert (p.equal_time_ratio, p.match_n_init) == (1.0, 1)
    assert p.inertia_mean == 1.0 and p.match_n_init_mean == 2
    assert p.equal_time_ratio_mean == pytest.approx(1.0 / 1.5, rel=1e-12)
    assert "| 1.0000 | 1 | 1.41 | 3/3 | 1.414 | 0.6667 | 2 |" in et.format_points(summary)


def test_summarise_without_kmeans_records_has_no_points():
    summary = et.summarise([_record("ours", 1, 0, 1.0, 1.0)])
    assert summary.curves == [] and summary.points == []


# --------------------------------------------------------------------------- runs


def test_methods_alternate_and_rotate():
    plan = et.methods([1, 2], [0, 1, 3])
    assert [m.label for m in plan] == ["n_init=1", "r=0", "n_init=2", "r=1", "r=3"]
    orders = [[m.label for m in et.fit_order(plan, i)] for i in range(len(plan))]
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert {o[0] for o in orders} == set(orders[0])  # every method goes first once


@pytest.fixture(scope="module")
def iris_records():
    return et.run_dataset(next(et.datasets(["iris"], ns=[], ds=[], k=3)), [0, 1],
                          n_inits=[1, 2], learned_starts=[0, 1], device="cpu")


def test_run_dataset_records(iris_records):
    assert len(iris_records) == 2 * (2 + 2)
    assert {f.name for f in fields(et.FitRecord)} >= {
        "inertia", "seconds", "n_iter", "selected_run", "n_learned_steps", "learned_skipped"}
    by = {(r.seed, r.method, r.n_init if r.method == "kmeans" else r.learned_starts): r
          for r in iris_records}
    assert len(by) == 8
    assert [r.position for r in iris_records] == [0, 1, 2, 3] * 2
    assert iris_records[0].method == "kmeans" and iris_records[4].method == "ours"  # rotated
    for r in iris_records:
        assert (r.dataset, r.n, r.d, r.k) == ("iris", 150, 4, 3)
        assert r.seconds > 0 and r.inertia > 0 and r.n_iter >= 1
        if r.method == "kmeans":
            assert r.learned_starts is None and r.selected_run is None
            assert r.n_learned_steps is None and r.learned_skipped is None
        else:
            assert r.n_init == 1 and r.selected_run in ("lloyd", "learned")
            assert r.n_learned_steps >= 0 and r.n_lloyd_steps >= 0
    for seed in (0, 1):
        km1, km2 = by[seed, "kmeans", 1], by[seed, "kmeans", 2]
        fast, learned = by[seed, "ours", 0], by[seed, "ours", 1]
        # The fast mode is KMeans' run from the same k-means++ centres; the learned mode
        # keeps that run when it is better; two restarts contain the first.
        assert fast.inertia == pytest.approx(km1.inertia, rel=1e-9)
        assert fast.selected_run == "lloyd" and fast.n_learned_steps == 0
        assert fast.learned_skipped.startswith("learned_starts=0")
        assert learned.inertia <= km1.inertia * (1 + 1e-9)
        assert km2.inertia <= km1.inertia * (1 + 1e-9)
    summary = et.summarise(iris_records)
    assert [c.n_init for c in summary.curves] == [1, 2]
    assert [p.learned_starts for p in summary.points] == [0, 1]


# --------------------------------------------------------------------------- CLI


def test_cli_writes_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "et.json", tmp_path / "et.png"
    argv = ["bench", "equal-time", "--datasets", "iris", "blobs-iso", "--n", "300",
            "--d", "4", "--k", "3", "--seeds", "2", "--n-init", "1", "2",
            "--learned-starts", "0", "1", "--threads", "1", "--no-peers", "--out", str(out),
            "--plot", str(png)]
    threads = torch.get_num_threads()
    assert main(argv) == 0
    assert torch.get_num_threads() == threads  # restored
    payload = json.loads(out.read_text())
    assert payload["machine"]["threads_used"]["torch"] == 1
    assert {"machine", "options", "loadavg_before", "loadavg_after", "wall_seconds",
            "datasets", "records", "curves", "points"} <= set(payload)
    assert len(payload["loadavg_before"]) == 3 and len(payload["loadavg_after"]) == 3
    assert [(e["dataset"], e["n"], e["seeds"]) for e in payload["datasets"]] == [
        ("iris", 150, 2), ("blobs-iso", 300, 2)]
    assert len(payload["records"]) == 2 * 2 * 4 and len(payload["curves"]) == 4
    assert [(p["dataset"], p["learned_starts"]) for p in payload["points"]] == [
        ("iris", 0), ("iris", 1), ("blobs-iso", 0), ("blobs-iso", 1)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "| blobs-iso n=300 d=4 | 1 |" in printed and "# wall" in printed


def test_cli_presets_and_explicit_options():
    parser = et.cli._parser()
    default = et.cli._options(parser, [])
    assert default.datasets == list(et.DEFAULT.datasets) and default.n == [10**4, 10**5, 10**6]
    assert (default.seeds, default.large_seeds, default.n_init, default.learned_starts) == (
        10, 5, [1, 2, 4, 8, 16], [0, 1, 2, 3])
    quick = et.cli._options(parser, ["--quick", "--seeds", "2", "--n", "1e3"])
    assert quick.datasets == list(et.QUICK.datasets) and quick.n == [1000]
    assert (quick.seeds, quick.large_seeds) == (2, 2)
    with pytest.raises(SystemExit):
        et.cli._options(parser, ["--n-init", "0"])


def test_cli_reports_a_missing_model(capsys, monkeypatch, tmp_path):
    from skformer.store import locations

    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path))  # an empty cache: k=7 not stored
    # No shipped weights either (every shape has a generic model where they are shipped).
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "no-shipped-weights")
    assert main(["bench", "equal-time", "--datasets", "blobs-iso", "--n", "50", "--d", "3",
                 "--k", "7", "--seeds", "1", "--n-init", "1", "--learned-starts", "1"]) == 2
    assert "skformer pretrain" in capsys.readouterr().err


def test_plot_without_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    summary = et.summarise([_record("kmeans", 1, 0, 1.0, 1.0)])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        et.plot_summary(summary, str(tmp_path / "x.png"))


def test_repeats_keep_each_fits_least_time():
    iris = next(et.datasets(["iris"], ns=[], ds=[], k=3))
    records = et.run_dataset(iris, [0, 1], n_inits=[1], learned_starts=[0], device="cpu",
                             warmup=False, repeats=3)
    assert len(records) == 2 * 2
    for r in records:
        assert len(r.repeat_seconds) == 3 and r.seconds == min(r.repeat_seconds)
    with pytest.raises(SystemExit):
        et.cli.main(["--quick", "--repeats", "0"])
