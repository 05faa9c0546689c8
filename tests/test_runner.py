"""Runner: stage timing, failure containment, batching and ordering on the inference thread."""

from __future__ import annotations

import threading

import numpy as np

from livecam.buffer import RingBuffer
from livecam.pipeline.debug import PassThroughStage
from livecam.pipeline.runner import InferenceWorker, LiveState, run_stages
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
    sizes = BatchSizes()
    worker = InferenceWorker([Invert(), sizes], ring, out, stop, t, batch_limit=4, lossless=True)
    for i in range(40):  # queued before the worker starts: it must batch them
        if i < 8:
            assert ring.put(packet(i, i), timeout=2)
    worker.start()
    for i in range(8, 40):
        assert ring.put(packet(i, i), timeout=2)
    ring.close()
    assert worker.finished.wait(5)
    got = out.get_batch(64, 0)
    assert [p.seq for p in got] == list(range(40))
    assert [int(p.frame[0, 0, 0]) for p in got] == [255 - i for i in range(40)]
    assert out.closed, "the output slot is closed when the stream ends"
    assert max(sizes.sizes) == 4 and sum(sizes.sizes) == 40, "lossless batches across frames"
    assert t.snapshot().frames_processed == 40


class BatchSizes(Invert):
    """Records the size of every batch it sees (and leaves the frames alone)."""

    name = "sizes"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        self.sizes.append(len(batch))
        return batch


def test_live_mode_processes_the_newest_frame_and_drops_older_ones_first() -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8)
    out: RingBuffer[FramePacket] = RingBuffer(8)
    sizes = BatchSizes()
    worker = InferenceWorker([sizes], ring, out, threading.Event(), t, batch_limit=4)
    for i in range(6):
        ring.put(packet(i, i))
    ring.close()
    worker.start()
    assert worker.finished.wait(5)
    got = out.get_batch(8, 0)
    assert [p.seq for p in got] == [5], "only the newest frame is processed"
    assert sizes.sizes == [1] and ring.dropped == 5, "older frames dropped before processing"
    assert t.snapshot().frames_processed == 1


def test_commands_run_between_batches_and_a_raising_one_is_an_event() -> None:
    t = Telemetry()
    events = collect_events(t)
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(64, lossless=True)
    worker = InferenceWorker([Invert()], ring, out, threading.Event(), t)
    worker.post(lambda state: state.disabled.add("invert"))
    worker.post(lambda state: 1 / 0)  # type: ignore[func-returns-value]
    for i in range(3):
        ring.put(packet(i, 7))
    ring.close()
    worker.start()
    assert worker.finished.wait(5)
    got = out.get_batch(64, 0)
    assert [int(p.frame[0, 0, 0]) for p in got] == [7, 7, 7], "the disabled stage is skipped"
    assert any("ZeroDivisionError" in e.message and e.origin == "controls" for e in events)


def test_blank_and_freeze_replace_the_processed_frame() -> None:
    state = LiveState([Invert()])
    first = packet(0, 1)
    state.finish(first)
    state.frozen = True
    second = packet(1, 2)
    state.finish(second)
    assert second.frame is first.frame, "frozen: the last frame again"
    state.blank = np.zeros((8, 8, 3), np.uint8)
    third = packet(2, 3)
    state.finish(third)
    assert third.frame is state.blank and state.last_frame is state.blank


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
