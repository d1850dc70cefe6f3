"""`coop-text`: the MAGRPO authors' cooperative coding reward, as their code computes it.

Their regular expressions on the agents' text, their levels, weights and early exits, for
fidelity comparisons with `coop` (the same levels decided from the syntax tree). Same terms
as `coop`, so the two compare term by term. Maximum 4.0.

Source: github.com/OpenMLRL/LLM_Collab_Code_Generation (the companion repository of CoMLRL;
CoMLRL itself has no coding reward), commit 7ad598510f0fee38b4d17cbee9159de71d5480ef
("Early termination (#17)", 2025-09-26). `execution_reward_aux` is in rewards/code_rewards.py;
the checks it calls are in rewards/code_utils.py: `cleanup_code`,
`extract_specific_function`, `check_function_definition`, `extract_imports_from_prompt`,
`concatenate_functions`, `check_syntax`, `check_aux_function_usage`, `is_wrapper_function`,
`check_aux_call_without_assignment`. The upstream snapshot could not be fetched here; the
files were read from the mirrors of two forks whose main branch carries that upstream commit
(junho328/LLM_Collab_Code_Generation at 7ca407e2, shady-cs15/LLM_Collab_Code_Generation at
6e1bd110), unchanged there since. The stored OpenMLRL snapshot 0b914ca2 has the same reward
(its tests only see `math` pre-imported). A later OpenMLRL rework (code_rewards.py at a62489b7,
code_utils.py at c0ec7265: a format gate, a cap of 2.0 when no call is detected by `ast`, a
flat 1.0 for a call, the -0.5 outside the use branch, -0.2 for a timeout, maximum 4.5) is not
this reward. Their training configs also shift the reward by -4 (a reward processor outside
the function); that is not part of it here.

Formula (their order; "stop" is their early `continue`, with the terms so far):
- Their text: the helper's and main's code as given (raw model output in their pipeline) go
  through `cleanup_code` (fences dropped, `def` blocks kept by indentation, capitalised prose
  lines ending in `.!?:` dropped). `aux_func` is the function `aux` in the helper's text,
  `main_func` the entry point in main's (`extract_specific_function`).
1. `helper` +0.4 if `aux_func` exists and `return\\s+` occurs in its text (not a gate).
   `main` +0.6 if `main_func` exists and `return\\s+` occurs in its text; else stop.
2. `syntax` +0.5 if `ast.parse` accepts their combined text (the prompt's import lines,
   `aux_func`, `main_func`, each cleaned again); else stop.
3. `tests` passed/total. No tests: stop (no bonus).
4. Only if at least one test passed and `aux_func` exists (even one without a return):
   `uses` +0.5 if `\\baux\\s*\\(` (or `=\\s*aux\\s*\\(`, or `\\baux\\s*\\([^)]*\\)`) occurs
   in `main_func`. Then, only when it does:
   `beyond_wrapper` +1.0 unless `is_wrapper_function`: main's lines, stripped, without blank
   lines, `#` comment lines, docstring lines and lines starting `def `, are none at all; or
   one line starting `return ` that contains `aux` anywhere; or two lines, the first matching
   `(\\w+)\\s*=\\s*aux\\s*\\(` and the second exactly `return <that name>`.
   `discarded` -0.5 if a line of `main_func`, stripped, matches one of their "ignored call"
   patterns (`^aux\\s\\([^)]\\)$`, `^aux\\s\\([^)]\\);?\\s$`, `^\\saux\\s\\([^)]\\)\\s*$`,
   after `aux\\s\\([^)]\\)` is found on it).

Mapped onto what we have (this reward only reads text and the verdict; nothing is run):
- Their level 3 runs the tests itself: `exec` of their combined text (prompt imports, `aux`
  and the entry point only), then each `assert` line of `check(candidate)` found by their
  regular expressions, 10 s each, stopping after 3 timeouts. Here passed/total is
  `verdict.n_passed / verdict.n_tests`, from the sandbox's run of our program (the prompt's
  context and all of both agents' code) on the problem's tests; a timed-out or failed test
  is a failure in both. Their "no test cases found" stop is `verdict.n_tests == 0`.
- Their prompt (for its import lines) is not in a `RewardInput`: the prompt's context is read
  back from `program` (what `coopcode.code_analysis.program.combine` put before the agents'
  code: imports, given functions, constants, but not the entry point's docstring), and their
  import regexes are applied to it. It only feeds the syntax check.
- Their `check_syntax` lets `ast.parse` errors other than SyntaxError escape (a null byte on
  Python 3.11 crashes their reward); here any parse failure fails the level.
- They read the raw model output; here the recorded code (extracted code for a bench or a
  training run, the line's own text for an `evaluate` pair line), cleaned the same way.

Where it differs from `coop` (theirs is text, ours the syntax tree):
- Structure: only a function named exactly `aux` counts as the helper's, and `return` followed
  by whitespace anywhere in a function's text (a docstring "return the ...", a comment, a bare
  `return` at a line's end) counts as returning; a trivial `aux` (`return 0`, `return xs`,
  `pass` with a commented return) still earns its 0.4 and keeps the cooperation terms open.
  `coop` pays the helper only for a live (non-trivial) function that returns a value.
- Syntax: theirs parses their own combined text (other functions of either agent dropped);
  `coop` uses the sandbox's `syntax_ok` on the whole program.
- Use: any `aux(` in the text of the entry point counts: in a comment, a string or docstring,
  a nested `def aux(`, `obj.aux(`, a call whose value is thrown away, and when main defines
  `aux` again (their combined text drops main's other functions, so their tests would run the
  helper's `aux`). `coop` counts only calls whose value main uses, of a live helper function
  main does not redefine, and also follows main's own functions (`_pos(xs)` calling `aux`),
  which their check never sees (it reads the entry point's text only).
- Wrapper: theirs has two templates, judged on the text. `return <anything containing aux>`
  on one line is a wrapper, so a one-line `return sorted(aux(xs))`, `return aux(xs)[::-1]`
  or `return any(b < 0 for b in aux(ops))` earns nothing beyond use, where `coop` pays 1.0
  (main post-processes the result). Shapes their templates miss, which `coop` calls a
  wrapper: `r: list = aux(xs)` / `return r` (their regex takes `list` for the name), and a
  `return (` / `aux(xs)` / `)` split over lines. A multi-line docstring whose closing quotes
  begin their own line (HumanEval's style) leaves their docstring state on, so every later
  line is dropped, the body is empty and main is always a wrapper: no 1.0 bonus.
  A bare call before `return aux(x)` makes two lines that are not their template: not a
  wrapper in theirs; `coop` judges with the discarded calls left out (a wrapper).
- Discarded: their patterns need exactly one whitespace character between `aux` and `(` and
  exactly one character inside the parentheses (the second and third can never match a
  stripped line), so in practice only a line `aux (x)` costs 0.5; a bare `aux(xs)` or an
  unread `tmp = aux(xs)` costs nothing. `coop` charges 0.5 for any call whose value is thrown
  away.
"""

