"""The run loops shared by one problem and many: ``lloyd_loop`` (KMeans' stopping rules)
and ``learned_loop`` (the learned steps' schedule, patience and tolerance).

Each run of a batch stops on its own rule and is stepped no more after it; one run
through the loop is the same as that run among others. ``learned_search`` runs the loop
at each temperature scale and keeps, per run, the centres of least objective.
"""

import numpy as np
import pytest
import torch

from skformer._fit import learned
from skformer._fit.engine import lloyd_loop
from skformer._fit.learned import PATIENCE, LearnedSetup, learned_loop, learned_search


def test_each_run_stops_on_its_own_rule_and_leaves_the_loop():
    # Run 0 converges strictly at step 2, run 1 by tolerance at step 3, run 2 never.
    seen = []

    def step(active, i):
        seen.append(active.tolist())
        shift = np.array([{0: 5.0, 1: 5.0 if i < 3 else 0.5, 2: 5.0}[r] for r in active])
        same = np.array([r == 0 and i == 2 for r in active])
        return shift, same

    n_iter, strict = lloyd_loop(step, np.arange(3), 6, np.full(3, 1.0))
    assert n_iter.tolist() == [3, 4, 6] and strict.tolist() == [True, False, False]
    assert seen[3] == [1, 2] and seen[4] == [2]
    # Run 1 alone (its index 0 here): what it was among the others.
    alone, _ = lloyd_loop(lambda active, i: tuple(v[[1]] for v in step(np.arange(3), i)),
                          np.arange(1), 6, np.ones(1))
    assert alone.tolist() == [4]


def test_the_loop_takes_tensors_as_well():
    n_iter, strict = lloyd_loop(lambda a, i: (torch.full(a.shape, 2.0, dtype=torch.float64),
                                              torch.zeros(a.shape, dtype=torch.bool)),
                                torch.arange(2), 5, torch.tensor([3.0, 1.0]))
    assert n_iter.tolist() == [1, 5] and strict.tolist() == [False, False]


def _objective_of(values):
    """An objective read from ``values[run][step]`` (the step count so far)."""

    def objective(z, active):
        return torch.tensor([values[int(r)][int(z[j, 0, 0])]
                             for j, r in enumerate(range(len(z)) if active is None
                                                   else active)], dtype=torch.float64)

    return objective


def test_learned_runs_finish_the_schedule_then_stop_by_patience_or_tolerance():
    # Centres hold their step count in entry [0, 0] (shift 1 per step); run 0's
    # objective stalls after the schedule, run 1's keeps improving, run 2 gets
    # non-finite centres at step 4 (not counted).
    values = {0: [10.0, 9.0, 8.0] + [8.0] * 20, 1: [10.0 - s * 0.1 for s in range(30)],
              2: [10.0 - s for s in range(30)]}
    objective = _objective_of(values)

    def step(z, i, active):
        new = z + 1.0
        runs = range(len(z)) if active is None else active.tolist()
        for j, r in enumerate(runs):
            if r == 2 and i == 4:
                new[j] = float("nan")
        return new

    z = torch.zeros((3, 1, 1))
    best, n_steps, value = learned_loop(step, objective, z, schedule=2, max_iter=12,
                                        tol=torch.zeros(3, dtype=torch.float64),
                                        rel_tol=1e-4, d=1)
    assert n_steps.tolist() == [2 + PATIENCE, 12, 4]
    # The best centres are those of least objective: run 0's first reached 8.0.
    assert best[:, 0, 0].tolist() == [2.0, 12.0, 4.0]
    torch.testing.assert_close(value, objective(best, None))  # returned, not recomputed


@pytest.mark.parametrize("max_iter", [12, 3, 0])
def test_a_step_that_measures_the_objective_spares_the_passes_not_the_rules(max_iter):
    # The same runs as above, with the objective at each step's input given by the step:
    # the same centres, steps and objective; the loop's own objective is taken only
    # for a run's last centres and before a step where a run may stall, so no step is
    # made that the unmeasured loop would not make.
    values = {0: [10.0, 9.0, 8.0] + [8.0] * 20, 1: [10.0 - s * 0.1 for s in range(30)],
              2: [10.0 - s for s in range(30)]}
    table = _objective_of(values)
    calls, stepped = [], []

    def objective(z, active):
        calls.append(len(z))
        return table(z, active)

    def plain(z, i, active):
        runs = range(len(z)) if active is None else active.tolist()
        stepped.append(list(runs))
        new = z + 1.0
        for j, r in enumerate(runs):
            if r == 2 and i == 4:
                new[j] = float("nan")
        return new

    def measured(z, i, active):
        return plain(z, i, active), table(z, active)

    loop = dict(schedule=2, max_iter=max_iter, tol=torch.zeros(3, dtype=torch.float64),
                rel_tol=1e-4, d=1)
    expected = learned_loop(plain, objective, torch.zeros((3, 1, 1)), **loop)
    plain_calls, plain_steps, calls[:], stepped[:] = sum(calls), stepped[:], [], []
    found = learned_loop(measured, objective, torch.zeros((3, 1, 1)), measures=True, **loop)
    for a, b in zip(found, expected, strict=True):
        torch.testing.assert_close(a, b)
    assert stepped == plain_steps
    if max_iter == 12:  # run 0, two stalls behind it, is weighed before step 5 and
        # stops; run 1 is weighed at its end (max_iter); run 2's non-finite step stops
        # it with centres weighed already
        # (unmeasured: before every step, and for runs 0 and 1 at their ends)
        assert plain_calls == sum(len(s) for s in plain_steps) + 2
        assert calls == [1, 1]
    else:
        assert sum(calls) <= 3


