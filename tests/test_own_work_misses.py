"""The syntax rule's known misses (issue 40, item 4), each on a hand-made pair in the shape
the 0.5B agents write (several copied from the committed samples in docs/coop/samples and
docs/candidates, named where they are).

Natural splits the rule used to call no own work, and shells it used to call own work. Each
pair is (helper's code, main's code, entry point); none is run: the rule reads the syntax
tree only.
"""

from __future__ import annotations

import pytest

from coopcode.code_analysis.cooperation import analyse_cooperation
from coopcode.code_analysis.own_work import own_work
from coopcode.code_analysis.usage import analyse_use

# -- natural splits -------------------------------------------------------------------------

MIN_MAX = '''def aux(numbers: List[float]) -> Tuple[float, float]:
    """ Return the smallest and the largest number of the list. """
    return min(numbers), max(numbers)
'''

LETTER_COUNTS = '''def aux(letters):
    """Count how many times each letter occurs."""
    letter_counts = {}
    for letter in letters:
        if letter in letter_counts:
            letter_counts[letter] += 1
        else:
            letter_counts[letter] = 1
    return letter_counts
'''

FREQUENCIES = '''def aux(lst):
    """Count the frequency of each integer in the list."""
    freq = {}
    for num in lst:
        freq[num] = freq.get(num, 0) + 1
    return freq
'''

VOWELS = '''def aux(s):
    """Count the vowels a, e, i, o, u in s, in either case."""
    return sum(1 for c in s.lower() if c in 'aeiou')
'''

CHARS = '''def aux(s: str) -> set:
    """The set of characters in s."""
    return set(s)
'''

UNIT_DIGIT = '''def aux(number):
    """Return the unit digit of a given integer."""
    return abs(number) % 10
'''

DIGITS = '''def aux(N):
    """Return the decimal digits of N as a list of integers."""
    return [int(d) for d in str(N)]
'''

FRUITS = '''def aux(s):
    """Return the numbers written in the sentence, in order."""
    return [int(word) for word in s.split() if word.isdigit()]
'''

ODD_POSITIVES = '''def aux(lst):
    """Keep the positive odd integers of the list."""
    return [x for x in lst if isinstance(x, int) and x > 0 and x % 2 == 1]
'''

