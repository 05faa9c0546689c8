"""Video files behave like files: `livecam run --source clip.mp4 --sink out.mp4` converts
every frame, with the clip's timing and sound, and ends; `--loop` and `--frames N`.
Recordings are read back with PyAV."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from fakes import PassStage, SlowStage
from framegen import psnr
from recording_backend import RecordingStore

from livecam.app import App
from livecam.cli.main import main as cli_main
from livecam.config.schema import Config
from livecam.sinks import NullSink, make_sinks
from livecam.sources import make_source
from livecam.stream.playback import Playback, plan_playback

CLIP = "openmpf_video_01_short_h264_aac.mp4"  # 31 frames at 29.97 fps, AAC sound


@dataclass
class Track:
    codec: str
    packets: int
    start_s: float
    end_s: float  # the last packet's end


@dataclass
class Media:
    frames: list[np.ndarray]
    frame_times_s: list[float]
    video: Track
    audio: Track | None


def span(packet: av.Packet) -> tuple[int, int]:
    """A packet's first and end timestamps (in its stream's time base)."""
    assert packet.pts is not None and packet.duration is not None
    return packet.pts, packet.pts + packet.duration


def probe(path: Path) -> Media:
    """Every video frame of ``path`` and the extent of each stream, from its packets."""
    tracks: dict[str, Track] = {}
    with av.open(str(path)) as container:
        for stream in (*container.streams.video[:1], *container.streams.audio[:1]):
            spans = [span(p) for p in container.demux(stream) if p.pts is not None]
            container.seek(0)
            assert stream.time_base is not None
            tb = Fraction(stream.time_base)
            tracks[stream.type] = Track(
                stream.codec_context.name,
                len(spans),
                float(min(start for start, _ in spans) * tb),
                float(max(end for _, end in spans) * tb),
            )
        pictures = list(container.decode(video=0))
    return Media(
        [p.to_ndarray(format="bgr24") for p in pictures],
        [float(p.time) for p in pictures],
        tracks["video"],
        tracks.get("audio"),
    )


@pytest.fixture(scope="module")
def clip(testdata: Path) -> Path:
    return testdata / "video" / CLIP


def test_a_clip_converts_to_the_same_frames_duration_and_sound(
    clip: Path, tmp_path: Path, testdata: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's one-liner: no --frames, --lossless or --unpaced to guess."""
    out = tmp_path / "out.mp4"
    face = testdata / "faces" / "obama_official_portrait_2012.jpg"
    code = cli_main(
        ["run", "--source", str(clip), "--sink", str(out), "--face", str(face), "--quiet"]
    )
    assert code == 0
    assert f"wrote {out}" in capsys.readouterr().out
    source, result = probe(clip), probe(out)
    assert len(result.frames) == len(source.frames) == 31
    assert result.frame_times_s == pytest.approx(source.frame_times_s, abs=0.002)
    assert result.video.end_s == pytest.approx(source.video.end_s - source.video.start_s, abs=0.002)
    assert result.video.codec == "h264"
    # the frames are the clip's, in order (the swap changes a face, not the scene)
    assert all(psnr(r, s) > 20 for r, s in zip(result.frames, source.frames))
    assert result.audio is not None and source.audio is not None
    assert result.audio.codec == "aac" and result.audio.packets >= source.audio.packets - 2
    assert result.audio.end_s == pytest.approx(result.video.end_s, abs=0.05)


def test_frames_n_converts_the_first_n_frames_and_cuts_the_sound_there(
    clip: Path, tmp_path: Path
) -> None:
    out = tmp_path / "first10.mkv"
    assert cli_main(["run", "--source", str(clip), "--sink", str(out), "--frames", "10", "-q"]) == 0
    result, source = probe(out), probe(clip)
    assert len(result.frames) == 10
    assert all(psnr(r, s) > 30 for r, s in zip(result.frames, source.frames))
    assert result.video.end_s == pytest.approx(10 * 1001 / 30000, abs=0.002)
    assert result.audio is not None and result.audio.end_s <= result.video.end_s + 0.025


