"""Framing and the plain-data codec shared by the host, the runner and the job child.

Stdlib only: this file is copied into the sandbox image next to `runner.py`.

Frames are a 4-byte big-endian length followed by UTF-8 JSON. Values that cross from the
program's process to the trusted side are encoded as *plain data only* (None, bool, int,
float, str, bytes, list, tuple, dict, set, frozenset, complex, range): the trusted side
decodes them into fresh builtin objects, so nothing the program defines (an `__eq__` that is
always True, a patched builtin) survives the trip.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import select
import struct
from collections.abc import Iterator
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME = 32 * 1024 * 1024  # a frame larger than this is a protocol violation
MAX_DEPTH = 100  # nesting depth of an encoded value (also catches cycles)
MAX_ITEMS = 1_000_000  # items materialised from one iterator result
_SMALL_INT = 2**53  # ints beyond this travel as hex so JSON readers never round them


def wall_limit(timeout: float) -> float:
    """Wall-clock seconds a job with `timeout` CPU seconds may spend neither running nor
    waiting for a CPU (sleeping, blocked, stopped). Time spent runnable but starved of a CPU
    does not count (the supervisor reads it from /proc/<pid>/schedstat), so a loaded machine
    slows a correct program down without turning it into a timeout."""
    return 3.0 * timeout + 2.0


def wall_cap(timeout: float) -> float:
    """Wall-clock seconds after which a job ends however starved it was: a bound for a
    machine so overloaded that the job would otherwise never finish."""
    return 10.0 * wall_limit(timeout)


class ProtocolError(Exception):
    """A frame or value that does not follow the protocol (truncated, too big, malformed)."""


class UnsupportedValue(Exception):
    """A value that is not plain data (e.g. "returned a non-data object of type Foo")."""


# ---------------------------------------------------------------- framing


def pack_frame(obj: Any) -> bytes:
    data = json.dumps(obj, separators=(",", ":"), allow_nan=True).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise UnsupportedValue(f"message of {len(data)} bytes exceeds {MAX_FRAME}")
    return _HEADER.pack(len(data)) + data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


def write_frame(fd: int, obj: Any) -> None:
    write_all(fd, pack_frame(obj))


class FrameReader:
    """Incremental frame decoder over a byte stream (a pipe, a socket, Docker's stdout)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> None:
        self._buf += data

    def frames(self) -> Iterator[Any]:
        """Yield every complete frame buffered so far."""
        while len(self._buf) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf)
            if size > self._max:
                raise ProtocolError(f"frame of {size} bytes exceeds {self._max}")
            end = _HEADER.size + size
            if len(self._buf) < end:
                return
            payload = bytes(self._buf[_HEADER.size : end])
            del self._buf[:end]
            try:
                yield json.loads(payload)
            except (ValueError, RecursionError) as e:
                raise ProtocolError(f"malformed frame: {e}") from None

    @property
    def pending(self) -> int:
        return len(self._buf)


def read_frame(fd: int, reader: FrameReader | None = None) -> Any:
    """Blocking read of one frame from `fd`; EOFError at end of stream."""
    reader = reader or FrameReader()
    while True:
        for frame in reader.frames():
            return frame
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                select.select([fd], [], [])
                continue
            raise
        if not chunk:
            raise EOFError("stream closed")
        reader.feed(chunk)


# ---------------------------------------------------------------- plain-data codec

# Encoded form: JSON null/bool/str/float/small int/array(list) as themselves; everything
# else is a one-key object {tag: payload}, the tags being i, t, s, f, d, b, ba, c, r, it.


def encode_value(value: Any) -> Any:
    """Encode `value` as tagged JSON data; UnsupportedValue for anything that is not data."""
    return _encode(value, 0)


