"""`ast.parse` on several threads at once (sandbox/ast_lock.py): CPython's AST constructor
keeps its recursion depth in interpreter-wide state, so a thread switch inside one parse (a
finalizer run by the garbage collector midway) while another thread parses fails one of
them with "AST constructor recursion depth mismatch". A bench met it (the sandbox's pool
threads splitting tests while the scheduler's final jobs parsed programs). coopcode installs
a lock around `ast.parse` when its package (or the sandbox's) is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Four threads parse while making garbage with finalizers, the GIL handed over as often as
# CPython allows: what a loaded bench does, made frequent.
STRESS = textwrap.dedent("""
    import ast, gc, sys, threading, time
    if sys.argv[1] == "coopcode":
        import coopcode  # noqa: F401  (installs the lock)
    src = "\\n".join(f"def f{i}(x):\\n    return [(a, {{b: (c + d) * e for b in range(3)}})"
                    f" for a in x if a > {i}]" for i in range(100))

    class Cycle:
        def __del__(self):
            for _ in range(50):
                pass

    errors = []

    def work():
        end = time.monotonic() + 2.0
        while time.monotonic() < end and not errors:
            for _ in range(20):
                a, b = Cycle(), Cycle()
                a.b, b.a = b, a
            try:
                ast.parse(src)
                ast.literal_eval("[" + ", ".join(map(str, range(300))) + "]")
            except SystemError as e:
                errors.append(str(e))

    gc.set_threshold(5, 1, 1)
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(errors), errors[:1])
""")


def _errors(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", STRESS, mode], capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()


def test_parsing_on_several_threads_does_not_fail_once_coopcode_is_imported() -> None:
    bare = _errors("bare")
    if bare.startswith("0 "):
        pytest.skip(f"this CPython ({sys.version.split()[0]}) did not show the race unlocked")
    assert "recursion depth mismatch" in bare  # the race, without the lock
    assert _errors("coopcode").startswith("0 "), "the race, with coopcode's lock installed"


def test_the_compilers_warnings_about_a_models_code_are_not_passed_on() -> None:
    """A model's `'\\s'` in a plain string: parsing it warns about that text (printed to the
    user's terminal from Python 3.12), not about coopcode; the locked parse keeps it quiet.
    In a child process, so the parse is the first of its source (the compiler's warnings are
    not repeated for the same text)."""
    code = textwrap.dedent(r'''
        import ast, warnings
        import coopcode  # installs the locked parse
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ast.parse("import re\ndef f(s):\n    return re.split('\\s+', s)\n")
        print(len(seen), [str(w.message) for w in seen])
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.startswith("0 "), done.stdout