def test_looping_runs_past_the_end_with_time_running_on(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "looped.mp4"
    argv = ["run", "--source", str(clip), "--loop", "--unpaced", "--lossless"]
    assert cli_main([*argv, "--frames", "40", "--sink", str(out), "-q"]) == 0
    result, source = probe(out), probe(clip)
    assert len(result.frames) == 40
    assert psnr(result.frames[31], source.frames[0]) > 30  # the second pass
    assert result.frame_times_s == pytest.approx([i * 1001 / 30000 for i in range(40)], abs=0.002)


def pcm_clip(tmp_path: Path) -> Path:
    """A second of 25 fps MJPEG with a PCM tone (a sound MP4 does not take)."""
    src = tmp_path / "pcm.mkv"
    with av.open(str(src), "w") as container:
        video = container.add_stream("mjpeg", rate=25)
        video.width, video.height, video.pix_fmt = 160, 120, "yuvj420p"
        sound = container.add_stream("pcm_s16le", rate=16000, layout="mono")
        for i in range(25):
            picture = av.VideoFrame.from_ndarray(np.full((120, 160, 3), 8 * i, np.uint8), "bgr24")
            picture.pts = i
            container.mux(video.encode(picture))
        tone = (np.sin(np.arange(16000) / 8) * 8000).astype(np.int16)
        for k in range(16):
            samples = av.AudioFrame.from_ndarray(
                tone[None, k * 1000 : (k + 1) * 1000], format="s16", layout="mono"
            )
            samples.sample_rate, samples.pts = 16000, k * 1000
            container.mux(sound.encode(samples))
        container.mux(video.encode(None))
        container.mux(sound.encode(None))
    return src


def test_a_transcoded_sound_keeps_its_length(tmp_path: Path) -> None:
    """A sound codec the container does not take (PCM in MP4) is transcoded to AAC."""
    src = pcm_clip(tmp_path)
    out = tmp_path / "out.mp4"
    assert cli_main(["run", "--source", str(src), "--sink", str(out), "-q"]) == 0
    result = probe(out)
    assert len(result.frames) == 25
    assert result.audio is not None and result.audio.codec == "aac"
    assert result.audio.end_s == pytest.approx(1.0, abs=0.07)


def vfr_clip(tmp_path: Path) -> tuple[Path, list[float]]:
    """40 frames of H.264 at strongly varying intervals (5 ms to 200 ms, as a screen
    recording or a phone's clip has them), and those times."""
    path = tmp_path / "vfr.mp4"
    steps = [0.005, 0.2, 0.011, 0.033, 0.1, 0.05, 0.007, 0.15]
    times = [round(sum(steps[k % len(steps)] for k in range(i)), 3) for i in range(40)]
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=30)
        video.width, video.height, video.pix_fmt = 160, 120, "yuv420p"
        video.time_base = video.codec_context.time_base = Fraction(1, 90000)
        for i, t in enumerate(times):
            picture = av.VideoFrame.from_ndarray(np.full((120, 160, 3), 6 * i, np.uint8), "bgr24")
            picture.pts = round(t * 90000)
            container.mux(video.encode(picture))
        container.mux(video.encode(None))
    return path, times


def test_a_variable_frame_rate_clip_keeps_every_frame_at_its_own_time(tmp_path: Path) -> None:
    """Its frame times are decoded: each is the source's, to the 1/90000 s tick (they were
    put on the grid of the average rate, and frames sharing a period were left out)."""
    src, times = vfr_clip(tmp_path)
    assert probe(src).frame_times_s == pytest.approx(times, abs=1e-4)
    out = tmp_path / "out.mp4"
    assert cli_main(["run", "--source", str(src), "--sink", str(out), "-q"]) == 0
    result = probe(out)
    assert result.frame_times_s == pytest.approx(times, abs=1 / 90000), result.frame_times_s


