"""The output thread: the tick clock decided on explicit timestamps (no sleeping), and the
worker with real sinks (the recording virtual camera, the null sink)."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pytest
from fakes import FailingSink
from recording_backend import RecordingStore

from livecam.sinks import NullSink, VirtualCamSink
from livecam.sinks.base import Sink
from livecam.stream.output import OutputClock, OutputWorker
from livecam.stream.ring import RingBuffer
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket

MS = 1_000_000


@dataclass
class Sent:
    """What the steady sinks got at each tick of a simulated run."""

    ticks: list[int] = field(default_factory=list)  # tick times (ns)
    frames: list[int] = field(default_factory=list)  # seq sent at each tick
    repeats: int = 0
    skipped: list[int] = field(default_factory=list)
    latency_ns: list[int] = field(default_factory=list)


def simulate(clock: OutputClock, arrivals: list[int], until_ns: int) -> Sent:
    """Drive ``clock`` as the output thread does: frame ``i`` arrives at ``arrivals[i]``;
    each due tick is handled exactly when due."""
    sent, waiting = Sent(), deque[int]()
    i = 0
    while True:
        tick = clock.next_tick_ns
        if i < len(arrivals) and (tick is None or arrivals[i] < tick):
            if not clock.started:
                clock.anchor(arrivals[i])
            waiting.append(i)
            i += 1
            continue
        if tick is None or tick > until_ns:
            return sent
        plan = clock.tick(tick, len(waiting))
        sent.skipped += [waiting.popleft() for _ in range(plan.skip)]
        sent.ticks.append(tick)
        if plan.send_new:
            seq = waiting.popleft()
            sent.latency_ns.append(tick - arrivals[seq])
        else:
            seq = sent.frames[-1]
            sent.repeats += 1
        sent.frames.append(seq)


def jittered(fps: float, n: int, jitter_ms: float, seed: int = 1) -> list[int]:
    """Arrival times of ``n`` frames at ``fps`` with processing jitter in [0, jitter_ms)."""
    rng = np.random.default_rng(seed)
    return [round(k * 1e9 / fps + rng.uniform(0, jitter_ms) * MS) for k in range(n)]


def test_ticks_stay_on_a_fixed_grid() -> None:
    clock = OutputClock(30.0)
    clock.anchor(5 * MS)
    t0 = clock.next_tick_ns
    assert t0 == 5 * MS + round(1e9 / 60), "first tick half a period after the first frame"
    rng = np.random.default_rng(0)
    for _ in range(3000):  # handled up to 20 ms late, as a busy thread would
        due = clock.next_tick_ns
        assert due is not None
        clock.tick(due + int(rng.uniform(0, 20) * MS), waiting=1)
    assert clock.next_tick_ns == t0 + round(3000 * 1e9 / 30), "no drift after 100 s"
    assert clock.missed == 0


def test_same_rate_source_sends_every_frame_once_without_repeats() -> None:
    arrivals = jittered(30.0, 300, jitter_ms=12)
    sent = simulate(OutputClock(30.0), arrivals, until_ns=arrivals[-1])
    assert sent.frames == list(range(len(sent.frames))), "each frame once, in order"
    assert len(sent.frames) >= 299 and sent.repeats == 0 and sent.skipped == []
    gaps = np.diff(sent.ticks)
    assert set(gaps.tolist()) <= {33_333_333, 33_333_334}, "exactly one send per period"


def test_slower_source_is_repeated_every_third_tick() -> None:
    arrivals = jittered(20.0, 60, jitter_ms=10)
    sent = simulate(OutputClock(30.0), arrivals, until_ns=arrivals[-1] + 40 * MS)
    assert sent.skipped == []
    assert [f for i, f in enumerate(sent.frames) if i == 0 or f != sent.frames[i - 1]] == list(
        range(60)
    )
    assert abs(sent.repeats - len(sent.ticks) / 3) <= 1, "a repeat every third tick"
    assert len(sent.ticks) == pytest.approx(90, abs=2)


def test_faster_source_skips_so_latency_stays_bounded() -> None:
    arrivals = jittered(60.0, 600, jitter_ms=5)
    clock = OutputClock(30.0)
    sent = simulate(clock, arrivals, until_ns=arrivals[-1] + 2 * round(clock.period_ns))
    assert sent.repeats == 0
    assert sorted(sent.frames + sent.skipped) == list(range(600)), "each sent or skipped"
    assert sent.frames == sorted(sent.frames), "never reordered"
    assert max(sent.latency_ns) <= 2 * clock.period_ns


def test_bursts_are_spread_over_ticks_and_overflow_is_skipped() -> None:
    # batches of 3 frames every 3 periods: tick 1 finds 3 waiting (skip 1, send 1, keep 1)
    period = 1e9 / 30
    arrivals = [round(b * 3 * period + 0.1 * period) for b in range(20) for _ in range(3)]
    sent = simulate(OutputClock(30.0), arrivals, until_ns=arrivals[-1] + round(3 * period))
    assert len(sent.ticks) == 60
    assert sent.skipped == [3 * b for b in range(20)], "the oldest of each burst"
    assert sent.frames[:3] == [1, 2, 2], "send, send the one kept, repeat"
    assert sent.repeats == 20


def test_lossless_never_skips() -> None:
    period = 1e9 / 30
    arrivals = [round(b * 3 * period + 0.1 * period) for b in range(20) for _ in range(3)]
    sent = simulate(OutputClock(30.0, lossless=True), arrivals, until_ns=arrivals[-1] + 100 * MS)
    assert sent.skipped == []
    assert sent.frames[:60] == list(range(60)), "one per tick, none skipped, none repeated"


def test_a_stalled_thread_does_not_burst_and_re_anchors_on_the_grid() -> None:
    clock = OutputClock(30.0)
    clock.anchor(0)
    first = clock.next_tick_ns
    assert first is not None
    clock.tick(first, waiting=1)
    stalled_until = first + round(5.5 * clock.period_ns)  # 5.5 periods without running
    clock.tick(stalled_until, waiting=3)
    nxt = clock.next_tick_ns
    assert nxt is not None
    assert 0 < nxt - stalled_until <= clock.period_ns, "the next tick is a period away at most"
    k = round((nxt - first) / clock.period_ns)
    assert nxt - first == round(k * clock.period_ns), "still on the original grid"
    assert clock.missed == 4
    assert not clock.due(stalled_until)


def test_a_tick_that_is_not_due_is_refused() -> None:
    clock = OutputClock(30.0)
    with pytest.raises(ValueError, match="no tick due"):
        clock.tick(0, waiting=1)
    clock.anchor(0)
    with pytest.raises(ValueError, match="no tick due"):
        clock.tick(1, waiting=1)


# --- the worker, with real sinks -----------------------------------------------------------


def frames(n: int) -> list[Frame]:
    rng = np.random.default_rng(3)
    return [rng.integers(0, 256, (24, 32, 3), dtype=np.uint8) for _ in range(n)]


def feed(slot: RingBuffer[FramePacket], images: list[Frame], stop: threading.Event) -> None:
    """The inference thread's side: put every packet, then close the slot."""
    for seq, image in enumerate(images):
        while not slot.put(FramePacket(image, seq, 1_000 + seq * 33 * MS), timeout=0.1):
            if stop.is_set():
                return
    slot.close()


