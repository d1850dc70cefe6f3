"""The warm start (`--algo sft`): examples from a set's canonical solutions, checked in the
sandbox; each agent trained on its bench prompt; the loss on the examples falls; the RL
trainers pick the adapters up. The tiny model and the process sandbox keep it fast."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from coopcode.core.errors import UserError
from coopcode.engines import Engine
from coopcode.problems import load_problems
from coopcode.schemes import PromptBook, get_scheme
from coopcode.training import TrainConfig, train
from coopcode.training.canonical_examples import derive, halves, write_examples
from coopcode.training.examples import load_examples, read_examples, render_targets
from coopcode.training.sft import SFTTrainer, example_loss
from tests.cli_helpers import assert_one_line_error, assert_refused, coopcode

COMPOSE = load_problems("compose:train")
FIRST = COMPOSE[:4]


@pytest.fixture(scope="module")
def examples_file(tmp_path_factory: pytest.TempPathFactory, process_sandbox: Any) -> Path:
    path = tmp_path_factory.mktemp("sft") / "compose-train.jsonl"
    write_examples(FIRST, process_sandbox, path)
    return path


def test_compose_train_gives_every_problem_a_pair_and_a_solution_that_pass(tmp_path: Path) -> None:
    # The whole of compose:train, through the command a user runs (programs in the sandbox).
    out = tmp_path / "examples.jsonl"
    done = coopcode("problems", "sft-examples", "compose:train", "--out", str(out),
                    "--sandbox", "process", "--json")
    assert done.returncode == 0, done.stderr
    tally = json.loads(done.stdout)
    assert (tally["pairs"], tally["solutions"], tally["lines"]) == (179, 179, 179)
    assert tally["failed_pairs"] == tally["failed_solutions"] == []
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    first = lines[0]
    # main leaves the inner aux out and calls the helper's; the solution keeps it.
    assert "def aux(" not in first["main"] and "aux(" in first["main"]
    assert "def aux(" in first["solution"] and first["helper"].startswith("def aux(")
    assert all('"""' not in line["main"] for line in lines)  # docstrings: the prompt has them


def test_a_pair_that_fails_its_tests_is_dropped_and_counted(tmp_path: Path,
                                                           process_sandbox: Any) -> None:
    good = COMPOSE[0].to_dict()
    broken = dict(good, task_id="compose/broken")
    assert broken["contract"]["solution"]
    broken["contract"] = dict(broken["contract"], solution="    return None\n")
    source = tmp_path / "problems.jsonl"
    source.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n")
    lines, tally = derive(load_problems(str(source)), process_sandbox)
    assert tally.failed_pairs == ["compose/broken"] and tally.pairs == 1
    # the whole canonical still passes: that line keeps its solution, without a pair
    assert [sorted(line) for line in lines] == [["helper", "main", "solution", "task_id"],
                                                ["solution", "task_id"]]


def test_each_agent_learns_on_the_prompt_its_scheme_gives_it(examples_file: Path,
                                                            make_engine: Any,
                                                            tiny_model_dir: Path) -> None:
    engine = make_engine(tiny_model_dir)
    book = PromptBook(engine)
    problem = FIRST[0]
    helper, main = halves(problem) or ("", "")
    for name in ("sequential", "contract", "single"):
        scheme = get_scheme(name)
        (targets,) = render_targets(load_examples(str(examples_file), FIRST, scheme)[:1], FIRST,
                                    scheme, engine)
        for t in targets:
            assert t.text.endswith("\n```")  # the stop string that ends a chat answer
            assert t.prompt_ids == engine.encode(t.prompt)
        if name == "sequential":  # main is shown the helper's code, as the bench shows it
            h, m = targets
            assert h.prompt == book.first(problem, "helper").text
            assert m.prompt == book.first(problem, "main", helper.rstrip() + "\n").text
            assert h.prompt.endswith("def aux(") and h.text.startswith(helper[len("def aux("):])
        elif name == "contract":  # the helper sees the contract; main never sees aux's body
            h, m = targets
            assert problem.contract is not None and problem.contract.solution is not None
            assert h.prompt == book.contract_helper(problem, problem.contract).text
            assert m.prompt == book.contract_main(problem, problem.contract).text
            body = problem.contract.solution.strip().splitlines()[-1].strip()
            assert body not in m.prompt and problem.entry_point not in h.prompt
            assert m.text.rstrip("`\n").endswith(main.strip().splitlines()[-1])
        else:
            (single,) = targets
            assert single.role == "single" and single.prompt == book.first(problem, "single").text
            assert "def aux(" in single.text


class NoTokenIds(Engine):
    """An engine that renders chats but has no tokenizer (a new engine before its `encode`)."""

    name = "no-ids"

    def generate(self, requests: Any, on_delta: Any = None, cancel: Any = None) -> Any:
        return [[] for _ in requests]

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"


