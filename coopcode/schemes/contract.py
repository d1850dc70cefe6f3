"""`contract`: each agent kept to its part by the problem's contract for aux.

The helper sees only aux's contract (its signature and docstring, from the problem: g's, in
the `compose` set), not the task it serves, and writes aux. Main sees the whole task and
aux's contract, **not aux's body**, and writes the entry point, free to call aux; both are
asked at once. `contract+code` (`--main-sees code`) shows main the helper's code instead, so
main waits for it. A problem without a contract is refused in one line (before any sampling).
"""

from __future__ import annotations

from coopcode.core.errors import UserError
from coopcode.records.vocabulary import ContractSource, Role
from coopcode.schemes.base import SampleState, Scheme, Steps


def need_contract(s: SampleState, scheme: str) -> None:
    if s.problem.contract is None:
        raise UserError(f"{s.problem.task_id} has no contract for aux: the {scheme} scheme needs "
                        "one (use --problems compose:..., a problem file with a contract, or "
                        "another scheme such as plan)")
    s.use_contract(s.problem.contract)


class ContractScheme(Scheme):
    name = "contract"
    roles = (Role.HELPER, Role.MAIN)
    trainable = True
    contract_source = ContractSource.PROBLEM
    sees_code_variant = "contract+code"

    def first_turn(self, s: SampleState) -> Steps:
        need_contract(s, self.name)
        yield [s.ask_contract_helper(), s.ask_contract_main()]


class ContractSeesCode(ContractScheme):
    name = "contract+code"
    main_sees_helper = True
    sees_code_variant = ""

    def first_turn(self, s: SampleState) -> Steps:
        need_contract(s, self.name)
        yield [s.ask_contract_helper()]
        yield [s.ask_contract_main(s.attempt.helper_code)]
