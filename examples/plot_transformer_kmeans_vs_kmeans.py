"""
=========================================
TransformerKMeans against KMeans
=========================================

Both estimators start from the same k-means++ centres (same ``random_state``), so the
comparison is paired: any difference in the final objective comes from the path the steps
take. KMeans runs Lloyd steps. TransformerKMeans in its learned mode
(``learned_starts=1``) also runs learned soft-attention steps, then exact Lloyd steps to a
fixed point, and keeps the better of the two runs (its default, fast mode is KMeans' run).
On data with many overlapping clusters the annealed learned steps often lead to a better
local optimum (:ref:`sphx_glr_auto_examples_plot_quickstart.py`); on the digits below,
where Lloyd's algorithm finds good optima, the learned run rarely changes the result and
the median ratio is 1. See :doc:`/benchmarks` for the full benchmark.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.metrics import adjusted_rand_score

from skformer import TransformerKMeans

X, y = load_digits(return_X_y=True)

rows = []
for seed in range(8):
    ours = TransformerKMeans(n_clusters=10, random_state=seed, learned_starts=1).fit(X)
    km = KMeans(n_clusters=10, random_state=seed).fit(X)
    rows.append(
        (ours.inertia_ / km.inertia_, adjusted_rand_score(y, ours.labels_),
         adjusted_rand_score(y, km.labels_))
    )
ratio, ari_ours, ari_km = np.array(rows).T
print(f"median inertia ratio (ours / KMeans): {np.median(ratio):.4f}")
print(f"median ARI: ours {np.median(ari_ours):.3f}, KMeans {np.median(ari_km):.3f}")

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
a.bar(range(8), ratio - 1.0, color=np.where(ratio <= 1, "tab:green", "tab:red"))
a.axhline(0, color="k", lw=0.8)
a.set_xlabel("seed")
a.set_ylabel("inertia ratio - 1")
a.set_title("digits: TransformerKMeans / KMeans")
b.scatter(ari_km, ari_ours)
lims = [min(ari_km.min(), ari_ours.min()) - 0.02, max(ari_km.max(), ari_ours.max()) + 0.02]
b.plot(lims, lims, "k--", lw=0.8)
b.set_xlabel("ARI KMeans")
b.set_ylabel("ARI TransformerKMeans")
b.set_title("agreement with the true digits")
plt.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_transformer_kmeans_vs_kmeans.png")
else:
    plt.show()