SPLITS = {
    # 1. a tuple unpacked from the helper, then used per item (magrpo-coop HumanEval/21 #8)
    "tuple from the helper used per item": (MIN_MAX, '''
def rescale_to_unit(numbers: List[float]) -> List[float]:
    min_val, max_val = aux(numbers)
    return [(x - min_val) / (max_val - min_val) for x in numbers]
''', "rescale_to_unit"),
    "tuple from the helper used per item, named first": (MIN_MAX, '''
def rescale_to_unit(numbers: List[float]) -> List[float]:
    low, high = aux(numbers)
    span = high - low
    scaled = [(x - low) / span for x in numbers]
    return scaled
''', "rescale_to_unit"),
    # 2. a loop over a mapping the helper counted (credit-joint validation HumanEval/111)
    "mapping the helper counted, kept where main's maximum is": (LETTER_COUNTS, '''
def histogram(test):
    letters = test.split()
    letter_counts = aux(letters)
    if not letter_counts:
        return {}
    max_count = max(letter_counts.values())
    result = {letter: count for letter, count in letter_counts.items() if count == max_count}
    return result
''', "histogram"),
    "mapping the helper counted, searched in a for loop": (FREQUENCIES, '''
def search(lst):
    result = -1
    for num, count in aux(lst).items():
        if count >= num and num > result:
            result = num
    return result
''', "search"),
    # magrpo-coop-seed1 HumanEval/69 #5 iterates the mapping itself, unpacked
    "mapping the helper counted, unpacked in a comprehension": (FREQUENCIES, '''
def search(lst):
    return max([num for num, freq in aux(lst) if num > 0 and freq >= num]) if lst else -1
''', "search"),
    "mapping the helper counted, read by key": (FREQUENCIES, '''
def search(lst):
    freq = aux(lst)
    best = -1
    for num in freq:
        if freq[num] >= num > best:
            best = num
    return best
''', "search"),
    # 3. one expression that adds main's own rule to the helper's count
    "main's own rule added to the count": (VOWELS, '''
def vowels_count(s):
    return aux(s) + (1 if s and s[-1] in 'yY' else 0)
''', "vowels_count"),
    "main's own rule added to the count, as a method": (VOWELS, '''
def vowels_count(s):
    return aux(s) + s.lower().endswith('y')
''', "vowels_count"),
    # credit-cf-dapo validation HumanEval/64 #1
    "main's own rule adjusting the count in a conditional": (VOWELS, '''
def vowels_count(s):
    return aux(s) + 1 if s.endswith('y') else aux(s)
''', "vowels_count"),
    # seed-fit validation HumanEval/64 #0 (passes; the helper alone does not)
    "main's own rule adjusting the count in an if": (VOWELS, '''
def vowels_count(s):
    s = s.lower()
    if s.endswith('y'):
        return aux(s[:-1]) + 1
    else:
        return aux(s) + 0
''', "vowels_count"),
    "main's input less the helper's count": (FRUITS, '''
def fruit_distribution(s, n):
    return n - sum(aux(s))
''', "fruit_distribution"),
    # 4. the helper's answers on two inputs compared (or combined)
    "answers on two inputs compared": (CHARS, '''
def same_chars(s0: str, s1: str):
    return aux(s0) == aux(s1)
''', "same_chars"),
    # credit-cf validation HumanEval/97 #0 (passes; the helper alone does not)
    "answers on two inputs multiplied": (UNIT_DIGIT, '''
def multiply(a, b):
    return aux(a) * aux(b)
''', "multiply"),
    # credit-joint validation HumanEval/97 #0
    "answers on two inputs, named first": (UNIT_DIGIT, '''
def multiply(a, b):
    unit_digit_a = aux(a % 10)
    unit_digit_b = aux(b % 10)
    return unit_digit_a * unit_digit_b
''', "multiply"),
    # 5. a sum over what the helper parsed
    "sum over the parsed digits": (DIGITS, '''
def solve(N):
    return bin(sum(aux(N)))[2:]
''', "solve"),
    "sum over the parsed digits in a loop": (DIGITS, '''
def solve(N):
    total = 0
    for digit in aux(N):
        total += digit
    return bin(total)[2:]
''', "solve"),
    "sum of squares over what the helper kept": (ODD_POSITIVES, '''
def double_the_difference(lst):
    return sum(x ** 2 for x in aux(lst))
''', "double_the_difference"),
}

# -- shells ---------------------------------------------------------------------------------

WHOLE_ROLLING_MAX = '''def aux(numbers):
    """Return the rolling maximum of the list."""
    return [max(numbers[:i + 1]) for i in range(len(numbers))]
'''

UNIQUE = '''def aux(l: list):
    """Return the sorted unique elements of a list."""
    return [x for x in sorted(set(l))]
'''

COUNT_UPPER = '''def aux(s):
    """Count the uppercase vowels in even indices."""
    count = 0
    for i in range(0, len(s), 2):
        if s[i] in 'AEIOU':
            count += 1
    return count
'''

BALANCED = """def aux(lst: list):
    '''Check if the two strings can be concatenated into a good string.'''
    n = len(lst)
    if n < 2:
        return 'No'
    for i in range(n):
        for j in range(n):
            concat1 = lst[i] + lst[j]
            concat2 = lst[j] + lst[i]
            if is_balanced(concat1) or is_balanced(concat2):
                return 'Yes'
    return 'No'


def is_balanced(s: str):
    '''Check if a string of parentheses is balanced.'''
    balance = 0
    for char in s:
        if char == '(':
            balance += 1
        elif char == ')':
            balance -= 1
        if balance < 0:
            return False
    return balance == 0
"""

