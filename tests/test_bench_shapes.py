"""The shapes benchmark: its measures, its judge, and a quick run of the command."""

import doctest
import json
from dataclasses import asdict, fields, replace

import numpy as np
import pytest

from benchmarks import peers as peers_module
from benchmarks import shapes as sh
from benchmarks.shapes import data, peer_runs, report, runs
from benchmarks.shapes.peer_runs import PEERS, PeerRun
from skformer.cli import main


@pytest.mark.parametrize("module", [data, peer_runs, report, runs])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_headroom_and_captured():
    # Lloyd 10 and 20, best 8: room 2 and 12 of 30; learned takes 1 and 3 of it.
    assert sh.headroom([10.0, 20.0], 8.0) == pytest.approx(0.4)
    assert sh.captured([10.0, 20.0], [9.0, 17.0], 8.0) == pytest.approx(4 / 14)
    assert sh.captured([10.0, 20.0], [8.0, 8.0], 8.0) == pytest.approx(1.0)
    assert sh.captured([10.0], [11.0], 8.0) == pytest.approx(-0.5)  # worse than Lloyd
    assert sh.captured([8.0, 8.0], [7.0, 7.0], 8.0) is None  # no room


def test_distinct_rows_are_distinct_and_seeded():
    X = np.repeat(np.arange(6.0)[:, None], 3, axis=0)  # every value three times
    start = sh.distinct_rows(X, 6, seed=1)
    assert len(np.unique(start, axis=0)) == 6
    np.testing.assert_array_equal(start, sh.distinct_rows(X, 6, seed=1))
    with pytest.raises(ValueError, match="6 distinct rows, fewer than k=7"):
        sh.distinct_rows(X, 7, seed=0)


def test_embeddings_generator():
    X = sh.embeddings(300, 96, 5, seed=0)
    assert X.shape == (300, 96)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    np.testing.assert_array_equal(X, sh.embeddings(300, 96, 5, seed=0))
    # low effective rank: the top 32 principal directions carry most of the variance
    s = np.linalg.svd(X - X.mean(0), compute_uv=False) ** 2
    assert s[:32].sum() / s.sum() > 0.5


def test_grid_spans_the_shapes_asked_for():
    full = {s.name: s for s in sh.select(sh.FULL)}
    assert {s.d for s in full.values()} >= {1, 3, 4, 8, 16, 64, 128, 384, 768, 1024}
    assert full["embed1024-k1000"].k == 1000
    assert all(s.n <= 600 for s in sh.select(sh.QUICK)) and len(sh.QUICK) == 3
    with pytest.raises(ValueError, match="unknown shapes"):
        sh.select(["nope-k3"])


def _record(name, k, *, headroom, captured, ratio, estimator_ratio=0.99):
    seed = runs.PlusPlusSeed(0, 1.0, ratio, estimator_ratio, ratio, estimator_ratio,
                             estimator_ratio > 1 + runs.TOLERANCE, "learned", True,
                             1.0, 2.0, 2.0, 1.0, 1.0, 0.1)
    return runs.ShapeRecord(
        name=name, group="g", n=100, d=2, k=k, description="", origin="generic",
        project=None, code_bits=2, bits_seen_before=False, first_fit_s=1.0,
        first_fit_lloyd_s=0.1, learned=True, learned_skipped=None,
        first_selected_run="learned", first_ratio=1.0, best=1.0, best_s=1.0,
        headroom=headroom, captured=captured, ratio_median=ratio,
        estimator_ratio_median=estimator_ratio, estimator_ratio_max=estimator_ratio,
        violations=int(seed.violation), time_ratio_median=2.0, seconds=1.0,
        plusplus_seeds=[seed])


def test_summarise_judges_the_targets():
    records = [_record("a", 64, headroom=0.2, captured=0.5, ratio=0.99),
               _record("b", 256, headroom=0.3, captured=0.1, ratio=0.999),
               _record("c", 10, headroom=0.05, captured=0.0, ratio=0.9),  # k < 32, no room
               _record("d", 100, headroom=0.0, captured=None, ratio=0.98)]
    s = sh.summarise(records)
    assert s.room == ["a", "b"] and s.captured_misses == ["b"] and s.captured_met is False
    assert s.large_k == ["a", "b", "d"]
    assert s.ratio_median_large_k == pytest.approx(0.99) and s.ratio_met is True
    assert s.violations == []
    bad = sh.summarise([replace(records[0], plusplus_seeds=[replace(
        records[0].plusplus_seeds[0], estimator_ratio=1.01, violation=True)])])
    assert bad.violations == ["a seed 0: 1.01"]
    assert "VIOLATED" in sh.format_summary(bad)
    assert sh.format_row(records[0]).count("|") == sh.HEADER.splitlines()[1].count("|")


