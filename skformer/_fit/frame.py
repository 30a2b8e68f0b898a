"""The frames a fit works in.

Dimension legend: ``n`` samples, ``d`` features, ``k`` clusters.

:class:`Frame` (every fit): the data translated by their per-feature mean (the one
KMeans centres by, so k-means++ draws KMeans' centres) and, where the largest magnitude
lies outside ``[2**-32, 2**32]`` (a fit source's ``unit_within``), scaled by a power of two
into ``[1, 2)``. A translation and one global scale preserve the k-means problem; a power
of two rescales every float exactly (it changes no result), so squared distances neither
overflow nor underflow whatever the data's units. (Without a mean, :meth:`Frame.of`
takes the midpoint of the range.)

Finite data near the largest float (float64 ``1.7e308``, float32 ``3.4e38``) have
differences ``x - mean`` that overflow (their range can reach twice the largest float):
their power of two is then the dtype's ``maxexp`` (1024, 128), and :meth:`Frame.apply`
and :meth:`Frame.to_user` compute in halves (``x / 2 - mean / 2``, exact) so that no
intermediate overflows; below that power every difference is finite and the arithmetic
is the plain one (the same bits as before).

:class:`ModelFrame` (learned steps): the fit frame mapped into the box the learned
model was trained in, ``[0, 1]^d`` up to one global scale (the largest range), with
zero features appended when a wider model is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["UNIT_RANGE", "Frame", "ModelFrame", "ldexp_csr", "power_of_two"]

# Magnitudes within [1 / UNIT_RANGE, UNIT_RANGE] are left unscaled where a scale would
# cost a copy (sparse data, assignment): squared distances summed over up to 2**31
# features then stay far from float32's overflow (2**128) and underflow (2**-126).
UNIT_RANGE = 2.0**32


def power_of_two(top: float, unit_within: float | None = None) -> int:
    """The power of two that brings a largest magnitude ``top`` into [1, 2); 0 for 0 or
    a non-finite ``top``, and for ``top`` within ``[1 / unit_within, unit_within]``.

    Examples
    --------
    >>> power_of_two(10.0), power_of_two(10.0, unit_within=2.0**32), power_of_two(1e-300)
    (3, 0, -997)
    """
    if top == 0.0 or not np.isfinite(top):
        return 0
    if unit_within is not None and 1 / unit_within <= top <= unit_within:
        return 0
    return int(np.frexp(top)[1]) - 1


def ldexp_csr(x, exponent: int):
    """CSR ``x`` times ``2**exponent``: ``x`` itself for 0, else a matrix whose new stored
    values share ``x``'s column indices and row pointers."""
    if exponent == 0:
        return x
    return sp.csr_matrix((np.ldexp(x.data, exponent), x.indices, x.indptr), shape=x.shape,
                         copy=False)