from __future__ import annotations

import ast
import re

from coopcode.rewards.base import RewardBreakdown, RewardInput, register

TERMS = ("helper", "main", "syntax", "tests", "uses", "beyond_wrapper", "discarded")

AUX = "aux"  # their helper's function name: fixed in their code
_A = re.escape(AUX)

# cleanup_code / extract_specific_function
_FENCE_PY = re.compile(r"```python\s*\n?")
_FENCE = re.compile(r"```\s*\n?")
_DEF = re.compile(r"^(\s*)def\s+\w+\s*\(")
_ANY_DEF = re.compile(r"def\s+\w+\s*\(")
_PROSE = re.compile(r"^[A-Z][a-z].*[.!?:]$")
_CODE_MARKS = ("def ", "return ", "if ", "for ", "while ", "=", "(", ")", "[", "]")
# check_function_definition
_RETURN = re.compile(r"return\s+")
# extract_imports_from_prompt
_IMPORTS = (re.compile(r"^from\s+[\w\.]+\s+import\s+.*$"), re.compile(r"^import\s+[\w\.,\s]+$"))
# check_aux_function_usage
_USES = (re.compile(rf"\b{_A}\s*\("), re.compile(rf"=\s*{_A}\s*\("),
         re.compile(rf"\b{_A}\s*\([^)]*\)"))
