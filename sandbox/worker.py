"""Host side of one runner: a byte transport (pipes or a Docker attach socket) and the
request/reply protocol on top of it."""

from __future__ import annotations

import collections
import os
import select
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from typing import Any, Protocol

from sandbox.wire import FrameReader, ProtocolError, pack_frame


class WorkerLost(Exception):
    """The runner died, hung or broke the protocol; the worker must be replaced."""


class Transport(Protocol):
    def send(self, data: bytes) -> None: ...

    def recv(self, timeout: float) -> bytes:
        """Some runner stdout bytes; b"" at end of stream; TimeoutError when none came."""

    def close(self) -> None: ...

    def log(self) -> str:
        """The runner's recent stderr, for error messages."""


class PipeTransport:
    """A runner subprocess of the process backend, talking over its stdin/stdout."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._in = proc.stdin.fileno()
        self._out = proc.stdout.fileno()

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view):]

    def recv(self, timeout: float) -> bytes:
        if not select.select([self._out], [], [], timeout)[0]:
            raise TimeoutError
        return os.read(self._out, 1 << 16)

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return ""


class DockerAttachTransport:
    """The runner is a container's main process; we hold its attach socket. Without a TTY
    Docker multiplexes stdout and stderr into frames: an 8-byte header (stream type, three
    zero bytes, big-endian payload length) then the payload."""

    _HEADER = struct.Struct(">BxxxL")

    def __init__(self, sock: socket.socket, keepalive: object = None) -> None:
        self.sock = sock
        self._keepalive = keepalive  # docker-py's wrapper: closing it on GC would close sock
        self._buf = bytearray()
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            out = self._take_stdout()
            if out is not None:
                return out
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise TimeoutError
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return b""
            self._buf += chunk

    def _take_stdout(self) -> bytes | None:
        out = bytearray()
        while len(self._buf) >= self._HEADER.size:
            stream, size = self._HEADER.unpack_from(self._buf)
            end = self._HEADER.size + size
            if len(self._buf) < end:
                break
            payload = bytes(self._buf[self._HEADER.size:end])
            del self._buf[:end]
            if stream == 1:
                out += payload
            elif stream == 2:
                self._stderr.append(payload)
        return bytes(out) if out else None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def log(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")[-2000:]


class Worker:
    """One runner, used by one thread at a time."""

    def __init__(self, transport: Transport, name: str, slot: int = 0) -> None:
        self.transport = transport
        self.name = name
        self.slot = slot
        self.features: dict[str, Any] = {}
        self.on_close: list[Callable[[], None]] = []
        self._reader = FrameReader()
        self.jobs = 0

    def _read(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                for frame in self._reader.frames():
                    return frame
            except ProtocolError as e:
                raise WorkerLost(f"{self.name}: {e}") from None
            left = deadline - time.monotonic()
            try:
                chunk = self.transport.recv(max(0.0, left))
            except TimeoutError:
                raise WorkerLost(f"{self.name} did not answer within {timeout:.0f} s") from None
            except OSError as e:
                raise WorkerLost(f"{self.name}: {e}") from None
            if not chunk:
                log = self.transport.log().strip()
                raise WorkerLost(f"{self.name} exited" + (f": {log[-300:]}" if log else ""))
            self._reader.feed(chunk)

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        msg = self._read(timeout)
        if not isinstance(msg, dict) or msg.get("op") != "ready":
            raise WorkerLost(f"{self.name} sent {msg!r} instead of ready")
        self.features = dict(msg.get("features", {}))
        return self.features

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            self.transport.send(pack_frame(msg))
        except OSError as e:
            raise WorkerLost(f"{self.name}: {e}") from None
        self.jobs += 1
        while True:
            reply = self._read(timeout)
            if isinstance(reply, dict) and reply.get("id") == msg.get("id"):
                return reply

    def close(self) -> None:
        try:
            self.transport.send(pack_frame({"op": "exit"}))
        except OSError:
            pass
        self.transport.close()
        for fn in self.on_close:
            fn()
