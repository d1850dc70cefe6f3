"""`coopcode problems list` and `coopcode problems show SET`: what a problem set holds.

Importing this module stays cheap (the CLI imports it for --help).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from coopcode.display.console import make_console
from coopcode.settings.common import JsonOutput
from coopcode.settings.options import config_options
from coopcode.training.cli import sft_examples_command

out = make_console()  # plain on a pipe: no wrapping, no padding (coopcode.display.console)

problems_app = typer.Typer(help="Problem sets: list them with their sizes, show what one holds.",
                           no_args_is_help=True)


@problems_app.command("list")
@config_options
def problems_list(as_json: JsonOutput) -> None:
    """Every built-in problem set and split, with its size.

    On a terminal a table; piped, a header and one tab-separated line per set.
    `--json` keys: name, size, description.
    """
    from coopcode.display.listing import print_listing, writes_to_terminal
    from coopcode.problem_sets.catalog import problem_sets

    sets = problem_sets()
    if as_json.as_json:
        print(json.dumps(sets))
        return
    print_listing(out, ("set", "problems", "what"),
                  [[s["name"], str(s["size"]), s["description"]] for s in sets])
    if writes_to_terminal(out):
        out.print("[dim]Any .jsonl, problem.py or folder of them also works: "
                  "`coopcode problems show FILE`.[/]")


@problems_app.command("show")
@config_options
def problems_show(
    problem_set: Annotated[str, typer.Argument(
        metavar="SET", help="A set (humaneval:val, compose:test, ...), a .jsonl, a .py or a folder.")],
    as_json: JsonOutput,
) -> None:
    """The problems of a set: id, entry point, tests, sources and aux's contract.

    On a terminal a table; piped, tab-separated lines. `--json`: one problem a line, keys
    task_id, entry_point, prompt, sources, contract (null or entry_point, signature,
    docstring, imports, prompt, n_tests), canonical_solution, aux_solution, n_tests,
    n_examples.
    """
    from coopcode.display.listing import print_listing
    from coopcode.problem_sets.catalog import problem_summary
    from coopcode.problems import load_problems

    summaries = [problem_summary(p) for p in load_problems(problem_set)]
    if as_json.as_json:
        for summary in summaries:
            print(json.dumps(summary, ensure_ascii=False))
        return
    print_listing(out, ("task", "entry point", "tests", "sources", "contract"),
                  [[s["task_id"], s["entry_point"], str(s["n_tests"]), ", ".join(s["sources"]) or "-",
                    s["contract"]["signature"] if s["contract"] else "-"] for s in summaries])


# `sft-examples` turns a set's canonical solutions into warm-start examples: the command lives
# with the training that reads them, and this group adds it itself, so it is there whichever
# part the CLI mounts first.
problems_app.command("sft-examples")(sft_examples_command)


def register(app: typer.Typer) -> None:
    """Mount `problems` on the coopcode CLI."""
    app.add_typer(problems_app, name="problems")