# is_wrapper_function
_ASSIGN_AUX = re.compile(rf"(\w+)\s*=\s*{_A}\s*\(")
# check_aux_call_without_assignment
_IGNORED_CALL = re.compile(rf"{_A}\s\([^)]\)")
_IGNORED = (re.compile(rf"^{_A}\s\([^)]\)$"), re.compile(rf"^{_A}\s\([^)]\);?\s$"),
            re.compile(rf"^\s{_A}\s\([^)]\)\s*$"))


def cleanup_code(code: str) -> str:
    """Their `cleanup_code`: the `def` blocks of `code` (by indentation), prose lines dropped."""
    if not code or not isinstance(code, str):
        return ""
    code = _FENCE.sub("", _FENCE_PY.sub("", code))
    lines = code.split("\n")
    blocks: list[str] = []
    current: list[str] = []
    inside = False
    indent = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _DEF.match(line):
            if inside and current:
                blocks.append("\n".join(current))
            current, inside, indent = [line], True, len(line) - len(line.lstrip())
        elif inside:
            if stripped == "" or line.startswith(" " * (indent + 1)) or line.startswith("\t"):
                current.append(line)
            elif stripped.startswith(('"""', "'''")):
                # A docstring at the def's own level: kept up to the line with its closing quotes.
                current.append(line)
                quote = '"""' if stripped.startswith('"""') else "'''"
                if not (stripped.endswith(quote) and len(stripped) > 3):
                    i += 1
                    while i < len(lines):
                        current.append(lines[i])
                        if quote in lines[i]:
                            break
                        i += 1
            else:
                # Back at the def's level: the block ends. (Theirs then checks this line for a
                # `def`, which the first branch has already ruled out.)
                if current:
                    blocks.append("\n".join(current))
                current, inside = [], False
        i += 1
    if inside and current:
        blocks.append("\n".join(current))
    kept = [line for line in "\n\n".join(blocks).split("\n") if not _prose(line)]
    result = "\n".join(kept).strip()
    return result if _ANY_DEF.search(result) else ""


def _prose(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped and not stripped.startswith(("#", '"""', "'''"))
                and not any(mark in line for mark in _CODE_MARKS)
                and _PROSE.match(stripped))


def extract_specific_function(code: str, name: str) -> str:
    """Their `extract_specific_function`: the first `def name(` block of the cleaned code (a
    nested `def name(` inside it starts the block again)."""
    if not code or not name:
        return ""
    start = re.compile(rf"^(\s*)def\s+{re.escape(name)}\s*\(")
    out: list[str] = []
    inside = False
    indent = 0
    for line in cleanup_code(code).split("\n"):
        if start.match(line):
            out, inside, indent = [line], True, len(line) - len(line.lstrip())
        elif inside:
            if line.strip() == "" or line.startswith(" " * (indent + 1)) or line.startswith("\t"):
                out.append(line)
            else:
                break
    return "\n".join(out).strip()


def defined_with_return(code: str, name: str) -> bool:
    """Their `check_function_definition`: `name` is defined and `return\\s+` is in its text."""
    func = extract_specific_function(code, name)
    return bool(func) and _RETURN.search(func) is not None


def imports_from_prompt(prompt: str) -> str:
    """Their `extract_imports_from_prompt`: the stripped lines that look like imports, once each."""
    if not prompt:
        return ""
    found: dict[str, None] = {}
    for line in prompt.split("\n"):
        line = line.strip()
        if any(p.match(line) for p in _IMPORTS):
            found.setdefault(line)
    return "\n".join(found)


def concatenate(aux_func: str, main_func: str, imports: str = "") -> str:
    """Their `concatenate_functions`: imports, the cleaned aux and the cleaned main."""
    parts = [p for p in (imports, cleanup_code(aux_func), cleanup_code(main_func)) if p]
    return "\n\n".join(parts)