SHELLS = {
    # 6. a helper returning a constant, called per item (magrpo-credit HumanEval/21 #6, /81 #5)
    "constant list called per item": ('''def aux(returns: List[float]) -> List[float]:
    """ Return a list of numbers scaled to [0, 1]. """
    return [0.0, 1.0]
''', '''
def rescale_to_unit(numbers: List[float]) -> List[float]:
    min_num = min(numbers)
    max_num = max(numbers)
    range_diff = max_num - min_num
    scaled_numbers = [aux(num) for num in numbers]
    return scaled_numbers
''', "rescale_to_unit"),
    "constant grades called per item": ('''def aux(grades):
    """Return a list of letter grades."""
    return ['A+', 'B', 'C-', 'C', 'A-']
''', '''
def numerical_letter_grade(grades):
    return [aux(gpa) for gpa in grades if gpa >= 4.0]
''', "numerical_letter_grade"),
    "the same constant on every path, called per item": ('''def aux(x):
    """Check the number."""
    if x > 0:
        return -1
    return -1
''', '''
def f(xs):
    return [aux(x) for x in xs]
''', "f"),
    # 7. no-op slicing or arithmetic on a computed name
    "sliced to the length of the helper's input": (WHOLE_ROLLING_MAX, '''
def rolling_max(numbers):
    n = len(numbers)
    result = aux(numbers)
    return result[:n]
''', "rolling_max"),
    "sliced from 0 to the length of the helper's input": (WHOLE_ROLLING_MAX, '''
def rolling_max(numbers):
    length = len(numbers)
    return aux(numbers)[0:length]
''', "rolling_max"),
    "a computed zero added": (COUNT_UPPER, '''
def count_upper(s):
    offset = len(s) - len(s)
    return aux(s) + offset
''', "count_upper"),
    "a computed name added and taken away": (COUNT_UPPER, '''
def count_upper(s):
    n = len(s)
    return aux(s) + n - n
''', "count_upper"),
    "times a computed name over itself": (COUNT_UPPER, '''
def count_upper(s):
    size = len(s)
    return aux(s) * size // size
''', "count_upper"),
    "a computed name times zero": (COUNT_UPPER, '''
def count_upper(s):
    size = len(s)
    return aux(s) + 0 * size
''', "count_upper"),
    # 8. a fallback that can never run
    "None test of a helper that never returns None": (UNIQUE, '''
def unique(l: list):
    result = aux(l)
    if result is None:
        return sorted(list(set(l)))
    return result
''', "unique"),
    "not-None test of a helper that never returns None": (COUNT_UPPER, '''
def count_upper(s):
    count = aux(s)
    if count is not None:
        return count
    return sum(1 for c in s[::2] if c in 'AEIOU')
''', "count_upper"),
    "None test in a conditional expression": (UNIQUE, '''
def unique(l: list):
    return sorted(set(l)) if aux(l) is None else aux(l)
''', "unique"),
    # ways that can never run do not count for any way of own work either: the chain a
    # coop-reward run learned (magrpo-coop-seed1 HumanEval/42 #9) can only take `aux(l, 1)`
    "a chain whose other ways can never run": ('''def aux(incr_list: list, n: int):
    return [i + n for i in incr_list]
''', '''
def incr_list(l: list):
    return aux(l, 1) if l else [] if not l else aux(l, 0) + [l[-1]] if l else []
''', "incr_list"),
    "a test already decided by an early return": (WHOLE_ROLLING_MAX, '''
def rolling_max(numbers):
    if not numbers:
        return []
    result = aux(numbers)
    if len(numbers) == 0:
        return result + numbers
    return result
''', "rolling_max"),
    # 9. main re-writing the helper's body and calling its sub-function
    # (magrpo-credit-seed1 HumanEval/119 #6, its comments dropped)
    "the helper's body re-written, its sub-function called": (BALANCED, """
def match_parens(lst):
    '''
    You are given a list of two strings, both strings consist of open
    parentheses '(' or close parentheses ')' only.
    '''
    n = len(lst)
    # If there are fewer than 2 strings, they cannot be concatenated
    if n < 2:
        return 'No'
    for i in range(n):
        for j in range(n):
            concat1 = lst[i] + lst[j]
            concat2 = lst[j] + lst[i]
            if is_balanced(concat1) or is_balanced(concat2):
                return 'Yes'
    return 'No'
""", "match_parens"),
    # magrpo HumanEval/123 #9: the helper's recursive step copied as main's answer
    "the helper's recursive step copied": ('''def aux(odd_nums, n):
    if n == 1:
        return odd_nums
    return [n] + aux(odd_nums + [n], 3 * n + 1) if n % 2 else aux(odd_nums, n // 2)
''', '''
def get_odd_collatz(n):
    return [n] + aux(odd_nums + [n], 3 * n + 1) if n % 2 else aux(odd_nums, n // 2)
''', "get_odd_collatz"),
}


