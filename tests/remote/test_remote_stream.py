"""The remote swap while frames keep coming, against real `livecam serve` processes on
127.0.0.1: no cross-talk between four clients while Triton really batches, a server killed
mid-stream (local swap within 0.5 s, every frame swapped, remote again once it is back),
and a frame rate that does not depend on the round trip (a 50 ms-each-way delay proxy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from triton_serve import Served, needs_serve_extra, remote_swapper, served
from waiting import poll

from livecam.benchmark.remote_rig import DelayProxy
from livecam.benchmark.synthetic_models import latent_colour
from livecam.config.swap import SwapConfig
from livecam.face.build import build_swapper
from livecam.face.crops.align import ARCFACE_112
from livecam.face.swap.neural import NeuralSwapper
from livecam.models.presets import resolve_preset
from livecam.models.store import ModelStore
from livecam.remote.swapper import LOST, RemoteSwapper
from livecam.sources.image import load_image_bgr
from livecam.types import Event, Face, FaceWork, FrameContext

FPS = 30.0


def local_swapper(model: Path, data: Path) -> NeuralSwapper:
    cfg = SwapConfig.of(preset="standard", provider="cpu", swapper_model=str(model))
    store = ModelStore(data_dir=data)
    swapper = build_swapper(resolve_preset("standard", store, cfg), cfg, store)
    assert isinstance(swapper, NeuralSwapper)
    return swapper


@pytest.fixture(scope="module")
def face_frame(testdata: Path) -> tuple[FrameContext, Face]:
    """A real portrait and its face's 5 points (the ArcFace template placed on it)."""
    photo = load_image_bgr(testdata / "faces" / "obama_official_portrait_2012.jpg")
    image = np.asarray(cv2.resize(photo, (320, 400), interpolation=cv2.INTER_AREA), np.uint8)
    kps = (np.asarray(ARCFACE_112, np.float32) * 1.3 + np.array([88, 110], np.float32)).astype(
        np.float32
    )
    box = np.array([60, 80, 260, 330], np.float32)
    return FrameContext(image), Face(bbox=box, score=0.99, kps=kps, track_id=1)


class Said:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(self, event: Event) -> None:
        self.events.append(event)

    def remote(self, reading: object) -> None:
        pass

    def swap_check(self, reading: object) -> None:
        pass


