"""Rewards as plug-ins: one module per reward, each registered by name.

A reward is a function of a `RewardInput` (what the agents wrote, the combined program, the
sandbox's verdict, the cooperation analysis) returning a `RewardBreakdown` (named terms and
their total). `get_reward(name)` finds one; `REWARDS` lists them. Shipped:

- `seed`: the seed paper's MAGRPO reward (the default for two agents), `coopcode.rewards.seed`
- `seed-grpo`: the seed paper's GRPO reward (the default for one agent), same module
- `coop`: the MAGRPO authors' levels and cooperation terms, from the syntax tree,
  `coopcode.rewards.coop`
- `coop-text`: the same levels exactly as the authors' code computes them (their
  regular expressions on the text), for fidelity comparisons, `coopcode.rewards.coop_text`
- `credit`: the tests, plus cooperation only where main does own work and the helper alone
  does not solve the task; the helper paid its contribution over main alone (per-agent
  counterfactual credit), `coopcode.rewards.credit`

A shipped reward is a module here with a function decorated by
`@register(name, terms, summary)`: every module of this package is imported below (the
defaults' `seed` first, then by name: the order lists and forms show), so adding one needs no
other line. One of yours registers the same way from your own module (`register_reward`,
exported from `coopcode`; `COOPCODE_PLUGINS` makes the command line import it).
"""

from importlib import import_module as _import_module
from pkgutil import iter_modules as _iter_modules

from coopcode.rewards.base import (
    CREDITS,
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

register_reward = register  # the name `coopcode` exports

# The reward modules register themselves on import.
for _name in sorted((m.name for m in _iter_modules(__path__) if m.name != "base"),
                    key=lambda name: (name != "seed", name)):
    _import_module(f"{__name__}.{_name}")

__all__ = ["CREDITS", "REWARDS", "Reward", "RewardBreakdown", "RewardFn", "RewardInput",
           "default_reward_name", "format_terms", "get_reward", "grpo_levels", "magrpo_levels", "record_reward", "register", "register_reward",
           "resolve_reward", "reward_names", "term_keys"]
