"""The figures of ``skformer bench shapes``: medians, headroom, the share captured.

Pure arithmetic on lists of inertias, shared by the runs (which compute a shape's
figures) and the report (which summarises them).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

__all__ = ["captured", "headroom", "median"]

_NO_ROOM = 1e-6


def median(values: Iterable[float]) -> float | None:
    """The median, None for no values.

    Examples
    --------
    >>> median([3.0, 1.0, 2.0]), median([])
    (2.0, None)
    """
    values = list(values)
    return float(statistics.median(values)) if values else None


def headroom(lloyd: Sequence[float], best: float) -> float:
    """``1 - mean(best / lloyd)``: the share of Lloyd's cost (20 steps from random starts)
    that the best clustering known lies below it, averaged over the seeds.

    Examples
    --------
    >>> round(headroom([10.0, 20.0], 8.0), 12)
    0.4
    """
    return 1.0 - sum(best / v if v > 0 else 1.0 for v in lloyd) / len(lloyd)


def captured(lloyd: Sequence[float], learned: Sequence[float], best: float) -> float | None:
    """``(sum lloyd - sum learned) / (sum lloyd - sum best)``: the share of the room below
    Lloyd's runs that the learned runs from the same starts take (1: as low as the best
    known; negative: above Lloyd). None where the headroom is below 1e-6 (no room).

    Examples
    --------
    >>> captured([10.0, 20.0], [9.0, 17.0], 8.0)
    0.2857142857142857
    >>> captured([8.0], [9.0], 8.0) is None
    True
    """
    if not lloyd or headroom(lloyd, best) < _NO_ROOM:
        return None
    return (sum(lloyd) - sum(learned)) / (sum(lloyd) - best * len(lloyd))
