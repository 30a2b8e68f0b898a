"""
=======================================================
TransformerKMeans in a Pipeline with GridSearchCV
=======================================================

:class:`skformer.TransformerKMeans` is a scikit-learn estimator: it can be cloned, pickled,
put in a :class:`~sklearn.pipeline.Pipeline` and tuned with
:class:`~sklearn.model_selection.GridSearchCV`, here over the number of clusters with two
parallel jobs. Its ``score`` is minus the k-means objective on held-out data, as for
:class:`~sklearn.cluster.KMeans`; since that always improves with more clusters, the search
below scores candidates by the silhouette coefficient instead.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.metrics import silhouette_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skformer import TransformerKMeans

X, y = load_wine(return_X_y=True)

pipe = Pipeline(
    [("scale", StandardScaler()), ("cluster", TransformerKMeans(random_state=0, n_init=3))]
)


def silhouette(estimator, X, y=None):
    """Silhouette of the pipeline's clustering of X (higher is better)."""
    labels = estimator.predict(X)
    if len(np.unique(labels)) < 2:
        return -1.0
    return silhouette_score(estimator[:-1].transform(X), labels)


search = GridSearchCV(
    pipe, {"cluster__n_clusters": [2, 3, 4, 5, 6, 8]}, scoring=silhouette, cv=3, n_jobs=2
)
search.fit(X)
print("best:", search.best_params_, f"silhouette {search.best_score_:.3f}")

# %%
# The wine data have three cultivars; the search finds three clusters.
ks = search.cv_results_["param_cluster__n_clusters"].data.astype(int)
mean, std = search.cv_results_["mean_test_score"], search.cv_results_["std_test_score"]
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.errorbar(ks, mean, yerr=std, marker="o", capsize=3)
ax.set_xlabel("n_clusters")
ax.set_ylabel("silhouette (3-fold CV)")
ax.set_title("GridSearchCV over TransformerKMeans(n_clusters)")
plt.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_pipeline_grid_search.png")
else:
    plt.show()