def run_worker(
    sinks: list[Sink], images: list[Frame], *, fps: float, paced: bool, lossless: bool
) -> tuple[OutputWorker, Telemetry, RingBuffer[FramePacket], list[Event]]:
    telemetry = Telemetry()
    events: list[Event] = []
    telemetry.add_listener(events.append)
    slot: RingBuffer[FramePacket] = RingBuffer(4, lossless)
    stop = threading.Event()
    for sink in sinks:
        sink.open(32, 24, fps)
    worker = OutputWorker(sinks, slot, stop, telemetry, fps, repeat=paced, lossless=lossless)
    producer = threading.Thread(target=feed, args=(slot, images, stop))
    worker.start()
    producer.start()
    finished = worker.finished.wait(30)
    stop.set()
    producer.join(5)
    worker.join(5)
    assert finished, "the output thread ends when the slot is closed and empty"
    return worker, telemetry, slot, events


def unique_in_order(store: RecordingStore, images: list[Frame]) -> list[int]:
    """Indices of the images the camera received, each new frame once (repeats folded)."""
    lookup = {img.tobytes(): i for i, img in enumerate(images)}
    got = [lookup[f.frame.tobytes()] for f in store.frames]
    return [g for i, g in enumerate(got) if i == 0 or g != got[i - 1]]


def test_unpaced_sends_each_frame_once_to_every_sink(vcam: RecordingStore) -> None:
    images = frames(50)
    null = NullSink()
    _, telemetry, _, _ = run_worker(
        [VirtualCamSink(vcam.name), null], images, fps=30, paced=False, lossless=True
    )
    assert [f.frame.tobytes() for f in vcam.frames] == [i.tobytes() for i in images]
    assert null.frames == 50 and null.last_t_capture_ns is None, "not real time: no time"
    snap = telemetry.snapshot()
    assert (snap.frames_out, snap.repeats, snap.skipped) == (50, 0, 0)
    assert vcam.closed == 1, "the worker closes its sinks"


def test_paced_lossless_sends_every_frame_in_order(vcam: RecordingStore) -> None:
    images = frames(30)
    null = NullSink()
    _, telemetry, _, _ = run_worker(
        [VirtualCamSink(vcam.name), null], images, fps=200, paced=True, lossless=True
    )
    assert unique_in_order(vcam, images) == list(range(30))
    assert null.frames == 30, "non-steady sinks get every new frame once"
    assert null.last_t_capture_ns == 1_000 + 29 * 33 * MS, "with its capture time"
    snap = telemetry.snapshot()
    assert snap.skipped == 0 and snap.frames_out == 30
    assert len(vcam.frames) == 30 + snap.repeats


def test_paced_live_accounts_for_every_frame(vcam: RecordingStore) -> None:
    """Frames come faster than 50 fps: each is sent once, skipped, or dropped by the slot."""
    images = frames(60)
    null = NullSink()
    _, telemetry, slot, _ = run_worker(
        [VirtualCamSink(vcam.name), null], images, fps=50, paced=True, lossless=False
    )
    sent = unique_in_order(vcam, images)
    assert sent == sorted(sent), "never reordered"
    snap = telemetry.snapshot()
    assert len(sent) == snap.frames_out
    assert snap.frames_out + snap.skipped + slot.dropped == 60
    assert null.frames == 60 - slot.dropped, "the null sink got every frame the thread took"


def test_a_raising_sink_is_turned_off_and_the_others_go_on(vcam: RecordingStore) -> None:
    images = frames(20)
    # the third send raises a plain RuntimeError, and the close raises too
    bad = FailingSink(
        RuntimeError("disk controller on fire"),
        name="exploding",
        close_error=OSError("close failed too"),
    )
    worker, _, _, events = run_worker(
        [bad, VirtualCamSink(vcam.name)], images, fps=100, paced=True, lossless=True
    )
    assert bad.frames == 3, "no frame after it failed"
    assert unique_in_order(vcam, images) == list(range(20))
    errors = [e for e in events if e.origin == "sink exploding"]
    assert "disk controller on fire" in errors[0].message and "turned off" in errors[0].message
    assert errors[1].level == "error" and "close failed too" in errors[1].message
    assert bad not in worker.sinks
