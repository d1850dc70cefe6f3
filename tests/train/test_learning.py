"""Learning on the tiny model: with a reward for a property of the output (the completion
starts with a given token), MAGRPO raises both agents' rate clearly within a few CPU steps,
and so does GRPO. The reward is a plain function of the outputs: no sandbox needed."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
import torch

from coopcode.problems import load_problems
from coopcode.training.algorithms import make_trainer
from coopcode.training.config import TrainConfig
from coopcode.training.context import TrainingRun
from coopcode.training.rollout import output_scorer

STEPS = 5  # bounded: a step is G one-token samples per agent, about a second on CPU
GROUP = 16
LR = 1e-3
PROBE_DRAWS = 4  # groups sampled before training to choose each agent's target


def _learn(algo: str, make_engine: Any, model_dir: Path, *, seed: int = 0, lr: float = LR,
           group: int = GROUP, steps: int = STEPS) -> tuple[dict[str, float], dict[str, float]]:
    """(rate before, rate over the last two steps) of each agent's target first token."""
    target: dict[tuple[str, str], int] = {}  # (role, task) -> token

    def starts_with_target(problem: Any, action: Any, node: Any) -> float:
        hits = [node.samples[r][i].completion_ids[0] == target[r, problem.task_id]
                for r, i in action.members.items()]
        return sum(hits) / len(hits)  # the joint reward: each agent's share

    # One problem: the target token is the same at every step. LR, not more: the sharp head turns
    # small hidden-state moves into large probability moves, and Adam's first step moves
    # every weight by ~lr whatever the gradient's size.
    config = TrainConfig(algo=algo, group_size=group, max_new_tokens=1, learning_rate=lr,
                         warmup_steps=0, lora_rank=4, steps=steps, seed=seed)
    torch.manual_seed(seed)
    problems = load_problems("humaneval:train")[:1]
    # The engine's own model learns and the scorer is a plain function: nothing is written to
    # the run folder, so the model's folder stands in for it.
    trainer = make_trainer(TrainingRun(config, model_dir, problems, make_engine(model_dir),
                                       scorer=output_scorer(starts_with_target)))

    def rates(rollouts: Any) -> dict[str, float]:
        out = {}
        for role in config.roles:
            hits = [s.completion_ids[0] == target[role, r.problem.task_id]
                    for r in rollouts for s in r.root.samples[role]]
            out[role] = sum(hits) / len(hits)
        return out

    # Each agent's target on each problem: its most frequent first token there in a probe
    # before training, so the starting rate is well above zero and well below one. The probe
    # is PROBE_DRAWS groups: main's first tokens are spread over several near-equal favourites
    # (its prompt holds the helper's completion), and the favourite of one group of 16 is
    # often not main's favourite at all: a target it rarely gives, which the joint reward's
    # noise (the helper's hits) can then drown for the few steps a test has.
    target.update({(r, p.task_id): -1 for r in config.roles for p in problems})
    probe = [r for k in range(PROBE_DRAWS) for r in trainer.rollouts.run(problems, step=10**6 + k)[0]]
    counts: dict[tuple[str, str], collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for role in config.roles:
        for r in probe:
            counts[role, r.problem.task_id].update(s.completion_ids[0] for s in r.root.samples[role])
    target.update({key: c.most_common(1)[0][0] for key, c in counts.items()})
    before = rates(probe)
    late: list[dict[str, float]] = []
    for _ in range(steps):
        trainer.train_step()
        late.append(rates(trainer.last_rollouts))
    after = {r: sum(x[r] for x in late[-2:]) / 2 for r in config.roles}
    return before, after


@pytest.mark.slow
def test_magrpo_raises_both_agents_reward(make_engine: Any, sharp_model_dir: Path) -> None:
    before, after = _learn("magrpo", make_engine, sharp_model_dir)
    for role in ("helper", "main"):
        assert before[role] <= 0.75, before
        assert after[role] >= before[role] + 0.25 and after[role] >= 0.8, (before, after)


@pytest.mark.slow
def test_grpo_raises_the_agents_reward(make_engine: Any, sharp_model_dir: Path) -> None:
    before, after = _learn("grpo", make_engine, sharp_model_dir)
    assert before["single"] <= 0.75, before
    assert after["single"] >= before["single"] + 0.25 and after["single"] >= 0.8, (before, after)
