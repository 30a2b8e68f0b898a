"""Hamerly's bounds on each row's distances, kept across the steps of a run, so that a
step computes the products of only the rows whose nearest centre may have changed.

Dimension legend: ``m`` rows, ``k`` clusters, ``d`` features, ``D = d + 1`` token width.

:class:`RowBounds` holds them; :func:`move_bounds` moves them by the centres' shifts
before a step; inside the step (:func:`~.step.chunk_sums`), :func:`keeps_centre` is the
test that skips a row and :func:`set_bounds` sets a computed row's bounds. The bounds
are on the exact distances, widened by the rounding of the step's own arithmetic, so a
skipped row has the centre the full products would give it: the same sums, to the bit.
"""

from __future__ import annotations

import numpy as np

from .cache import helper, kernel

__all__ = ["NO_BOUNDS", "RowBounds", "half_gaps", "keeps_centre", "move_bounds",
           "set_bounds"]

# A bound moved outward (up) or inward (down) past a float64 rounding or two.
_OUT = 1.0 + 4 * np.finfo(np.float64).eps
_IN = 1.0 - 4 * np.finfo(np.float64).eps
# Exact half-gaps again once the largest shifts since the last add up to this share of
# their mean.
GAP_DRIFT = 0.25


@helper
def keeps_centre(row, labels, rows, moves, slack):  # pragma: no cover - compiled
    """Hamerly's test of ``row`` after the centres moved by ``moves``: its bounds are
    moved (the distance to its centre at most ``up``, to any other at least ``down``,
    or at least twice the half-gap of its centre less ``up``, whichever is larger) and
    whether, past the rounding of the products (the margin, twice their bound), its
    nearest centre is provably ``labels[row]``."""
    label = labels[row]
    up = (rows[0, row] + moves[0, label]) * _OUT
    down = (rows[1, row] - moves[1, label]) * _IN
    # Every other centre lies at least twice the half-gap from the row's centre, so at
    # least that less ``up`` from the row: a bound that the shift of a far centre does
    # not lower (where most centres stay, as in the global moves' runs).
    apart = (2.0 * moves[2, label] - up) * _IN
    if apart > down:
        down = apart
    rows[0, row] = up
    rows[1, row] = down
    return down > up and (down * down * _IN - up * up * _OUT
                          > slack[0] * rows[2, row] + slack[1])


@helper
def set_bounds(row, best, low, second, labels, rows, slack):  # pragma: no cover - compiled
    """The bounds of ``row`` from its computed values: ``low`` to its nearest centre
    ``best`` and ``second`` to the next (each up to ``|x|^2``), widened by the margin."""
    labels[row] = best
    sq = rows[2, row]
    margin = slack[0] * sq + slack[1]
    rows[0, row] = np.sqrt(max(0.0, sq + low + margin)) * _OUT
    rows[1, row] = np.sqrt(max(0.0, sq + second - margin)) * _IN


@kernel
def move_bounds(cct, centres, moves, slack, factors):  # pragma: no cover - compiled
    """:meth:`RowBounds.advance` of centres ``cct = [-2 c ; |c|^2]^T`` (D, k): the
    margin into ``slack`` (2,), each centre's shift from ``centres`` (k, d) float64 (then
    overwritten by ``c``) and the largest shift of the others into ``moves[:2]`` (2, k);
    each half-gap ``moves[2]`` lowered by half its centre's shift and the largest of the
    others' (two centres come no closer than their distance less their shifts);
    ``factors``: the margin's slope, floor, the norms' and the shifts' rounding factors.
"""
    width, k = cct.shape
    d = width - 1
    top = 0.0
    for j in range(k):
        top = max(top, np.float64(cct[d, j]))
    slack[0] = factors[0]
    slack[1] = factors[0] * top * factors[2] + factors[1]
    largest = 0.0
    second = 0.0
    first = 0
    for j in range(k):
        total = 0.0
        for q in range(d):
            c = np.float64(cct[q, j]) * -0.5  # exact: a power of two
            diff = c - centres[j, q]
            total += diff * diff
            centres[j, q] = c
        shift = np.sqrt(total) * factors[3]
        moves[0, j] = shift
        if shift > largest:
            second = largest
            largest = shift
            first = j
        elif shift > second:
            second = shift
    for j in range(k):
        moves[1, j] = largest
    moves[1, first] = second
    for j in range(k):
        moves[2, j] = max(0.0, (moves[2, j] - 0.5 * (moves[0, j] + moves[1, j])) * _IN)


