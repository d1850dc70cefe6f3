"""Plumbing every part uses: errors (`UserError`, one line to the user), paths and atomic
files, checks of what a user hands in (`inputs`), events (the one stream the CLI, the TUI
and JSON lines read), run locks, adapter folders and opening the sandbox (`sandboxes`)."""
