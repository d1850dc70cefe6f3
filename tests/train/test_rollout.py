"""Rollouts on the tiny model: how joint actions are formed per scheme and joint mode, the
sandbox reward, and multi-turn trees with public-example feedback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coopcode.code_analysis.program import prompt_context
from coopcode.problems import load_problems
from coopcode.training.config import TrainConfig
from coopcode.training.magrpo import MAGRPOTrainer
from coopcode.training.rollout import output_scorer


def _trainer(make_engine: Any, model_dir: Path, sandbox: Any = None, **kw: Any) -> Any:
    config = TrainConfig(**{"group_size": 2, "max_new_tokens": 6, "warmup_steps": 0, **kw})
    scorer = None if sandbox is not None and kw.get("use_sandbox_reward", True) else \
        output_scorer(lambda p, a, n: 0.1 * a.members["main"])
    return MAGRPOTrainer(make_engine(model_dir), config, load_problems("humaneval:train")[:2],
                         sandbox=sandbox, scorer=scorer)


def test_sequential_aligned_shows_each_main_its_helpers_code(make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir)
    (rollout,), stats = trainer.rollouts.run(trainer.problems[:1], step=0)
    node = rollout.root
    assert [a.members for a in node.actions] == [{"helper": 0, "main": 0}, {"helper": 1, "main": 1}]
    decode = trainer.engine.tokenizer.decode
    for helper, main in zip(node.samples["helper"], node.samples["main"]):
        if helper.code.strip():
            assert helper.code.strip() in decode(main.prompt_ids)
        assert main.group == 0  # aligned: the G mains are one sibling group
    assert len({tuple(s.prompt_ids) for s in node.samples["helper"]}) == 1
    assert stats.samples == 4 and stats.gen_tokens > 0
    assert node.rewards == [0.0, 0.1]


def test_sequential_cross_samples_g_mains_per_helper(make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, joint="cross", group_size=3)
    (rollout,), _ = trainer.rollouts.run(trainer.problems[:1], step=0)
    node = rollout.root
    assert len(node.samples["helper"]) == 3 and len(node.samples["main"]) == 9
    assert len(node.actions) == 9
    assert {a.members["main"] // 3 == a.members["helper"] for a in node.actions} == {True}
    assert [s.group for s in node.samples["main"]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_parallel_cross_pairs_every_helper_with_every_main(make_engine: Any, tiny_model_dir: Path) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, scheme="parallel", joint="cross")
    (rollout,), _ = trainer.rollouts.run(trainer.problems[:1], step=0)
    node = rollout.root
    assert sorted((a.members["helper"], a.members["main"]) for a in node.actions) == \
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    # parallel: the main agent never sees helper code, so both mains share one prompt
    assert len({tuple(s.prompt_ids) for s in node.samples["main"]}) == 1


def test_samples_are_reproducible_per_step_and_differ_across_steps(tiny_model_dir: Path) -> None:
    # Each sample alone (`deterministic`): batched, a sample's rounding depends on what shares
    # its forward, which thread timing decides, and the tiny model's near-flat logits flip on
    # it (a make test beside a training saw that); the engine's docstring says so.
    from coopcode.engines.embedded.engine import TransformersEngine

    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", deterministic=True)
    try:
        trainer = _trainer(lambda _: engine, tiny_model_dir, temperature=1.0, deterministic=True)
        first, _ = trainer.rollouts.run(trainer.problems[:1], step=3)
        again, _ = trainer.rollouts.run(trainer.problems[:1], step=3)
        other, _ = trainer.rollouts.run(trainer.problems[:1], step=4)
    finally:
        engine.close()

    def ids(r: Any) -> list[list[int]]:
        return [s.completion_ids for s in r[0].root.samples["helper"]]

    assert ids(first) == ids(again)  # what a resumed run regenerates
    assert ids(first) != ids(other)


@pytest.mark.slow
def test_execution_reward_and_multi_turn_feedback_tree(make_engine: Any, tiny_model_dir: Path,
                                                      process_sandbox: Any) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, sandbox=process_sandbox, turns=2, gamma=0.5)
    (rollout,), _ = trainer.rollouts.run(trainer.problems[:1], step=0)
    root = rollout.root
    problem = rollout.problem
    for a in root.actions:
        assert a.reward is not None  # scored by running the program in the sandbox
        assert prompt_context(problem.prompt, problem.entry_point).strip() in a.program
        assert a.feedback  # public-example feedback for the revision turn
    assert sorted(root.children) == [0, 1]
    decode = trainer.engine.tokenizer.decode
    for j, child in root.children.items():
        assert child.turn == 2 and child.path == (j,)
        assert len(child.actions) == 2 and len(child.rewards) == 2
        prompt = decode(child.samples["main"][0].prompt_ids)
        assert "Running the combined program on the public examples gave" in prompt
        assert root.actions[j].feedback.splitlines()[0] in prompt
    from coopcode.training.tree import discounted_returns, mean

    discounted_returns(root, 0.5)
    assert root.returns == pytest.approx([r + 0.5 * mean(root.children[j].rewards)
                                          for j, r in enumerate(root.rewards)])


@pytest.mark.slow
def test_a_node_whose_mean_reward_reaches_the_threshold_is_not_revised(
        make_engine: Any, tiny_model_dir: Path, process_sandbox: Any) -> None:
    trainer = _trainer(make_engine, tiny_model_dir, sandbox=process_sandbox, turns=2,
                       early_stop_reward=0.0)
    (rollout,), _ = trainer.rollouts.run(trainer.problems[:1], step=0)
    assert rollout.root.children == {}


def _alike_until(calls: int) -> Any:
    """A scorer whose first `calls` calls score every joint action alike (no spread) and whose
    later calls score main's sample index: what a resampled group can show."""
    seen = {"calls": 0}

    def score(items: Any) -> Any:
        seen["calls"] += 1
        alike = seen["calls"] <= calls
        return output_scorer(lambda p, a, n: 0.0 if alike else 0.1 * a.members["main"])(items)

    return score


