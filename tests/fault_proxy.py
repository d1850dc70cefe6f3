"""A real HTTP proxy on loopback that forwards to a real server and fails on request.

    python tests/fault_proxy.py --target http://127.0.0.1:8000 --port 8100

Everything is forwarded as is (streamed responses chunk by chunk). `POST /__fail` with
`{"codes": [429, 500]}` makes the next POSTs answer those statuses instead of forwarding
(one code per request, in order); `GET /__stats` tells how many requests came and how many
were failed. Standard library only: the tests start it as a process, so "the server was
killed" is a real SIGKILL.
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Proxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, target: str) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        parts = urlsplit(target)
        self.target_host, self.target_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.lock = threading.Lock()
        self.codes: list[int] = []
        self.stats = {"requests": 0, "failed": 0}

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up (a cancelled stream) is not news

    def next_failure(self) -> int | None:
        with self.lock:
            self.stats["requests"] += 1
            if self.codes:
                self.stats["failed"] += 1
                return self.codes.pop(0)
            return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def log_message(self, *_args: object) -> None:
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _reply(self, status: int, data: dict[str, object]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.path == "/__stats":
            with self.server.lock:
                self._reply(200, dict(self.server.stats))
            return
        self._forward(b"")

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/__fail":
            with self.server.lock:
                self.server.codes = list(json.loads(body or b"{}").get("codes", []))
            self._reply(200, {"ok": True})
            return
        code = self.server.next_failure()
        if code is not None:
            self._reply(code, {"error": {"message": f"injected {code}", "type": "injected"}})
            return
        self._forward(body)

    def _forward(self, body: bytes) -> None:
        conn = http.client.HTTPConnection(self.server.target_host, self.server.target_port, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        conn.request(self.command, self.path, body=body or None, headers=headers)
        resp = conn.getresponse()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    proxy = Proxy(args.port, args.target)
    print("ready", flush=True)
    proxy.serve_forever()


if __name__ == "__main__":
    main()
