"""The training data order: a pure function of (seed, step), so resume repeats nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopcode.core.errors import UserError
from coopcode.training.data import ProblemOrder, load_training_problems


def test_each_epoch_visits_every_problem_once() -> None:
    order = ProblemOrder(n_problems=7, per_step=1, seed=3)
    first = [order.indices(s)[0] for s in range(7)]
    second = [order.indices(s)[0] for s in range(7, 14)]
    assert sorted(first) == sorted(second) == list(range(7))
    assert first != second  # reshuffled per epoch


def test_steps_can_span_epochs_and_the_order_depends_only_on_seed_and_step() -> None:
    order = ProblemOrder(n_problems=5, per_step=2, seed=0)
    flat = [i for s in range(5) for i in order.indices(s)]  # two epochs of 5
    assert sorted(flat[:5]) == sorted(flat[5:]) == list(range(5))
    again = ProblemOrder(n_problems=5, per_step=2, seed=0)
    assert [again.indices(s) for s in (4, 2, 0)] == [order.indices(s) for s in (4, 2, 0)]
    assert ProblemOrder(5, 2, seed=1).epoch_permutation(0) != order.epoch_permutation(0)
    assert order.epoch(4) == 2.0


def test_empty_problem_sets_are_user_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(UserError):
        load_training_problems(str(empty))
    with pytest.raises(UserError):
        load_training_problems(str(tmp_path))  # a folder without problem files
    assert len(load_training_problems("humaneval:train", limit=3)) == 3
    assert len(load_training_problems("humaneval:train")) == 124
