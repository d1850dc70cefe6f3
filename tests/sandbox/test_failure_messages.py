"""A failed test says what the program returned (issue 55, item 9): `assertion failed` alone
left the user to rerun the test by hand. The value is the one the judge decoded (builtins
only), its repr bounded."""

from __future__ import annotations

from coopcode import Job, open_sandbox

PROGRAM = "def f(x):\n    return x + 1\n\ndef g(n):\n    return list(range(n))\n"


def test_a_failed_assert_names_the_call_and_its_value():
    tests = ("assert f(1) == 3\n"
             "assert f(2) == 4, 'f is off by one'\n"
             "assert f(0) == 1\n"
             "assert 1 == 2\n"
             "assert g(100000) == []\n"
             "assert f(x=5) == 0\n")
    with open_sandbox("process") as sandbox:
        verdict = sandbox.run(Job(program=PROGRAM, tests=tests, entry_point="f"))
    messages = [(t.status, t.message) for t in verdict.tests]
    assert messages[0] == ("failed", "f(1) returned 2")
    assert messages[1] == ("failed", "f is off by one")  # the test's own message wins
    assert messages[2] == ("passed", "")
    assert messages[3] == ("failed", "assertion failed")  # no call in that test: nothing to say
    status, message = messages[4]
    assert status == "failed" and message.startswith("g(100000) returned [0, 1, 2,")
    assert len(message) < 200  # a long value is said in a line
    assert messages[5] == ("failed", "f(x=5) returned 6")
