"""
==============================
Quick start: TransformerKMeans
==============================

:class:`skformer.TransformerKMeans` is used exactly like :class:`sklearn.cluster.KMeans`.
Its fit runs a pretrained one-layer transformer: each forward pass maps the current centres
to better ones, and exact Lloyd steps (the hard-attention transformer) finish the run at a
local optimum of k-means.
"""

# %%
# Fit and predict
# ---------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import kmeans_plusplus
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans

X, y = make_blobs(n_samples=1500, centers=5, cluster_std=1.6, random_state=3)

est = TransformerKMeans(n_clusters=5, random_state=0, learned_starts=1)  # the learned mode
labels = est.fit_predict(X)

print(f"inertia        {est.inertia_:.2f}")
print(f"steps          {est.n_learned_steps_} learned + {est.n_lloyd_steps_} exact Lloyd")
print(f"centres shape  {est.cluster_centers_.shape}")
print("new points ->", est.predict([[0.0, 0.0], [5.0, -5.0]]))

# %%
# What the learned steps do
# -------------------------
# ``finish="none"`` keeps only the learned steps; ``max_iter`` bounds how many. Following
# the centres step by step shows the transformer moving k-means++ starts to the clusters.
# The starts are the k-means++ centres KMeans would draw with the same seed.
start, _ = kmeans_plusplus(X - X.mean(0), 5, random_state=np.random.RandomState(0))
paths = [start + X.mean(0)]
for steps in range(1, 6):
    fit = TransformerKMeans(5, random_state=0, finish="none", learned_starts=1,
                            max_iter=steps, tol=0).fit(X)
    paths.append(fit.cluster_centers_)
paths = np.stack(paths)  # (steps + 1, k, d)

fig, ax = plt.subplots(figsize=(5.5, 5))
ax.scatter(*X.T, c=labels, s=4, cmap="tab10", alpha=0.5)
for j in range(5):
    ax.plot(*paths[:, j].T, "k.-", lw=1)
ax.scatter(*est.cluster_centers_.T, marker="x", s=80, c="k", label="final centres")
ax.set_title("TransformerKMeans: centres after 0..5 learned steps")
ax.legend(loc="lower right")
plt.show()
