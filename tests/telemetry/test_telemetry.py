"""Telemetry: guarded subscriptions, per-frame reports, counters, providers, VRAM, rates."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import types

import numpy as np
import pynvml
import pytest
from conftest import other_hardware
from recording_backend import RecordingStore

from livecam.app import App
from livecam.config.schema import Config
from livecam.stream.inference import LiveState
from livecam.telemetry import hub
from livecam.telemetry.gpu import GpuSnapshot, NvmlReader, process_vram_mb
from livecam.telemetry.hub import Telemetry
from livecam.telemetry.snapshot import FrameReport
from livecam.types import Event, FramePacket, StageTiming


def packet(seq: int, t_capture_ns: int, timings: list[StageTiming] | None = None) -> FramePacket:
    return FramePacket(np.zeros((4, 4, 3), np.uint8), seq, t_capture_ns, timings or [])


def test_subscribers_get_events_until_they_unsubscribe() -> None:
    t = Telemetry()
    first: list[Event] = []
    second: list[Event] = []
    sub = t.subscribe(on_event=first.append)
    t.add_listener(second.append)
    t.event(Event("info", "a", "one"))
    assert sub.active
    sub.unsubscribe()
    sub.unsubscribe()  # harmless twice
    assert not sub.active
    t.event(Event("info", "a", "two"))
    assert [e.message for e in first] == ["one"]
    assert [e.message for e in second] == ["one", "two"]


def test_a_raising_event_listener_is_reported_once_and_unsubscribed() -> None:
    t = Telemetry()
    calls: list[str] = []
    good: list[Event] = []

    def broken(event: Event) -> None:
        calls.append(event.message)
        raise ValueError("listener bug")

    t.subscribe(on_event=broken)
    t.subscribe(on_event=good.append)
    for i in range(3):
        t.event(Event("info", "test", f"event {i}"))  # returns: the emitting thread goes on
    assert calls == ["event 0"], "called once, then unsubscribed"
    reports = [e for e in good if e.origin == "telemetry"]
    assert len(reports) == 1
    report = reports[0]
    assert report.level == "warning"
    assert "broken" in report.message and "ValueError('listener bug')" in report.message
    assert "unsubscribed" in report.message
    assert [e.message for e in good if e.origin == "test"] == ["event 0", "event 1", "event 2"]


def test_a_raising_frame_listener_is_unsubscribed_and_others_still_get_reports() -> None:
    t = Telemetry()
    events: list[Event] = []
    reports: list[FrameReport] = []

    def broken(report: FrameReport) -> None:
        raise RuntimeError("frame listener bug")

    t.subscribe(on_event=events.append)
    t.subscribe(on_frame=broken)
    t.subscribe(on_frame=reports.append)
    for seq in range(3):
        t.frame_out(packet(seq, 1_000_000 * seq), 1_000_000 * seq + 5_000_000)
    assert [r.seq for r in reports] == [0, 1, 2]
    assert len(events) == 1 and "frame listener bug" in events[0].message
    assert t.snapshot().frames_out == 3


def test_frame_report_carries_per_frame_stage_times() -> None:
    t = Telemetry()
    reports: list[FrameReport] = []
    t.subscribe(on_frame=reports.append)
    timings = [StageTiming("detect", 4.0), StageTiming("swap", 10.5), StageTiming("swap", 1.5)]
    t.frame_out(packet(7, 1_000_000_000, timings), 1_025_000_000)
    t.repeat_out()  # a repeat is not a new frame: no report
    assert len(reports) == 1
    r = reports[0]
    assert (r.seq, r.t_capture_ns, r.t_sent_ns) == (7, 1_000_000_000, 1_025_000_000)
    assert r.latency_ms == pytest.approx(25.0)
    assert dict(r.stages_ms) == {"detect": 4.0, "swap": 12.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.seq = 8  # type: ignore[misc]
    with pytest.raises(TypeError):
        r.stages_ms["detect"] = 0.0  # type: ignore[index]


def test_counters_reach_snapshot_summary_and_status_line() -> None:
    t = Telemetry()
    t.processed(4)
    t.processed(1)
    t.skip_out(2)
    t.skip_out()
    t.repeat_out()
    snap = t.snapshot()
    assert (snap.frames_processed, snap.skipped, snap.repeats) == (5, 3, 1)
    summary = json.loads(json.dumps(snap.to_summary()))
    assert summary["frames_processed"] == 5 and summary["skipped"] == 3
    assert "skips 3" in snap.status_line()


def test_blank_and_frozen_frames_are_left_out_of_the_latency() -> None:
    """A processed frame's latency counts; a blank or frozen picture sent in a camera
    frame's place (``LiveState``: unprocessed, out at once) does not."""
    t = Telemetry()
    state = LiveState([])
    live = FramePacket(np.zeros((4, 4, 3), np.uint8), 0, t_capture_ns=0)
    state.finish(live)
    t.frame_out(live, t_sent_ns=40_000_000)  # 40 ms through the pipeline
    state.set_blank(np.zeros((4, 4, 3), np.uint8))
    for seq in range(1, 20):
        blank = FramePacket(np.ones((4, 4, 3), np.uint8), seq, t_capture_ns=seq * 10**9)
        state.finish(blank)
        assert blank.stand_in
        t.frame_out(blank, t_sent_ns=seq * 10**9 + 100_000)  # 0.1 ms: not processed
    latency = t.snapshot().latency_ms
    assert latency is not None and latency.p50 == pytest.approx(40.0)


