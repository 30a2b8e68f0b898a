"""The equal-time benchmark's peers: Breathing K-Means and faiss judged against KMeans'
curve, every method's gap to the best inertia known, and peers skipped where missing."""

import json

import pytest

from benchmarks import equal_time as et
from benchmarks import peers as peers_module
from benchmarks.equal_time.runs import LONG_SEARCH, PEERS, Method, peer_methods
from skformer.cli import main


def _record(method, value, seed, seconds, inertia):
    ours, faiss = method == "ours", method == "faiss"
    return et.FitRecord(
        dataset="toy", n=100, d=2, k=3, seed=seed, method=method,
        n_init=1 if ours or faiss else value, learned_starts=value if ours else None,
        position=0, inertia=inertia, seconds=seconds, n_iter=5,
        selected_run="lloyd" if ours else None, n_learned_steps=3 if ours else None,
        n_lloyd_steps=2 if ours else None, learned_skipped=None,
        nredo=value if faiss else None)


def _records():
    """Three seeds; per method (time, inertia) of the median seed, the others jittered."""
    plan = [("kmeans", 1, 1.0, 110.0), ("kmeans", 2, 2.0, 105.0), ("kmeans", 4, 4.0, 104.0),
            ("ours", 1, 2.0, 102.0), ("bkm", 1, 2 ** 1.5, 101.0), ("faiss", 1, 0.5, 120.0),
            ("faiss", 10, 8.0, 103.0), ("long", 10, 20.0, 100.5)]
    records = []
    for seed, jitter in enumerate([1.0, 1.1, 0.99]):
        for method, value, t, inertia in plan:
            records.append(_record(method, value, seed, t * jitter, inertia * jitter))
    return records


def test_record_config_names_every_method():
    configs = [r.config for r in _records()[:8]]
    assert [m.label for m in configs] == ["n_init=1", "n_init=2", "n_init=4", "r=1", "bkm",
                                          "faiss-1", "faiss-10", "long"]
    assert configs[6] == Method("faiss", 10) and configs[7] == LONG_SEARCH


def test_gaps_to_the_best_inertia_known():
    summary = et.summarise(_records())
    gaps = {g.label: g for g in summary.gaps}
    assert list(gaps) == ["n_init=1", "n_init=2", "n_init=4", "r=1", "bkm", "faiss-1",
                          "faiss-10", "long"]
    # The best known is the lowest run of all: the long search on the 0.99 seed.
    best = 100.5 * 0.99
    assert all(g.best == best and g.best_by == "long, seed 2" for g in gaps.values())
    for label, inertia in [("n_init=1", 110.0), ("bkm", 101.0), ("long", 100.5)]:
        g = gaps[label]
        assert g.gap_median == pytest.approx(100.0 * (inertia / best - 1.0), rel=1e-12)
        mean = sum(inertia * j / best - 1.0 for j in (1.0, 1.1, 0.99)) * 100.0 / 3
        assert g.gap_mean == pytest.approx(mean, rel=1e-12)
        assert g.seeds == 3
    assert gaps["bkm"].seconds_median == 2 ** 1.5
    assert gaps["bkm"].time_ratio == pytest.approx(2 ** 1.5, rel=1e-12)
    assert gaps["n_init=1"].time_ratio == 1.0
    assert min(g.gap_median for g in gaps.values()) == pytest.approx(
        100.0 * (1.0 / 0.99 - 1.0))  # the long search's median seed: not the best run
    table = et.format_gaps(summary)
    assert f"| toy n=100 d=2 | n_init=1 | {gaps['n_init=1'].gap_median:.3f} |" in table
    assert f"| 1.000 | 1.00 | {best:.6g} (long, seed 2) |" in table
    assert "| toy n=100 d=2 | faiss-10 |" in table and table.count("(long, seed 2)") == 1


def test_gaps_without_kmeans_have_no_time_ratio():
    (g,) = et.gaps_to_best([_record("bkm", 1, 0, 2.0, 10.0)])
    assert (g.gap_median, g.time_ratio, g.best_by) == (0.0, None, "bkm, seed 0")


