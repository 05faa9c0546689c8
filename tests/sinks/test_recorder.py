"""The recorder: H.264 through PyAV timed by capture times, mp4v and MJPEG as named
choices timed to the frame period, temporary file + rename, no overwriting, and honest
failure. Files are read back with PyAV."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest
from fakes import SlowStage
from framegen import psnr, smooth_frames

from livecam.app import App
from livecam.cli.main import build_parser
from livecam.cli.options import config_from_args
from livecam.config.schema import Config
from livecam.errors import SinkError
from livecam.sinks import ImageWriterSink, RecorderSink, make_sinks
from livecam.telemetry.hub import Telemetry
from livecam.telemetry.snapshot import FrameReport
from livecam.types import Event

S = 1_000_000_000


@dataclass
class Video:
    codec: str
    duration_s: float
    frames: list[np.ndarray]
    times_s: list[float]


def read_back(path: Path) -> Video:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames, times = [], []
        for picture in container.decode(stream):
            frames.append(picture.to_ndarray(format="bgr24"))
            times.append(float(picture.time))
        assert container.duration is not None
        return Video(stream.codec_context.name, container.duration / 1e6, frames, times)


def record(sink: RecorderSink, frames: list[np.ndarray], fps_in: float | None) -> None:
    """Send ``frames`` as if captured at ``fps_in`` (None: no capture times), then close."""
    h, w = frames[0].shape[:2]
    sink.open(w, h, 30.0)
    t0 = time.perf_counter_ns()
    for i, frame in enumerate(frames):
        sink.send(frame, None if fps_in is None else t0 + round(i * S / fps_in))
    sink.close()


#: a recording's timestamps sit on its 30 fps grid: within half a period of capture
HALF_PERIOD = 1 / 60 + 0.001


def at_capture_times(times_s: list[float], captured_s: list[float], fps: float = 30.0) -> bool:
    """Each frame sits at most half a period before and one and a half after its capture
    time (the nearest free period of the grid: ``timeline.MAX_AHEAD_PERIODS``)."""
    return len(times_s) == len(captured_s) and all(
        -0.5 / fps - 0.001 <= t - c <= 1.5 / fps + 0.001
        for t, c in zip(times_s, captured_s, strict=True)
    )


def on_the_grid(times_s: list[float], fps: float) -> bool:
    """Every timestamp is a whole number of frame periods (to 1 ms)."""
    return all(abs(t * fps - round(t * fps)) * 1000 / fps < 1 for t in times_s)


def no_leftovers(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_h264_timed_by_capture_times(tmp_path: Path) -> None:
    """36 frames captured at 12 fps into a 30 fps recording: 3 s, 36 frames, at their times
    (on the 30 fps grid: each within half a period of its capture time)."""
    sent = smooth_frames(36)
    sink = RecorderSink(tmp_path / "clip.mp4")
    assert sink.wants_repeats is False
    record(sink, sent, fps_in=12.0)
    assert sink.encoder == "libx264" and sink.frames_written == 36
    video = read_back(tmp_path / "clip.mp4")
    assert video.codec == "h264"
    assert video.duration_s == pytest.approx(35 / 12 + 1 / 30, abs=HALF_PERIOD + 0.002)
    assert video.times_s == pytest.approx([i / 12 for i in range(36)], abs=HALF_PERIOD)
    assert on_the_grid(video.times_s, 30.0)
    assert len(video.frames) == 36
    for got, want in zip(video.frames, sent, strict=True):
        assert psnr(got, want) > 30
    assert no_leftovers(tmp_path)


def test_without_capture_times_frames_are_one_output_period_apart(tmp_path: Path) -> None:
    record(RecorderSink(tmp_path / "clip.mkv"), smooth_frames(15), fps_in=None)
    video = read_back(tmp_path / "clip.mkv")
    assert video.codec == "h264"
    assert video.times_s == pytest.approx([i / 30 for i in range(15)], abs=0.002)


def test_avi_is_mjpeg_and_keeps_real_time(tmp_path: Path) -> None:
    """AVI has a fixed rate: a 15 fps stream in a 30 fps recording leaves every other
    period empty (players hold the frame), so each frame plays at its capture time and
    the last one, like every recording's last frame, lasts one period."""
    sent = smooth_frames(10)
    sink = RecorderSink(tmp_path / "clip.avi")
    record(sink, sent, fps_in=15.0)
    assert sink.encoder == "mjpeg" and sink.frames_written == 10
    video = read_back(tmp_path / "clip.avi")
    assert video.codec == "mjpeg"
    assert video.times_s == pytest.approx([2 * i / 30 for i in range(10)], abs=0.001)
    assert video.duration_s == pytest.approx(19 / 30, abs=0.01)
    for got, want in zip(video.frames, sent, strict=True):
        assert psnr(got, want) > 30


