"""
=====================================
Clustering text: sparse TF-IDF input
=====================================

Text is clustered as a sparse matrix: a document's TF-IDF vector has one column per word of
the vocabulary and is zero for almost all of them. Both skformer clusterers take a SciPy
CSR matrix wherever they take an array, as :class:`sklearn.cluster.KMeans` does, and never
densify it. Here 2000 generated documents on 8 topics
(:func:`skformer.datasets.make_documents`, nothing downloaded) are vectorised with
:class:`~sklearn.feature_extraction.text.TfidfVectorizer` and clustered by KMeans,
:class:`skformer.ExactLloydTransformer` and :class:`skformer.TransformerKMeans`.
See :doc:`/sparse` for what sparse input means for each estimator.
"""

# %%
# Documents and their TF-IDF matrix
# ---------------------------------
# Each document takes a quarter of its words from its topic's words and the rest from
# words common to every topic, so the topics overlap. As usual for clustering text, the
# vectoriser drops the words found in more than half of the documents (``max_df=0.5``),
# which say nothing about a topic.
from time import perf_counter

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import contingency_matrix
from sklearn.pipeline import make_pipeline

from skformer import ExactLloydTransformer, TransformerKMeans
from skformer.datasets import make_documents

documents, topics = make_documents(2000, n_topics=8, topic_share=0.25, random_state=0)
print(documents[0][:70], "...")

vectorizer = TfidfVectorizer(max_df=0.5)
X = vectorizer.fit_transform(documents)
words = vectorizer.get_feature_names_out()

stored = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
dense = X.shape[0] * X.shape[1] * X.dtype.itemsize
print(f"X: {type(X).__name__} {X.format} of shape {X.shape}, {X.dtype}")
print(f"density {X.nnz / (X.shape[0] * X.shape[1]):.2%}: {stored / 2**20:.2f} MiB stored, "
      f"{dense / 2**20:.1f} MiB if it were dense")

# %%
# Three clusterers on the same CSR matrix
# ---------------------------------------
# All three use k-means++ with the same ``random_state``, so they start from the same
# centres. The fit times (the best of three fits) are shown relative to KMeans': a rough
# indication on the machine that built this page; :doc:`/benchmarks` has measurements.
estimators = {
    "KMeans": KMeans(n_clusters=8, random_state=0),
    "ExactLloydTransformer": ExactLloydTransformer(n_clusters=8, random_state=0),
    "TransformerKMeans": TransformerKMeans(n_clusters=8, random_state=0, device="cpu"),
}


def fit_seconds(est, X, repeat=3):
    """The shortest of ``repeat`` fits of ``est`` on ``X``, in seconds."""
    times = []
    for _ in range(repeat):
        start = perf_counter()
        est.fit(X)
        times.append(perf_counter() - start)
    return min(times)


seconds = {name: fit_seconds(est, X) for name, est in estimators.items()}

km = estimators["KMeans"]
for name, est in estimators.items():
    print(f"{name:22s} inertia {est.inertia_:.6f}  n_iter {est.n_iter_:2d}  "
          f"ARI vs topics {adjusted_rand_score(topics, est.labels_):.3f}  "
          f"time {seconds[name] / seconds['KMeans']:.2f} x KMeans")

# %%
# The exact transformer runs KMeans' algorithm on the sparse matrix: the same initial
# centres, the same Lloyd iterations, the same labels. The inertias agree up to the
# rounding of the last digits (the sums are taken in another order).
trf = estimators["ExactLloydTransformer"]
print("identical labels:", np.array_equal(trf.labels_, km.labels_))
print("same number of iterations:", trf.n_iter_ == km.n_iter_)
print(f"relative inertia difference: {abs(trf.inertia_ - km.inertia_) / km.inertia_:.1e}")

# %%
# float32 stays float32: a TF-IDF matrix of single precision gives centres of single
# precision, and the data are not copied to float64.
X32 = TfidfVectorizer(max_df=0.5, dtype=np.float32).fit_transform(documents)
trf32 = ExactLloydTransformer(n_clusters=8, random_state=0).fit(X32)
km32 = KMeans(n_clusters=8, random_state=0).fit(X32)
print("centres:", trf32.cluster_centers_.dtype,
      "| identical labels to KMeans on float32:", np.array_equal(trf32.labels_, km32.labels_))