@kernel
def half_gaps(c, out, margin):  # pragma: no cover - compiled
    """Half the distance from each of the centres ``c`` (k, d) float64 to the nearest
    other into ``out`` (k,) (0 for one centre), rounded down by the factor ``margin``
    past the rounding of the float64 sums.

    Examples
    --------
    >>> out = np.empty(3)
    >>> half_gaps(np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 6.0]]), out, 1.0)
    >>> out.tolist()
    [2.5, 1.0, 1.0]
    """
    k, d = c.shape
    for j in range(k):
        out[j] = np.inf if k > 1 else 0.0
    for j in range(k):
        for i in range(j + 1, k):
            total = 0.0
            for q in range(d):
                diff = c[j, q] - c[i, q]
                total += diff * diff
            gap = 0.5 * np.sqrt(total) * margin
            out[j] = min(out[j], gap)
            out[i] = min(out[i], gap)


class RowBounds:
    """Bounds on each row's distances to the centres, kept across the steps of one run
    (Hamerly's algorithm), so a step computes the products of only the rows whose
    nearest centre may have changed.

    After a step, a row's distance to its nearest centre is at most ``upper`` and to
    every other centre at least ``lower``: bounds on the exact distances, from the
    computed values ``|x|^2 + |c|^2 - 2 x.c`` widened by the margin ``4 (d + 8) eps
    (|x|^2 + max |c|^2)`` (``eps`` of the data's dtype; at least twice the rounding of
    those values, whatever the order of the sums). When the centres move, ``upper``
    grows by the row's centre's shift and ``lower`` shrinks by the largest shift of the
    others; with ``half_gaps``, ``lower`` is at least twice its centre's half-gap less
    ``upper`` (Hamerly's second test: it holds where one far centre moved much and the
    others little, as in the runs of the global moves; the half-gaps take ``k^2 d / 2``
    products at a run's start and again once the centres moved a share of them, and are
    lowered by the shifts in between). A row whose ``lower^2 - upper^2`` then exceeds
    the margin of the new centres
    has the same nearest centre by the step's own arithmetic, strictly (no tie), so it
    is not recomputed: every step's assignment, sums and centres are those of the full
    products, bit for bit. Holds 28 bytes per row.

    Parameters
    ----------
    tokens : ndarray of shape (m, d + 1)
        The rows of the run, as tokens ``[x ; 1]`` (float32 or float64).
    k : int
        The number of centres.
    half_gaps : bool, default=False
        Keep the centres' half-gaps.
    norms : ndarray of shape (m,), optional
        The rows' ``|x|^2`` (float64), where known.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> cct = np.array([[-0.0, -18.0], [0.0, 81.0]])          # centres 0 and 9
    >>> bounds = RowBounds(t, 2)
    >>> from skformer._fit.engine.compiled import grid_sums
    >>> grid_sums(t, None, cct, rows=256, threads=1, bounds=bounds)[0, :, 1]   # masses
    array([2., 1.])
    >>> bounds.labels
    array([0, 0, 1], dtype=int32)
    """

    def __init__(self, tokens: np.ndarray, k: int, half_gaps: bool = False,
                 norms: np.ndarray | None = None):
        m, width = tokens.shape
        self.tokens, self.half_gaps = tokens, half_gaps
        d = width - 1
        info = np.finfo(tokens.dtype)
        self.labels = np.zeros(m, dtype=np.int32)
        self.rows = np.zeros((3, m))
        """``upper``, ``lower`` and ``|x|^2`` of each row (float64)."""
        if norms is None:
            x = tokens[:, :d]
            np.einsum("ij,ij->i", x, x, out=self.rows[2], dtype=np.float64)
        else:
            self.rows[2] = norms
        self.moves = np.zeros((3, k))
        """Each centre's shift, the largest shift of the other centres and the centre's
        half-gap (half its distance to the nearest other centre; 0 without
        ``half_gaps``)."""
        self.slack = np.zeros(2)
        """The margin of a row: ``slack[0] |x|^2 + slack[1]``."""
        self._factors = np.array([
            4.0 * (d + 8) * float(info.eps),  # the margin's slope and floor
            4.0 * (d + 8) * float(info.tiny),
            1.0 + 2.0 * (d + 2) * float(info.eps),  # |c|^2 as computed, rounded up
            1.0 + 4.0 * (d + 2) * float(np.finfo(np.float64).eps),  # shifts, up
        ])
        self._centres = np.zeros((k, d))
        self._drift = self._gap = 0.0
        self._started = False
        self.pruned = False
        """Whether the last step could skip rows (it was not the first since a start)."""
        self.computed = 0
        """Rows whose products the last step computed."""

    def advance(self, cct: np.ndarray) -> bool:
        """Set the margins and moves for a step from centres ``cct = [-2 c ; |c|^2]^T``
        (D, k); whether the step may skip rows (not on the first step since the bounds
        were made or restarted)."""
        move_bounds(cct, self._centres, self.moves, self.slack, self._factors)
        if self.half_gaps:
            # Exact half-gaps (k^2 d products) only after the centres moved a share of
            # them; in between, the kernel's lowered ones (k operations).
            self._drift += float(self.moves[0].max())
            if not self._started or self._drift > GAP_DRIFT * self._gap:
                half_gaps(self._centres, self.moves[2], 2.0 - self._factors[3])
                self._drift, self._gap = 0.0, float(self.moves[2].mean())
        self.pruned, self._started = self._started, True
        return self.pruned

    @property
    def kernel_arrays(self) -> tuple:
        """The arrays the step's kernel keeps them in (labels, rows, moves, slack)."""
        return self.labels, self.rows, self.moves, self.slack

    def carried(self, c: np.ndarray, half_gaps: bool = False) -> RowBounds:
        """These bounds, set at their centres (by a step or a costs pass), for a run from
        other centres ``c`` (k', d), keeping the centres' half-gaps or not
        (``half_gaps``, as the run's grid says): each centre of ``c`` is taken as moved from its
        nearest old centre (any old centre would do: the next step's shifts are
        measured from it), so the next step keeps the rows that Hamerly's test proves;
        a row whose centre has no new centre, or several, gets its products.

        Examples
        --------
        >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
        >>> from skformer._fit.engine.compiled import grid_sums
        >>> bounds = RowBounds(t, 2)
        >>> _ = grid_sums(t, None, np.array([[-0.0, -18.0], [0.0, 81.0]]), rows=256,
        ...               threads=1, bounds=bounds)                # centres 0 and 9
        >>> wide = bounds.carried(np.array([[0.0], [9.0], [9.1]]))  # 9 split in two
        >>> wide.labels.tolist(), np.isinf(wide.rows[0]).tolist()
        ([0, 0, 0], [False, False, True])
        """
        old = self._centres
        new = np.asarray(c, dtype=np.float64)
        # The nearest old centre by products: a choice, not a bound, so their rounding
        # does not matter.
        apart = np.einsum("ij,ij->i", old, old)[None, :] - 2.0 * (new @ old.T)
        previous = apart.argmin(1)
        alone = np.bincount(previous, minlength=old.shape[0])[previous] == 1
        owner = np.full(old.shape[0], -1)
        owner[previous[alone]] = np.flatnonzero(alone)
        out = RowBounds(self.tokens, new.shape[0], half_gaps, norms=self.rows[2])
        label = owner[self.labels]
        lost = label < 0
        out.labels[:] = np.where(lost, 0, label)
        out.rows[0] = np.where(lost, np.inf, self.rows[0])
        out.rows[1] = self.rows[1]
        out._centres[:] = old[previous]
        out._started, out._drift = True, np.inf  # the half-gaps anew at the next step
        return out

    def restart(self) -> None:
        """Forget the bounds (steps ran without them): the next step computes every
        product and sets them anew."""
        self._started = False


# The step's arguments where no bounds are kept.
NO_BOUNDS = (np.empty(0, dtype=np.int32), np.empty((3, 0)), np.empty((3, 0)), np.zeros(2))
