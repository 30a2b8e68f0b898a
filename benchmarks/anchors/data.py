"""Data sets of the anchors benchmark: Fritzke's benchmark, read from the user's folder,
and chosen sets made on demand.

Every set is a name, its ``(n, d, k)``, a description and a way to make ``X``; the data
are seeded, the same in every run. Fritzke's sets (the data of his breathing k-means
study, repository gittar/breathing-k-means, folder ``data/``) are never shipped nor
downloaded: they are read from a folder the user gives (:func:`fritzke_folder`), as CSV
files, comma separated, no header, each ``NAME.csv`` or ``NAME.zip`` holding it
(:func:`read_fritzke`). See :mod:`benchmarks.anchors` for the protocol.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

__all__ = [
    "CHOSEN",
    "DEFAULT",
    "ENV_VAR",
    "FRITZKE",
    "FRITZKE_URL",
    "GROUPS",
    "QUICK",
    "SETS",
    "TINY_K",
    "TINY_ROWS",
    "AnchorSet",
    "available",
    "fritzke_folder",
    "mixed_2d",
    "read_fritzke",
    "select",
    "tiny",
]

ENV_VAR = "SKFORMER_FRITZKE_DATA"
"""The environment variable naming the folder of Fritzke's data sets (``--fritzke-data``
takes precedence)."""
FRITZKE_URL = "https://github.com/gittar/breathing-k-means"
TINY_ROWS = 300
"""Rows of a tiny (``--quick``) version: a seeded sample of the set's rows."""
TINY_K = 8
"""Clusters of a tiny version, at most (fewer where the set has fewer)."""


@dataclass(frozen=True)
class AnchorSet:
    """One data set of the benchmark and its number of clusters."""

    name: str
    group: str
    """``"fritzke"`` (read from the user's folder) or ``"chosen"`` (made on demand)."""
    n: int
    d: int
    k: int
    description: str
    make: Callable[[], np.ndarray] | None = field(default=None, repr=False, compare=False)
    """Makes ``X`` (float64, ``(n, d)``) for a chosen set; None for Fritzke's."""
    file: str | None = None
    """Fritzke's sets: the file's name without extension (``NAME.csv`` or ``NAME.zip``)."""
    rows: int | None = None
    """A tiny version's rows: a sample drawn by ``np.random.default_rng(0)`` from the
    set's rows, without replacement (None: all rows)."""

    def load(self, folder: str | os.PathLike | None = None) -> np.ndarray:
        """``X``, float64 and C-contiguous: made, or read from ``folder`` (Fritzke's)."""
        if self.file is not None:
            if folder is None:
                raise FileNotFoundError(f"{self.name} is one of Fritzke's data sets: give "
                                        f"the folder that holds {self.file}.csv or .zip.")
            X = read_fritzke(folder, self.file)
        else:
            X = self.make()
        if self.rows is not None and self.rows < len(X):
            X = X[np.sort(np.random.default_rng(0).choice(len(X), self.rows, replace=False))]
        return np.ascontiguousarray(X, dtype=np.float64)


# --------------------------------------------------------------------------- Fritzke's


def read_fritzke(folder: str | os.PathLike, name: str) -> np.ndarray:
    """One of Fritzke's data sets from ``folder``: ``NAME.csv``, else the CSV member of
    ``NAME.zip``; comma separated, no header, every column a feature.

    Raises
    ------
    FileNotFoundError
        Neither file is in ``folder``.
    ValueError
        The zip holds no CSV file, or the file is not a table of numbers.
    """
    folder = Path(folder)
    csv, archive = folder / f"{name}.csv", folder / f"{name}.zip"
    try:
        if csv.is_file():
            return _read_csv(csv.read_bytes(), csv)
        if archive.is_file():
            with zipfile.ZipFile(archive) as z:
                members = [m for m in z.namelist() if m.lower().endswith(".csv")]
                exact = [m for m in members if Path(m).name == f"{name}.csv"]
                if not (exact or len(members) == 1):
                    raise ValueError(f"{archive} holds no {name}.csv (members: "
                                     f"{', '.join(z.namelist()) or 'none'}).")
                return _read_csv(z.read((exact or members)[0]), archive)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{archive} is not a zip file: {exc}") from None
    raise FileNotFoundError(f"no {name}.csv or {name}.zip in {folder}.")


