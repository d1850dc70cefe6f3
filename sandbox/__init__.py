"""coopcode's sandbox: run model-written programs against tests, in isolation, with verdicts
the program cannot forge. See `sandbox.verdict` for the contract."""

from sandbox.verdict import (
    Job,
    Sandbox,
    SandboxUnavailable,
    TestRecord,
    Verdict,
)

__all__ = ["Job", "Sandbox", "SandboxUnavailable", "TestRecord", "Verdict"]