@pytest.mark.parametrize("bound, calls, expect_draw", [(0, 1, 0), (2, 1, 1), (2, 5, 2)])
def test_a_problem_whose_groups_scored_alike_is_sampled_again_up_to_the_bound(
        make_engine: Any, tiny_model_dir: Path, bound: int, calls: int, expect_draw: int) -> None:
    """With --resample-constant-groups N, a node whose every group scored alike is sampled again
    (new seeds, new completions) until one scores apart or N more draws are spent; without it the
    alike group is trained on as it is (all advantages 0)."""
    from coopcode.training.rollout import RolloutBuilder, scored_alike

    config = TrainConfig(group_size=2, max_new_tokens=6, warmup_steps=0,
                         resample_constant_groups=bound)
    trainer = MAGRPOTrainer(make_engine(tiny_model_dir), config,
                            load_problems("humaneval:train")[:1], scorer=_alike_until(calls))
    builder = trainer.rollouts
    first = RolloutBuilder(trainer.engine, TrainConfig(group_size=2, max_new_tokens=6),
                           _alike_until(1))
    (plain,), _ = first.run(load_problems("humaneval:train")[:1], step=0)
    (rollout,), stats = builder.run(load_problems("humaneval:train")[:1], step=0)
    node = rollout.root
    assert stats.resampled == (1 if bound else 0)
    assert stats.still_constant == (1 if bound and calls > bound else 0)
    assert scored_alike(node) == (expect_draw == 0 or calls > bound)
    if expect_draw == 1:
        assert node.rewards == [0.0, 0.1]
    assert len(node.samples["main"]) == 2 and len(node.actions) == 2  # the draw replaced, not added
    fresh = [s.code for s in node.samples["main"]] != [s.code for s in plain.root.samples["main"]]
    assert fresh == (bound > 0)  # a new draw has seeds of its own
