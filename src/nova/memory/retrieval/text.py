"""Words for keyword recall: lower-cased, CJK split into characters and bigrams, and for ranking also
stop words dropped and a light suffix strip, so "painted" finds "painting" and "the" finds nothing."""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "content_words", "stem", "tokenize"]

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")

STOP_WORDS = frozenset(
    ["a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "of", "to", "in", "on", "at", "for", "with", "and", "or", "but", "what", "when", "where", "who", "whom", "which", "why", "how", "that", "this", "these", "those", "it", "its", "i", "you", "he", "she", "they", "we", "his", "her", "their", "our", "my", "your", "me", "him", "them", "us", "as", "by", "from", "has", "have", "had", "will", "would", "can", "could", "should", "about", "into", "over", "than", "then", "there", "here", "so", "if", "not", "no", "yes", "any", "some", "all", "just", "also", "very", "too", "up", "out", "more", "most", "like", "s", "t", "ll", "re", "ve", "m", "d"]
)
_SUFFIXES = ("ing", "edly", "ed", "es", "s", "ly")


def tokenize(text: str) -> list[str]:
    """Lower-cased words; runs of CJK characters become single characters plus bigrams, since those
    scripts do not separate words with spaces."""
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            for run in _CJK.findall(word):
                tokens.extend(run)
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
            tokens.extend(_CJK.sub(" ", word).split())
        else:
            tokens.append(word)
    return tokens


def stem(word: str) -> str:
    """Strip one common English suffix when enough of the word is left (a cheap stand-in for a stemmer:
    it only has to map a word and its inflections to the same key, not to a dictionary form)."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    # "move", "moved" and "moving" must meet: a final silent e goes too.
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def content_words(text: str) -> list[str]:
    """The ranking terms of `text`: tokens without stop words, stemmed."""
    return [stem(w) for w in tokenize(text) if w not in STOP_WORDS]