@pytest.mark.parametrize("pair", list(SPLITS.values()), ids=list(SPLITS))
def test_a_natural_split_is_own_work(pair: tuple[str, str, str]) -> None:
    assert own_work(*pair) is True


@pytest.mark.parametrize("pair", list(SHELLS.values()), ids=list(SHELLS))
def test_a_shell_is_not_own_work(pair: tuple[str, str, str]) -> None:
    assert own_work(*pair) is False


def test_a_helper_answering_a_constant_is_trivial() -> None:
    """A helper that returns the same literal whatever it is given answers nothing: main's
    calls of it are no use of the helper (so no shell either)."""
    for helper, main, entry in (SHELLS["constant list called per item"],
                                SHELLS["constant grades called per item"],
                                SHELLS["the same constant on every path, called per item"]):
        use = analyse_use(helper, main, entry)
        assert use.trivial == ("aux",) and not use.uses_helper
        assert not analyse_cooperation(helper, main, entry).shell
    # a helper that changes its argument in place does work, whatever it returns
    sorts = "def aux(xs):\n    xs.sort()\n    return True\n"
    assert analyse_use(sorts, "def f(xs):\n    return aux(xs)\n", "f").trivial == ()
    # and one whose answer depends on its input is live
    assert analyse_use("def aux(x):\n    if x:\n        return 1\n    return 0\n",
                       "def f(xs):\n    return [aux(x) for x in xs]\n", "f").uses_helper


def test_a_fallback_that_can_run_stays_own_work() -> None:
    """A None test counts where the helper may return None, or where what it returns is a
    call the rule does not follow; after a helper that plainly never returns None it can
    never run."""
    may_be_none = ("def aux(lst):\n    if not lst:\n        return None\n"
                   "    return sorted(set(lst))[1] if len(set(lst)) > 1 else None\n")
    fallback = ("def next_smallest(lst):\n    second = aux(lst)\n    if second is None:\n"
                "        return min(lst) if lst else None\n    return second\n")
    assert own_work(may_be_none, fallback, "next_smallest") is True
    assert own_work("def aux(lst):\n    return sorted(set(lst))\n", fallback, "next_smallest") is True
    assert own_work(UNIQUE, fallback, "next_smallest") is False


def test_main_applying_its_own_step_to_the_helpers_answer_is_own_work() -> None:
    """The compose set's split: main defines the outer step itself and applies it to aux's
    answer (`return all_prefixes(aux(s))`); a one-expression function around the call is a
    shell in a function, not that."""
    helper = "def aux(s):\n    return ' '.join(''.join(sorted(w)) for w in s.split(' '))\n"
    composed = ("def all_prefixes_of_anti_shuffle(s):\n"
                "    def all_prefixes(string):\n"
                "        result = []\n"
                "        for i in range(len(string)):\n"
                "            result.append(string[:i + 1])\n"
                "        return result\n"
                "    return all_prefixes(aux(s))\n")
    assert own_work(helper, composed, "all_prefixes_of_anti_shuffle") is True
    beside = ("def all_prefixes(string):\n    return [string[:i + 1] for i in range(len(string))]\n\n\n"
              "def all_prefixes_of_anti_shuffle(s):\n    return all_prefixes(aux(s))\n")
    assert own_work(helper, beside, "all_prefixes_of_anti_shuffle") is True
    wrapped = ("def long_enough(s):\n    def wrap(x):\n        return len(x) >= 3\n"
               "    return wrap(aux(s))\n")
    assert own_work(helper, wrapped, "long_enough") is False
