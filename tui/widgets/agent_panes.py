"""The Agents tab: the helper's and main's code as they write it, aux's contract between."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal

from coopcode import AttemptReady, Problem, get_scheme, has_helper
from tui.collaboration_run import Stream
from tui.widgets.agent_pane import AgentPane, PaneState
from tui.widgets.contract_pane import ContractPane


class AgentPanes(Horizontal):
    """The helper's pane, the contract's (under `contract` and `plan`), main's."""

    def compose(self) -> ComposeResult:
        yield AgentPane("helper", id="helper-pane")
        yield ContractPane(id="contract-pane")
        yield AgentPane("main", id="main-pane")

    @property
    def helper(self) -> AgentPane:
        return self.query_one("#helper-pane", AgentPane)

    @property
    def main(self) -> AgentPane:
        return self.query_one("#main-pane", AgentPane)

    @property
    def contract(self) -> ContractPane:
        return self.query_one(ContractPane)

    def start(self, scheme: str) -> None:
        """Empty panes for a run under `scheme` (the helper's hidden where it has none)."""
        for pane in self.query(AgentPane):
            pane.reset()  # the pre-filled code (`def aux(`, the signature) arrives as the first delta
        self.helper.display = has_helper(scheme)

    def show_contract_for(self, scheme: str, problem: Problem | None,
                          running: bool = False) -> None:
        """Between the panes, the contract `scheme` works to (`ContractPane.show_for`)."""
        source = get_scheme(scheme).contract_source
        self.set_class(bool(source), "-contract")
        self.contract.show_for(source, problem, running)

    def draw(self, streams: list[Stream], main_waits: bool) -> None:
        """Add what the agents wrote since the last frame. `main_waits`: main starts once
        the helper's code is complete (its scheme shows main the helper's code)."""
        helper, contract = self.helper, self.contract
        for s in streams:
            if s.agent == "planner":  # main writing aux's contract first (`plan`)
                contract.append(s.text, s.turn, tokens=s.tokens)
                continue
            if contract.state == PaneState.STREAMING:
                contract.finish()  # the agents start once the contract is written
            if s.agent == "helper":
                helper.append(s.text, s.turn, tokens=s.tokens)
                continue
            if main_waits and s.turn == 1 and helper.state == PaneState.STREAMING:
                helper.finish()
            self.main.append(s.text, s.turn, tokens=s.tokens)

    def finish(self, state: PaneState = PaneState.DONE) -> None:
        for pane in self.query(AgentPane):
            pane.finish(state)

    def show_final(self, attempt: AttemptReady) -> None:
        """Each pane ends on the code that went into the program (what the model wrote
        around it, a stray `}` or a closing fence, is left out of both)."""
        self.helper.show_final(attempt.helper_code)
        self.main.show_final(attempt.main_code)
        if attempt.contract.strip():  # the contract as main saw it (a planner's body dropped)
            self.contract.show_contract(attempt.contract, self.contract.source)
