"""skformer.datasets.make_documents: generated text documents with topics.

Oracle first (the topics are what KMeans and the exact transformer recover from the
TF-IDF matrix, and the two agree), then properties (shapes, determinism, ranges, the
vectoriser's sparse output), then the error table, word for word.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score

from skformer import ExactLloydTransformer
from skformer.datasets import make_documents

# -- oracle: the topics are the clusters ---------------------------------------------------


def test_kmeans_and_exact_transformer_recover_the_topics(global_random_seed):
    docs, topics = make_documents(300, n_topics=3, random_state=global_random_seed)
    X = TfidfVectorizer().fit_transform(docs)

    km = KMeans(n_clusters=3, random_state=0).fit(X)
    trf = ExactLloydTransformer(n_clusters=3, random_state=0).fit(X)

    assert adjusted_rand_score(topics, km.labels_) > 0.8
    assert adjusted_rand_score(topics, trf.labels_) > 0.8
    np.testing.assert_array_equal(trf.labels_, km.labels_)
    assert trf.inertia_ == pytest.approx(km.inertia_, rel=1e-9)


# -- properties ------------------------------------------------------------------------------


def test_shapes_and_types():
    docs, topics = make_documents(50, n_topics=4, random_state=0)
    assert isinstance(docs, list) and len(docs) == 50
    assert all(isinstance(doc, str) and doc for doc in docs)
    assert isinstance(topics, np.ndarray) and topics.shape == (50,)
    assert np.issubdtype(topics.dtype, np.integer)


def test_same_random_state_same_documents():
    first = make_documents(40, n_topics=3, random_state=7)
    again = make_documents(40, n_topics=3, random_state=np.random.RandomState(7))
    other = make_documents(40, n_topics=3, random_state=8)
    assert first[0] == again[0]
    np.testing.assert_array_equal(first[1], again[1])
    assert first[0] != other[0]


@pytest.mark.parametrize("n_topics", [1, 3, 6])
def test_topics_in_range(n_topics):
    _, topics = make_documents(200, n_topics=n_topics, random_state=0)
    assert topics.min() >= 0 and topics.max() < n_topics
    if n_topics > 1:
        assert len(np.unique(topics)) == n_topics  # 200 draws reach every topic


@pytest.mark.parametrize("length", [(5, 5), (1, 3), (10, 30)])
def test_lengths_within_bounds(length):
    docs, _ = make_documents(60, n_topics=2, length=length, random_state=0)
    n_words = np.array([len(doc.split()) for doc in docs])
    assert n_words.min() >= length[0] and n_words.max() <= length[1]


def test_vocabulary_size_bounds_the_distinct_words():
    docs, _ = make_documents(100, n_topics=2, vocabulary_size=30, words_per_topic=10,
                             random_state=0)
    assert len({word for doc in docs for word in doc.split()}) <= 30


def test_topic_share_one_uses_only_topic_words():
    docs, topics = make_documents(60, n_topics=2, vocabulary_size=500, words_per_topic=20,
                                  topic_share=1.0, random_state=0)
    for topic in (0, 1):
        words = {w for doc, t in zip(docs, topics, strict=True) if t == topic
                 for w in doc.split()}
        assert len(words) <= 20


def test_tfidf_gives_csr():
    docs, _ = make_documents(80, n_topics=3, random_state=0)
    X = TfidfVectorizer().fit_transform(docs)
    assert sp.issparse(X) and X.format == "csr"
    assert X.shape[0] == 80
    assert X.nnz < 0.5 * X.shape[0] * X.shape[1]  # sparse indeed
    X32 = TfidfVectorizer(dtype=np.float32).fit_transform(docs)
    assert X32.dtype == np.float32


# -- errors ----------------------------------------------------------------------------------

ERRORS = [
    ("n-topics", dict(n_topics=0),
     "The 'n_topics' parameter of make_documents must be an int in the range [1, inf)."),
    ("n-documents", dict(n_documents=0),
     "The 'n_documents' parameter of make_documents must be an int in the range [1, inf)."),
    ("n-documents-float", dict(n_documents=2.5),
     "The 'n_documents' parameter of make_documents must be an int"),
    ("vocabulary", dict(vocabulary_size=0),
     "The 'vocabulary_size' parameter of make_documents must be an int in the range"),
    ("words-per-topic", dict(words_per_topic=0),
     "The 'words_per_topic' parameter of make_documents must be an int in the range"),
    ("share-low", dict(topic_share=-0.1),
     "The 'topic_share' parameter of make_documents must be a float in the range [0.0, 1.0]"),
    ("share-high", dict(topic_share=1.5),
     "The 'topic_share' parameter of make_documents must be a float in the range [0.0, 1.0]"),
    ("length-zero", dict(length=(0, 5)),
     "length must be a pair of ints (low, high) with 1 <= low <= high, got (0, 5)."),
    ("length-reversed", dict(length=(9, 3)),
     "length must be a pair of ints (low, high) with 1 <= low <= high, got (9, 3)."),
    ("length-single", dict(length=(5,)),
     "length must be a pair of ints (low, high) with 1 <= low <= high, got (5,)."),
    ("length-float", dict(length=(1.5, 3)),
     "length must be a pair of ints (low, high) with 1 <= low <= high, got (1.5, 3)."),
]


@pytest.mark.parametrize("kwargs, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(kwargs, message):
    kwargs = {"n_documents": 10, "n_topics": 2, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        make_documents(random_state=0, **kwargs)
