"""A real HTTP file server on 127.0.0.1 for the download tests: serves byte strings by
path, honours ``Range: bytes=N-`` (206), and can misbehave on purpose per path:
``truncate`` (send half of the body, then close the connection; ``times`` limits how
often), ``no-range`` (ignore Range, always 200 from byte 0). Unknown paths are 404.
Every request is logged as (path, Range header or None, bytes sent), before its body is
sent, so the log is complete once the client has the response."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    data: bytes
    mode: str = "ok"  # ok | truncate | no-range
    times: int = -1  # how many requests misbehave (-1: all)


@dataclass
class FileServer:
    base: str
    routes: dict[str, Route] = field(default_factory=dict)
    log: list[tuple[str, str | None, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def add(self, path: str, data: bytes, mode: str = "ok", times: int = -1) -> str:
        self.routes[path] = Route(data, mode, times)
        return self.url(path)

    def requests(self, path: str) -> list[tuple[str, str | None, int]]:
        with self.lock:
            return [r for r in self.log if r[0] == path]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        files = self.server.files
        route = files.routes.get(self.path)
        wanted = self.headers.get("Range")
        if route is None:
            self._record(wanted, 0)
            self.send_error(404, "Not Found")
            return
        with files.lock:
            misbehave = route.mode != "ok" and route.times != 0
            if misbehave and route.times > 0:
                route.times -= 1
        start = 0
        if wanted and not (misbehave and route.mode == "no-range"):
            start = int(wanted.removeprefix("bytes=").split("-")[0])
        if start >= len(route.data) and start:
            self._record(wanted, 0)
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(route.data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = route.data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header(
                "Content-Range", f"bytes {start}-{len(route.data) - 1}/{len(route.data)}"
            )
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if misbehave and route.mode == "truncate":
            body = body[: len(body) // 2]
            self.close_connection = True
        # logged before the body goes out: a client that has read it all may return (and
        # its test read the log) before this thread runs again
        self._record(wanted, len(body))
        self.wfile.write(body)
        self.wfile.flush()

    def _record(self, wanted: str | None, sent: int) -> None:
        with self.server.files.lock:
            self.server.files.log.append((self.path, wanted, sent))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    files: FileServer


@contextmanager
def serve() -> Iterator[FileServer]:
    """A running server; ``add`` files to it while it runs."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.files = FileServer(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.files
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
