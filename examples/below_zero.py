from typing import List


def below_zero(operations: List[int]) -> bool:
    """You're given a list of deposit and withdrawal operations on a bank account that starts
    with zero balance. Your task is to detect if at any point the balance of account falls
    below zero, and at that point function should return True. Otherwise it should return
    False.
    >>> below_zero([1, 2, 3])
    False
    >>> below_zero([1, 2, -4, 5])
    True
    """


def check(candidate):
    assert candidate([]) is False
    assert candidate([1, 2, -3, 1, 2, -3]) is False
    assert candidate([1, 2, -4, 5, 6]) is True
    assert candidate([1, -1, 2, -2, 5, -5, 4, -4]) is False
    assert candidate([1, -1, 2, -2, 5, -5, 4, -5]) is True
    assert candidate([1, -2, 2, -2, 5, -5, 4, -4]) is True
