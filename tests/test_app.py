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
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from recording_backend import RecordingStore, register_recording_backend, unregister

from livecam.app import App
from livecam.cli import main as cli_main
from livecam.config import Config
from livecam.errors import StartupError
from livecam.sources.stamp import read_stamp
from livecam.telemetry import Telemetry
from livecam.types import Event, FramePacket


@pytest.fixture
def vcam() -> Iterator[RecordingStore]:
    store = register_recording_backend()
    yield store
    unregister(store.name)


def config(**sections: dict[str, object]) -> Config:
    return Config.from_dict({k: v for k, v in sections.items()})


class Recorder:
    """A stage that keeps a copy of every frame it hands on, keyed by content hash."""

    name = "recorder"
    required = False

    def __init__(self) -> None:
        self.hashes: list[str] = []

    def warmup(self, width: int, height: int) -> None: ...

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        self.hashes += [hashlib.sha1(p.frame.tobytes()).hexdigest() for p in batch]
        return batch

    def close(self) -> None: ...


def test_frames_reach_the_virtual_camera_unchanged_in_order(vcam: RecordingStore) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 120},
        buffer={"lossless": True},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        run={"frames": 60},
    )
    recorder = Recorder()
    app = App(cfg, stages=[recorder])
    app.start()
    assert app.wait(10)
    assert app.stop() == []
    assert vcam.opened == [{"width": 320, "height": 240, "fps": 120.0, "fmt": "24BG"}]
    assert vcam.closed == 1
    got = [hashlib.sha1(f.frame.tobytes()).hexdigest() for f in vcam.frames]
    assert all(f.frame.shape == (240, 320, 3) for f in vcam.frames)
    assert len(recorder.hashes) == 60 and len(set(recorder.hashes)) == 60
    # every produced frame arrives, in order; extra frames can only be repeats of the last
    unique = [h for i, h in enumerate(got) if i == 0 or h != got[i - 1]]
    assert unique == recorder.hashes
    assert app.snapshot().frames_out == 60


def test_output_is_paced_and_repeats_when_the_source_is_slow(vcam: RecordingStore) -> None:
    # 10 fps still image, 30 fps virtual camera: each frame is repeated at a steady rate
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 10},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name, "fps": 30},
    )
    app = App(cfg)
    app.start()
    time.sleep(1.5)
    app.stop()
    t = np.array([f.t_ns for f in vcam.frames]) / 1e6
    gaps = np.diff(t)
    assert 35 <= len(vcam.frames) <= 50, len(vcam.frames)
    assert 28 <= float(np.median(gaps)) <= 38, f"median gap {np.median(gaps):.1f} ms"
    assert float(gaps.max()) < 120, "a steady rate: no long stalls"
    snap = app.snapshot()
    assert snap.repeats > 0 and 12 <= snap.frames_out <= 17


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
    lat = np.array(latencies)
    assert (lat > 0).all()
    # the pipeline does nothing but pass through: glass-to-glass well under one frame
    assert np.median(lat) < 10, f"p50 {np.median(lat):.2f} ms"
    snap = app.snapshot()
    assert snap.latency_ms is not None
    assert abs(snap.latency_ms.p50 - float(np.median(lat))) < 5


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


def test_a_failing_stage_and_sink_never_stop_the_stream(vcam: RecordingStore) -> None:
    class Broken:
        name, required = "broken", True

        def warmup(self, width: int, height: int) -> None: ...

        def process(self, batch: list[FramePacket]) -> list[FramePacket]:
            raise RuntimeError("model exploded")

        def close(self) -> None:
            raise RuntimeError("close exploded too")

    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 200},
        output={"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        run={"frames": 40},
    )
    app = App(cfg, stages=[Broken()], telemetry=telemetry)
    app.start()
    assert app.wait(10)
    assert app.stop() == []
    assert len({f.frame.tobytes() for f in vcam.frames}) >= 30, "camera frames passed through"
    assert any("model exploded" in e.message for e in events)


def test_stop_joins_every_thread_within_two_seconds(vcam: RecordingStore) -> None:
    cfg = config(
        source={"spec": "synthetic", "size": [320, 240], "fps": 30},
        output={"sinks": ["virtualcam", "null"], "virtualcam_backend": vcam.name},
    )
    before = {t.name for t in threading.enumerate()}
    app = App(cfg)
    app.start()
    time.sleep(0.5)
    assert app.running
    t0 = time.monotonic()
    assert app.stop() == []
    assert time.monotonic() - t0 < 2.0
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
    deadline = time.monotonic() + 10
    while not any(e.level == "error" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
    frames_while_gone = app.snapshot().frames_in
    (tmp_path / "unplugged.mp4").rename(clip)  # replugged
    while not any(e.message == "reopened" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
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
    assert out_png.exists()
    assert "frames in 50" in capsys.readouterr().out


def test_cli_bad_config_value_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text("[buffer]\ncapacity = 0\n")
    assert cli_main(["run", "--config", str(toml)]) == 2
    err = capsys.readouterr().err
    assert "buffer.capacity" in err and "1 to 64" in err


def test_sigterm_stops_the_process_cleanly(tmp_path: Path) -> None:
    stats = tmp_path / "s.json"
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
            "--stats-json",
            str(stats),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    time.sleep(2.5)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 2.0, err
    assert proc.returncode == 0, err
    assert json.loads(stats.read_text())["frames_in"] > 10
    assert "frames in" in out
