"""Rewards as plug-ins: one module per reward, each registered by name.

A reward is a function of a `RewardInput` (what the agents wrote, the combined program, the
sandbox's verdict, the cooperation analysis) returning a `RewardBreakdown` (named terms and
their total). `get_reward(name)` finds one; `REWARDS` lists them. Shipped:

- `seed`: the seed paper's MAGRPO reward (the default for two agents), `coopcode.rewards.seed`
- `seed-grpo`: the seed paper's GRPO reward (the default for one agent), same module
- `coop`: the MAGRPO authors' levels and cooperation terms, from the syntax tree,
  `coopcode.rewards.coop`

A new reward is a module here with a function decorated by `@register(name, terms, summary)`,
imported below.
"""

# The reward modules register themselves on import, in this order (the defaults first: the
# order lists and forms show).
from coopcode.rewards import seed  # noqa: I001, F401
from coopcode.rewards import coop  # noqa: F401
from coopcode.rewards.base import (
    REWARDS,
    Reward,
    RewardBreakdown,
    RewardFn,
    RewardInput,
    default_reward_name,
    format_terms,
    get_reward,
    record_reward,
    register,
    resolve_reward,
    reward_names,
    term_keys,
)
from coopcode.rewards.seed import grpo_levels, magrpo_levels

__all__ = ["REWARDS", "Reward", "RewardBreakdown", "RewardFn", "RewardInput",
           "default_reward_name", "format_terms", "get_reward", "grpo_levels", "magrpo_levels", "record_reward", "register",
           "resolve_reward", "reward_names", "term_keys"]
