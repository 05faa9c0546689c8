"""The overlapped pipeline (``pipeline.overlap``) on real faces and models: the same output
as one thread, live changes while two batches are in flight, and a clean stop."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from fakes import KeepingSink
from waiting import poll

from livecam.app import App
from livecam.cli.main import main
from livecam.config.schema import Config
from livecam.sources.synthetic.pattern import MOTION_PERIOD, SyntheticSource
from livecam.types import Frame

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FRAMES = 24


@pytest.fixture
def lite_models(testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))


def lite_config(testdata: Path, overlap: bool, **source: object) -> Config:
    """The lite preset (real YuNet, slim-160 and MobileFaceNet) on the synthetic clip of
    Obama's portrait moving, Biden's face swapped in."""
    faces = testdata / "faces"
    return Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(faces / "obama_official_portrait_2012.jpg"),
                "size": [640, 480],
                **source,
            },
            "buffer": {"batch_limit": 1},
            # the invisible mark carries a random session id per start: two runs' frames
            # would differ by it (tests/stream/test_output_mark.py covers the mark)
            "output": {"sinks": ["null"], "watermark": False},
            "pipeline": {"stages": ["swap"], "overlap": overlap},
            "swap": {
                "face": str(faces / "biden_official_portrait.jpg"),
                "preset": "lite",
                "provider": "cpu",
            },
        }
    )


def run_to_end(cfg: Config) -> tuple[App, list[Frame]]:
    sink = KeepingSink()
    app = App(cfg, sinks=[sink])
    app.start()
    assert app.wait(120), "the clip ends"
    assert app.stop() == [] and app.crashes == []
    return app, sink.kept


def test_overlapped_output_equals_one_thread_frame_for_frame(
    testdata: Path, lite_models: None
) -> None:
    """Lossless, so both runs see every frame in order: the tracker, the selection and the
    swap get the same inputs, and the two threads must not change a pixel. (Landmark
    smoothing is off: it weighs by the capture times, which differ from run to run.)"""

    def config(overlap: bool) -> Config:
        cfg = lite_config(testdata, overlap, unpaced=True)
        cfg = cfg.with_section("buffer", lossless=True, batch_limit=1)
        return cfg.with_section("swap", smoothing=0.0)

    serial_cfg, overlap_cfg = config(False), config(True)
    serial_app, serial = run_to_end(serial_cfg.with_section("run", frames=FRAMES))
    overlap_app, overlapped = run_to_end(overlap_cfg.with_section("run", frames=FRAMES))
    assert serial_app.overlap is False and overlap_app.overlap is True
    assert len(serial) == len(overlapped) == FRAMES
    for i, (a, b) in enumerate(zip(serial, overlapped, strict=True)):
        assert np.array_equal(a, b), f"frame {i} differs"
    clip = SyntheticSource(serial_cfg.source)
    clip.open()
    changed = [
        float(np.abs(out.astype(int) - clip.render(i)).max()) for i, out in enumerate(serial)
    ]
    assert min(changed) > 50, "every frame had its face swapped"
    snap = overlap_app.snapshot()
    assert snap.faces_swapped == FRAMES and set(snap.stages_ms) == {"track", "swap"}


def test_live_changes_apply_and_the_stream_stops_cleanly_with_overlap(
    testdata: Path, lite_models: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A face change rebuilds the stage while batches are in flight (the replaced stage is
    closed after its last batch); swap off lets camera frames through; stop never hangs. A
    CUDA graph asked for is not captured in a live rebuild (it would break the capture)."""
    sink = KeepingSink()
    cfg = lite_config(testdata, True, fps=30).with_section("swap", cuda_graph=True)
    app = App(cfg, sinks=[sink])
    app.start()
    try:
        assert app.overlap
        change = app.controls.set_face(testdata / "faces" / "obama_official_portrait_2012.jpg")
        applied = change.wait(60)
        assert applied.config.swap.face is not None and "obama" in applied.config.swap.face
        assert "CUDA graph is captured only at start" in caplog.text
        before = len(sink.kept)
        off = app.controls.set_swap(False).wait(10)
        assert off.state.swap is False
        assert poll(lambda: len(sink.kept) >= before + 10, 30), "frames after the switch"
        clip = SyntheticSource(app.config.source)
        clip.open()
        plain = {clip.render(i).tobytes() for i in range(MOTION_PERIOD)}
        assert sink.kept[-1].tobytes() in plain, "swap off: the camera frame passes"
        assert app.crashes == []
    finally:
        assert app.stop() == []
    assert not any(t.name == "livecam-render" for t in threading.enumerate())


def test_the_overlap_option_of_livecam_run_reaches_the_stats(
    testdata: Path, lite_models: None, tmp_path: Path
) -> None:
    stats = tmp_path / "stats.json"
    faces = testdata / "faces"
    argv = ["run", "--source", "synthetic", "--face-motion"]
    argv += [str(faces / "obama_official_portrait_2012.jpg"), "--size", "640x480"]
    argv += ["--face", str(faces / "biden_official_portrait.jpg"), "--preset", "lite"]
    argv += ["--overlap", "--frames", "20", "--sink", "null", "--stats-json", str(stats), "-q"]
    assert main(argv) == 0
    summary = json.loads(stats.read_text())
    assert summary["overlap"] is True and summary["errors"] == []
    assert {"track", "swap"} <= set(summary["stages_ms"]) and summary["faces_swapped"] > 0


def test_a_video_file_converts_to_the_same_frames_every_time_with_or_without_overlap(
    testdata: Path, lite_models: None
) -> None:
    """Smoothing on: a video file's frames are timed by the file's own clock, not by when
    they were read, so two conversions (and a third with overlap) are pixel-identical."""
    clip = testdata / "video" / "openmpf_video_01_short_h264_aac.mp4"

    def convert(overlap: bool) -> tuple[App, list[Frame]]:
        cfg = lite_config(testdata, overlap).with_section("source", spec=str(clip), unpaced=True)
        cfg = cfg.with_section("source", face_motion=None, size=None)
        return run_to_end(cfg.with_section("swap", select="all"))

    (first_app, first), (_, second), (_, overlapped) = convert(False), convert(False), convert(True)
    assert len(first) == len(second) == len(overlapped) > 20
    for i, (a, b, c) in enumerate(zip(first, second, overlapped, strict=True)):
        assert np.array_equal(a, b) and np.array_equal(a, c), f"frame {i} differs"
    assert first_app.snapshot().faces_swapped > len(first), "several people swapped per frame"