def test_peer_gaps_to_the_best_known_on_hand_made_runs():
    reference = PeerRun("kmeans-10", 0, 10.0, 5.0)  # the shape's KMeans(n_init=10)
    made = [PeerRun("kmeans-1", 0, 12.0, 1.0), PeerRun("kmeans-1", 1, 11.0, 3.0),
            PeerRun("kmeans-1", 2, 10.5, 2.0), reference, PeerRun("kmeans-10", 1, 10.2, 7.0),
            PeerRun("bkm", 0, 9.9, 4.0), PeerRun("bkm", 1, 10.89, 6.0),
            PeerRun("long", 0, 9.0, 40.0)]  # the long search lowers the best known
    best, by = peer_runs.best_known(made)
    assert (best, by) == (9.0, "long, seed 0")
    rows = {r.method: r for r in peer_runs.peer_rows(made, best)}
    assert list(rows) == ["kmeans-1", "kmeans-10", "bkm", "long"]
    # kmeans-1: gaps 12/9, 11/9, 10.5/9 - 1: the median is 11/9 - 1; seconds: median 2
    assert rows["kmeans-1"].gap == pytest.approx(2 / 9) and rows["kmeans-1"].seconds == 2.0
    assert rows["kmeans-1"].seeds == 3
    assert rows["kmeans-10"].gap == pytest.approx((10.0 / 9 + 10.2 / 9) / 2 - 1)
    assert rows["bkm"].gap == pytest.approx(0.155) and rows["bkm"].seconds == 5.0
    assert rows["long"].gap == 0.0 and rows["long"].seeds == 1
    assert peer_runs.best_known([]) is None

    record = replace(_record("a", 8, headroom=0.2, captured=0.5, ratio=0.99),
                     best_known=best, best_known_by=by, peers=list(rows.values()),
                     peer_runs=made)
    table = sh.format_peers([record, _record("old", 8, headroom=0.2, captured=0.5,
                                             ratio=0.99)])
    head, rule, row = table.splitlines()  # the record without peers has no row
    assert "Breathing K-Means: gap / s" in head and "faiss" not in head
    assert head.count("|") == rule.count("|") == row.count("|")
    assert "| 22.22 % / 2 |" in row and "(long, seed 0)" in row
    assert sh.format_peers([_record("old", 8, headroom=0.2, captured=0.5, ratio=0.99)]) is None


def test_records_from_dict_reads_records_with_and_without_peers():
    rec = replace(_record("a", 8, headroom=0.2, captured=0.5, ratio=0.99), best_known=9.0,
                  best_known_by="long, seed 0",
                  peers=peer_runs.peer_rows([PeerRun("long", 0, 9.0, 1.0)], 9.0),
                  peer_runs=[PeerRun("long", 0, 9.0, 1.0)])
    assert runs.records_from_dict(json.loads(json.dumps(asdict(rec)))) == rec
    old = asdict(rec)
    for name in ("best_known", "best_known_by", "peers", "peer_runs"):
        del old[name]  # a record of a run before the peers section
    back = runs.records_from_dict(old)
    assert back.peers == [] and back.peer_runs == [] and back.best_known is None


def test_missing_peers_are_skipped_with_a_note(monkeypatch):
    def available(packages):
        gone = {"bkmeans", "faiss"}
        return ([p for p in dict.fromkeys(packages) if p not in gone],
                {p: f"No module named {p!r}" for p in dict.fromkeys(packages) if p in gone})

    monkeypatch.setattr(peers_module, "available", available)
    chosen, missing = peer_runs.select_peers()
    assert [p.name for p in chosen] == ["kmeans-1", "kmeans-10", "learned"]
    note = peer_runs.skipped_note(missing)
    assert "bkmeans (bkm, long)" in note and "faiss (faiss-1, faiss-10)" in note
    assert '".[bench]"' in note and "\n" not in note
    assert peer_runs.select_peers(enabled=False) == ([], {})


def test_run_peers_rotates_and_reuses_the_reference_fit():
    X = np.random.default_rng(0).standard_normal((60, 2))
    reference = PeerRun("kmeans-10", 0, 123.0, 9.0)
    made = peer_runs.run_peers(X, 3, [0, 1], [PEERS["kmeans-1"], PEERS["kmeans-10"]],
                               done=[reference])
    assert [(r.method, r.seed) for r in made] == [
        ("kmeans-1", 0), ("kmeans-10", 0), ("kmeans-10", 1), ("kmeans-1", 1)]
    assert made[1] is reference  # not fitted again
    from sklearn.cluster import KMeans

    km = KMeans(3, n_init=1, random_state=1).fit(X)
    assert made[3].inertia == pytest.approx(km.inertia_) and made[3].seconds > 0


