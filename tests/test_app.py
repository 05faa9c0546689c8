"""End to end: source -> ring -> stages -> output thread -> the real pyvirtualcam.Camera.

The virtual camera is pyvirtualcam's own Camera driving a backend registered with
``pyvirtualcam.register_backend`` that records every frame it receives.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import pytest
from fakes import FailingSink, PassStage
from recording_backend import RecordingStore
from waiting import poll

from livecam.app import App
from livecam.cli.main import main as cli_main
from livecam.cli.terminal_run import exit_status
from livecam.config.schema import Config, SourceConfig
from livecam.errors import StartupError
from livecam.runtime.providers import Providers
from livecam.sinks import make_sink
from livecam.sinks.null import NullSink
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.sources.synthetic.stamp import read_stamp
from livecam.stream.capture import CaptureWorker
from livecam.stream.ring import RingBuffer
from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket


def config(**sections: dict[str, object]) -> Config:
    return Config.from_dict({k: v for k, v in sections.items()})


def sent_hashes(vcam: RecordingStore) -> tuple[list[str], list[str]]:
    """Hashes of every frame the virtual camera got, and of the new ones (repeats removed)."""
    got = [hashlib.sha1(f.frame.tobytes()).hexdigest() for f in vcam.frames]
    return got, [h for i, h in enumerate(got) if i == 0 or h != got[i - 1]]


def run_to_end(app: App, timeout: float = 20) -> None:
    app.start()
    assert app.wait(timeout), "the stream ended by itself (run.frames)"
    assert app.stop() == []


class Recorder(PassStage):
    """A stage that keeps a copy of every frame it hands on, keyed by content hash."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.hashes: list[str] = []

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        self.hashes += [hashlib.sha1(p.frame.tobytes()).hexdigest() for p in batch]
        return batch


class ThreadProbe(PassStage):
    """A stage that notes how many threads OpenCV may use while it processes; its models
    run on ``used`` (the providers a stage reports)."""

    name = "probe"

    def __init__(self, used: tuple[str, ...] = ("cpu",)) -> None:
        super().__init__()
        self.providers = Providers(used, used)
        self.seen: list[int] = []

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        self.seen.append(cv2.getNumThreads())
        return batch


@pytest.mark.parametrize(
    ("used", "configured", "expected"),
    [(("cpu",), None, 1), (("cuda", "cpu"), None, 3), (("cpu",), 2, 2)],
)
def test_opencv_runs_on_one_thread_while_every_model_runs_on_the_cpu(
    used: tuple[str, ...], configured: int | None, expected: int
) -> None:
    """OpenCV's pool set to 3 threads before the start: while the stream runs, its
    operations get 1 thread when every model runs on the CPU, the 3 they had beside a GPU,
    ``pipeline.opencv_threads`` when given, and the stats say so; stopped, the 3 again."""
    before = cv2.getNumThreads()
    cv2.setNumThreads(3)
    try:
        cfg = config(
            source={"spec": "synthetic", "size": [160, 120], "fps": 120},
            output={"sinks": ["null"]},
            pipeline={"stages": ["passthrough"], "opencv_threads": configured},
            run={"frames": 10},
        )
        probe = ThreadProbe(used)
        app = App(cfg, stages=[probe])
        run_to_end(app)
        assert probe.seen and set(probe.seen) == {expected}, probe.seen
        assert app.opencv_threads == expected
        assert cv2.getNumThreads() == 3
    finally:
        cv2.setNumThreads(before)


def test_frames_reach_the_virtual_camera_unchanged_in_order(vcam: RecordingStore) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 120},
        buffer={"lossless": True},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        run={"frames": 60},
    )
    recorder = Recorder()
    app = App(cfg, stages=[recorder])
    run_to_end(app)
    assert vcam.opened == [{"width": 320, "height": 240, "fps": 120.0, "fmt": "24BG"}]
    assert vcam.closed == 1
    assert all(f.frame.shape == (240, 320, 3) for f in vcam.frames)
    assert len(recorder.hashes) == 60 and len(set(recorder.hashes)) == 60
    # every produced frame arrives, in order; extra frames can only be repeats of the last
    assert sent_hashes(vcam)[1] == recorder.hashes
    assert app.snapshot().frames_out == 60


