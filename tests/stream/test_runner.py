"""Runner: stage timing, failure containment, batching and ordering on the inference thread,
and the overlapped pipeline (the next batch prepared while one renders on a second thread)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fakes import PassStage

from livecam.face.debug_stages import PassThroughStage
from livecam.stream.inference import (
    RESUME_HOLD_S,
    InferenceWorker,
    LiveState,
    Plan,
    run_stages,
)
from livecam.stream.ring import RingBuffer
from livecam.stream.stage import PreparingStage
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, FramePacket, take_analysis

OVERLAP = pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlap"])


def packet(seq: int, value: int = 0) -> FramePacket:
    return FramePacket(np.full((8, 8, 3), value, np.uint8), seq=seq, t_capture_ns=seq)


class Invert(PassStage):
    name = "invert"

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        for p in batch:
            p.frame = 255 - p.frame
        return batch


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


@OVERLAP
def test_inference_worker_keeps_order_and_ends_with_the_stream(overlap: bool) -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(64, lossless=True)
    stop = threading.Event()
    sizes = BatchSizes()
    worker = InferenceWorker(
        [Invert(), sizes], ring, out, stop, t, batch_limit=4, lossless=True, overlap=overlap
    )
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


@OVERLAP
def test_live_mode_processes_the_newest_frame_and_drops_older_ones_first(overlap: bool) -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8)
    out: RingBuffer[FramePacket] = RingBuffer(8)
    sizes = BatchSizes()
    worker = InferenceWorker(
        [sizes], ring, out, threading.Event(), t, batch_limit=4, overlap=overlap
    )
    for i in range(6):
        ring.put(packet(i, i))
    ring.close()
    worker.start()
    assert worker.finished.wait(5)
    got = out.get_batch(8, 0)
    assert [p.seq for p in got] == [5], "only the newest frame is processed"
    assert sizes.sizes == [1] and ring.dropped == 5, "older frames dropped before processing"
    assert t.snapshot().frames_processed == 1


@OVERLAP
def test_commands_run_between_batches_and_a_raising_one_is_an_event(overlap: bool) -> None:
    t = Telemetry()
    events = collect_events(t)
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(64, lossless=True)
    worker = InferenceWorker([Invert()], ring, out, threading.Event(), t, overlap=overlap)
    worker.post(lambda state: state.disabled.add("invert"))

    def divide_by_zero(state: LiveState) -> None:
        _ = 1 / 0

    worker.post(divide_by_zero)
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


def swapped(seq: int, value: int, faces: int | None, t_ns: int = 0) -> FramePacket:
    """A processed packet: ``faces`` swapped (0: a face stage found none to swap; None: no
    face stage worked on it)."""
    made = packet(seq, value)
    made.faces_swapped, made.t_capture_ns = faces, t_ns
    return made


def test_going_live_again_holds_the_picture_until_the_swap_has_a_result() -> None:
    """Blank off and Freeze off keep the blank or frozen picture until a packet the swap
    changed (or one no face stage worked on: the swap is off); then every frame is live."""
    state = LiveState([Invert()])
    live = swapped(0, 1, faces=1)
    state.finish(live)
    black = np.zeros((8, 8, 3), np.uint8)
    state.set_blank(black)
    state.set_blank(None)
    for seq in (1, 2):  # the face found, not swapped yet (a new track): still black
        held = swapped(seq, 50 + seq, faces=0)
        state.finish(held)
        assert held.frame is black and held.faces_swapped is None
    back = swapped(3, 3, faces=1)
    state.finish(back)
    assert back.frame[0, 0, 0] == 3, "swapped: live again"
    after = swapped(4, 4, faces=0)  # once live, an unswapped frame is the stream's own
    state.finish(after)
    assert after.frame[0, 0, 0] == 4
    assert (state.holds_released, state.holds_expired) == (1, 0)

    state.set_frozen(True)
    state.set_frozen(False)
    held = swapped(5, 55, faces=0)
    state.finish(held)
    assert held.frame is after.frame, "freeze off: the frozen picture until the swap is back"
    off = swapped(6, 6, faces=None)  # the swap switched off meanwhile: nothing to wait for
    state.finish(off)
    assert off.frame[0, 0, 0] == 6 and state.holds_released == 2


def test_a_hold_ends_after_its_time_without_a_face() -> None:
    state = LiveState([Invert()])
    state.set_blank(np.zeros((8, 8, 3), np.uint8))
    state.set_blank(None)
    limit = round(RESUME_HOLD_S * 1e9)
    first, later = swapped(1, 1, 0, t_ns=10**9), swapped(2, 2, 0, t_ns=10**9 + limit - 1)
    for held in (first, later):
        state.finish(held)
        assert not held.frame.any()
    gone = swapped(3, 3, 0, t_ns=10**9 + limit)  # nobody in the picture for RESUME_HOLD_S
    state.finish(gone)
    assert gone.frame[0, 0, 0] == 3 and state.holds_expired == 1


def test_freeze_while_blank_freezes_the_last_picture_not_the_blank() -> None:
    state = LiveState([Invert()])
    live = swapped(0, 9, faces=1)
    state.finish(live)
    black = np.zeros((8, 8, 3), np.uint8)
    state.set_blank(black)
    state.finish(packet(1, 1))
    state.set_frozen(True)
    during = packet(2, 2)
    state.finish(during)
    assert during.frame is black, "blank wins while on"
    state.set_blank(None)
    frozen = packet(3, 3)
    state.finish(frozen)
    assert frozen.frame is live.frame, "blank off, freeze on: the last picture, not black"


@OVERLAP
def test_inference_worker_stops_promptly_when_idle(overlap: bool) -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8)
    out: RingBuffer[FramePacket] = RingBuffer(1)
    stop = threading.Event()
    worker = InferenceWorker([Invert()], ring, out, stop, t, overlap=overlap)
    worker.start()
    stop.set()
    worker.join(1.0)
    assert not worker.is_alive()
    assert not any(th.name == "livecam-render" for th in threading.enumerate())


class Probe(Invert):
    """A preparing stage recording which thread prepares and processes which frame. While
    processing frame 0 it waits (up to ``wait_s``) for frame 1 to be prepared."""

    name = "probe"
    prepare_name = "probe-prepare"

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.calls: list[tuple[str, int, str]] = []
        self.next_prepared = threading.Event()
        self.saw_next_prepared: bool | None = None

    def prepare(self, batch: list[FramePacket]) -> None:
        for p in batch:
            self.calls.append(("prepare", p.seq, threading.current_thread().name))
            p.analysis[self.name] = p.seq
            if p.seq == 1:
                self.next_prepared.set()

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        assert take_analysis(batch, self.name) == [p.seq for p in batch]
        for p in batch:
            self.calls.append(("process", p.seq, threading.current_thread().name))
            if p.seq == 0:
                self.saw_next_prepared = self.next_prepared.wait(self.wait_s)
        return super().process(batch)


def run_probe(probe: Probe, overlap: bool, frames: int = 3) -> list[FramePacket]:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    worker = InferenceWorker(
        [probe], ring, out, threading.Event(), t, batch_limit=1, lossless=True, overlap=overlap
    )
    for i in range(frames):
        ring.put(packet(i, i))
    ring.close()
    worker.start()
    assert worker.finished.wait(10)
    assert set(t.snapshot().stages_ms) == {"probe-prepare", "probe"}
    return out.get_batch(8, 0)


def test_overlap_prepares_the_next_frame_while_one_renders_on_another_thread() -> None:
    probe = Probe(wait_s=10.0)
    assert isinstance(probe, PreparingStage)
    got = run_probe(probe, overlap=True)
    assert probe.saw_next_prepared is True, "frame 1 was prepared while frame 0 rendered"
    assert [p.seq for p in got] == [0, 1, 2]
    assert [int(p.frame[0, 0, 0]) for p in got] == [255, 254, 253]
    assert {c[2] for c in probe.calls if c[0] == "prepare"} == {"livecam-inference"}
    assert {c[2] for c in probe.calls if c[0] == "process"} == {"livecam-render"}
    assert [c[1] for c in probe.calls if c[0] == "process"] == [0, 1, 2]


def test_without_overlap_each_frame_is_prepared_then_processed_in_turn() -> None:
    probe = Probe(wait_s=0.3)
    got = run_probe(probe, overlap=False)
    assert probe.saw_next_prepared is False
    assert [p.seq for p in got] == [0, 1, 2]
    assert [c[:2] for c in probe.calls] == [
        ("prepare", 0),
        ("process", 0),
        ("prepare", 1),
        ("process", 1),
        ("prepare", 2),
        ("process", 2),
    ]
    assert {c[2] for c in probe.calls} == {"livecam-inference"}


class Gate(Invert):
    """A stage that blocks in ``process`` until released, and records its close."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.entered = threading.Event()
        self.release = threading.Event()

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        self.entered.set()
        assert self.release.wait(10)
        self.log.append(f"{self.name} processed {batch[0].seq}")
        return batch

    def close(self) -> None:
        self.log.append(f"{self.name} closed")