def test_a_source_faster_than_the_rate_keeps_one_frame_a_period(tmp_path: Path) -> None:
    """Two frames 5 ms apart in every 30 fps period (a 60 fps burst): the file keeps one
    frame a period, each on the grid and at most 1.5 periods after its capture time;
    ``frames_written`` counts the frames in the file."""
    sent = smooth_frames(12)
    sink = RecorderSink(tmp_path / "clip.avi")
    sink.open(160, 120, 30.0)
    t0 = time.perf_counter_ns()
    captured = [i // 2 / 30 + i % 2 * 0.005 for i in range(12)]
    for frame, t in zip(sent, captured, strict=True):
        sink.send(frame, t0 + round(t * S))
    sink.close()
    video = read_back(tmp_path / "clip.avi")
    assert sink.frames_written == len(video.frames) <= 7
    assert on_the_grid(video.times_s, 30.0)
    assert video.times_s == sorted(set(video.times_s))
    for got, t in zip(video.frames, video.times_s, strict=True):
        # a frame sent at most 1.5 periods before its place in the file
        near = [
            f
            for f, c in zip(sent, captured, strict=True)
            if -HALF_PERIOD <= t - c <= 1 / 30 + 0.001
        ]
        assert any(psnr(got, want) > 30 for want in near), t


def test_mp4v_is_a_named_choice(tmp_path: Path) -> None:
    sent = smooth_frames(12)
    sink = RecorderSink(tmp_path / "clip.mp4", codec="mp4v")
    record(sink, sent, fps_in=10.0)
    assert sink.encoder == "mpeg4"
    video = read_back(tmp_path / "clip.mp4")
    assert video.codec == "mpeg4"
    assert video.times_s == pytest.approx([i / 10 for i in range(12)], abs=0.001)
    assert video.duration_s == pytest.approx(34 / 30, abs=0.01)
    for got, want in zip(video.frames, sent, strict=True):
        assert psnr(got, want) > 30


def test_no_h264_encoder_falls_back_to_mp4v_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sink = RecorderSink(tmp_path / "clip.mp4", h264_encoders=("no_such_h264_encoder",))
    with caplog.at_level(logging.WARNING, logger="livecam.sinks.recording.video"):
        record(sink, smooth_frames(6), fps_in=None)
    assert sink.codec == "mp4v" and sink.encoder == "mpeg4"
    assert read_back(tmp_path / "clip.mp4").codec == "mpeg4"
    warning = caplog.records[0].getMessage()
    assert "H.264 UNAVAILABLE" in warning and "no_such_h264_encoder" in warning
    assert "FALLBACK codec mp4v" in warning and "browsers" in warning


def test_a_named_h264_without_encoder_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    sink = RecorderSink(tmp_path / "clip.mp4", codec="h264", h264_encoders=("no_such_encoder",))
    with pytest.raises(SinkError, match="no_such_encoder"):
        sink.open(160, 120, 30.0)
    assert list(tmp_path.iterdir()) == []


def test_codec_must_suit_the_container(tmp_path: Path) -> None:
    with pytest.raises(SinkError) as info:
        RecorderSink(tmp_path / "clip.mp4", codec="mjpg")
    assert "mjpg" in info.value.message and "h264, mp4v" in info.value.hint
    with pytest.raises(SinkError, match="unknown video type"):
        RecorderSink(tmp_path / "clip.webm")


def test_odd_frame_sizes_are_recorded_one_pixel_smaller(tmp_path: Path) -> None:
    frames = [f[:119, :159].copy() for f in smooth_frames(4)]
    record(RecorderSink(tmp_path / "odd.mp4"), frames, fps_in=30.0)
    video = read_back(tmp_path / "odd.mp4")
    assert video.frames[0].shape == (118, 158, 3)
    assert psnr(video.frames[-1], frames[-1][:118, :158]) > 30


def test_a_size_change_is_refused(tmp_path: Path) -> None:
    sink = RecorderSink(tmp_path / "a.mp4")
    sink.open(160, 120, 30.0)
    with pytest.raises(SinkError, match="80x60"):
        sink.send(np.zeros((60, 80, 3), np.uint8))
    sink.close()


def test_an_unwritable_folder_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    sink = RecorderSink(blocker / "x.mp4")
    with pytest.raises(SinkError) as info:
        sink.open(160, 120, 30.0)
    assert str(blocker) in info.value.message


def test_nothing_is_written_without_frames(tmp_path: Path) -> None:
    sink = RecorderSink(tmp_path / "empty.mp4")
    sink.open(160, 120, 30.0)
    sink.close()
    assert list(tmp_path.iterdir()) == []


def test_an_existing_recording_is_kept_unless_overwrite(
    tmp_path: Path, testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "show.mp4"  # last week's stream (an MP4: --overwrite may replace it)
    shutil.copy(testdata / "video" / "openmpf_video_01_short_h264_aac.mp4", path)
    last_week = path.read_bytes()
    sink = RecorderSink(path)
    with caplog.at_level(logging.WARNING, logger="livecam.userfiles"):
        record(sink, smooth_frames(5), fps_in=30.0)
    assert path.read_bytes() == last_week
    assert sink.target.parent == tmp_path and sink.target.name.startswith("show-")
    assert len(read_back(sink.target).frames) == 5
    assert "ALREADY EXISTS" in caplog.text and str(sink.target) in caplog.text

    again = RecorderSink(path)  # same second: a second free name, still nothing replaced
    record(again, smooth_frames(3), fps_in=30.0)
    assert again.target not in (path, sink.target)
    assert len(read_back(sink.target).frames) == 5

    replacing = RecorderSink(path, overwrite=True)
    record(replacing, smooth_frames(7), fps_in=30.0)
    assert replacing.target == path and len(read_back(path).frames) == 7
    assert no_leftovers(tmp_path)


# --- end to end with App -----------------------------------------------------------------


class FrameTimes:
    """A telemetry subscriber keeping every new output frame's capture time."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.capture_ns: list[int] = []
        self.events: list[Event] = []
        telemetry.subscribe(on_event=self.events.append, on_frame=self.frame)

    def frame(self, report: FrameReport) -> None:
        self.capture_ns.append(report.t_capture_ns)

    def relative_s(self) -> list[float]:
        """Each frame's capture time from the first frame's, in seconds."""
        return [(t - self.capture_ns[0]) / S for t in self.capture_ns]


def ends_within_a_period_of_the_last_frame(video: Video, fps: float) -> bool:
    """The file lasts past its last frame, and at most one output period past it (the
    muxer takes the last frame's length from the encoder, which may be a shorter gap)."""
    return video.times_s[-1] < video.duration_s <= video.times_s[-1] + 1 / fps + 0.002


def stream_config(out: Path, frames: int, **buffer: object) -> Config:
    return Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
            "buffer": buffer,
            "output": {"sinks": [str(out)]},
            "run": {"frames": frames},
        }
    )


def test_a_stream_records_at_its_capture_times(tmp_path: Path) -> None:
    """Every frame of a real-time stream sits in the file at its capture time (relative to
    the first), and the file ends within a period of the last one
    (bench/bench_recording_duration.py measures a 10 s stream against the clock)."""
    out = tmp_path / "out.mp4"
    telemetry = Telemetry()
    times = FrameTimes(telemetry)
    app = App(stream_config(out, 90, lossless=True), telemetry=telemetry)
    app.start()
    assert app.wait(60)
    assert app.stop() == []
    video = read_back(out)
    assert video.codec == "h264"
    assert len(video.frames) == 90 == len(times.capture_ns)
    assert at_capture_times(video.times_s, times.relative_s())
    assert ends_within_a_period_of_the_last_frame(video, 30.0)


def test_a_slow_pipeline_still_records_real_time(tmp_path: Path) -> None:
    out = tmp_path / "slow.mp4"
    telemetry = Telemetry()
    times = FrameTimes(telemetry)
    # ~70 ms per batch: far slower than the 30 fps source
    app = App(
        stream_config(out, 150, batch_limit=1),
        stages=[SlowStage(process_s=0.07)],
        telemetry=telemetry,
    )
    app.start()
    assert app.wait(60)
    assert app.stop() == []
    video = read_back(out)
    unique = len(times.capture_ns)
    assert len(video.frames) == unique < 100, "far fewer unique frames than the 150 captured"
    # timed by capture times, not one output period apart: the gaps of the drops stay
    assert at_capture_times(video.times_s, times.relative_s())
    assert max(np.diff(video.times_s)) > 1.5 / 30
    assert ends_within_a_period_of_the_last_frame(video, 30.0)


def test_a_folder_removed_mid_stream_turns_the_recorder_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "recordings"
    telemetry = Telemetry()
    times = FrameTimes(telemetry)
    removed = threading.Event()

    def remove_after_ten(report: FrameReport) -> None:
        if len(times.capture_ns) == 10:
            shutil.rmtree(folder)
            removed.set()

    telemetry.subscribe(on_frame=remove_after_ten)
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 60},
            "buffer": {"lossless": True},
            "output": {"sinks": [str(folder / "out.mp4"), "null"]},
            "run": {"frames": 60},
        }
    )
    with caplog.at_level(logging.INFO, logger="livecam.sinks.recording.video"):
        app = App(cfg, telemetry=telemetry)
        app.start()
        assert app.wait(30)
        assert app.stop() == []
    assert removed.is_set()
    errors = [e for e in times.events if e.origin == "sink recorder"]
    assert len(errors) == 1 and errors[0].level == "error"
    assert "was removed" in errors[0].message and "nothing was saved" in errors[0].message
    assert "turned off" in errors[0].message
    assert not any("recorded" in r.getMessage() for r in caplog.records)
    assert not folder.exists(), "nothing re-created the folder"
    assert len(times.capture_ns) == 60, "the null sink went on to the last frame"