def parses(code: str) -> bool:
    """Their `check_syntax` (`ast.parse`, never run)."""
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def uses_aux(main_func: str) -> bool:
    """Their `check_aux_function_usage`: a call of `aux` anywhere in main's text."""
    return bool(main_func) and any(p.search(main_func) for p in _USES)


def is_wrapper(main_func: str) -> bool:
    """Their `is_wrapper_function`, with their docstring state as it is."""
    if not main_func:
        return False
    lines: list[str] = []
    in_docstring = False
    for line in main_func.split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(('"""', "'''")):
            quote = '"""' if stripped.startswith('"""') else "'''"
            if not (stripped.endswith(quote) and len(stripped) > 3):
                in_docstring = True  # also on a closing `"""` line: the state stays on
            continue
        if in_docstring:
            if '"""' in stripped or "'''" in stripped:
                in_docstring = False
            continue
        if stripped.startswith("#") or stripped.startswith("def "):
            continue
        lines.append(stripped)
    if not lines:
        return True  # an empty body is a wrapper
    if len(lines) == 1:
        return lines[0].startswith("return ") and AUX in lines[0]
    if len(lines) == 2:
        m = _ASSIGN_AUX.search(lines[0])
        return m is not None and lines[1] == f"return {m.group(1)}"
    return False


def ignored_aux_calls(main_func: str) -> list[str]:
    """Their `check_aux_call_without_assignment`: the lines their patterns call an ignored
    result (`Line n: <line>`)."""
    if not main_func or AUX not in main_func:
        return []
    out = []
    for n, line in enumerate(main_func.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _IGNORED_CALL.search(stripped) and any(p.search(stripped) for p in _IGNORED):
            out.append(f"Line {n}: {stripped}")
    return out


def prompt_context(inp: RewardInput) -> str:
    """The problem prompt's part of `inp.program` (what `combine` put before the agents' code),
    or "" when the program is not built that way."""
    tail_parts = [p.strip("\n") for p in (inp.helper_code, inp.main_code) if p and p.strip()]
    tail = "\n\n\n".join(tail_parts) + "\n"
    if not tail_parts or not inp.program.endswith(tail):
        return ""
    return inp.program[: len(inp.program) - len(tail)]


# The MAGRPO authors' execution_reward_aux as their code computes it
# (OpenMLRL/LLM_Collab_Code_Generation rewards/code_rewards.py @ 7ad59851: their regular
# expressions on the text); at most 4.0.
@register("coop-text", TERMS,
          "their text checks: 0.4 `def aux` with `return ` + 0.6 entry point with `return ` "
          "(else stop) + 0.5 parses (else stop) + passed/total + when a test passes and `aux(` "
          "is in main's text: 0.5 + 1.0 unless their wrapper templates - 0.5 for `aux (x)`")
def coop_text_reward(inp: RewardInput) -> RewardBreakdown:
    terms = dict.fromkeys(TERMS, 0.0)
    v = inp.verdict
    aux_func = extract_specific_function(inp.helper_code, AUX)
    main_func = extract_specific_function(inp.main_code, inp.entry_point)
    # Level 1: the helper's points are not a gate; main's are.
    if defined_with_return(inp.helper_code, AUX):
        terms["helper"] = 0.4
    if not defined_with_return(inp.main_code, inp.entry_point):
        return RewardBreakdown(terms)
    terms["main"] = 0.6
    # Level 2: their combined text parses.
    if not parses(concatenate(aux_func, main_func, imports_from_prompt(prompt_context(inp)))):
        return RewardBreakdown(terms)
    terms["syntax"] = 0.5
    # Level 3: the tests (the sandbox's count stands in for theirs).
    if not v.n_tests:
        return RewardBreakdown(terms)
    terms["tests"] = v.n_passed / v.n_tests
    # Level 3 bonus: only with a passing test and an `aux` in the helper's text.
    if v.n_passed > 0 and aux_func and uses_aux(main_func):
        terms["uses"] = 0.5
        if not is_wrapper(main_func):
            terms["beyond_wrapper"] = 1.0
        if ignored_aux_calls(main_func):
            terms["discarded"] = -0.5
    return RewardBreakdown(terms)
