"""The compiled single-point moves of Hartigan and Wong: each row, in turn, goes to the
cluster where the objective falls most, both means updated at once.

Dimension legend: ``m`` rows, ``k`` clusters, ``d`` features.

A row ``x`` of weight ``w`` in cluster ``a`` (total weight ``W_a``, mean ``c_a``) costs
the objective ``w W_a / (W_a - w) |x - c_a|^2`` more than the others of ``a`` would
without it, and would cost ``w W_b / (W_b + w) |x - c_b|^2`` in cluster ``b``: it moves
where the second is lowest, if below the first (by more than a relative ``floor``, so
that no move is made on rounding alone). A partition no row can improve is also a
fixed point of Lloyd's steps (each row is strictly nearest to its own mean), and the
moves reach fixed points that Lloyd's steps, moving every row to its nearest mean only,
stop before: on small clusters, ``W_a / (W_a - w)`` weighs most.

Every decision is made on exact differences, so the moves are those of the literal
loop over all rows and centres, in the rows' order; bounds only pass over rows that
cannot move. Each row keeps a lower bound on its cost in every other cluster, valid for
the clusters that have not changed since (the moves' log names those that have, and
their costs are measured again); a row whose bound is not below its own cost is passed
over. Where many clusters have changed since most rows of 256 were last seen (the first
pass, and after passes of many moves), one float64 product with the centres bounds
their distances anew, past its rounding.
"""

from __future__ import annotations

import numpy as np

from .cache import helper, kernel
from .costs import squared_distance
from .step import ROWS

__all__ = ["hartigan_pass", "hartigan_start"]


@kernel
def hartigan_start(x, w, c, labels, sums, mass):  # pragma: no cover - compiled
    """Each row of ``x`` (m, d), any float dtype, to the nearest of centres ``c`` (k, d)
    float64 by one float64 product per 256 rows (the first of equal values) into
    ``labels`` (m,); each cluster's weighted sum into ``sums`` (k, d) and weight into
    ``mass`` (k,), float64 zeros. ``w`` (m,) float64, or empty: every weight 1."""
    m, d = x.shape
    k = c.shape[0]
    weighted = w.shape[0] > 0
    block = np.empty((ROWS, d))
    ct = np.ascontiguousarray(c.T)
    c_sq = np.empty(k)
    for j in range(k):
        c_sq[j] = (c[j] * c[j]).sum()
    prod = np.empty((ROWS, k))
    for a in range(0, m, ROWS):
        r = min(m, a + ROWS) - a
        for p in range(r):
            for q in range(d):
                block[p, q] = x[a + p, q]
        np.dot(block[:r], ct, prod[:r])
        for p in range(r):
            best = 0
            value = c_sq[0] - 2.0 * prod[p, 0]
            for j in range(1, k):
                v = c_sq[j] - 2.0 * prod[p, j]
                if v < value:
                    value = v
                    best = j
            labels[a + p] = best
            weight = np.float64(w[a + p]) if weighted else 1.0
            mass[best] += weight
            for q in range(d):
                sums[best, q] += weight * block[p, q]


@helper
def _slope(d):  # pragma: no cover - compiled
    """The float64 product's rounding over ``|x|^2 + |c|^2``: at most (d + 2) eps of
    ``|x|^2 + |c|^2 + 2|x||c|``, at most twice the first; doubled again for safety."""
    return (4.0 * d + 8.0) * np.finfo(np.float64).eps


@helper
def _factor(mass, weight):  # pragma: no cover - compiled
    """``W / (W + w)``: what a row of weight ``w`` costs in a cluster of weight ``W`` per
    squared distance to its mean (1 where both are 0)."""
    return mass / (mass + weight) if mass + weight > 0 else 1.0