def test_output_repeats_the_last_frame_when_the_source_is_slow(vcam: RecordingStore) -> None:
    # 10 fps source, 30 fps virtual camera: the camera gets every frame, and repeats between
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 10},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name, "fps": 30},
        run={"frames": 8},
    )
    recorder = Recorder()
    app = App(cfg, stages=[recorder])
    run_to_end(app)
    got, unique = sent_hashes(vcam)
    assert unique == recorder.hashes, "every processed frame once, in order, repeats between"
    snap = app.snapshot()
    assert snap.repeats == len(got) - len(unique) > 0
    assert snap.frames_out == snap.frames_processed == 8 - snap.dropped


def test_glass_to_glass_latency_from_stamped_frames(vcam: RecordingStore) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [640, 360], "fps": 60, "stamp": True},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        run={"frames": 90},
    )
    app = App(cfg)
    app.start()
    assert app.wait(10)
    app.stop()
    latencies = []
    for rec in vcam.frames:
        stamp = read_stamp(rec.frame)
        assert stamp is not None, "every frame carries its capture stamp"
        latencies.append((rec.t_ns - stamp) / 1e6)
    assert min(latencies) > 0, "a frame never arrives before it was captured"
    snap = app.snapshot()
    assert snap.latency_ms is not None and snap.latency_ms.p50 > 0


def test_live_batch_limit_delivers_every_processed_frame(vcam: RecordingStore) -> None:
    """Live mode with batch limit 4 and a stage slower than the camera: the newest frame
    is processed each time and no processed frame is thrown away after the work."""

    class Slow(Recorder):
        name = "slow"

        def process(self, batch: list[FramePacket]) -> list[FramePacket]:
            time.sleep(0.05)
            return super().process(batch)

    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 60},
        buffer={"batch_limit": 4},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name, "fps": 60},
        run={"frames": 90},
    )
    slow = Slow()
    app = App(cfg, stages=[slow])
    run_to_end(app)
    _, unique = sent_hashes(vcam)
    snap = app.snapshot()
    assert unique == slow.hashes, "every processed frame reached the camera, in order"
    assert snap.frames_processed == len(slow.hashes) < 90, "older frames dropped before work"
    assert snap.dropped == 90 - snap.frames_processed


def test_startup_errors_collect_every_cause(tmp_path: Path) -> None:
    cfg = config(
        source={"spec": str(tmp_path / "missing.mp4")},
        output={"sinks": ["nowhere.xyz"]},
    )
    with pytest.raises(StartupError) as info:
        App(cfg).start()
    text = str(info.value)
    assert len(info.value.causes) == 2
    assert "missing.mp4" in text and "nowhere.xyz" in text


class BrokenStage(PassStage):
    name, required = "broken", True

    def __init__(self, fail_in: str = "process") -> None:
        super().__init__()
        self.fail_in = fail_in

    def warmup(self, width: int, height: int) -> None:
        if self.fail_in == "warmup":
            raise RuntimeError("CUDA failure 700: an illegal memory access")

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        raise RuntimeError("model exploded")

    def close(self) -> None:
        self.closed = True
        raise RuntimeError("close exploded too")


def test_a_failing_stage_a_raising_sink_and_listener_never_stop_the_stream(
    vcam: RecordingStore,
) -> None:
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)

    def bad_listener(event: Event) -> None:
        raise ValueError("listener bug")

    telemetry.add_listener(bad_listener)
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 200},
        buffer={"lossless": True},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        run={"frames": 40},
    )
    # a device that fails with a library's own exception type on the third frame
    raising = FailingSink(OSError(5, "Input/output error"), name="raising")
    sinks = [make_sink("virtualcam", cfg.output), raising]
    app = App(cfg, stages=[BrokenStage()], sinks=sinks, telemetry=telemetry)
    app.start()
    assert app.wait(10)
    assert app.stop() == []
    assert len({f.frame.tobytes() for f in vcam.frames}) == 40, "camera frames passed through"
    assert raising.frames == 3
    assert any("model exploded" in e.message for e in events)
    assert any(e.origin == "sink raising" and "Input/output" in e.message for e in events)
    assert any("listener bug" in e.message for e in events), "the bad listener is reported"


