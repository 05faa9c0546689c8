"""The remote swap's test and bench rig: a `livecam serve` child process on 127.0.0.1 and a
TCP proxy that delays each direction (a long link, for RTT figures), both loopback only."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from livecam.config.remote import ServerAddress
from livecam.remote import wire
from livecam.remote.link import RemoteLink

START_TIMEOUT_S = 180.0  # Triton starts in ~10 s; a loaded 2-core machine may take longer


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class ServeChild:
    """A `livecam serve` child process of ``model`` (on ``provider``), its ports and its
    log."""

    model: Path
    log: Path
    token: str | None = None
    queue_delay_us: int = 2000
    crop_size: int = 128
    provider: str = "cpu"
    tls_cert: Path | None = None  # with tls_key: gRPC over TLS (clients: grpcs://)
    tls_key: Path | None = None
    response_compression: str = "low"  # livecam serve --response-compression
    enhancer_model: Path | None = None  # served too, as GPEN-BFR-256 (its contract)
    port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return str(self.address)

    @property
    def address(self) -> ServerAddress:
        return ServerAddress("127.0.0.1", self.port, self.tls_cert is not None)

    def command(self) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "livecam",
            "serve",
            "--swapper-model",
            str(self.model),
            "--provider",
            self.provider,
            "--port",
            str(self.port),
            "--http-port",
            str(self.http_port),
            "--metrics-port",
            str(self.metrics_port),
            "--queue-delay-us",
            str(self.queue_delay_us),
            "--response-compression",
            self.response_compression,
        ]
        if self.enhancer_model is not None:
            command += ["--enhancer", "gpen-bfr-256", "--enhancer-model", str(self.enhancer_model)]
        if self.tls_cert is not None and self.tls_key is not None:
            command += ["--tls-cert", str(self.tls_cert), "--tls-key", str(self.tls_key)]
        return command + (["--token", self.token] if self.token else [])

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the server and return once it swaps a crop (RuntimeError with the end of
        its log when it does not within ``timeout_s``)."""
        with open(self.log, "ab") as out:
            # a process group of its own: kill() ends Triton and its stubs with it
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        link = RemoteLink(self.address, token=self.token, ca_cert=self.tls_cert)
        deadline = time.monotonic() + timeout_s
        try:
            while not self._ready(link):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"livecam serve did not start:\n{self.tail()}")
                time.sleep(0.2)  # a bounded poll of the child's state
        finally:
            link.close()

    def _ready(self, link: RemoteLink) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"livecam serve exited:\n{self.tail()}")
        try:
            link.check(self.crop_size, timeout_s=0.5)
        except Exception:  # not up yet
            return False
        return True

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

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
        with urllib.request.urlopen(url, timeout=5) as r:  # loopback only
            text = r.read().decode()
        found: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("nv_inference") and f'model="{wire.MODEL}"' in line:
                name, _, value = line.rpartition(" ")
                found[name.partition("{")[0]] = float(value)
        return found


@contextmanager
def serve_child(
    model: Path,
    log: Path,
    token: str | None = None,
    queue_delay_us: int = 2000,
    enhancer_model: Path | None = None,
) -> Iterator[ServeChild]:
    """A started ``ServeChild``, killed on exit."""
    server = ServeChild(model, log, token, queue_delay_us, enhancer_model=enhancer_model)
    server.start()
    try:
        yield server
    finally:
        server.kill()


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that delivers every chunk ``delay_s`` after it arrived,
    in order, in both directions (a long-distance link with plenty of bandwidth). It
    counts the bytes it carried each way (``bytes_up``: to the server)."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delay-proxy", daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the delay proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

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
            await self._connect(reader, writer)
        except asyncio.CancelledError:  # the proxy is closing: end quietly
            writer.close()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, up=True),
                self._pipe(up_reader, writer, up=False),
                return_exceptions=True,
            )
        finally:
            writer.close()
            up_writer.close()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, up: bool
    ) -> None:
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
                if up:
                    self.bytes_up += len(chunk)
                else:
                    self.bytes_down += len(chunk)
                queue.put_nowait((loop.time() + self.delay_s, chunk))
                if not chunk:
                    break
            await sender
        finally:
            sender.cancel()
