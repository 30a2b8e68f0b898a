"""
=========================================================
The exact Lloyd transformer against scikit-learn's KMeans
=========================================================

:class:`skformer.ExactLloydTransformer` runs Lloyd's algorithm as a transformer with
hand-set weights: one layer of hard distance attention is one Lloyd iteration. Here it is fitted
next to :class:`sklearn.cluster.KMeans` on the iris data, and the two clusterings are compared.
"""

# %%
# Fit both estimators
# -------------------
# Both use k-means++ initialisation with the same seed and the defaults of
# ``n_init`` and ``max_iter``.
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.datasets import load_iris

from skformer import ExactLloydTransformer

X, y = load_iris(return_X_y=True)

trf = ExactLloydTransformer(n_clusters=3, random_state=0).fit(X)
km = KMeans(n_clusters=3, random_state=0).fit(X)

print(f"transformer: inertia={trf.inertia_:.4f}  n_iter={trf.n_iter_}")
print(f"KMeans:      inertia={km.inertia_:.4f}  n_iter={km.n_iter_}")

# %%
# Compare the centres
# -------------------
# Cluster numbers are arbitrary, so the transformer's centres are first matched to KMeans'
# (a minimum-cost assignment on the distances between centres). When both runs reach the
# same local optimum, the matched centres agree up to floating-point round-off.
cost = ((trf.cluster_centers_[:, None, :] - km.cluster_centers_[None, :, :]) ** 2).sum(-1)
rows, cols = linear_sum_assignment(cost)
matched = np.empty(3, dtype=int)
matched[rows] = cols  # transformer centre j corresponds to KMeans centre matched[j]

print("largest centre difference:",
      np.abs(trf.cluster_centers_ - km.cluster_centers_[matched]).max())
print("points labelled alike:", np.mean(matched[trf.labels_] == km.labels_))

# %%
# From the same initial centres the two are identical
# ---------------------------------------------------
# The two k-means++ initialisations draw their random numbers differently. Started from the
# same centres (here one flower of each species), the transformer repeats Lloyd's iterations
# exactly: same centres, same labels, same number of iterations.
init = X[[0, 50, 100]]
trf_same = ExactLloydTransformer(n_clusters=3, init=init, n_init=1).fit(X)
km_same = KMeans(n_clusters=3, init=init, n_init=1, algorithm="lloyd").fit(X)

print("largest centre difference:",
      np.abs(trf_same.cluster_centers_ - km_same.cluster_centers_).max())
print("identical labels:", np.array_equal(trf_same.labels_, km_same.labels_))
print("iterations:", trf_same.n_iter_, km_same.n_iter_)

# %%
# Plot the two clusterings
# ------------------------
# Petal length against petal width, coloured by cluster (KMeans' clusters renumbered to the
# transformer's); crosses are the centres.
petal = [2, 3]
inverse = np.argsort(matched)  # KMeans centre c corresponds to transformer centre inverse[c]
fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharex=True, sharey=True)
panels = [
    ("ExactLloydTransformer", trf.labels_, trf.cluster_centers_),
    ("KMeans", inverse[km.labels_], km.cluster_centers_[matched]),
]
for ax, (title, labels, centres) in zip(axes, panels, strict=True):
    ax.scatter(X[:, petal[0]], X[:, petal[1]], c=labels, cmap="viridis", s=15)
    ax.scatter(centres[:, petal[0]], centres[:, petal[1]], c="red", marker="x", s=100)
    ax.set_title(title)
    ax.set_xlabel("petal length (cm)")
axes[0].set_ylabel("petal width (cm)")
fig.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_exact_vs_kmeans.png")
else:
    plt.show()