def test_bkm_and_faiss_peers_on_a_tiny_shape():
    pytest.importorskip("bkmeans")
    pytest.importorskip("faiss")
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(300, 4, centers=6, random_state=0)
    chosen, missing = peer_runs.select_peers()
    assert missing == {} and [p.name for p in chosen] == list(PEERS)
    made = peer_runs.run_peers(X, 6, [0, 1], chosen)
    assert [(r.method, r.seed) for r in made[:len(PEERS)]] == [(m, 0) for m in PEERS]
    assert sorted(r.method for r in made[len(PEERS):]) == sorted(PEERS)
    best, _ = peer_runs.best_known(made)
    rows = peer_runs.peer_rows(made, best)
    assert [r.method for r in rows] == list(PEERS)
    assert all(r.gap >= 0 and np.isfinite(r.gap) and r.seconds > 0 for r in rows)
    assert min(r.gap for r in rows) == 0.0


def test_quick_run_records(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    real = peers_module.available

    def available(packages):  # as where the bench extra is not installed
        ok, missing = real([p for p in packages if p not in ("bkmeans", "faiss")])
        return ok, {**missing, **{p: "not installed" for p in packages
                                  if p in ("bkmeans", "faiss")}}

    monkeypatch.setattr(peers_module, "available", available)
    out, png = tmp_path / "shapes.json", tmp_path / "shapes.png"
    assert main(["bench", "shapes", "--preset", "quick", "--seeds", "1", "--out", str(out),
                 "--plot", str(png)]) == 0
    printed = capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert png.stat().st_size > 0
    names = [f.name for f in fields(runs.ShapeRecord)]
    records = payload["records"]
    assert [r["name"] for r in records] == list(sh.QUICK)
    for r in records:
        assert set(r) == set(names)
        assert r["name"] in printed
        assert r["origin"] in ("trained", "generic") and r["learned"] is True
        assert r["project"] == (64 if r["d"] > 64 else None)
        assert r["first_fit_s"] > 0 and r["first_fit_lloyd_s"] > 0 and r["best"] > 0
        assert len(r["headroom_seeds"]) == len(r["plusplus_seeds"]) == 1
        room, plus = r["headroom_seeds"][0], r["plusplus_seeds"][0]
        assert r["headroom"] == pytest.approx(1 - r["best"] / room["lloyd20"])
        assert 1 <= room["learned_steps"] <= 20
        assert plus["ratio"] == pytest.approx(plus["learned_lloyd"] / plus["lloyd"])
        # the estimator's contract: never above Lloyd's run from the same start
        assert plus["estimator_ratio"] <= 1 + 1e-9 and r["violations"] == 0
        assert plus["time_ratio"] == pytest.approx(plus["estimator_s"] / plus["lloyd_s"])
        # peers: one fit per method and seed, the best known at most KMeans(n_init=10)'s
        assert [(p["method"], p["seeds"]) for p in r["peers"]] == [
            ("kmeans-1", 1), ("kmeans-10", 1), ("learned", 1)]
        assert len(r["peer_runs"]) == 3
        assert r["best_known"] <= r["best"] * (1 + 1e-9)
        assert all(p["gap"] >= 0 for p in r["peers"]) and r["best_known_by"]
    assert payload["summary"]["violations"] == []
    assert payload["wall_seconds"] > 0 and "targets" in printed
    assert printed.count("# peers skipped, not installed: bkmeans (bkm, long), faiss") == 1
    assert "# peers: median over seeds" in printed
    assert payload["peers"] == ["kmeans-1", "kmeans-10", "learned"]
    assert set(payload["peers_skipped"]) == {"bkmeans", "faiss"}


def test_no_peers(tmp_path, capsys):
    out = tmp_path / "shapes.json"
    assert main(["bench", "shapes", "--shapes", "quick-d1-k3", "--seeds", "1",
                 "--no-peers", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())["records"][0]
    assert record["peers"] == [] and record["peer_runs"] == []
    assert record["best_known"] is None and "# peers" not in printed


def test_cli_rejects_unknown_shapes(capsys):
    with pytest.raises(SystemExit) as exc:
        sh.main(["--shapes", "china-k16,nope"])
    assert exc.value.code == 2
    assert "unknown shapes" in capsys.readouterr().err
