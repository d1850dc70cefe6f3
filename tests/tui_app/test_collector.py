"""A model load runs with the cycle collector paused and freezes what it leaves; freeing a
model still frees it (tui.collector)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.collector import collect_all, paused_then_frozen
from tui.session import AgentsSpec, Session, default_engine_factory


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    """Each test starts and ends with nothing frozen and the collector on."""
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_load_pauses_the_collector_and_freezes_what_it_leaves():
    with paused_then_frozen():
        assert not gc.isenabled()
        with paused_then_frozen():  # nested: the outer one resumes it
            pass
        assert not gc.isenabled()
        made = Cycle()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    ref = weakref.ref(made)
    del made
    gc.collect()
    assert ref() is not None, "a frozen cycle is not walked by a collection"
    collect_all()
    assert ref() is None, "collect_all walks the frozen objects too"
    assert gc.get_freeze_count() > 0, "what is left is frozen again"


def test_a_paused_collector_stays_paused_after_a_load():
    gc.disable()
    with paused_then_frozen():
        pass
    assert not gc.isenabled()


def test_a_failed_load_still_resumes_the_collector():
    with pytest.raises(ValueError), paused_then_frozen():
        raise ValueError("no such model")
    assert gc.isenabled()


def test_the_tuis_model_is_frozen_when_loaded_and_freed_when_released(tiny_model_dir: Path):
    session = Session(AgentsSpec(model=str(tiny_model_dir)), engine_factory=default_engine_factory)
    agents = session.load_agents(session.spec, lambda _m: None)
    assert gc.isenabled() and gc.get_freeze_count() > 0
    # A cycle holding the model, frozen as one a load made would be: only a collection that
    # walks the frozen objects frees it.
    holder = Cycle()
    holder.model = agents.engine.base
    gc.freeze()
    model = weakref.ref(agents.engine.base)
    del agents, holder
    assert session.release_agents()
    assert model() is None, "the released model was freed"
    # Loading again (the model back after a job) works from the frozen state.
    assert session.load_agents(session.spec, lambda _m: None).engine.base is not None
    session.close()