def test_a_replaced_stage_is_closed_only_after_its_batch_has_rendered() -> None:
    t = Telemetry()
    ring: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    out: RingBuffer[FramePacket] = RingBuffer(8, lossless=True)
    log: list[str] = []
    old, new = Gate("old", log), Gate("new", log)
    new.release.set()
    worker = InferenceWorker([old], ring, out, threading.Event(), t, lossless=True, overlap=True)
    worker.start()
    ring.put(packet(0))
    assert old.entered.wait(10), "frame 0 renders with the old stage"

    def install(state: LiveState) -> None:  # what Controls does for a live change
        replaced, state.stages = state.stages, [new]

        def close() -> None:
            for stage in replaced:
                stage.close()

        worker.after_inflight(close)

    worker.post(install)
    ring.put(packet(1))
    assert new.entered.wait(0.5) is False, "frame 1 waits: the render thread is busy"
    assert log == [], "the old stage is not closed while it renders"
    old.release.set()
    ring.close()
    assert worker.finished.wait(10)
    assert log == ["old processed 0", "old closed", "new processed 1", "new closed"]


def test_blank_or_freeze_planned_for_a_batch_holds_when_switched_off_before_it_renders() -> None:
    """A batch taken while blank was on is not processed: it goes out blank even if blank
    was switched off before it rendered, never as the camera showed it."""
    state = LiveState([Invert()])
    black = np.zeros((8, 8, 3), np.uint8)
    planned_blank = Plan((), frozenset(), black, False)
    late = packet(5, 99)
    state.finish(late, planned_blank)
    assert late.frame is black
    shown = packet(6, 42)
    state.finish(shown)
    planned_frozen = Plan((), frozenset(), None, True)
    after = packet(7, 77)
    state.finish(after, planned_frozen)
    assert after.frame is shown.frame, "frozen when planned: the last frame again"
    state.blank = black
    rendered = packet(8, 12)
    rendered.faces_swapped, rendered.faces_reused = 1, 1  # the swap ran before blank came on
    state.finish(rendered, Plan((), frozenset(), None, False))
    assert rendered.frame is black, "blank switched on after planning: blank at once"
    # the black frame is not a swapped one (no AI mark drawn on it, no swap counted)
    assert rendered.faces_swapped is None and rendered.faces_reused == 0


def test_a_crash_of_the_render_thread_ends_the_stream_and_is_reported() -> None:
    t = Telemetry()
    events = collect_events(t)
    ring: RingBuffer[FramePacket] = RingBuffer(8)
    out: RingBuffer[FramePacket] = RingBuffer(8)
    worker = InferenceWorker([Invert()], ring, out, threading.Event(), t, overlap=True)

    def broken_output(packet: FramePacket) -> bool:
        raise OSError("output gone")

    worker.emit = broken_output  # type: ignore[method-assign]
    worker.start()
    ring.put(packet(0))
    assert worker.finished.wait(10), "the inference thread ends with its render thread"
    assert worker.crash is not None and "output gone" in worker.crash
    assert any(e.origin == "livecam-render" and "output gone" in e.message for e in events)
    assert out.closed