def test_a_stage_whose_warmup_raises_fails_startup_and_closes_every_sink(
    vcam: RecordingStore,
) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 30},
        output={"sinks": ["virtualcam", "null"], "virtualcam_backend": vcam.name},
    )
    stage = BrokenStage("warmup")
    app = App(cfg, stages=[stage])
    with pytest.raises(StartupError) as info:
        app.start()
    assert "stage broken" in str(info.value) and "illegal memory access" in str(info.value)
    assert len(vcam.opened) == 1 and vcam.closed == 1, "the opened virtual camera is closed"
    assert stage.closed, "the built stage is closed too"
    assert not [t for t in threading.enumerate() if t.name.startswith("livecam-")]


class FlakySource(SyntheticSource):
    """A device whose driver raises a library error (cv2.error) once, on the 5th read."""

    def __init__(self) -> None:
        super().__init__(SourceConfig(spec="synthetic", size=(160, 120), fps=60))
        self.reads = 0
        self.opens = 0

    def open(self) -> None:
        self.opens += 1
        super().open()

    def read(self) -> Frame:
        self.reads += 1
        if self.reads == 5:
            raise cv2.error("simulated driver error in VideoCapture::read")
        return super().read()


def test_a_source_read_that_raises_is_an_event_and_the_source_is_reopened() -> None:
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    source = FlakySource()
    capture_ring: RingBuffer[FramePacket] = RingBuffer(64, lossless=True)
    worker = CaptureWorker(
        source, capture_ring, threading.Event(), telemetry, max_frames=30, reopen_interval_s=0.1
    )
    worker.start()
    assert worker.finished.wait(10)
    assert len(capture_ring) == 30, "frames flow again after the error"
    assert source.opens == 2, "the source was reopened"
    assert any("simulated driver error" in e.message for e in events)
    assert any(e.message == "reopened" for e in events)


def test_stop_joins_every_thread(vcam: RecordingStore) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 30},
        output={"sinks": ["virtualcam", "null"], "virtualcam_backend": vcam.name},
    )
    before = {t.name for t in threading.enumerate()}
    app = App(cfg)
    app.start()
    assert poll(lambda: len(vcam.frames) > 0), "the stream runs"
    assert app.running
    assert app.stop() == [], "every thread joined within the stop deadline"
    leftover = {t.name for t in threading.enumerate()} - before
    assert not [n for n in leftover if n.startswith("livecam-")]
    assert vcam.closed == 1


def test_camera_that_disappears_is_reopened(tmp_path: Path, testdata: Path) -> None:
    clip = tmp_path / "cam.mp4"
    shutil.copy(testdata / "video" / "openmpf_video_01_short_h264_aac.mp4", clip)
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    cfg = config(
        source={"spec": f"camera:{clip}", "reopen_interval_s": 0.2},
        output={"sinks": ["null"]},
    )
    app = App(cfg, telemetry=telemetry)
    app.start()
    clip.rename(tmp_path / "unplugged.mp4")  # the "camera" is gone at the end of its stream
    assert poll(lambda: any(e.level == "error" for e in events)), "the loss was reported"
    frames_while_gone = app.snapshot().frames_in
    (tmp_path / "unplugged.mp4").rename(clip)  # replugged
    assert poll(lambda: any(e.message == "reopened" for e in events)), "it was reopened"
    assert poll(lambda: app.snapshot().frames_in > frames_while_gone), "frames flow again"
    app.stop()
    error = next(e for e in events if e.level == "error")
    assert "stopped delivering" in error.message and "replug" in error.hint
    assert any(e.message == "reopened" for e in events)
    assert app.snapshot().frames_in > frames_while_gone, "frames flow again after the replug"


