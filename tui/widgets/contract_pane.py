"""aux's contract between the helper's and main's panes (`contract` and `plan` schemes).

Under `contract` it is the problem's, shown before the run; under `plan` main writes it
first (the planner step) and it streams in here like an agent's code. After the run it
holds the contract as main saw it: signature, docstring and `...` for the body.
"""

from __future__ import annotations

from coopcode import ContractSource, Problem, contract_stub
from tui.widgets.agent_pane import AgentPane, PaneState, style_code

# Where the contract comes from (`Scheme.contract_source`), as the pane's title says it.
SOURCES: dict[str, str] = {ContractSource.PROBLEM: "the problem's", ContractSource.PLANNED: "main's plan"}


class ContractPane(AgentPane):
    """A read-only view of aux's contract; under `plan`, the planner's tokens stream in."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("contract", id=id)
        self.add_class("contract-pane")
        self.source: str = ContractSource.NONE

    def show_for(self, source: str, problem: Problem | None, running: bool = False) -> None:
        """What a scheme whose contract comes from `source` (`Scheme.contract_source`; ''
        hides the pane) works to on `problem`: the problem's contract, or why there is none;
        under `plan` what main will write first (`running`: nothing yet, for the planner's
        tokens to stream into)."""
        self.display = bool(source)
        if not source:
            return
        self.reset()
        self.source = source
        if source == ContractSource.PLANNED and running:
            self.refresh_title()
        elif source == ContractSource.PLANNED:
            self.show_contract("# Main writes aux's contract first (a signature and a "
                               "docstring);\n# the helper implements it, main calls it. "
                               "Ctrl+R runs.\n", source)
        elif problem is not None and problem.contract is not None:
            self.show_contract(contract_stub(problem.contract), source)
        else:
            what = problem.task_id if problem is not None else "No problem chosen"
            self.show_contract(f"# {what}: no contract for aux. Pick a compose problem\n"
                               "# (type compose in the search), or the plan scheme.\n", source)

    def show_contract(self, text: str, source: str) -> None:
        """Show `text` (a contract, or a line saying why there is none) from `source`."""
        self.source = source
        view = self.code_view
        style_code(view)
        view.load_text(text)
        view.scroll_home(animate=False)
        self.refresh_title()

    def refresh_title(self) -> None:
        where = SOURCES.get(self.source, "")
        head = f"aux's contract · {where}" if where else "aux's contract"
        if self.state in (PaneState.IDLE, PaneState.DONE) and self.source == ContractSource.PROBLEM:
            self.border_title, self.border_subtitle = head, "helper implements · main calls"
            return
        if self.state == PaneState.IDLE:
            self.border_title, self.border_subtitle = head, ""
            return
        self.border_title = f"{head} · {self.state}"
        self.border_subtitle = f"{self.tokens} tok · {self.tokens_per_s:.1f} tok/s"