@kernel
def hartigan_pass(x, w, labels, low, seen, c, sums, mass, log, clock,
                  floor):  # pragma: no cover - compiled
    """One pass of single-point moves over the rows of ``x`` (m, d) in order: ``labels``
    (m,), the clusters' ``sums`` (k, d), ``mass`` (k,) and means ``c`` (k, d), float64,
    updated at each move. A move is made where a row's cost in another cluster is below
    ``(1 - floor)`` times its cost in its own; a row alone in its cluster stays.

    The bounds: ``low`` (m,) bounds each row's cost in every other cluster from below,
    for those not changed since ``seen`` (m,); the moves' log ``log`` (L,) holds the
    clusters changed at entries ``clock[0] - L`` to ``clock[0] - 1`` (a ring: entry
    ``t`` at ``t % L``); a row that has not been seen for more than ``L`` entries has no
    bound. Returns the number of moves."""
    m, d = x.shape
    k = c.shape[0]
    weighted = w.shape[0] > 0
    limit = log.shape[0]
    block = np.empty((ROWS, d))
    ct = np.empty((d, k))
    c_sq = np.empty(k)
    prod = np.empty((ROWS, k))
    value = np.empty(k)
    unit = np.empty(k)  # each cluster's factor for a row of weight 1, at the product
    dirty = np.zeros(k, dtype=np.bool_)
    moved = np.empty(k, dtype=np.int64)
    slope = _slope(d)
    moves = 0
    for a in range(0, m, ROWS):
        r = min(m, a + ROWS) - a
        stale = 0
        for p in range(r):
            for q in range(d):
                block[p, q] = x[a + p, q]
            if clock[0] - seen[a + p] > limit:
                stale += 1
        fresh = 4 * stale > r
        top = 0.0
        if fresh:  # many rows without a bound: one product bounds them anew
            for j in range(k):
                total = 0.0
                for q in range(d):
                    ct[q, j] = c[j, q]
                    total += c[j, q] * c[j, q]
                c_sq[j] = total
                top = max(top, total)
                unit[j] = _factor(mass[j], 1.0)
            np.dot(block[:r], ct, prod[:r])
        n_moved = 0
        for p in range(r):
            i = a + p
            row = block[p]
            own = labels[i]
            weight = np.float64(w[i]) if weighted else 1.0
            rest = mass[own] - weight
            if not rest > 1e-12 * mass[own]:
                continue
            cost = squared_distance(row, c[own]) * mass[own] / rest
            bound = -np.inf
            if fresh:
                x_sq = 0.0
                for q in range(d):
                    x_sq += row[q] * row[q]
                margin = slope * (x_sq + top)
                bound = np.inf
                for j in range(k):
                    if j != own and not dirty[j]:
                        f = _factor(mass[j], weight) if weighted else unit[j]
                        bound = min(bound, (x_sq - 2.0 * prod[p, j] + c_sq[j] - margin) * f)
                for t in range(n_moved):  # changed since the product: measured again
                    j = moved[t]
                    if j != own:
                        bound = min(bound, squared_distance(row, c[j]) * _factor(mass[j], weight))
            elif clock[0] - seen[i] <= limit:
                bound = low[i]
                for t in range(seen[i], clock[0]):
                    j = log[t % limit]
                    if j != own:
                        bound = min(bound, squared_distance(row, c[j]) * _factor(mass[j], weight))
            if bound >= cost:
                low[i] = bound
                seen[i] = clock[0]
                continue
            target = -1
            lowest = cost * (1.0 - floor)
            for j in range(k):
                if j == own:
                    continue
                value[j] = squared_distance(row, c[j]) * _factor(mass[j], weight)
                if value[j] < lowest:
                    lowest = value[j]
                    target = j
            if target >= 0:
                mass[own] = rest
                mass[target] += weight
                for q in range(d):
                    sums[own, q] -= weight * row[q]
                    sums[target, q] += weight * row[q]
                    c[own, q] = sums[own, q] / mass[own]
                    c[target, q] = sums[target, q] / mass[target]
                labels[i] = target
                moves += 1
                for j in (own, target):
                    log[clock[0] % limit] = j
                    clock[0] += 1
                    if not dirty[j]:
                        dirty[j] = True
                        moved[n_moved] = j
                        n_moved += 1
                value[own] = squared_distance(row, c[own]) * _factor(mass[own], weight)
            new = labels[i]
            bound = np.inf
            for j in range(k):
                if j != new:
                    bound = min(bound, value[j])
            low[i] = bound
            seen[i] = clock[0]
        for t in range(n_moved):
            dirty[moved[t]] = False
    return moves
