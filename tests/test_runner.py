"""Runner: stage timing, failure containment, batching and ordering on the inference thread."""

from __future__ import annotations

import threading

import numpy as np

from livecam.buffer import RingBuffer
from livecam.pipeline.debug import PassThroughStage
from livecam.pipeline.runner import InferenceWorker, run_stages
from livecam.telemetry import Telemetry
from livecam.types import Event, FramePacket


def packet(seq: int, value: int = 0) -> FramePacket:
    return FramePacket(np.full((8, 8, 3), value, np.uint8), seq=seq, t_capture_ns=seq)


class Invert:
    name = "invert"
    required = False

    def warmup(self, width: int, height: int) -> None: ...

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        for p in batch:
            p.frame = 255 - p.frame
        return batch

    def close(self) -> None: ...


class Explode(Invert):
    def __init__(self, name: str, required: bool) -> None:
        self.name, self.required = name, required

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        batch[0].frame = np.zeros_like(batch[0].frame)  # a half-done write before failing
        raise RuntimeError("boom")


def collect_events(t: Telemetry) -> list[Event]:
    events: list[Event] = []
    t.add_listener(events.append)
    return events


def test_optional_stage_failure_is_an_event_and_is_bypassed() -> None:
    t = Telemetry()
    events = collect_events(t)
    batch = [packet(0, 10), packet(1, 20)]
    run_stages([Explode("flaky", required=False), Invert()], batch, t)
    assert [int(p.frame[0, 0, 0]) for p in batch] == [245, 235], "later stages still run"
    assert len(events) == 1 and events[0].level == "error" and "boom" in events[0].message
    assert "bypassed" in events[0].message and events[0].origin == "stage flaky"


def test_required_stage_failure_passes_camera_frame_through() -> None:
    t = Telemetry()
    events = collect_events(t)
    batch = [packet(0, 10), packet(1, 20)]
    originals = [p.frame for p in batch]
    run_stages([Invert(), Explode("swap", required=True), Invert()], batch, t)
    assert all(p.frame is o for p, o in zip(batch, originals)), "camera frames passed through"
    assert [int(p.frame[0, 0, 0]) for p in batch] == [10, 20]
    assert "passing the camera frame through" in events[0].message


def test_stage_timings_recorded_per_packet_and_in_telemetry() -> None:
    t = Telemetry()
    batch = [packet(0), packet(1)]
    run_stages([PassThroughStage(), Invert()], batch, t)
    assert [s.name for s in batch[0].timings] == ["passthrough", "invert"]
    assert set(t.snapshot().stages_ms) == {"passthrough", "invert"}


def test_repeated_failures_do_not_flood_listeners() -> None:
    t = Telemetry()
    events = collect_events(t)
    for i in range(50):
        run_stages([Explode("flaky", required=False)], [packet(i)], t)
    assert len(events) == 1
    assert t.snapshot().events == 50


def test_inference_worker_keeps_order_and_ends_with_the_stream() -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(64, lossless=True)
    stop = threading.Event()
    worker = InferenceWorker([Invert()], ring, out, stop, t, batch_limit=4)
    worker.start()
    for i in range(40):
        assert ring.put(packet(i, i), timeout=2)
    ring.close()
    assert worker.finished.wait(5)
    got = out.get_batch(64, 0)
    assert [p.seq for p in got] == list(range(40))
    assert [int(p.frame[0, 0, 0]) for p in got] == [255 - i for i in range(40)]
    assert out.closed, "the output slot is closed when the stream ends"


def test_inference_worker_stops_promptly_when_idle() -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8)
    out: RingBuffer[FramePacket] = RingBuffer(1)
    stop = threading.Event()
    worker = InferenceWorker([Invert()], ring, out, stop, t)
    worker.start()
    stop.set()
    worker.join(1.0)
    assert not worker.is_alive()
