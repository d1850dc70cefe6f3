def is_palindrome(text: str) -> bool:
    """Check whether the given string reads the same forwards and backwards.
    >>> is_palindrome('')
    True
    >>> is_palindrome('aba')
    True
    >>> is_palindrome('zbcd')
    False
    """
