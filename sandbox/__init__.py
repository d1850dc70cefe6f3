"""coopcode's sandbox: run model-written programs against tests, in isolation, with verdicts
the program cannot forge. See `sandbox.verdict` for the contract and `open_sandbox` to start
one."""

from sandbox.backend import open_sandbox
from sandbox.verdict import (
    Job,
    Sandbox,
    SandboxUnavailable,
    TestRecord,
    Verdict,
)

__all__ = ["Job", "Sandbox", "SandboxUnavailable", "TestRecord", "Verdict", "open_sandbox"]