def test_providers_show_what_is_used_and_flag_a_fallback_loudly() -> None:
    t = Telemetry()
    events: list[Event] = []
    t.add_listener(events.append)
    t.set_provider("detect", "CUDAExecutionProvider", "CUDAExecutionProvider")
    assert events == []
    t.set_provider("swap", "CUDAExecutionProvider", "CPUExecutionProvider")
    snap = t.snapshot()
    assert snap.providers == {
        "detect": {"requested": "CUDAExecutionProvider", "used": "CUDAExecutionProvider"},
        "swap": {"requested": "CUDAExecutionProvider", "used": "CPUExecutionProvider"},
    }
    line = snap.status_line()
    assert "detect=CUDAExecutionProvider |" in line or "detect=CUDAExecutionProvider " in line
    assert "swap=CPUExecutionProvider (FALLBACK, wanted CUDAExecutionProvider)" in line
    assert len(events) == 1 and events[0].level == "warning"
    assert "CPUExecutionProvider" in events[0].message and "fallback" in events[0].message
    assert snap.to_summary()["providers"]["swap"]["used"] == "CPUExecutionProvider"


def test_recent_rates_fall_to_zero_when_frames_stop() -> None:
    t = Telemetry()
    period = 1_000_000_000 // 30
    end = time.perf_counter_ns() - 3_000_000_000  # the source died 3 s ago
    for i in range(90):
        t.frame_in(end - (89 - i) * period)
    assert t.snapshot(recent=True).fps_in == 0.0
    assert t.snapshot().fps_in == pytest.approx(30.0, rel=0.01)  # the whole run's rate


def test_recent_rates_follow_a_live_source(monkeypatch: pytest.MonkeyPatch) -> None:
    # the snapshot reads the clock at the moment of the last frame (however late the
    # machine runs the test): the window holds exactly the last 2 s of a 25 fps source
    now = 1_000_000 * 1_000_000_000
    monkeypatch.setattr(hub, "time", types.SimpleNamespace(perf_counter_ns=lambda: now))
    t = Telemetry()
    period = 1_000_000_000 // 25
    for i in range(75):  # the last 3 s, up to now
        t.frame_in(now - (74 - i) * period)
    assert Telemetry.RECENT_WINDOW_S == 2.0
    assert t.snapshot(recent=True).fps_in == pytest.approx(25.0)  # 50 frames in 2 s
    assert t.snapshot().fps_in == pytest.approx(25.0)  # and over the whole run


