"""The benchmarks' timing (benchmarks/_timing.py): the order of the fits in a round, the
paired ratios against hand-made rounds, and one tiny ``skformer bench exact`` run.
Timings are measured, never asserted."""

import json

import pytest

pytest.importorskip("benchmarks._timing")

from benchmarks._timing import marginal_times, paired_ratio  # noqa: E402


class _Fake:
    """Runs ``max_iter`` iterations and writes its fit into a shared log."""

    def __init__(self, name, max_iter, log, stop=None):
        self.name, self.max_iter, self.log, self.stop = name, max_iter, log, stop

    def fit(self, X):
        self.log.append((self.name, self.max_iter))
        self.n_iter_ = self.max_iter if self.stop is None else self.stop
        return self


def test_each_round_fits_short_then_long_and_the_first_estimator_rotates():
    log = []
    out = marginal_times(lambda it: {"a": _Fake("a", it, log), "b": _Fake("b", it, log)},
                         None, max_iter=6, reps=2)
    round_ = [[("a", 3), ("a", 6), ("b", 3), ("b", 6)],
              [("b", 3), ("b", 6), ("a", 3), ("a", 6)]]
    assert log == round_[0] + round_[1] + round_[0]  # warm-up, then two timed rounds
    assert len(out["rounds"]) == 2
    assert all(sorted(r) == ["a", "b"] and len(r["a"]) == 2 for r in out["rounds"])
    assert set(out) == {"a_fit_ms", "a_ms_per_iter", "b_fit_ms", "b_ms_per_iter", "rounds"}


def test_on_round_sees_the_long_fits():
    seen = []
    marginal_times(lambda it: {"a": _Fake("a", it, [])}, None, max_iter=4, reps=1,
                   on_round=lambda fitted: seen.append(fitted["a"].max_iter))
    assert seen == [4, 4]


def test_an_estimator_stopping_early_is_an_error():
    with pytest.raises(RuntimeError, match="a stopped after 2 of 3 iterations"):
        marginal_times(lambda it: {"a": _Fake("a", it, [], stop=2)}, None, max_iter=6,
                       reps=1)


@pytest.mark.parametrize("whole_fit, expected", [(False, 1.0), (True, 40 / 35)])
def test_a_slow_round_does_not_move_the_paired_ratio(whole_fit, expected):
    # "b" is slow in round 2 and "a" in round 3, each by 4x: medians taken over all
    # rounds and divided afterwards would mix the two slow stretches.
    rounds = [{"a": [10, 40], "b": [5, 35]},
              {"a": [10, 40], "b": [20, 140]},
              {"a": [40, 160], "b": [5, 35]},
              {"a": [10, 40], "b": [5, 35]}]
    ratios = [(r["a"][1] - r["a"][0]) / (r["b"][1] - r["b"][0]) for r in rounds]
    assert sorted(ratios) == [0.25, 1.0, 1.0, 4.0]
    assert paired_ratio(rounds, "a", "b", whole_fit=whole_fit) == pytest.approx(expected)


def test_a_tiny_exact_bench_writes_paired_ratios(tmp_path):
    from benchmarks.exact_vs_kmeans import main

    out = tmp_path / "exact.json"
    assert main(["--n", "400", "--d", "3", "--k", "4", "--max-iter", "4", "--reps", "2",
                 "--no-memory", "--out", str(out)]) == 0
    (rec,) = json.loads(out.read_text())
    assert len(rec["rounds"]) == 2
    assert rec["iter_time_ratio"] == pytest.approx(
        paired_ratio(rec["rounds"], "transformer", "kmeans"))
    assert rec["fit_time_ratio"] > 0
