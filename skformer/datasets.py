"""Generated data sets: text documents with topics, for sparse (TF-IDF) clustering.

Nothing is downloaded: the documents are drawn from a seeded generator, so examples,
tests and benchmarks show text clustering without a corpus on disk.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params

__all__ = ["make_documents"]

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _vocabulary(size: int, rng: np.random.RandomState) -> list[str]:
    """``size`` distinct made-up words of two to four consonant-vowel syllables."""
    words: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < size:
        n_syllables = rng.randint(2, 5)
        word = "".join(_CONSONANTS[rng.randint(len(_CONSONANTS))]
                       + _VOWELS[rng.randint(len(_VOWELS))] for _ in range(n_syllables))
        if word not in words:
            words.add(word)
            ordered.append(word)
    return ordered


def _zipf(size: int, exponent: float = 1.0) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return weights / weights.sum()


@validate_params(
    {
        "n_documents": [Interval(Integral, 1, None, closed="left")],
        "n_topics": [Interval(Integral, 1, None, closed="left")],
        "vocabulary_size": [Interval(Integral, 1, None, closed="left")],
        "words_per_topic": [Interval(Integral, 1, None, closed="left")],
        "length": [tuple],
        "topic_share": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_documents(
    n_documents: int = 1000,
    n_topics: int = 5,
    *,
    vocabulary_size: int = 2000,
    words_per_topic: int = 200,
    length: tuple[int, int] = (40, 120),
    topic_share: float = 0.5,
    random_state=None,
) -> tuple[list[str], np.ndarray]:
    """Short text documents, each about one of ``n_topics`` topics.

    Every topic has its own ``words_per_topic`` words drawn from a vocabulary of made-up
    words, used with Zipf frequencies; a document of ``length`` words (uniform between
    the bounds) takes each word from its topic's words with probability
    ``topic_share`` and from the whole vocabulary (Zipf frequencies: common words
    shared by every topic) otherwise. Vectorised with
    :class:`~sklearn.feature_extraction.text.TfidfVectorizer`, the documents give a
    sparse matrix whose clusters are the topics, as news articles or product reviews do.

    Parameters
    ----------
    n_documents : int, default=1000
    n_topics : int, default=5
    vocabulary_size : int, default=2000
        Distinct words in all.
    words_per_topic : int, default=200
        Words of each topic (drawn from the vocabulary; topics may share some); at most
        ``vocabulary_size`` are used.
    length : (int, int), default=(40, 120)
        Smallest and largest number of words of a document.
    topic_share : float, default=0.5
        Probability that a word comes from the document's topic.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    documents : list of str, of length n_documents
    topics : ndarray of shape (n_documents,), int
        The topic of each document.

    Examples
    --------
    >>> from sklearn.feature_extraction.text import TfidfVectorizer
    >>> docs, topics = make_documents(200, n_topics=4, random_state=0)
    >>> X = TfidfVectorizer().fit_transform(docs)
    >>> X.shape[0], X.format, topics[:5]
    (200, 'csr', array([0, 2, 0, 3, 1]))
    """
    if not (len(length) == 2 and all(isinstance(v, Integral) for v in length)
            and 1 <= length[0] <= length[1]):
        raise ValueError(
            f"length must be a pair of ints (low, high) with 1 <= low <= high, got {length}.")
    words_per_topic = min(words_per_topic, vocabulary_size)
    rng = check_random_state(random_state)
    vocabulary = np.array(_vocabulary(vocabulary_size, rng))
    topic_words = [rng.choice(vocabulary_size, words_per_topic, replace=False)
                   for _ in range(n_topics)]
    topic_p, common_p = _zipf(words_per_topic), _zipf(vocabulary_size)
    topics = rng.randint(n_topics, size=n_documents)
    documents = []
    for topic in topics:
        n_words = rng.randint(length[0], length[1] + 1)
        from_topic = rng.random_sample(n_words) < topic_share
        index = np.where(
            from_topic,
            topic_words[topic][rng.choice(words_per_topic, n_words, p=topic_p)],
            rng.choice(vocabulary_size, n_words, p=common_p),
        )
        documents.append(" ".join(vocabulary[index]))
    return documents, topics
