"""coopcode's sandbox: run model-written programs against tests, in isolation, with verdicts
the program cannot forge. See `sandbox.verdict` for the contract and `open_sandbox` to start
one."""

from sandbox import ast_lock
from sandbox.backend import open_sandbox
from sandbox.verdict import (
    Job,
    Sandbox,
    SandboxUnavailable,
    TestRecord,
    Verdict,
)

ast_lock.install()  # parsing on several threads: see sandbox/ast_lock.py

__all__ = ["Job", "Sandbox", "SandboxUnavailable", "TestRecord", "Verdict", "open_sandbox"]