def swap_once(
    swapper: RemoteSwapper, frame: FrameContext, face: Face, latent: np.ndarray
) -> tuple[FaceWork, bool]:
    """One frame's face through ``swapper``: (the record, whether the server swapped it)."""
    before = swapper.stats().faces_remote
    [work] = swapper.swap([frame], [FaceWork(0, 0, face, source_index=0)], [latent])
    return work, swapper.stats().faces_remote > before


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(512).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def narrow_local(remote_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    swapper = local_swapper(remote_models["narrow"], tmp_path_factory.mktemp("data"))
    yield swapper
    swapper.close()


def test_four_clients_get_their_own_colour_while_triton_batches(
    remote_models: dict[str, Path],
    face_frame: tuple[FrameContext, Face],
    tmp_path: Path,
) -> None:
    """Four clients with four source latents and the latent-to-colour oracle: each gets
    its own colour back on every frame, all from the server, and Triton's metrics show
    batches of more than one face on average."""
    needs_serve_extra()
    frame, face = face_frame
    frames_each = 12
    with served(remote_models["colour"], tmp_path / "serve.log", queue_delay_us=20_000) as srv:
        clients = [
            remote_swapper(
                local_swapper(remote_models["colour"], tmp_path / f"d{i}"),
                srv.url,
                close_local=True,
                wait_ms=500,
                timeout_ms=3000,
            )
            for i in range(4)
        ]
        latents = [unit(100 + i) for i in range(4)]
        wrong: list[str] = []
        start = threading.Barrier(4)

        def stream(i: int) -> None:
            client = clients[i]
            want = np.rint(latent_colour(latents[i])[0][::-1] * 255)  # BGR
            start.wait(timeout=60)
            for n in range(frames_each):
                work, remote = swap_once(client, frame, face, latents[i])
                assert work.output is not None
                got = work.output.reshape(-1, 3).astype(int)
                if not remote or np.abs(got - want).max() > 1:
                    wrong.append(f"client {i} frame {n}: remote={remote} colour {got[0]} != {want}")

        try:
            for c in clients:
                c.warmup()
                assert c.lost is None, c.lost
            threads = [threading.Thread(target=stream, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert not any(t.is_alive() for t in threads)
            assert wrong == []
            metrics = srv.metrics()
            mean_batch = metrics["nv_inference_count"] / metrics["nv_inference_exec_count"]
            assert mean_batch > 1, metrics
        finally:
            for c in clients:
                c.close()


def test_server_killed_mid_stream_then_back(
    remote_models: dict[str, Path],
    narrow_local: NeuralSwapper,
    face_frame: tuple[FrameContext, Face],
    tmp_path: Path,
) -> None:
    """Kill -9 the server while frames come: within 0.5 s the faces are swapped here, no
    frame goes unswapped, the status says REMOTE LOST with its reason, and once the server
    is back the faces come from it again."""
    needs_serve_extra()
    frame, face = face_frame
    latent = unit(7)
    with served(remote_models["narrow"], tmp_path / "serve.log") as srv:
        swapper = remote_swapper(narrow_local, srv.url, wait_ms=100, timeout_ms=300)
        said = Said()
        swapper.report_to(said)
        swapper.warmup()
        try:
            assert swapper.lost is None, swapper.lost

            def remote_now() -> bool:
                work, remote = swap_once(swapper, frame, face, latent)
                assert work.output is not None
                return remote

            # the server answers (on a loaded machine one answer may miss the 100 ms wait
            # and that frame is swapped here; that is the design, not a loss)
            assert poll(remote_now, timeout_s=30, every_s=1 / FPS)
            assert swapper.lost is None, swapper.lost
            srv.kill()
            killed = time.monotonic()
            first_local = None
            for _ in range(200):  # bounded: at 30 fps well over the 0.5 s asked for
                work, remote = swap_once(swapper, frame, face, latent)
                assert work.output is not None  # never an unswapped face
                if not remote:
                    first_local = time.monotonic()
                    break
            assert first_local is not None and first_local - killed <= 0.5
            assert swapper.lost is not None
            lost = [e.message for e in said.events if e.message.startswith(LOST)]
            assert len(lost) == 1 and "\n" not in lost[0] and "(fix: " in lost[0], said.events

            srv.start()  # the same ports

            assert poll(remote_now, timeout_s=120, every_s=1 / FPS)
            assert said.events[-1].level == "info" and "remote swap on" in said.events[-1].message
        finally:
            swapper.close()


def paced_fps(swapper: RemoteSwapper, frame: FrameContext, face: Face, frames: int) -> float:
    """Frames out per second when frames arrive at 30 fps (a camera) and each is swapped
    on arrival (late frames are not made up for)."""
    latent = unit(11)
    start = time.monotonic()
    for n in range(frames):
        due = start + n / FPS
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)  # the camera's own pace, not a synchronisation
        work, _ = swap_once(swapper, frame, face, latent)
        assert work.output is not None
    return frames / (time.monotonic() - start)


@pytest.fixture
def proxied(narrow_server: Served) -> Iterator[DelayProxy]:
    with DelayProxy(narrow_server.port, delay_s=0.05) as proxy:
        yield proxy


def test_frame_rate_does_not_depend_on_the_round_trip(
    narrow_server: Served,
    narrow_local: NeuralSwapper,
    proxied: DelayProxy,
    face_frame: tuple[FrameContext, Face],
) -> None:
    """3 requests in flight: 50 ms each way added by a proxy keep the fps within 10 % of
    the direct run, and the faces still come from the server."""
    frame, face = face_frame
    runs = {}
    for name, port in (("direct", narrow_server.port), ("delayed", proxied.port)):
        swapper = remote_swapper(
            narrow_local, f"grpc://127.0.0.1:{port}", in_flight=3, timeout_ms=1500
        )
        swapper.warmup()
        try:
            assert swapper.lost is None, swapper.lost
            fps = paced_fps(swapper, frame, face, 60)
            stats = swapper.stats()
            runs[name] = (fps, stats)
        finally:
            swapper.close()
    (direct, _), (delayed, stats) = runs["direct"], runs["delayed"]
    assert delayed >= 0.9 * direct, runs
    assert stats.rtt_p50_ms is not None and stats.rtt_p50_ms >= 100, stats
    assert stats.faces_remote >= 0.5 * (stats.faces_remote + stats.faces_local), stats