# %%
# More starts, as with KMeans
# ---------------------------
# With one k-means++ start, two topics can end in one cluster while another topic is split
# (an ARI well below 1 above). As for KMeans, ``n_init`` starts and the best by inertia
# help; with the same ``random_state`` the result is again KMeans'.
best = TransformerKMeans(n_clusters=8, n_init=10, random_state=0, device="cpu").fit(X)
km10 = KMeans(n_clusters=8, n_init=10, random_state=0).fit(X)
print(f"n_init=10: ARI {adjusted_rand_score(topics, best.labels_):.3f}, "
      f"identical labels to KMeans(n_init=10): {np.array_equal(best.labels_, km10.labels_)}")

# %%
# The learned mode on wide data
# -----------------------------
# The learned models are tied to a shape ``(n_features, n_clusters)``. The package ships
# models up to 64 features; for a TF-IDF matrix with thousands of columns none is stored,
# and pretraining one on demand would take well over the 90 s budget
# (:func:`skformer.store.on_demand_feasible`). ``TransformerKMeans(learned_starts=1)`` then
# skips the learned steps, says why in ``learned_skipped_`` (and in its log with
# ``verbose=1``), and its fit is KMeans' run.
learned = TransformerKMeans(n_clusters=8, random_state=0, learned_starts=1,
                            device="cpu").fit(X)
print("learned_used_:", learned.learned_used_)
print("learned_skipped_:", learned.learned_skipped_)
print("same labels as the fast mode:",
      np.array_equal(learned.labels_, estimators["TransformerKMeans"].labels_))

# %%
# What the clusters are about
# ---------------------------
# A centre of a TF-IDF clustering is the mean TF-IDF vector of its documents: its largest
# coordinates are the words that characterise the cluster. The words are made up by the
# generator; each cluster is listed with the topic most of its documents have.
order = np.argsort(best.cluster_centers_, axis=1)[:, ::-1]
table = contingency_matrix(topics, best.labels_)  # (topics, clusters)
for cluster in range(best.n_clusters):
    topic = table[:, cluster].argmax()
    print(f"cluster {cluster} ({table[:, cluster].sum():3d} documents, "
          f"mostly topic {topic}): {' '.join(words[order[cluster, :6]])}")

# %%
# In a Pipeline
# -------------
# The vectoriser and the clusterer go in one :class:`~sklearn.pipeline.Pipeline`: the
# documents go in as strings, the CSR matrix passes from one step to the next. Fitted on
# 1500 documents, it assigns the other 500 to its clusters.
pipe = make_pipeline(TfidfVectorizer(max_df=0.5),
                     TransformerKMeans(n_clusters=8, n_init=10, random_state=0,
                                       device="cpu"))
pipe.fit(documents[:1500])
held_out = pipe.predict(documents[1500:])
print(f"ARI on 500 held-out documents: {adjusted_rand_score(topics[1500:], held_out):.3f}")

# %%
# Topics against clusters
# -----------------------
# The contingency table of the one-start fit (left) and the best of ten starts (right):
# each row is a topic, each column a cluster (ordered by their majority topic). A
# clustering that recovers the topics puts each row's documents in one column.
fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
panels = [("one start (n_init=1)", km.labels_), ("best of ten (n_init=10)", best.labels_)]
for ax, (title, labels) in zip(axes, panels, strict=True):
    counts = contingency_matrix(topics, labels)
    counts = counts[:, np.argsort(counts.argmax(axis=0), kind="stable")]
    image = ax.imshow(counts, cmap="Blues")
    ax.set_title(f"{title}\nARI {adjusted_rand_score(topics, labels):.3f}")
    ax.set_xlabel("cluster")
    ax.set_xticks(range(counts.shape[1]))
    ax.set_yticks(range(counts.shape[0]))
axes[0].set_ylabel("topic")
fig.colorbar(image, ax=axes, label="documents", shrink=0.8)
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_text_clustering.png")
else:
    plt.show()