@pytest.mark.parametrize("suffix", [".mov", ".mp4"])
def test_the_sound_leaves_every_frame_on_its_time(
    clip: Path, testdata: Path, tmp_path: Path, suffix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The frame times are decoded. An AAC encoder's priming samples once moved every frame
    after the first by 23.2 ms (a transcoded sound: PCM into .mp4, Opus into .mov, and
    AAC into .mov, which was transcoded too)."""
    copied = clip, "sound aac copied"
    if suffix == ".mov":  # a .mov takes AAC and PCM as they are, not Opus
        transcoded = (
            testdata / "video" / "openmpf_video_01_short_vp8_opus.webm",
            "sound opus as AAC",
        )
    else:
        transcoded = pcm_clip(tmp_path), "sound pcm_s16le as AAC"
    for src, sound in (copied, transcoded):
        out = tmp_path / f"{src.stem}{suffix}"
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="livecam.sinks.recording.video"):
            argv = ["run", "--source", str(src), "--sink", str(out), "--frames", "12", "-q"]
            assert cli_main(argv) == 0
        assert sound in caplog.text, caplog.text
        result, source = probe(out), probe(src)
        assert result.audio is not None and result.audio.codec == "aac"
        start = source.frame_times_s[0]
        want = [t - start for t in source.frame_times_s[:12]]
        assert result.frame_times_s == pytest.approx(want, abs=0.001), (out, result.frame_times_s)


@pytest.mark.parametrize(
    ("sinks", "source", "want"),
    [
        (["out.mp4", "null"], {}, Playback(paced=False, lossless=True, conversion=True)),
        (["virtualcam"], {}, Playback(paced=True, lossless=False, conversion=False)),
        (["out.mp4", "window"], {}, Playback(paced=True, lossless=False, conversion=False)),
        (["out.mp4"], {"unpaced": False}, Playback(paced=True, lossless=False, conversion=False)),
        (["virtualcam"], {"unpaced": True}, Playback(paced=False, lossless=True, conversion=True)),
        (["out.mp4"], {"loop": True}, Playback(paced=True, lossless=False, conversion=False)),
    ],
    ids=["files", "virtualcam", "window", "realtime", "unpaced", "loop"],
)
def test_a_video_file_into_files_is_a_conversion_else_it_plays_in_real_time(
    clip: Path, sinks: list[str], source: dict[str, object], want: Playback
) -> None:
    cfg = Config.from_dict({"source": {"spec": str(clip), **source}, "output": {"sinks": sinks}})
    assert (
        plan_playback(cfg, make_source(cfg.source), make_sinks(cfg.output.sinks, cfg.output))
        == want
    )


def test_other_sources_stay_real_time_unless_unpaced() -> None:
    cfg = Config.from_dict({"source": {"spec": "synthetic"}, "output": {"sinks": ["out.mp4"]}})
    live = plan_playback(cfg, make_source(cfg.source), make_sinks(cfg.output.sinks, cfg.output))
    assert live == Playback(paced=True, lossless=False, conversion=False)
    fast = cfg.with_section("source", unpaced=True)
    assert plan_playback(fast, make_source(fast.source), []) == Playback(False, False, False)


@pytest.mark.parametrize("lossless", [False, True], ids=["live", "lossless"])
def test_frames_n_delivers_n_frames_even_after_a_slow_warmup(lossless: bool) -> None:
    """Frames after the first are captured only once the pipeline runs, so none is
    captured during the warm-up and dropped as stale (it was N-1 delivered, 1 dropped)."""
    cfg = Config.from_dict(
        {
            # 10 fps: 100 ms a frame leaves a loaded machine room to keep up live, and the
            # 0.4 s warm-up still spans 4 frame periods where a stale frame could be taken
            "source": {"spec": "synthetic", "size": [160, 120], "fps": 10},
            "buffer": {"lossless": lossless},
            "output": {"sinks": ["null"]},
            "run": {"frames": 20},
        }
    )
    sink = NullSink()
    app = App(cfg, stages=[SlowStage(warmup_s=0.4)], sinks=[sink])
    app.start()
    assert app.wait(30)
    assert app.stop() == []
    snap = app.snapshot()
    assert (snap.frames_in, snap.frames_out, snap.dropped) == (20, 20, 0)
    assert sink.frames == 20


def test_stop_while_waiting_for_the_go_ends_the_capture_thread() -> None:
    """A start-up that fails after the first frame stops the capture thread it started."""
    cfg = Config.from_dict(
        {"source": {"spec": "synthetic", "size": [160, 120]}, "output": {"sinks": ["null"]}}
    )
    before = {t.name for t in threading.enumerate()}

    class FailingWarmup(PassStage):
        def warmup(self, width: int, height: int) -> None:
            raise RuntimeError("no model")

    with pytest.raises(Exception, match="no model"):
        App(cfg, stages=[FailingWarmup()]).start()
    assert not {t.name for t in threading.enumerate()} - before


def test_a_damaged_clip_on_a_loop_is_reported_once_without_ffmpeg_noise(
    testdata: Path, tmp_path: Path
) -> None:
    """Each pass over a half-written file makes FFmpeg complain; LiveCam says it once, in
    its own words, and FFmpeg's messages stay off the terminal (they come back with -v)."""
    half = tmp_path / "half.mp4"
    half.write_bytes((testdata / "video" / "openmpf_video_01.mp4").read_bytes()[:200_000])
    argv = [sys.executable, "-m", "livecam", "run", "--source", str(half), "--loop"]
    argv += ["--unpaced", "--lossless", "--frames", "150", "--sink", "null"]
    env = {k: v for k, v in os.environ.items() if k != "OPENCV_FFMPEG_LOGLEVEL"}  # LiveCam's
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "truncated or damaged" in line]
    assert len(warnings) == 1 and "half.mp4" in warnings[0]
    assert "@ 0x" not in run.stderr, "no FFmpeg message"
    loud = subprocess.run([*argv, "-v"], capture_output=True, text=True, timeout=120, env=env)
    assert "@ 0x" in loud.stderr, "FFmpeg's own messages with -v"


