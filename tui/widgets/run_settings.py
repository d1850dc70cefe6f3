"""Collaborate's toolbar settings: the scheme, what main sees, the turns and the reward."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Select

from coopcode import (
    DEFAULT_SCHEME,
    MAIN_SEES,
    get_scheme,
    reward_names,
    scheme_names,
    with_main_seeing,
)
from tui.widgets.options_select import OptionsSelect


def listed_schemes() -> list[str]:
    """The toolbar's schemes: every scheme but the `--main-sees code` variants, which the
    "main sees" choice beside it picks (`contract` + code is `contract+code`)."""
    variants = {get_scheme(name).sees_code_variant for name in scheme_names()}
    return [name for name in scheme_names() if name not in variants]


class RunSettings(Horizontal):
    """The settings a Ctrl+R runs with, each a drop-down with its label."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # The adapters whose run's settings the toolbar took (`follow`).
        self.defaults_for: tuple[str | None, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield Label("scheme", classes="dim")
        yield OptionsSelect([(s, s) for s in listed_schemes()], value=DEFAULT_SCHEME,
                            allow_blank=False, compact=True, id="scheme")
        # What main is shown of the helper's work, where the scheme has a choice
        # (`--main-sees`): hidden for the others.
        yield Select([(f"sees {m}", m) for m in MAIN_SEES], value=MAIN_SEES[0],
                     allow_blank=False, compact=True, id="sees", classes="sees")
        yield Label("turns", classes="dim")
        yield Select([(str(t), t) for t in (1, 2, 3)], value=1, allow_blank=False,
                     compact=True, id="turns")
        # The reward the verdict is scored with; blank: the scheme's default (the seed
        # paper's). Loaded adapters set it to the one they were trained with.
        yield Label("reward", classes="dim")
        yield Select([(r, r) for r in reward_names()], prompt="default", compact=True,
                     id="reward")

    def chosen_scheme(self) -> str:
        """The scheme as the toolbar says: the one chosen, with what main sees."""
        scheme = str(self.query_one("#scheme", Select).value)
        return with_main_seeing(scheme, str(self.query_one("#sees", Select).value))

    @property
    def turns(self) -> int:
        return int(self.query_one("#turns", Select).value)  # type: ignore[arg-type]

    def reward_choice(self, scheme: str) -> tuple[str | None, str]:
        """(the reward to ask for, its name as shown): None asks for the scheme's default."""
        from coopcode import default_reward_name

        select = self.query_one("#reward", Select)
        chosen = None if select.is_blank() else str(select.value)
        return chosen, chosen or default_reward_name(scheme)

    def follow(self, helper_adapter: str | None, main_adapter: str | None) -> str:
        """New adapters: what their run was trained with (scheme, what main sees, reward)
        becomes the choice, and the line returned says so ('' when there is nothing to say);
        the user may change it, and it stays until other adapters load. Adapters are judged
        fairly only under the scheme and reward they were trained with (a contract pair run
        under sequential would write to a contract it is never shown)."""
        from coopcode import run_defaults, trained_with

        adapters = (helper_adapter, main_adapter)
        if adapters == self.defaults_for:
            return ""
        self.defaults_for = adapters
        trained = trained_with(*adapters)
        defaults = run_defaults(trained, set())
        self.choose(defaults.scheme or DEFAULT_SCHEME, defaults.reward)
        if trained is None or not defaults.said:
            return ""
        return f"{trained.run} was trained with {trained.words()}: the toolbar's choice now " \
               "(change it there)"

    def choose(self, scheme: str, reward: str | None) -> None:
        """Set the toolbar to `scheme` (with what main sees) and `reward` (None: default);
        a scheme the toolbar does not list gives the default scheme."""
        from coopcode import split_scheme

        base, sees = split_scheme(scheme)
        if base not in listed_schemes():
            base, sees = DEFAULT_SCHEME, MAIN_SEES[0]
        self.query_one("#scheme", Select).value = base
        self.query_one("#sees", Select).value = sees
        self.query_one("#reward", Select).value = reward or Select.NULL

    def show_sees(self) -> None:
        """The "main sees" choice, where the scheme chosen has one."""
        scheme = str(self.query_one("#scheme", Select).value)
        self.query_one("#sees", Select).display = bool(get_scheme(scheme).sees_code_variant)