def _read_csv(data: bytes, path: Path) -> np.ndarray:
    try:
        X = np.loadtxt(io.StringIO(data.decode()), delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: not a comma-separated table of numbers ({exc}).") from None
    if X.size == 0:
        raise ValueError(f"{path}: no rows.")
    return X


def fritzke_folder(given: str | None = None) -> Path | None:
    """The folder of Fritzke's data sets: ``given`` (``--fritzke-data``), else the
    environment variable :data:`ENV_VAR`, else None."""
    value = given if given is not None else os.environ.get(ENV_VAR) or None
    return None if value is None else Path(value).expanduser()


def available(sets: Sequence[AnchorSet], folder: Path | None
              ) -> tuple[list[AnchorSet], str | None]:
    """The sets that can run, and a one-line note on Fritzke's sets left out (or None).

    A Fritzke set runs where ``folder`` holds its ``NAME.csv`` or ``NAME.zip``.

    Examples
    --------
    >>> runs, note = available(select(["digits-k10", "gmd5x5"]), None)
    >>> [s.name for s in runs], note.split(":")[0]
    (['digits-k10'], "Fritzke's data sets skipped (gmd5x5)")
    """
    wanted = [s for s in sets if s.file is not None]
    if not wanted:
        return list(sets), None
    if folder is None:
        why = (f"no folder given: pass --fritzke-data DIR or set {ENV_VAR} to a copy of "
               f"the folder data/ of {FRITZKE_URL} (never downloaded by skformer)")
        missing = wanted
    elif not folder.is_dir():
        why, missing = f"{folder} is not a folder", wanted
    else:
        missing = [s for s in wanted if not ((folder / f"{s.file}.csv").is_file()
                                             or (folder / f"{s.file}.zip").is_file())]
        why = f"no NAME.csv or NAME.zip for them in {folder}"
    if not missing:
        return list(sets), None
    names = ", ".join(s.name for s in missing)
    return [s for s in sets if s not in missing], f"Fritzke's data sets skipped ({names}): {why}"


# (file, n, d, description) of the sets of Fritzke's study; n and d as in his repository.
_FRITZKE = [
    *((f, n, 2, "2-D, self-generated for Fritzke's study (arXiv:2006.15666)") for f, n in [
        ("gmd5x5", 10_000), ("gmd8x8", 25_600), ("noise", 13_664), ("vardensity", 30_000),
        ("uniform", 1_000), ("sq6x6-2x2", 3_600), ("randangles", 3_840), ("stains", 10_000),
        ("correlated", 6_000), ("rice", 10_000)]),
    ("Birch1", 100_000, 2, "Birch1 (Zhang et al. 1997), 2-D"),
    ("Norm25-new", 10_000, 15, "a mixture of 25 Gaussians in 15 dimensions, after the "
     "k-means++ paper's Norm25"),
    ("Cloud", 1_024, 10, "UCI Cloud, 10 features"),
    ("Spam", 4_601, 58, "UCI Spambase, 58 features"),
    ("Intrusion", 494_021, 35, "UCI KDD Cup 1999 (10 % file), 35 numeric features"),
]
FRITZKE_K = 100


# --------------------------------------------------------------------------- chosen sets


def mixed_2d(k: int = 60, *, box: float = 100.0, std: tuple[float, float] = (0.5, 5.0),
             sizes: tuple[int, int] = (50, 400), seed: int = 0
             ) -> tuple[np.ndarray, np.ndarray]:
    """2-D Gaussian clusters of mixed spread and size.

    With ``rng = np.random.default_rng(seed)``, in this order: ``k`` centres uniform in
    ``[0, box]^2``, ``k`` standard deviations uniform in ``std``, ``k`` sizes uniform
    among the integers ``sizes[0] .. sizes[1]``; then each cluster's rows, its centre
    plus its deviation times standard normal noise (isotropic), cluster after cluster;
    then the rows shuffled by one permutation. Narrow clusters beside wide ones, some
    overlapping: k-means++ seeds several centres in a wide cluster and leaves narrow
    ones shared, the error that global moves mend.

    Returns
    -------
    X : ndarray of shape (n, 2)
        ``n`` = the sum of the sizes.
    y : ndarray of shape (n,)
        Each row's cluster.

    Examples
    --------
    >>> X, y = mixed_2d(4, seed=1)
    >>> X.shape[1], len(np.unique(y)), bool(200 <= len(X) <= 1600)
    (2, 4, True)
    """
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, box, size=(k, 2))
    stds = rng.uniform(*std, size=k)
    counts = rng.integers(sizes[0], sizes[1] + 1, size=k)
    y = np.repeat(np.arange(k), counts)
    X = centres[y] + stds[y, None] * rng.standard_normal((len(y), 2))
    order = rng.permutation(len(y))
    return X[order], y[order]


