"""The swap search (benchmarks.anchors.swaps): its Lloyd against the NumPy oracle, the
swaps it takes, and a quick run of the command."""

import doctest
import json

import numpy as np
import pytest

from benchmarks.anchors import swaps
from skformer.cli import main
from skformer.reference import assign, lloyd_to_fixed_point


def test_docstring_examples():
    result = doctest.testmod(swaps, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 4


def _three_groups(rng, n=60):
    # on a line: a new centre's offset, whatever its draw, points along the one direction
    # that splits the data
    return np.concatenate([c + rng.normal(size=(n, 1)) for c in (0.0, 30.0, 60.0)])


def _spare_centre(rng):
    """Three groups; the optimum's inertia; and a fixed point of Lloyd's steps that no
    local step leaves: two centres in the first group, one between the others."""
    X = _three_groups(rng)
    lloyd = swaps.DenseLloyd(X)
    _, best = lloyd.run(np.array([[0.0], [30.0], [60.0]]), 300)
    start, _ = lloyd.run(np.array([[-0.8], [0.8], [45.0]]), 300)
    return X, lloyd, best, start


def test_dense_lloyd_matches_the_numpy_oracle(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(300, 4))
    start = X[rng.choice(300, 6, replace=False)]
    ours, inertia = swaps.DenseLloyd(X).run(start.copy(), 300)
    oracle, _ = lloyd_to_fixed_point(X, start, 300)
    np.testing.assert_allclose(ours, oracle, rtol=1e-9, atol=1e-12)
    assert inertia == pytest.approx(assign(X, ours)[1].sum(), rel=1e-9)


def test_best_swap_moves_the_spare_centre_to_the_empty_group(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X, lloyd, best, start = _spare_centre(rng)
    new, step, screened = swaps.best_swap(lloyd, start, rng)
    assert screened == 3 * 2 and step is not None
    assert step.inertia == pytest.approx(best, rel=1e-9)
    assert step.inertia == pytest.approx(assign(X, new)[1].sum(), rel=1e-9)
    # the ranks, from the start's assignment written out
    labels, sq = assign(X, start)
    error = np.bincount(labels, weights=sq, minlength=3)
    d = ((X[:, None] - start[None]) ** 2).sum(-1)
    d[np.arange(len(X)), labels] = np.inf
    utility = np.bincount(labels, weights=d.min(1) - sq, minlength=3)
    between = ((start - start[step.beside]) ** 2).sum(1)
    between[step.beside] = np.inf
    assert step.error_rank in _ranks(-error, -error[step.beside])
    assert step.utility_rank in _ranks(utility, utility[step.removed])
    assert step.neighbour_rank in _ranks(between, between[step.removed])


def test_best_swap_among_the_nearest_centres(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    _, lloyd, best, start = _spare_centre(rng)
    # one swap per split centre: its nearest other centre goes
    new, step, screened = swaps.best_swap(lloyd, start, rng, nearest=1)
    assert screened == 3 and step.neighbour_rank == 0
    assert (step.removed, step.beside) == (int(np.argmax(start[:2, 0])), 2)
    assert step.inertia == pytest.approx(best, rel=1e-9)


def _ranks(values, v, rel=1e-9):
    """The ranks ``v`` may take among ``values`` in increasing order: the two symmetric
    centres tie up to rounding, which the two distance formulas round apart."""
    low = int(np.sum(values < v - rel * abs(v)))
    return range(low, int(np.sum(values <= v + rel * abs(v))))


def test_search_stops_where_no_swap_helps(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = _three_groups(rng)
    optimum, _ = swaps.DenseLloyd(X).run(np.array([[0.0], [30.0], [60.0]]),
                                         300)
    end, search = swaps.swap_search(X, optimum, rounds=3, rng=rng)
    assert search.steps == [] and search.candidates == 6 and search.seconds > 0
    np.testing.assert_array_equal(end, optimum)


def test_search_never_raises_the_inertia(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(200, 2))
    start, _ = swaps.DenseLloyd(X).run(X[:8].copy(), 300)
    end, search = swaps.swap_search(X, start, rounds=3, rng=rng)
    inertias = [search.start_inertia] + [s.inertia for s in search.steps]
    assert all(b < a for a, b in zip(inertias, inertias[1:], strict=False))
    assert assign(X, end)[1].sum() == pytest.approx(inertias[-1], rel=1e-9)


def test_quick_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["bench", "swaps", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "digits-k10-tiny: not in" in printed and "median gap % after 0..1 swaps" in printed
    payload = json.loads(out.read_text())
    (record,) = payload["records"]
    assert (record["dataset"], record["k"], record["seed"]) == ("digits-k10-tiny", 8, 0)
    assert record["start_inertia"] == pytest.approx(record["fit_inertia"], rel=1e-9)
    assert record["candidates"] >= 8 * 7 - 7 and len(record["steps"]) <= 1
    assert payload["best_known"]["digits-k10-tiny"] <= record["start_inertia"]
    # a best known given: the gaps are judged against it
    known = tmp_path / "anchors.json"
    known.write_text(json.dumps({"records": [
        {"dataset": "digits-k10-tiny", "inertia": record["start_inertia"] / 1.01}]}))
    assert main(["bench", "swaps", "--quick", "--best-known", str(known)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("digits-k10-tiny: median gap % after 0..1 swaps 1.000")


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "nope"], "unknown data set 'nope'"),
    (["--seeds", "0"], "must be >= 1"),
    (["--rounds", "0"], "must be >= 1"),
    (["--nearest", "0"], "must be >= 1"),
])
def test_cli_rejects_bad_options(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        swaps.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_only_fritzke_sets_and_no_folder_is_an_error(capsys, monkeypatch):
    monkeypatch.delenv("SKFORMER_FRITZKE_DATA", raising=False)
    assert swaps.main(["--datasets", "Cloud", "--quick"]) == 2
    captured = capsys.readouterr()
    assert "Fritzke's data sets skipped (Cloud-tiny)" in captured.out
    assert "no data set to run" in captured.err


def test_registered_as_a_bench_command():
    from skformer._cli_bench import _BENCHMARKS

    assert _BENCHMARKS["swaps"][0] == "benchmarks.anchors.swaps"
