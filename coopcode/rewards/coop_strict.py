"""`coop-strict`: `coop` without the bonus for a thin wrapper.

Our variant, chosen on a training curve (never on the test split): under `coop`, the first
committed run (`magrpo-coop-0.5b`, seed 0) learned to have the helper write the whole
solution and main return `aux(...)` (the `wrapper` pattern in 50-100% of its joint actions
from step 11 on, main's completions down to a `return` line), because a wrapper earns the
+0.5 `uses` bonus at no risk. Here `uses` is paid only together with `beyond_wrapper`: a
wrapper scores what a main that ignores the helper scores, and only use beyond a wrapper
earns the cooperation terms (+0.5 +1.0). Everything else is `coop`'s (`coopcode.rewards.coop`).
"""

from __future__ import annotations

from coopcode.rewards.base import RewardBreakdown, RewardInput, register
from coopcode.rewards.coop import TERMS, coop_reward


@register("coop-strict", TERMS,
          "coop, but the 0.5 for using the helper is paid only when main does more than wrap it",
          source="ours: coop with no bonus for the wrapper pattern (see coop_strict.py)",
          maximum=4.0, agents="pair")
def coop_strict_reward(inp: RewardInput) -> RewardBreakdown:
    terms = coop_reward(inp).terms
    if terms["beyond_wrapper"] == 0.0:
        terms["uses"] = 0.0
    return RewardBreakdown(terms)
