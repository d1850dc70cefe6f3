import re


def word_stats(text: str) -> tuple:
    """Return (number of words, length of the longest word, most common word) for `text`.
    Words are runs of letters, compared case-insensitively; ties for the most common word
    go to the word that appears first. An empty text gives (0, 0, '').
    >>> word_stats("the cat and the hat")
    (5, 3, 'the')
    >>> word_stats("")
    (0, 0, '')
    """


def check(candidate):
    assert candidate("the cat and the hat") == (5, 3, "the")
    assert candidate("") == (0, 0, "")
    assert candidate("Hello, hello WORLD") == (3, 5, "hello")
    assert candidate("a bb a bb ccc") == (5, 3, "a")
    assert candidate("one-two three") == (3, 5, "one")