def test_peers_are_judged_against_the_curve_like_our_points():
    summary = et.summarise(_records())
    points = {p.label: p for p in summary.points}
    assert list(points) == ["r=1", "bkm", "faiss-1", "faiss-10", "long"]
    bkm = points["bkm"]
    assert (bkm.method, bkm.learned_starts, bkm.n_learned_steps_median) == ("bkm", None, None)
    # Halfway in log time between n_init=2 (105) and n_init=4 (104).
    assert bkm.kmeans_equal_time_inertia == pytest.approx(104.5, rel=1e-12)
    assert bkm.equal_time_ratio == pytest.approx(101.0 / 104.5, rel=1e-12)
    assert bkm.bracket == (2, 4) and bkm.match_n_init is None
    assert bkm.time_ratio == pytest.approx(2 ** 1.5, rel=1e-12)
    assert points["faiss-1"].equal_time_status == et.FASTER
    assert points["faiss-1"].equal_time_ratio == pytest.approx(120.0 / 110.0, rel=1e-12)
    assert points["faiss-1"].match_n_init == 1  # KMeans' first point is lower already
    assert points["faiss-10"].equal_time_status == et.SLOWER
    assert points["faiss-10"].match_n_init is None
    assert points["r=1"].learned_starts == 1 and points["r=1"].label == "r=1"
    table = et.format_points(summary)
    assert f"| toy n=100 d=2 | bkm | 2.83 | {101.0 / 104.5:.4f} | > 4 |  | - |" in table
    assert "| toy n=100 d=2 | 1 | 2.00 |" in table  # our row: r as before


def test_peer_methods_skip_missing_packages(monkeypatch):
    asked = []

    def available(packages):
        asked.append(list(packages))
        return ["faiss"], {"bkmeans": "No module named 'bkmeans'"}

    monkeypatch.setattr(peers_module, "available", available)
    found, missing = peer_methods()
    assert found == [Method("faiss", 1), Method("faiss", 10)]
    assert missing == {"bkmeans": "No module named 'bkmeans'"}
    assert sorted(set(asked[0])) == ["bkmeans", "faiss"]
    peer_methods(long_search=False)
    assert asked[1] == ["bkmeans", "faiss", "faiss"]  # no long search asked for


def test_cli_skips_missing_peers_with_a_note(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(peers_module, "available", lambda packages: (
        [], {p: f"No module named {p!r}" for p in packages}))
    out = tmp_path / "et.json"
    assert main(["bench", "equal-time", "--datasets", "iris", "--seeds", "1", "--n-init",
                 "1", "2", "--learned-starts", "0", "--threads", "1", "--out",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    for package in ("bkmeans", "faiss"):
        assert printed.count(f"# peers needing {package} skipped") == 1
    assert '".[bench]"' in printed and "bench extra" in printed
    payload = json.loads(out.read_text())
    assert payload["peers"] == [] and set(payload["skipped"]) == {"bkmeans", "faiss"}
    assert {r["method"] for r in payload["records"]} == {"kmeans", "ours"}
    assert [g["label"] for g in payload["gaps"]] == ["n_init=1", "n_init=2", "r=0"]
    assert min(g["gap_median"] for g in payload["gaps"]) == 0.0
    assert "# every method's gap to the best inertia known" in printed


def test_cli_peer_options():
    parser = et.cli._parser()
    default = et.cli._options(parser, ["--quick"])
    assert default.peers is True and default.long_search is True
    off = et.cli._options(parser, ["--no-peers", "--no-long-search"])
    assert off.peers is False and off.long_search is False


@pytest.mark.parametrize("package, peers", [
    ("bkmeans", [PEERS[0], LONG_SEARCH]),
    ("faiss", [PEERS[1], PEERS[2]]),
])
def test_run_dataset_runs_the_peers(package, peers):
    pytest.importorskip(package)
    iris = next(et.datasets(["iris"], ns=[], ds=[], k=3))
    records = et.run_dataset(iris, [0, 1], n_inits=[1], learned_starts=[0], peers=peers,
                             device="cpu", repeats=2)
    assert len(records) == 2 * (2 + len(peers))
    for i in (0, 1):  # the peers in the same rotated rounds
        round_ = records[4 * i: 4 * i + 4]
        assert [r.position for r in round_] == [0, 1, 2, 3]
        assert [r.config for r in round_] == et.fit_order(et.methods([1], [0], peers), i)
    for r in records:
        assert r.inertia > 0 and r.seconds > 0 and len(r.repeat_seconds) == 2
        if r.method == "faiss":
            assert r.nredo == r.config.value and r.n_init == 1
        elif r.method in ("bkm", "long"):
            assert r.nredo is None and r.n_init == r.config.value
    summary = et.summarise(records)
    assert [p.label for p in summary.points] == ["r=0", *(m.label for m in peers)]
    assert len(summary.gaps) == 2 + len(peers)
    assert {g.best for g in summary.gaps} == {min(r.inertia for r in records)}
    assert min(g.gap_median for g in summary.gaps) >= 0.0


def test_plot_draws_the_peers(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "peers.png"
    et.plot_summary(et.summarise(_records()), str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
