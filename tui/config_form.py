"""The Train and Bench forms, derived from their config dataclasses (`coopcode.settings.options`).

A form shows the fields declared with `form=N`, in that order: each with its short label, a
Select when the field has choices and an Input otherwise, filled with the field's default or
the screen's preset. Reading the form back gives the config, validated by the same
`validate()` the CLI runs, and the command-line arguments that set those fields.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.dom import DOMNode
from textual.widgets import Input, Label, Select

from coopcode import form_options


def form_fields(cls: type, presets: dict[str, Any] | None = None) -> ComposeResult:
    """The form's rows for `cls` (call inside `compose`); `presets` overrides defaults."""
    presets = presets or {}
    for opt in form_options(cls):
        value = presets.get(opt.name, opt.default)
        with Horizontal(classes="field"):
            yield Label(opt.label, classes="field-label")
            if opt.choices:
                # An optional choice (None: the library decides, e.g. the reward) is the
                # Select's blank, shown as "default".
                yield Select([(c, c) for c in opt.choices],
                             value=Select.NULL if value is None else value,
                             allow_blank=opt.optional, prompt="default", compact=True,
                             id=opt.widget_id)
            else:
                yield Input(opt.show(value), compact=True, id=opt.widget_id)


def form_values(screen: DOMNode, cls: type) -> dict[str, Any]:
    """The values typed into the form's rows (ValueError naming the row's label)."""
    values: dict[str, Any] = {}
    for opt in form_options(cls):
        widget = screen.query_one(f"#{opt.widget_id}")
        if isinstance(widget, Select):
            values[opt.name] = None if widget.is_blank() else widget.value
            continue
        assert isinstance(widget, Input)
        try:
            values[opt.name] = opt.parse(widget.value)
        except ValueError as e:
            raise ValueError(f"{opt.label}: {e}") from None
    return values