def _encode(x: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise UnsupportedValue(f"value nested deeper than {MAX_DEPTH} levels (or cyclic)")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        return x if -_SMALL_INT < x < _SMALL_INT else {"i": hex(x)}
    if t is float:
        return x
    if t is list:
        return [_encode(v, depth + 1) for v in x]
    if t is tuple:
        return {"t": [_encode(v, depth + 1) for v in x]}
    if t is dict:
        return {"d": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in x.items()]}
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [_encode(v, depth + 1) for v in x]}
    if t is bytes or t is bytearray:
        return {"b" if t is bytes else "ba": base64.b64encode(x).decode("ascii")}
    if t is complex:
        return {"c": [x.real, x.imag]}
    if t is range:
        return {"r": [x.start, x.stop, x.step]}
    return _encode_other(x, t, depth)


def _encode_other(x: Any, t: type, depth: int) -> Any:
    """Subclasses of data types (Counter, OrderedDict, namedtuple, IntEnum) travel as their
    builtin base, read through the base type's own methods; iterators (generators, map,
    zip) are materialised. Either way the trusted side sees only content, which an honest
    program could have returned as plain data anyway."""
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return _encode(int.__int__(x), depth)
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, (bytes, bytearray)):
        return _encode(bytes(memoryview(x)), depth)
    if isinstance(x, list):
        return [_encode(v, depth + 1) for v in list.__iter__(x)]
    if isinstance(x, tuple):
        return {"t": [_encode(v, depth + 1) for v in tuple.__iter__(x)]}
    if isinstance(x, dict):
        pairs = dict.items(x)
        return {"d": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in pairs]}
    if isinstance(x, (set, frozenset)):
        if isinstance(x, frozenset):
            return {"f": [_encode(v, depth + 1) for v in frozenset.__iter__(x)]}
        return {"s": [_encode(v, depth + 1) for v in set.__iter__(x)]}
    if isinstance(x, Iterator):
        items: list[Any] = []
        for v in x:
            if len(items) >= MAX_ITEMS:
                raise UnsupportedValue(f"iterator yielded more than {MAX_ITEMS} items")
            items.append(_encode(v, depth + 1))
        return {"it": items}
    raise UnsupportedValue(f"returned a non-data object of type {t.__name__}")


def decode_value(data: Any) -> Any:
    """Decode tagged JSON data into fresh builtin objects; ProtocolError when malformed."""
    try:
        return _decode(data, 0)
    except ProtocolError:
        raise
    except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as e:
        raise ProtocolError(f"malformed value: {type(e).__name__}: {e}") from None


def _decode(x: Any, depth: int) -> Any:
    if depth > MAX_DEPTH + 1:
        raise ProtocolError("value nested too deeply")
    t = type(x)
    if x is None or t is bool or t is str or t is int or t is float:
        return x
    if t is list:
        return [_decode(v, depth + 1) for v in x]
    if t is not dict or len(x) != 1:
        raise ProtocolError(f"unexpected encoded value of type {t.__name__}")
    ((tag, payload),) = x.items()
    if tag == "i":
        return int(_expect(payload, str), 16)
    if tag in ("b", "ba"):
        raw = base64.b64decode(_expect(payload, str), validate=True)
        return raw if tag == "b" else bytearray(raw)
    if tag == "c":
        re, im = _expect(payload, list)
        return complex(_number(re), _number(im))
    items = [_decode(v, depth + 1) for v in _expect(payload, list)]
    if tag == "t":
        return tuple(items)
    if tag == "s":
        return set(items)
    if tag == "f":
        return frozenset(items)
    if tag == "it":
        return iter(items)
    if tag == "r":
        start, stop, step = (_expect(v, int) for v in items)
        return range(start, stop, step)
    if tag == "d":
        out = {}
        for pair in items:
            k, v = _expect(pair, list)
            out[k] = v
        return out
    raise ProtocolError(f"unknown value tag {tag!r}")


def _expect(x: Any, t: type) -> Any:
    if type(x) is not t:
        raise ProtocolError(f"expected {t.__name__}, got {type(x).__name__}")
    return x


def _number(x: Any) -> float:
    if type(x) not in (int, float):
        raise ProtocolError("complex parts must be numbers")
    return float(x)