def test_overwrite_option_reaches_the_recorder(tmp_path: Path) -> None:
    out = str(tmp_path / "o.mp4")
    for argv, want in ((["--overwrite"], True), ([], False)):
        args = build_parser().parse_args(["run", "--sink", out, *argv])
        cfg = config_from_args(args)
        assert cfg.output.overwrite is want
        sink = make_sinks(cfg.output.sinks, cfg.output)[0]
        assert isinstance(sink, RecorderSink) and sink.overwrite is want


def test_a_second_recorder_on_the_same_path_picks_another_name_while_the_first_records(
    tmp_path: Path,
) -> None:
    """The first recorder claims the name at open (an empty file), so a second one (another
    instance, a rerun) picks a new name even before the first has finished."""
    path = tmp_path / "show.mp4"
    first, second = RecorderSink(path), RecorderSink(path)
    first.open(160, 120, 30.0)
    assert first.target == path and path.exists()
    second.open(160, 120, 30.0)
    assert second.target != path and second.target.name.startswith("show-")
    for frame in smooth_frames(4):
        first.send(frame)
    for frame in smooth_frames(6):
        second.send(frame)
    second.close()
    first.close()
    assert len(read_back(path).frames) == 4
    assert len(read_back(second.target).frames) == 6
    assert no_leftovers(tmp_path)