def test_the_first_weighing_sets_the_best_whatever_the_schedule():
    # A schedule of 0 steps: the start is weighed, then every step counts to the patience.
    values = {0: [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]}
    best, n_steps, value = learned_loop(lambda z, i, a: z + 1.0, _objective_of(values),
                                        torch.zeros((1, 1, 1)), schedule=0, max_iter=5,
                                        tol=torch.zeros(1, dtype=torch.float64),
                                        rel_tol=0.0, d=1)
    assert n_steps.tolist() == [PATIENCE] and best.item() == 0.0 and value.item() == 5.0


class _ScaledSteps:
    """A stepper whose step moves every centre toward ``target[scale]`` by half the way:
    each scale ends at its own centres, of objective ``|z - 0|^2`` summed per run."""

    measures = False

    def __init__(self, targets, factor=1.0):
        self.targets, self.factor = targets, factor

    def scaled(self, factor):
        return _ScaledSteps(self.targets, factor)

    def step(self, z, i, active=None):
        target = self.targets[self.factor]
        target = target if active is None else target[active]
        return z + 0.5 * (target - z)


def _squared_norm(z, active):
    return z.double().square().sum((-1, -2))


@pytest.mark.parametrize("scales", [(1.0,), (1.0, 2.0, 4.0), (4.0, 2.0, 1.0)])
def test_the_search_keeps_each_runs_least_objective_over_the_scales(scales):
    # Run 0 is best at scale 2, run 1 at scale 4, run 2 at scale 1.
    targets = {1.0: torch.tensor([3.0, 3.0, 0.5]), 2.0: torch.tensor([1.0, 2.0, 2.0]),
               4.0: torch.tensor([2.0, 0.1, 3.0])}
    targets = {f: t.view(3, 1, 1) for f, t in targets.items()}
    z = torch.full((3, 1, 1), 5.0)
    loop = dict(schedule=1, max_iter=40, tol=torch.full((3,), 1e-10, dtype=torch.float64),
                rel_tol=0.0, d=1)
    seen = []
    best, n_steps, kept = learned_search(_ScaledSteps(targets), _squared_norm, z,
                                         scales=scales, report=seen.append, **loop)
    assert seen == list(scales) and z.eq(5.0).all()  # the start is left as it was
    alone = {f: learned_loop(_ScaledSteps(targets).scaled(f).step, _squared_norm, z.clone(),
                             **loop) for f in scales}
    for run in range(3):
        values = {f: float(_squared_norm(alone[f][0], None)[run]) for f in scales}
        f = min(scales, key=lambda f: values[f])
        assert kept[run] == f
        torch.testing.assert_close(best[run], alone[f][0][run])
        assert n_steps[run] == alone[f][1][run]


def test_a_later_scale_must_be_better_by_more_than_the_margin():
    # Scale 2 reaches an objective lower than scale 1's by half the margin: rounding,
    # not a better clustering; scale 1 is kept.
    first = torch.tensor([1.0], dtype=torch.float64).view(1, 1, 1)
    targets = {1.0: first, 2.0: first * (1 - learned.SCALE_MARGIN / 4)}
    z = torch.full((1, 1, 1), 2.0, dtype=torch.float64)
    loop = dict(schedule=1, max_iter=80, tol=torch.zeros(1, dtype=torch.float64),
                rel_tol=0.0, d=1)
    _, _, kept = learned_search(_ScaledSteps(targets), _squared_norm, z, scales=(1.0, 2.0),
                                **loop)
    assert kept.tolist() == [1.0]
    targets[2.0] = first * 0.9
    _, _, kept = learned_search(_ScaledSteps(targets), _squared_norm, z, scales=(1.0, 2.0),
                                **loop)
    assert kept.tolist() == [2.0]


@pytest.mark.parametrize("scales", [(), (0.0, 1.0), (1.0, -2.0), (float("inf"),)])
def test_the_scales_must_be_finite_and_positive(scales):
    from skformer.nn import LearnedKMeansModel

    with pytest.raises(ValueError, match="temperature_scales must be finite numbers > 0"):
        LearnedSetup(LearnedKMeansModel(2, 3), temperature_scales=scales)


@pytest.mark.parametrize("gain", [-0.1, 1.0, float("nan")])
def test_the_least_gain_is_a_share(gain):
    from skformer.nn import LearnedKMeansModel

    with pytest.raises(ValueError, match="least_gain must be in"):
        LearnedSetup(LearnedKMeansModel(2, 3), least_gain=gain)
