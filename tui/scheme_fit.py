"""Whether a scheme works to the problem's own contract, for the forms to steer by.

A run that meets problems without one is refused by `coopcode.schemes.check_problems_fit`
(the screens give it their own remedy); the Bench and Train forms ask this first, to offer
problems that have one before the user starts anything.
"""

from __future__ import annotations

from coopcode import ContractSource, get_scheme, scheme_names


def needs_contract(scheme: str) -> bool:
    """Whether `scheme` works to the problem's own contract (a problem without one is refused)."""
    return scheme in scheme_names() and get_scheme(scheme).contract_source == ContractSource.PROBLEM
