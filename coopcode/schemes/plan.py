"""`plan`: main writes aux's contract first, the helper implements it, main writes the entry
point against it. For any problem: the contract is main's own.

Main (as the `planner`, with main's adapter) writes aux's signature and docstring and nothing
else; the helper sees only that contract; main then writes the entry point seeing the task
and the contract, **not aux's body** (`plan+code`, `--main-sees code`: the helper's code).
In training, the planner's contract is sampled once per problem and step (every joint action
of the group works to the same contract, so their rewards compare) and is not trained.
"""

from __future__ import annotations

from coopcode.records.vocabulary import ContractSource, Role
from coopcode.schemes.base import SampleState, Scheme, Steps


class Plan(Scheme):
    name = "plan"
    roles = (Role.HELPER, Role.MAIN)
    trainable = True
    contract_source = ContractSource.PLANNED
    sees_code_variant = "plan+code"

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_plan()]
        yield [s.ask_contract_helper(), s.ask_contract_main()]


class PlanSeesCode(Plan):
    name = "plan+code"
    main_sees_helper = True
    sees_code_variant = ""

    def first_turn(self, s: SampleState) -> Steps:
        yield [s.ask_plan()]
        yield [s.ask_contract_helper()]
        yield [s.ask_contract_main(s.attempt.helper_code)]
