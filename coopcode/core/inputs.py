"""What a user hands coopcode, checked before anything heavy starts: files and folders
(numbers are checked against their options' declared bounds, `coopcode.settings.options`).

Every check raises `UserError` with one line that names the thing (a path, a path and line
number, or a flag) and says what to do. The CLI calls these before a model or a sandbox
loads, so bad input fails in milliseconds.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from coopcode.core.errors import UserError

# A CPU-seconds limit per program. HumanEval programs need milliseconds; above an hour the
# sandbox's wall-clock deadline (a multiple of this) overflows the platform's time_t.
MAX_TIMEOUT = 3600.0
# The sampling temperatures the engines accept (0 is greedy).
MAX_TEMPERATURE = 5.0


# -- files -------------------------------------------------------------------------------

def check_input_file(path: Path, what: str = "file", error: type[UserError] = UserError) -> Path:
    """`path` if it is a regular file we can open; otherwise a UserError saying why not.

    A FIFO or device is refused rather than read: reading a FIFO nobody writes to would
    wait forever.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise error(f"{path}: a broken symlink (it points to {os.readlink(path)}, which "
                        f"does not exist): pass the {what} itself") from None
        raise error(f"{path}: no such file") from None
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: a folder, where a {what} is expected: pass the file inside it")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file (a FIFO, socket or device): pass a {what}")
    return path


def _read_bytes(path: Path, what: str, error: type[UserError]) -> bytes:
    check_input_file(path, what, error)
    try:
        return path.read_bytes()
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror})") from None


def _decode(data: bytes, path: Path, what: str, error: type[UserError]) -> str:
    # A NUL byte never appears in UTF-8 text a person wrote: the file is binary.
    if b"\0" in data:
        raise error(f"{path}: a binary file, not a {what}: pass a UTF-8 text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x}): "
                    "save the file as UTF-8") from None


def read_text_file(path: Path, what: str = "file", error: type[UserError] = UserError) -> str:
    """The UTF-8 text of a file a user named, or a UserError (missing, folder, binary, ...)."""
    return _decode(_read_bytes(path, what, error), path, what, error)


def read_jsonl(path: Path, what: str = "JSONL file",
               error: type[UserError] = UserError) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL (or .jsonl.gz) file."""
    data = _read_bytes(path, what, error)
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise error(f"{path}: not a gzip file (or a truncated one): pass a .jsonl, "
                        "or gzip it whole") from None
    text = _decode(data, path, what, error)
    records = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and friends unescaped.
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise error(f"{path}:{lineno}: not valid JSON ({e.msg}): each line must be "
                        "one JSON object") from None
        if not isinstance(record, dict):
            raise error(f"{path}:{lineno}: a JSON {_json_kind(record)}, not an object: "
                        "each line must be one JSON object")
        records.append((lineno, record))
    return records


def _json_kind(value: Any) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def check_output_file(path: Path, flag: str = "--out") -> Path:
    """`path` if a file can be written there (without creating it), else a UserError."""
    if path.is_dir():
        raise UserError(f"{path}: a folder, where {flag} needs a file path: name a file")
    parent = path.absolute().parent
    if not parent.exists():
        raise UserError(f"{path}: the folder {parent} does not exist: create it or choose "
                        f"another {flag}")
    _check_parent_folder(path, flag)
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{path}: not writable: choose another {flag}")
    return path


def check_output_folder(path: Path, flag: str = "--out") -> Path:
    """`path` if it is a folder or can become one (nothing is created), else a UserError."""
    if path.exists() and not path.is_dir():
        raise UserError(f"{path}: a file, where {flag} needs a folder: choose another {flag}")
    _check_parent_folder(path, flag)
    return path


def _check_parent_folder(path: Path, flag: str) -> None:
    """The nearest existing ancestor of `path` must be a writable folder."""
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{path}: {parent} is a file, not a folder: choose another {flag}")
    if not os.access(parent, os.W_OK):
        raise UserError(f"{path}: cannot write in {parent} (permission denied): "
                        f"choose another {flag}")


def check_run_name(name: str, flag: str = "--run") -> str:
    """A run name is one folder name under checkpoints/ (a path belongs in --out)."""
    if not name.strip() or name in (".", "..") or name.startswith(".") \
            or any(sep in name for sep in ("/", "\\", "\0")):
        raise UserError(f"{flag} {name!r}: a run name is one folder name such as my-run "
                        "(not empty, no '/', not starting with '.'): give a path with --out")
    return name


def check_server_urls(flag: str, urls: tuple[str, ...] | list[str]) -> None:
    """OpenAI-compatible servers' base URLs: each an http(s) URL, or a UserError naming it."""
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UserError(f"{flag} {url!r}: give an http(s) URL such as http://127.0.0.1:8000/v1")