def test_no_gpu_reads_as_unavailable_and_never_raises() -> None:
    reader = NvmlReader()
    if reader.available:
        reader.close()
        other_hardware("an NVIDIA GPU is present: this checks the machine without one")
    assert reader.error and reader.snapshot() is None
    t = Telemetry(gpu_reader=reader)
    snap = t.snapshot(recent=True)
    assert snap.gpu is None
    assert snap.status_line().endswith("GPU n/a")
    assert snap.to_summary()["gpu"] == "n/a"
    reader.close()
    reader.close()


def test_gpu_reading_says_its_vram_scope() -> None:
    with NvmlReader() as reader:
        if not reader.available:
            # a plain skip, in CI too: it needs an NVIDIA GPU, which a CI machine never has
            # (nothing CI must provide is missing; see conftest.other_hardware)
            pytest.skip(f"no NVIDIA GPU here ({reader.error})")
        snap = reader.snapshot()
    assert snap is not None and snap.vram_scope in ("process", "device")
    assert (snap.vram_scope == "process") == (snap.vram_process_mb is not None)


def nvml_process(pid: int, used: int | None) -> object:
    """A process record as pynvml returns it (its own struct, made friendly)."""
    raw = pynvml.c_nvmlProcessInfo_v3_t(pid=pid, usedGpuMemory=0 if used is None else used)
    obj = pynvml.nvmlStructToFriendlyObject(raw)
    if used is None:
        obj.usedGpuMemory = None  # what pynvml reports when the driver withholds it
    return obj


def test_process_vram_is_picked_from_nvml_process_records() -> None:
    records = [nvml_process(10, 512 * 2**20), nvml_process(42, 300 * 2**20)]
    records.append(nvml_process(42, 100 * 2**20))  # a second context (graphics list)
    assert process_vram_mb(records, 42) == pytest.approx(400.0)
    assert process_vram_mb(records, 99) is None  # not listed: e.g. another pid namespace
    assert process_vram_mb([nvml_process(42, None)], 42) is None  # withheld (WDDM)


@pytest.mark.parametrize(
    ("scope", "process_mb", "label"),
    [
        ("process", 812.0, "VRAM 812/24576MB (this process)"),
        ("device", None, "VRAM 9000/24576MB (whole GPU)"),
    ],
)
def test_status_line_labels_the_vram_scope(
    scope: str, process_mb: float | None, label: str
) -> None:
    reading = GpuSnapshot(0, "GPU", 9000.0, 24576.0, 50.0, "550", process_mb, scope)  # type: ignore[arg-type]

    class Reader:
        def snapshot(self) -> GpuSnapshot:
            return reading

    snap = Telemetry(gpu_reader=Reader()).snapshot()
    assert snap.status_line().endswith(label)
    assert snap.to_summary()["gpu"]["vram_scope"] == scope


def test_a_raising_listener_does_not_stop_a_real_stream(vcam: RecordingStore) -> None:
    """End to end: the listener raises on the output thread's first frame report and on
    the first event; the stream runs to its last frame anyway."""
    t = Telemetry()
    events: list[Event] = []
    reports: list[FrameReport] = []
    seen = threading.Event()

    def bad_frame(report: FrameReport) -> None:
        seen.set()
        raise RuntimeError("panel bug")

    t.subscribe(on_event=events.append, on_frame=reports.append)
    t.subscribe(on_frame=bad_frame)
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [160, 120], "fps": 120},
            "buffer": {"lossless": True},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
            "run": {"frames": 40},
        }
    )
    app = App(cfg, telemetry=t)
    app.start()
    assert app.wait(20)
    assert app.stop() == []
    assert seen.is_set()
    assert [r.seq for r in reports] == list(range(40)), "every frame reported, in order"
    unique = [
        f
        for i, f in enumerate(vcam.frames)
        if i == 0 or not np.array_equal(f.frame, vcam.frames[i - 1].frame)
    ]
    assert len(unique) == 40
    warnings = [e for e in events if e.origin == "telemetry"]
    assert len(warnings) == 1 and "bad_frame" in warnings[0].message
    assert "RuntimeError('panel bug')" in warnings[0].message