def test_cli_run_writes_stats_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = tmp_path / "stats.json"
    out_png = tmp_path / "last.png"
    code = cli_main(
        [
            "run",
            "--source",
            "synthetic",
            "--size",
            "320x240",
            "--unpaced",
            "--frames",
            "50",
            "--sink",
            "null",
            "--sink",
            str(out_png),
            "--stats-json",
            str(stats),
            "--quiet",
        ]
    )
    assert code == 0
    summary = json.loads(stats.read_text())
    for key in ("frames_in", "frames_out", "dropped", "fps_out", "latency_ms", "stages_ms"):
        assert key in summary
    assert summary["frames_in"] == 50
    assert summary["frames_out"] + summary["dropped"] == 50
    assert set(summary["latency_ms"]) == {"p50", "p99"}
    assert "passthrough" in summary["stages_ms"]
    assert summary["overlap"] is False, "nothing to overlap on a CPU"
    assert out_png.exists() and summary["files"] == [str(out_png)]
    printed = capsys.readouterr().out
    assert "frames in 50" in printed and f"wrote {out_png}" in printed


def test_cli_bad_config_value_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text("[buffer]\ncapacity = 0\n")
    assert cli_main(["run", "--config", str(toml)]) == 2
    err = capsys.readouterr().err
    assert "buffer.capacity" in err and "1 to 64" in err


def test_sigterm_stops_the_process_cleanly(tmp_path: Path) -> None:
    stats, last = tmp_path / "s.json", tmp_path / "last.png"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "livecam",
            "run",
            "--source",
            "synthetic",
            "--size",
            "320x240",
            "--sink",
            "null",
            "--sink",
            str(last),
            "--stats-json",
            str(stats),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        # the image sink writes the first frame it gets: the stream runs (the name is
        # claimed with an empty file at start, before the stream runs)
        assert poll(
            lambda: (last.exists() and last.stat().st_size > 0) or proc.poll() is not None, 60
        ), "no frame written"
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err  # the shell convention: 143
    assert "did not stop" not in err
    summary = json.loads(stats.read_text())
    assert summary["frames_in"] > 0 and summary["frames_out"] > 0
    assert "frames in" in out


class SlowToFinish(NullSink):
    """A sink whose close takes longer than the stop deadline (a long recording's flush)."""

    name = "slow-finish"

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def close(self) -> None:
        time.sleep(3.0)
        self.finished = True


def test_stop_waits_for_an_output_still_finishing_its_files() -> None:
    cfg = config(source={"spec": "synthetic", "size": [160, 120], "fps": 30})
    sink = SlowToFinish()
    app = App(cfg, sinks=[sink])
    app.start()
    assert poll(lambda: sink.frames > 0), "the stream runs"
    assert app.stop(timeout_s=1.0) == [], "the output thread was given time to finish"
    assert sink.finished, "the file was finished, not cut off"


def test_a_thread_that_crashes_is_reported_and_counted() -> None:
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)

    class Buggy(Worker):
        def loop(self) -> None:
            raise KeyError("bug")

        def cleanup(self) -> None:
            raise OSError("and the cleanup failed too")

    worker = Buggy("buggy", threading.Event(), telemetry)
    worker.start()
    assert worker.finished.wait(5)
    assert worker.crash is not None and "crashed while closing" in worker.crash
    assert [e.message for e in events] == [
        "crashed: KeyError('bug')",
        ("crashed while closing: OSError('and the cleanup failed too')"),
    ]
    assert exit_status({"signal": None, "errors": [worker.crash]}) == 1


def test_a_small_source_face_is_a_warning_event_and_the_stream_runs(testdata: Path) -> None:
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 30},
        output={"sinks": ["null"]},
        pipeline={"stages": ["swap"]},
        swap={"face": str(testdata / "faces" / "codait_bryan.png")},
        run={"frames": 10},
    )
    app = App(cfg, telemetry=telemetry)
    run_to_end(app)
    warning = next(e for e in events if e.origin == "stage swap")
    assert warning.level == "warning" and "smear" in warning.message
    assert app.snapshot().providers == {"swap": {"requested": "cpu", "used": "cpu"}}
