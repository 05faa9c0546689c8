"""Test support for the remote swap: a real `livecam serve` (NVIDIA Triton through
PyTriton) in a child process on 127.0.0.1, the small models it serves, frames with real
faces, and a delay proxy that adds latency to a TCP connection on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from waiting import poll

from livecam.config.remote import RemoteConfig, ServerAddress
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote import wire
from livecam.remote.link import RemoteLink
from livecam.remote.swapper import RemoteSwapper
from livecam.types import Face, FaceWork, FrameContext

START_TIMEOUT_S = 180.0  # Triton starts in ~10 s; a loaded 2-core machine may take longer
TOKEN = "test-token-2f9c"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Served:
    """A `livecam serve` child process and how to reach it."""

    model: Path
    log: Path
    token: str | None
    queue_delay_us: int
    port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    @property
    def address(self) -> ServerAddress:
        return ServerAddress("127.0.0.1", self.port)

    def start(self) -> None:
        """Start the server and wait until its swapper is ready (bounded)."""
        command = [
            sys.executable,
            "-m",
            "livecam",
            "serve",
            "--swapper-model",
            str(self.model),
            "--provider",
            "cpu",
            "--port",
            str(self.port),
            "--http-port",
            str(self.http_port),
            "--metrics-port",
            str(self.metrics_port),
            "--queue-delay-us",
            str(self.queue_delay_us),
        ]
        if self.token:
            command += ["--token", self.token]
        with open(self.log, "ab") as out:
            # a process group of its own: kill() ends Triton and its stubs with it
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        link = RemoteLink(self.address, token=self.token)
        try:
            ready = poll(lambda: self._ready(link), timeout_s=START_TIMEOUT_S, every_s=0.2)
        finally:
            link.close()
        assert ready, f"livecam serve did not start; its log:\n{self.log.read_text()[-3000:]}"

    def _ready(self, link: RemoteLink) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"livecam serve exited:\n{self.log.read_text()[-3000:]}")
        try:
            link.check(128, timeout_s=0.5)
        except Exception:
            return False
        return True

    def kill(self) -> None:
        """Kill the server's whole process group at once (a crash, not a stop)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def metrics(self) -> dict[str, float]:
        """Triton's Prometheus counters of the swapper (``nv_inference_count`` ...)."""
        import urllib.request

        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - loopback only
            text = r.read().decode()
        found: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("nv_inference") and f'model="{wire.MODEL}"' in line:
                name, _, value = line.rpartition(" ")
                found[name.partition("{")[0]] = float(value)
        return found


@contextmanager
def served(
    model: Path, log: Path, token: str | None = TOKEN, queue_delay_us: int = 2000
) -> Iterator[Served]:
    server = Served(model, log, token, queue_delay_us)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def remote_swapper(
    local: NeuralSwapper,
    url: str,
    token: str | None = TOKEN,
    close_local: bool = False,
    **settings: object,
) -> RemoteSwapper:
    """A RemoteSwapper in front of ``local`` (closed with it when ``close_local``), with
    its monitor thread."""
    cfg = RemoteConfig(url=url, token=token, **settings)  # type: ignore[arg-type]
    link = RemoteLink(
        ServerAddress("127.0.0.1", int(url.rpartition(":")[2])),
        token=token,
        timeout_s=cfg.timeout_ms / 1000,
    )
    return RemoteSwapper(local, link, cfg, close_local=close_local)


def face_work(face: Face, index: int = 0) -> FaceWork:
    return FaceWork(0, index, face, source_index=0)


def face_region(frame: FrameContext, face: Face, grow: float = 0.4) -> tuple[slice, slice]:
    kps = np.asarray(face.kps)
    lo, hi = kps.min(axis=0), kps.max(axis=0)
    pad = grow * (hi - lo)
    (x1, y1), (x2, y2) = np.maximum(lo - pad, 0).astype(int), (hi + pad).astype(int)
    return slice(y1, min(y2, frame.shape[0])), slice(x1, min(x2, frame.shape[1]))


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that delivers every chunk ``delay_s`` after it arrived,
    in order, in both directions (a long-distance link with plenty of bandwidth)."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise AssertionError("the delay proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the delay proxy did not stop"

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(server.wait_closed())
            loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
            )
        finally:
            writer.close()
            up_writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    writer.close()
                    return
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)  # the delay this proxy exists to add
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                queue.put_nowait((loop.time() + self.delay_s, chunk))
                if not chunk:
                    break
            await sender
        finally:
            sender.cancel()


def needs_serve_extra() -> None:
    """The remote tests need the serve extra (PyTriton; Linux x86_64): skipped on a
    developer machine without it, failed in CI (``conftest.missing``)."""
    import importlib.util

    from conftest import missing

    if importlib.util.find_spec("pytriton") is None:
        missing("the serve extra (nvidia-pytriton)")
