"""Repeated rows: the distinct rows, each weighted by its copies, for the warm runs.

Dimension legend: ``n`` samples, ``u`` distinct rows, ``d`` features.

Copies of a row share every distance, so they share their nearest centre: Lloyd's steps,
the costs of a breathing cycle and the inertia are the same sums on the ``u`` distinct
rows weighted by their copies' total weight as on the ``n`` rows (up to the rounding of
those sums). Data of a few values per feature (an image's pixels, counts, rounded
measurements) repeat many rows: the china photograph's 20,000 sampled pixels hold about
12,500 distinct colours. The global moves and the runs that start near a fixed point
(:meth:`~skformer._fit.runs._Fit.warm_backend`) then walk the distinct rows; KMeans' own
run (the fast mode, to the bit) keeps the rows as they are.
"""

from __future__ import annotations

import numpy as np

from .frame import Frame
from .sources import ArraySource, Source

__all__ = ["DISTINCT_SHARE", "PROBE_ROWS", "distinct_source"]

# The warm runs walk the distinct rows where they are at most this share of the rows: a
# pass over them then costs at least a tenth less, and collapsing costs one sort.
DISTINCT_SHARE = 0.9
# Rows probed for repeats before sorting all of them: a random sample of this many rows
# shows the repeats of data that repeat often enough to collapse (most rows a copy of
# another) at the cost of a sort of the sample, and data of distinct rows (most data)
# are not sorted whole.
PROBE_ROWS = 4096
# The probe's rows come from this fixed stream: the rows a fit walks do not depend on the
# fit's random state.
PROBE_SEED = 1999


def _keys(tokens: np.ndarray) -> np.ndarray:
    """Each row of C-ordered ``tokens`` (n, d) as one opaque value of its bytes (n,):
    equal keys, equal rows (the same bits)."""
    return tokens.view(np.dtype((np.void, tokens.dtype.itemsize * tokens.shape[1]))).ravel()


def distinct_source(source: Source, share: float = DISTINCT_SHARE,
                    probe: int = PROBE_ROWS) -> ArraySource | None:
    """The distinct rows of an in-memory dense ``source`` in its fit frame, each weighted
    by the total weight of its copies, as a source of the same frame, where they are at
    most ``share`` of the rows; None otherwise (and for a memmap, a sparse matrix or a
    dask array, whose rows are not held as one array).

    A random probe of ``probe`` rows decides first whether the rows repeat at all: the
    whole array is sorted only where at most ``share`` of the probe is distinct.

    Parameters
    ----------
    source : Source
        A source whose frame is set.
    share : float
        The largest share of distinct rows that is collapsed.
    probe : int
        Rows of the probe.

    Returns
    -------
    ArraySource or None
        ``u`` rows (u, d) in the frame of ``source`` (its blocks need no transform),
        weights (u,) float64, on the source's device.

    Examples
    --------
    >>> import torch
    >>> from skformer._fit.frame import Frame
    >>> X = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [0.0, 1.0]])
    >>> source = ArraySource(X, np.array([1.0, 2.0, 3.0, 4.0]), torch.device("cpu"))
    >>> source.set_frame(Frame(np.zeros(2), 0))
    >>> found = distinct_source(source)
    >>> found.n_samples, found.gather(None)[0].tolist(), found.gather(None)[1].tolist()
    (2, [[0.0, 1.0], [2.0, 3.0]], [8.0, 2.0])
    """
    tokens = source.held_tokens()
    if tokens is None:
        return None
    # The tokens [x ; 1] are held as one C-ordered array, whatever the device of the
    # steps, and their last column is 1 in every row: their bytes key the rows, no copy.
    tokens = np.ascontiguousarray(tokens)
    n, d = source.n_samples, source.n_features
    keys = _keys(tokens)
    if n > probe:
        sample = np.random.default_rng(PROBE_SEED).choice(n, probe, replace=False)
        if np.unique(keys[sample]).size > share * probe:
            return None
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if first.size > share * n:
        return None
    w = source.gather(None)[1]  # float64, or None where every weight is 1
    weights = np.bincount(inverse.ravel(), weights=w, minlength=first.size)
    found = ArraySource(tokens[first, :d], weights, source.device)
    # The rows are in the fit frame already: the identity frame copies them as tokens.
    found.set_frame(Frame(np.zeros(d, dtype=tokens.dtype), 0))
    return found
