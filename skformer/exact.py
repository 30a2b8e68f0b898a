"""ExactLloydTransformer: a scikit-learn clusterer whose fit runs the exact transformer."""

from __future__ import annotations

import torch
from sklearn.utils._param_validation import StrOptions

from ._base import BaseTransformerKMeans
from .nn.model import ExactLloydModel

__all__ = ["ExactLloydTransformer"]


class ExactLloydTransformer(BaseTransformerKMeans):
    """K-means clustering by a transformer that executes Lloyd's algorithm exactly.

    Each iteration of the fit is one layer of a transformer with hand-set weights and
    hard attention (paper eq. 4, Theorem 2.1): points attend to the nearest centre
    and write its index code into their scratch block (A1), erase the previous code
    (A2); centres attend to the points carrying their code, which averages them (A3),
    and erase their previous value (A4). With the binary (BN) cluster-index embedding
    the tokens are ``d + ceil(log2 k)`` wide instead of ``d + k`` with one-hot (OH).

    The result is Lloyd's algorithm, the ``algorithm="lloyd"`` of
    :class:`sklearn.cluster.KMeans`, with two documented differences:

    * a cluster that loses all its points **keeps its previous centre** (one extra
      type-flag coordinate lets the centre attend to itself, spec section 2.5),
      where KMeans relocates it to a far-away point. The fit works on centred data,
      so a kept centre comes back up to the rounding of that translation (an ulp);
    * a point whose computed distances to several centres are equal goes to the
      lowest centre index (as in KMeans; an exact tie in real arithmetic may be
      broken differently by the rounding of each implementation).

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters to form as well as the number of centroids to generate.
    embedding : {"binary", "onehot"}, default="binary"
        Cluster-index embedding of the tokens: BN (``ceil(log2 k)`` columns) or OH
        (``k`` columns). Both give the same clustering.
    init : {"k-means++", "random"}, callable or array-like of shape \
            (n_clusters, n_features), default="k-means++"
        Method for initialization, as in :class:`sklearn.cluster.KMeans` (same random
        stream: with the same ``random_state`` both start from the same centres).
    n_init : "auto" or int, default="auto"
        Number of runs with different initial centres; the best by inertia is kept.
        ``"auto"``: 1 for ``"k-means++"`` or an array, 10 otherwise.
    max_iter : int, default=300
        Maximum number of layers (iterations) of a single run.
    tol : float, default=1e-4
        Relative tolerance on the squared centre shift (times the mean feature
        variance) to declare convergence; a run also stops when the assignment does
        not change (strict convergence).
    verbose : int, default=0
        Log progress to the ``"skformer"`` logger (shown on stderr).
    random_state : int, RandomState instance or None, default=None
        Determines random number generation for centroid initialization.
    copy_x : bool, default=True
        Accepted for compatibility with :class:`~sklearn.cluster.KMeans`, where False
        centres X in place. skformer never modifies X, whatever the value: the fit
        works on its own centred copy of an in-memory array (a ``numpy.memmap`` or a
        dask array is read block by block and never copied), and the result does not
        depend on ``copy_x``.
    algorithm : {"lloyd"}, default="lloyd"
        K-means algorithm to use, as in :class:`~sklearn.cluster.KMeans`. Only
        ``"lloyd"``: the transformer's layers are Lloyd iterations. ``"elkan"`` (which
        converges to the same clustering in KMeans) is refused with a ``ValueError``.
    device : str or torch.device, default="cpu"
        Where the transformer runs: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, or
        ``"auto"`` (CUDA when available).
    path : {"fused", "dense"}, default="fused"
        ``"fused"`` computes what the hard-attention layer computes with its
        structure (nearest centre, then a segment mean: O(n k d) per iteration);
        ``"dense"`` runs the literal attention (O(n^2 d) per iteration; small n only).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Coordinates of cluster centers.
    labels_ : ndarray of shape (n_samples,), int32
        Index of the nearest centre of each training point (``== predict(X)``).
    inertia_ : float
        Sum of squared distances of samples to their closest cluster center,
        weighted by the sample weights if provided.
    n_iter_ : int
        Number of iterations (transformer layers) run.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when X has feature names
        that are all strings.

    See Also
    --------
    sklearn.cluster.KMeans : The same algorithm, implemented directly.
    skformer.nn.ExactLloydModel : The torch module behind this estimator.

    Notes
    -----
    One layer maps point tokens ``[x_i; y_i]`` and centre tokens ``[c_j; b_j]`` to
    ``[x_i; b_{a(i)}]`` and ``[mean of cluster j; b_j]`` with
    ``a(i) = argmin_j ||x_i - c_j||^2``. ``predict``, ``transform`` and ``score`` use
    the fitted centres directly (nearest centre, distances, ``-inertia``), row by
    row (sparse CSR input: chunk by chunk, never densified).

    A process forked after a fit (``multiprocessing`` with the ``"fork"`` start
    method, joblib's ``"multiprocessing"`` backend) hangs in its next fit, as with
    :class:`~sklearn.cluster.KMeans`: PyTorch's OpenMP thread pool does not survive
    ``fork``. Use the ``"spawn"`` or ``"forkserver"`` start method (joblib's default
    backend is safe), or call ``torch.set_num_threads(1)`` before forking.

    Examples
    --------
    >>> import numpy as np
    >>> from skformer import ExactLloydTransformer
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> est = ExactLloydTransformer(n_clusters=2, random_state=0).fit(X)
    >>> est.labels_
    array([1, 1, 1, 0, 0, 0], dtype=int32)
    >>> est.predict([[0, 0], [12, 3]])
    array([1, 0], dtype=int32)
    >>> est.cluster_centers_
    array([[10.,  2.],
           [ 1.,  2.]])
    """

    _parameter_constraints: dict = {
        **BaseTransformerKMeans._parameter_constraints,
        "embedding": [StrOptions({"binary", "onehot"})],
        "path": [StrOptions({"fused", "dense"})],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        embedding="binary",
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="lloyd",
        device="cpu",
        path="fused",
    ):
        super().__init__(
            n_clusters,
            init=init,
            n_init=n_init,
            max_iter=max_iter,
            tol=tol,
            verbose=verbose,
            random_state=random_state,
            copy_x=copy_x,
            algorithm=algorithm,
            device=device,
        )
        self.embedding = embedding
        self.path = path

    def _fit_spec(self, n_features: int, device: torch.device, random_state) -> dict:
        # The fused path is the fit layer's Lloyd step; the literal layer runs only when
        # asked for.
        exact = None
        if self.path == "dense":
            exact = ExactLloydModel(n_features, self.n_clusters, embedding=self.embedding,
                                    path="dense").to(device)
        return {"exact": exact}
