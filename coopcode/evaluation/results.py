"""The append-only results store of a bench run: resumable by construction.

`OUT/samples.jsonl` holds one line per finished sample, keyed by (scheme, task_id, sample).
A line is written whole and flushed to disk before the next sample starts, so a run killed
at any moment leaves every finished sample intact and at most one torn last line, which
opening the store cuts off; a write that fails (a full disk) is cut back at once, so the
file stays valid JSONL and the run stops with one line (`coopcode.core.files`). `OUT/meta.json` pins the settings that decide what a
sample is (model, prompts, sampling, seed...): resuming with other settings is refused, so a
results file never mixes two experiments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coopcode.core.errors import UserError
from coopcode.core.files import append_whole, write_failure
from coopcode.core.run_lock import RunLock

SAMPLES = "samples.jsonl"
META = "meta.json"

Key = tuple[str, str, int]  # (scheme, task_id, sample)


def _key(record: dict[str, Any]) -> Key:
    return (record["scheme"], record["task_id"], int(record["sample"]))


class ResultsStore:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / SAMPLES
        self.records: dict[Key, dict[str, Any]] = {}
        try:
            out.mkdir(parents=True, exist_ok=True)
            self._lock = RunLock.acquire(out, "bench run")  # before reading: one writer
            try:
                self._load()
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except BaseException:
                self._lock.release()
                raise
        except PermissionError:
            raise UserError(f"{out}: cannot write here (permission denied): choose another --out") from None
        except NotADirectoryError:
            raise UserError(f"{out}: is a file, not a folder: choose another --out") from None

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            # A torn last line from a killed run: drop it, its sample will be redone.
            with open(self.path, "r+b") as f:
                f.truncate(end)
            data = data[:end]
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            self.records[_key(record)] = record

    def has(self, scheme: str, task_id: str, sample: int) -> bool:
        return (scheme, task_id, sample) in self.records

    def add(self, record: dict[str, Any]) -> None:
        key = _key(record)
        if key in self.records:
            return
        try:
            append_whole(self._fd, (json.dumps(record, default=str) + "\n").encode("utf-8"))
        except OSError as e:
            raise UserError(write_failure(
                self.path, e, f"the {len(self.records)} samples written so far are kept",
                "free some space and rerun with the same --out to resume")) from None
        self.records[key] = record

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records.values())

    def close(self) -> None:
        os.close(self._fd)
        self._lock.release()

    # -- the settings a run is pinned to -----------------------------------------------------

    def pin_meta(self, meta: dict[str, Any], identity: dict[str, Any]) -> dict[str, Any]:
        """Write meta.json, or check that an existing run was made with the same identity."""
        path = self.out / META
        if path.exists():
            old = json.loads(path.read_text())
            before = old.get("identity", {})
            diff = [k for k in sorted(set(before) | set(identity)) if before.get(k) != identity.get(k)]
            if diff and self.records:
                k = diff[0]
                raise UserError(
                    f"{self.out} holds a run with other settings ({k}: {before.get(k)!r} there, "
                    f"{identity.get(k)!r} now): use another --out or the same settings"
                )
            meta = {**old, **meta, "identity": identity,
                    "sessions": old.get("sessions", 0) + 1}
        else:  # timed_sessions: the sessions that ended and added their time to wall_seconds
            meta = {**meta, "identity": identity, "sessions": 1, "timed_sessions": 0}
        _write_json(path, meta)
        return meta

    def update_meta(self, **fields: Any) -> None:
        path = self.out / META
        meta = json.loads(path.read_text()) if path.exists() else {}
        meta.update(fields)
        _write_json(path, meta)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace `path` by a whole new version (the old one stays if the disk is full)."""
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str))
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UserError(write_failure(path, e, "the samples written so far are kept",
                                      "free some space and rerun with the same --out")) from None
