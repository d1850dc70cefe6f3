"""Switching a TabbedContent's tab from code without the focus pulling it back."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import TabbedContent


def show_tab(tabs: TabbedContent, pane_id: str, focus: str | None = None) -> None:
    """Show `pane_id`; focus left in another pane of `tabs` moves into the one shown.

    A TabbedContent activates the pane holding the focused widget. Switched from code while
    the focus sits in the pane being hidden (a problem just picked from the list, then
    Ctrl+R), the hidden widget's focus brings its pane straight back and the run goes on out
    of sight. So the focus goes to `focus` (a selector inside the new pane), else to the
    new pane's first focusable widget, else to the tab strip.
    """
    tabs.active = pane_id
    focused = tabs.screen.focused
    if focused is None or not _inside(focused, tabs):
        return  # the toolbar, a dialog: the focus does not fight the tabs
    pane = tabs.get_pane(pane_id)
    if _inside(focused, pane):
        return
    target: Widget | None = None
    if focus:
        found = pane.query(focus)
        target = found.first() if found else None
    if target is None:
        target = next((w for w in pane.query("*") if w.focusable), None)
    if target is None:
        from textual.widgets.tabbed_content import ContentTabs

        target = tabs.query_one(ContentTabs)
    target.focus()


def _inside(widget: Widget, ancestor: Widget) -> bool:
    node: object = widget
    while node is not None:
        if node is ancestor:
            return True
        node = getattr(node, "parent", None)
    return False


__all__ = ["show_tab"]