def _mixed_n(k: int = 60, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    rng.uniform(size=(k, 2))
    rng.uniform(size=k)
    return int(rng.integers(50, 401, size=k).sum())


def _unequal() -> np.ndarray:
    from benchmarks.versus_kmeans.data import blobs_unequal

    return blobs_unequal(20_000, 32, 10).X


def _blobs() -> np.ndarray:
    from sklearn.datasets import make_blobs

    return make_blobs(20_000, 16, centers=64, random_state=0)[0]


def _china() -> np.ndarray:
    from benchmarks.shapes.data import china_pixels

    return china_pixels(20_000)


def _digits() -> np.ndarray:
    from sklearn.datasets import load_digits

    return load_digits().data


def _embeddings() -> np.ndarray:
    from benchmarks.shapes.data import embeddings

    return embeddings(20_000, 128, 100)


_CHOSEN = [
    AnchorSet("mixture-unequal", "chosen", 20_000, 32, 10,
              "overlapping mixture, 10 clusters of sizes 1:...:10 "
              "(benchmarks.versus_kmeans.data.blobs_unequal(20000, 32, 10))", _unequal),
    AnchorSet("blobs16-k64", "chosen", 20_000, 16, 64,
              "make_blobs(20000, 16, centers=64, random_state=0)", _blobs),
    AnchorSet("china-k64", "chosen", 20_000, 3, 64,
              "colour quantisation: 20,000 pixels of china.jpg, RGB / 255", _china),
    AnchorSet("digits-k50", "chosen", 1_797, 64, 50, "load_digits().data (raw, 0-16)",
              _digits),
    AnchorSet("digits-k10", "chosen", 1_797, 64, 10, "load_digits().data (raw, 0-16)",
              _digits),
    AnchorSet("mixed2d-k60", "chosen", _mixed_n(), 2, 60,
              "60 Gaussians of mixed spread (std 0.5-5) and size (50-400) in [0, 100]^2 "
              "(benchmarks.anchors.data.mixed_2d)", lambda: mixed_2d()[0]),
    AnchorSet("embed128-k100", "chosen", 20_000, 128, 100,
              "sentence-embedding-like: 100 topics in a 32-dim subspace of R^128, unit rows "
              "(benchmarks.shapes.data.embeddings)", _embeddings),
]

SETS: dict[str, AnchorSet] = {s.name: s for s in [
    *_CHOSEN,
    *(AnchorSet(f, "fritzke", n, d, FRITZKE_K, desc, file=f) for f, n, d, desc in _FRITZKE),
]}
"""Every data set by name: the chosen ones, then Fritzke's."""

CHOSEN: tuple[str, ...] = tuple(s.name for s in _CHOSEN)
FRITZKE: tuple[str, ...] = tuple(f for f, *_ in _FRITZKE if f != "Intrusion")
"""Fritzke's sets of the default run (``Intrusion``, 494,021 rows, only on request)."""
DEFAULT: tuple[str, ...] = CHOSEN + FRITZKE
QUICK: tuple[str, ...] = ("mixture-unequal", "mixed2d-k60", "gmd5x5")
"""``--quick``'s sets (their tiny versions, :func:`tiny`)."""
GROUPS: dict[str, tuple[str, ...]] = {"all": DEFAULT, "chosen": CHOSEN, "fritzke": FRITZKE}
"""Names that stand for several sets in ``--datasets``."""


def select(names: Sequence[str]) -> list[AnchorSet]:
    """The sets of ``names`` (each a set's name or a group of :data:`GROUPS`), in that
    order, each once.

    Examples
    --------
    >>> [(s.n, s.d, s.k) for s in select(["digits-k50", "Cloud"])]
    [(1797, 64, 50), (1024, 10, 100)]
    >>> len(select(["fritzke"])), len(select(["all", "Intrusion"]))
    (14, 22)
    """
    out: list[str] = []
    for name in names:
        for n in GROUPS.get(name, (name,)):
            if n not in SETS:
                raise ValueError(f"unknown data set {n!r}; known: "
                                 f"{', '.join([*GROUPS, *SETS])}")
            if n not in out:
                out.append(n)
    return [SETS[n] for n in out]


def tiny(s: AnchorSet) -> AnchorSet:
    """The tiny version of ``s`` (``--quick``): at most :data:`TINY_ROWS` of its rows
    (seeded), at most :data:`TINY_K` clusters, named ``NAME-tiny``.

    Examples
    --------
    >>> t = tiny(SETS["digits-k50"])
    >>> t.name, t.n, t.k, t.load().shape
    ('digits-k50-tiny', 300, 8, (300, 64))
    """
    rows = min(s.n, TINY_ROWS)
    return replace(s, name=f"{s.name}-tiny", n=rows, k=min(s.k, TINY_K), rows=rows,
                   description=f"{rows} rows of {s.name}: {s.description}")
