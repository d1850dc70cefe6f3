"""Every scheme, with turns 1 and 2, gives through the scheduler the attempts recorded before
it existed (tests/fixtures/scheme_golden.json), in solve, bench and training rollouts: same
prompts, same seeds, same code, same verdicts. The scripted engine makes this exact."""

from __future__ import annotations

import json

import pytest
from scheme_golden import GOLDEN, snapshot


@pytest.fixture(scope="module")
def now() -> dict:
    return snapshot()


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("part", ["solve", "bench", "rollouts"])
def test_the_runner_reproduces_the_recorded_attempts(part: str, now: dict, recorded: dict) -> None:
    got = json.loads(json.dumps(now[part], sort_keys=True))  # tuples -> lists, as recorded
    assert set(got) == set(recorded[part])
    for case in sorted(recorded[part]):
        assert got[case] == recorded[part][case], case