def test_a_recorder_that_gets_no_frame_releases_its_claimed_name(tmp_path: Path) -> None:
    path = tmp_path / "show.mp4"
    path.write_bytes(b"yesterday")
    sink = RecorderSink(path)
    sink.open(160, 120, 30.0)
    assert sink.target.exists() and sink.target != path
    sink.close()
    assert [p.name for p in tmp_path.iterdir()] == ["show.mp4"]
    assert path.read_bytes() == b"yesterday"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_recordings_and_images_get_the_users_normal_permissions(
    tmp_path: Path, umask: int, mode: int
) -> None:
    previous = os.umask(umask)
    try:
        record(RecorderSink(tmp_path / "clip.mp4"), smooth_frames(3), fps_in=30.0)
        record(RecorderSink(tmp_path / "clip.avi"), smooth_frames(3), fps_in=30.0)
        image = ImageWriterSink(tmp_path / "last.png", interval_s=0.0)
        image.open(160, 120, 30.0)
        image.send(smooth_frames(1)[0])
        image.send(smooth_frames(2)[1])  # a second write replaces the first
        image.close()
    finally:
        os.umask(previous)
    for name in ("clip.mp4", "clip.avi", "last.png"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name


def test_an_avi_recording_says_the_sound_is_not_recorded(
    tmp_path: Path, testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clip = testdata / "video" / "openmpf_video_01_short_h264_aac.mp4"
    sink = RecorderSink(tmp_path / "clip.avi")
    sink.take_audio_from(clip)
    with caplog.at_level(logging.WARNING, logger="livecam.sinks.recording.video"):
        record(sink, smooth_frames(3), fps_in=None)
    assert (
        sink.audio is None and "NOT RECORDED" in caplog.text and ".mp4, .mov or .mkv" in caplog.text
    )
    mjpeg = RecorderSink(tmp_path / "clip.mkv", codec="mjpg")
    mjpeg.take_audio_from(clip)  # MJPEG in .mkv is written by PyAV too: with the sound
    record(mjpeg, smooth_frames(3), fps_in=None)
    assert mjpeg.audio == "aac copied"
    with av.open(str(tmp_path / "clip.mkv")) as container:
        assert [s.codec_context.name for s in container.streams] == ["mjpeg", "aac"]
    silent = RecorderSink(tmp_path / "silent.mp4")
    silent.take_audio_from(tmp_path / "clip.avi")  # a file without sound: nothing to carry
    record(silent, smooth_frames(3), fps_in=None)
    assert silent.audio is None