@dataclass(frozen=True)
class Frame:
    """``x -> (x - offset) * 2**-power``, in the data's dtype."""

    offset: np.ndarray
    """Shape (d,), the data's dtype: the mean of each feature."""
    power: int

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, mean: np.ndarray | None = None, *,
           unit_within: float | None = None) -> Frame:
        """The frame of data whose per-feature extremes are ``lo`` and ``hi`` and mean
        ``mean`` (default: the midpoint of the range).

        ``unit_within``: keep the scale 1 when the largest magnitude lies within
        ``[1 / unit_within, unit_within]`` (what the fit sources ask: no pass to scale
        the values where their squares can neither overflow nor underflow).

        Examples
        --------
        >>> import numpy as np
        >>> frame = Frame.of(np.array([0.0, -4.0]), np.array([10.0, 4.0]))
        >>> frame.offset, frame.power
        (array([5., 0.]), 2)
        >>> frame.apply(np.array([[10.0, -4.0]]))
        array([[ 1.25, -1.  ]])
        """
        offset = (lo / 2 + hi / 2 if mean is None else np.asarray(mean)).astype(lo.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            top = float(np.max(np.maximum(np.abs(hi - offset), np.abs(lo - offset)),
                               initial=0.0))
        if np.isinf(top) and np.all(np.isfinite(offset)):
            # The range overflows (finite data near the largest float): its half does not,
            # and halving is exact, so the power is that of the half, plus one.
            with np.errstate(under="ignore"):
                half = float(np.max(np.maximum(np.abs(hi / 2 - offset / 2),
                                               np.abs(lo / 2 - offset / 2)), initial=0.0))
            return cls(np.asarray(offset), power_of_two(half) + 1)
        return cls.centred(offset, top, unit_within=unit_within)

    @classmethod
    def centred(cls, mean: np.ndarray, top: float, *,
                unit_within: float | None = None) -> Frame:
        """The frame translated by ``mean`` (d,) of data whose largest ``|x - mean|`` is
        ``top`` (see :meth:`of` for ``unit_within``).

        Examples
        --------
        >>> import numpy as np
        >>> Frame.centred(np.array([5.0, 0.0]), 5.0).power
        2
        """
        return cls(np.asarray(mean), power_of_two(top, unit_within))

    def apply(self, x: np.ndarray, *, ones: bool = False) -> np.ndarray:
        """Rows (..., d) of the user's frame in this frame (a new array, same dtype; CSR
        rows, in a frame of zero offset: :func:`ldexp_csr`). ``ones=True``: the rows
        as tokens ``[x ; 1]``, shape (..., d + 1) (see :func:`~skformer.nn.exact_step`'s
        ``augmented``)."""
        if sp.issparse(x):
            if np.any(self.offset != 0):
                raise ValueError("Sparse rows need a frame of zero offset (a scale only).")
            return ldexp_csr(x, -self.power)
        d = self.offset.shape[-1]
        out = np.empty((*np.shape(x)[:-1], d + ones), dtype=self.offset.dtype)
        rows = out[..., :d]
        if self.halves:
            # x - offset may overflow: (x / 2 - offset / 2) rounds as x - offset does (a
            # power of two commutes with rounding), and never overflows.
            with np.errstate(under="ignore"):
                np.ldexp(x, -1, out=rows)
                np.subtract(rows, np.ldexp(self.offset, -1), out=rows)
                np.ldexp(rows, 1 - self.power, out=rows)
        else:
            np.subtract(x, self.offset, out=rows)
            if self.power:
                np.ldexp(rows, -self.power, out=rows)
        if ones:
            out[..., d] = 1
        return out

    @property
    def halves(self) -> bool:
        """Whether the frame's arithmetic runs in halves: its power is the dtype's
        ``maxexp`` (the largest ``|x - offset|`` overflows), so ``x - offset`` and
        ``c * 2**power`` may overflow where their halves do not."""
        return self.power >= np.finfo(self.offset.dtype).maxexp

    def to_user(self, c: np.ndarray) -> np.ndarray:
        """Centres (k, d) of this frame in the user's frame (finite: a centre lies within
        the range of the data)."""
        if self.halves:
            with np.errstate(under="ignore"):
                return np.ldexp(np.ldexp(c, self.power - 1) + np.ldexp(self.offset, -1), 1)
        return np.ldexp(c, self.power) + self.offset

    def squared_to_user(self, value: float) -> float:
        """A squared distance (or a sum of them) of this frame in the user's units (inf
        where it exceeds float64's range: data near 1e300 have such squares)."""
        with np.errstate(over="ignore"):
            return float(np.ldexp(value, 2 * self.power))

    def squared_from_user(self, value: float) -> float:
        return float(np.ldexp(value, -2 * self.power))


@dataclass(frozen=True)
class ModelFrame:
    """``z = pad((x - lo) / scale)``: the learned model's input, float32."""

    lo: torch.Tensor
    """Shape (d,), float64: per-feature minimum in the fit frame."""
    scale: float
    """The largest per-feature range (1 for constant data)."""
    padding: int = 0
    """Zero features appended to reach the model's width."""

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, padding: int, device) -> ModelFrame | None:
        """The model frame of fit-frame extremes ``lo``, ``hi``; None if their range is
        not finite (the learned steps are then skipped)."""
        lo64, hi64 = (torch.from_numpy(np.asarray(v, dtype=np.float64)) for v in (lo, hi))
        scale = float((hi64 - lo64).max()) if lo64.numel() else 0.0
        if not np.isfinite(scale):
            return None
        return cls(lo64.to(device), scale if scale > 0 else 1.0, padding)

    def to_model(self, c: torch.Tensor) -> torch.Tensor:
        """Points or centres (..., d) of the fit frame in the model frame (float32)."""
        z = ((c.double() - self.lo) / self.scale).float()
        return torch.nn.functional.pad(z, (0, self.padding))

    def to_fit(self, z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Centres (..., d + padding) of the model frame back in the fit frame."""
        d = z.shape[-1] - self.padding
        return (z[..., :d].double() * self.scale + self.lo).to(dtype)
