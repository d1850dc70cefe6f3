"""Errors a user can cause. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a malformed problem file, an unknown model, k > n, ...

    The message is one line that says what is wrong and, where possible, what to do.
    """


class ProblemError(UserError):
    """A problem file or dataset that cannot be used."""


class ModelError(UserError):
    """A model or adapter that cannot be found, verified or loaded."""