def test_a_clip_played_into_a_virtual_camera_ends_by_itself_on_its_last_frame(
    clip: Path, vcam: RecordingStore
) -> None:
    """A virtual camera among the sinks: the clip plays at its own speed, once."""
    argv = ["run", "--source", str(clip), "--sink", "virtualcam", "--vcam-backend", vcam.name]
    assert cli_main([*argv, "-q"]) == 0  # no --frames: the end of the clip ends the run
    source = probe(clip)
    assert vcam.opened[0]["fps"] == pytest.approx(30000 / 1001)
    assert psnr(vcam.frames[-1].frame, source.frames[-1]) > 30
    assert vcam.closed == 1


def test_a_clip_played_in_real_time_is_recorded_without_sound_and_says_so(
    clip: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "rt.mp4"
    cfg = Config.from_dict(
        {"source": {"spec": str(clip), "unpaced": False}, "output": {"sinks": [str(out)]}}
    )
    app = App(cfg)
    with caplog.at_level("WARNING", logger="livecam.app"):
        app.start()
        assert app.wait(30)
    assert app.stop() == []
    assert f"the sound of {clip} is not recorded" in caplog.text
    assert probe(out).audio is None


def test_a_still_photo_into_still_files_is_one_frame(tmp_path: Path) -> None:
    """A photo into a still file is one frame: written, and the run ends (it ran until
    Ctrl-C). With another output (a window, a camera, null) it runs until stopped."""
    photo = Path(__file__).resolve().parents[2] / "assets" / "grace_hopper.jpg"
    still = tmp_path / "still.jpg"
    cfg = Config.from_dict({"source": {"spec": str(photo)}, "output": {"sinks": [str(still)]}})
    source = make_source(cfg.source)
    assert plan_playback(cfg, source, make_sinks(cfg.output.sinks, cfg.output)).frames == 1
    both = cfg.with_section("output", sinks=(str(still), "null"))
    assert plan_playback(both, source, make_sinks(both.output.sinks, both.output)).frames is None
    done = subprocess.run(
        [sys.executable, "-m", "livecam", "run", "--source", str(photo), "--sink", str(still)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,  # a run that never ends fails here
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {still}" in done.stdout and cv2.imread(str(still)) is not None