def test_an_engine_without_token_ids_is_named_when_a_warm_start_needs_them(
        examples_file: Path) -> None:
    scheme = get_scheme("single")
    with pytest.raises(NotImplementedError, match=r"the no-ids engine \(NoTokenIds\) does not give "
                                                  "token ids, which training needs"):
        render_targets(load_examples(str(examples_file), FIRST, scheme)[:1], FIRST, scheme,
                       NoTokenIds())


def test_the_sft_step_lowers_the_loss_on_its_data_and_rl_starts_from_it(
        examples_file: Path, make_engine: Any, tiny_model_dir: Path, tmp_path: Path) -> None:
    config = TrainConfig(algo="sft", examples=str(examples_file), problems="compose:train",
                         scheme="contract", steps=6, problems_per_step=2, learning_rate=2e-3,
                         warmup_steps=0, save_every=6)
    out = tmp_path / "sft"
    result = train(config, out, engine=make_engine(tiny_model_dir))
    assert (result.step, result.stopped) == (6, False)
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in history] == [1, 2, 3, 4, 5, 6]
    assert history[-1]["helper/loss"] < history[0]["helper/loss"]
    assert history[-1]["main/loss"] < history[0]["main/loss"]
    assert not (out / "samples.jsonl").exists()  # nothing is sampled
    shown = coopcode("checkpoints", "show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "algorithm sft, step 6/6" in shown.stdout and "scheme=contract" in shown.stdout
    assert "loss (mean NLL per target token, summed over the agents): step 1" in shown.stdout

    def loss(run: Path | None) -> dict[str, float]:
        cfg = TrainConfig(algo="sft", examples=str(examples_file), problems="compose:train",
                          scheme="contract",
                          helper_init=None if run is None else str(run / "helper"),
                          main_init=None if run is None else str(run / "main"))
        return example_loss(SFTTrainer(make_engine(tiny_model_dir), cfg, COMPOSE))

    before = loss(None)
    # The RL trainers' --helper-adapter / --main-adapter start from the SFT run's adapters,
    # without PEFT's warning that the base was "renamed": a run saves the catalog name, the
    # base loads from a folder (the fingerprint is what is checked).
    for role in ("helper", "main"):
        saved = json.loads((out / role / "adapter_config.json").read_text())
        saved["base_model_name_or_path"] = "a-catalog-name"
        (out / role / "adapter_config.json").write_text(json.dumps(saved))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        after = loss(out)
    assert not [w for w in caught if "renamed" in str(w.message)], [str(w.message) for w in caught]
    for role in ("helper", "main"):
        assert after[role] < before[role] - 1.0, (role, before, after)


def test_one_agent_learns_from_the_whole_solution(examples_file: Path, make_engine: Any,
                                                 tiny_model_dir: Path) -> None:
    config = TrainConfig(algo="sft", examples=str(examples_file), problems="compose:train",
                         scheme="single", steps=4, problems_per_step=2, learning_rate=2e-3,
                         warmup_steps=0)
    trainer = SFTTrainer(make_engine(tiny_model_dir), config, COMPOSE)
    assert trainer.adapter_names() == {"single": "main"}  # GRPO's agent: --main-adapter
    before = example_loss(trainer)["single"]
    for _ in range(4):
        trainer.train_step()
    assert example_loss(trainer)["single"] < before - 1.0


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "examples.jsonl:2: not JSON"),
    ('["a list"]', "examples.jsonl:2: not a JSON object"),
    ('{"task_id": "compose/x", "helper": "def aux(): pass"}', "needs both helper and main"),
    ('{"task_id": "compose/x", "solution": "", "main": 3}', "must be code"),
    ('{"task": "compose/x", "solution": "def f(): pass"}', "unknown key(s) task"),
    ('{"solution": "def f(): pass"}', "no task_id"),
])
def test_a_malformed_line_is_named_by_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "examples.jsonl"
    path.write_text('{"task_id": "compose/add_of_order_by_points", "solution": "def f(): pass"}\n'
                    + line + "\n")
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_examples(str(path))


def test_bad_warm_start_input_is_one_line_before_the_model_loads(tmp_path: Path,
                                                                 examples_file: Path) -> None:
    bad = tmp_path / "examples.jsonl"
    bad.write_text('{"task_id": "HumanEval/0", "solution": "def f(): pass"}\n')
    out = ["--out", str(tmp_path / "run")]
    assert_refused(coopcode("train", "--algo", "sft", "--problems", "compose:train",
                            "--examples", str(bad), *out),
                   f"{bad}:1: task 'HumanEval/0' is not in the training problems")
    assert_refused(coopcode("train", "--algo", "sft", *out), "--algo sft fine-tunes on examples")
    assert_refused(coopcode("train", "--examples", str(examples_file), *out),
                   "use it with --algo sft")
    # a pair-only file cannot train one agent
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items()
                                         if k != "solution"}) + "\n"
                             for line in examples_file.read_text().splitlines()))
    assert_one_line_error(coopcode("train", "--algo", "sft", "--scheme", "single",
                                   "--problems", "compose:train", "--examples", str(pairs), *out),
                          "no line has solution")
