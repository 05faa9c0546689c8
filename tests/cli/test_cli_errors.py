"""Bad input at the command line: a one-line error naming what was wrong and the fix, a
non-zero exit, never a traceback; Ctrl-C and SIGTERM at any moment exit 130 / 143.

The table runs ``livecam.cli.main.main`` in process; signals are sent to child processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from cli_output import one_line_error
from conftest import missing
from recording_backend import RecordingStore
from waiting import poll

from livecam.app import App
from livecam.cli.main import main
from livecam.cli.signals import StopSignal
from livecam.config.schema import Config
from livecam.errors import as_livecam_error, format_error
from livecam.sinks import make_sink
from livecam.types import FramePacket, PlainStage

REPO = Path(__file__).resolve().parents[2]
FACE = REPO / "assets" / "grace_hopper.jpg"
LONG_NAME = "a" * 300  # longer than any file name the system allows (255)
#: a short, quiet run; a case's own options replace these
BASE = {"--source": "synthetic", "--size": "160x120", "--sink": "null", "--frames": "3"}
SMALL = [*(x for item in BASE.items() for x in item), "-q"]


@dataclass(frozen=True)
class Case:
    """A malformed command line: ``args(tmp)`` builds it; the error line must contain every
    one of ``says``."""

    name: str
    args: Callable[[Path], list[str]]
    says: tuple[str, ...]


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def sliver_png(tmp: Path) -> Path:
    """A 10000x10 picture: OpenCV's resize would assert on it inside the detector."""
    ok, data = cv2.imencode(".png", np.full((10, 10000, 3), 128, np.uint8))
    assert ok
    return write(tmp / "sliver.png", data.tobytes())


def damaged_png(tmp: Path) -> Path:
    """The face photo as a PNG with one changed bit in its pixel data: libpng prints its
    own error line when it refuses it."""
    face = cv2.imread(str(FACE))
    assert face is not None
    ok, data = cv2.imencode(".png", face)
    assert ok
    damaged = bytearray(data.tobytes())
    damaged[damaged.index(b"IDAT") + 200] ^= 0x01
    return write(tmp / "damaged.png", bytes(damaged))


def sound_only(tmp: Path) -> Path:
    """A second of AAC silence in an .m4a: a media file without a video stream."""
    path = tmp / "voice.m4a"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=48000)
        for n in range(48):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 48000, n * 1024
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def config(tmp: Path, text: str) -> list[str]:
    return ["--config", str(write(tmp / "c.toml", text.encode()))]


CASES = [
    # config files that are not config files
    Case("config is a folder", lambda t: ["--config", str(t)], ("is a folder",)),
    Case(
        "source is sound only",
        lambda t: ["--source", str(sound_only(t))],
        ("voice.m4a: it has no video stream (only sound: aac)",),
    ),
    # face photos the decoders or OpenCV choke on: LiveCam's line, never the library's
    Case("face photo 10000x10", lambda t: ["--face", str(sliver_png(t))], ("no face found",)),
    Case(
        "face photo damaged",
        lambda t: ["--face", str(damaged_png(t))],
        ("cannot decode image file", "damaged.png: IDAT: CRC error"),
    ),
    Case(
        "config is binary",
        lambda t: ["--config", str(write(t / "b.toml", bytes(range(256)) * 8))],
        ("binary file",),
    ),
    Case(
        "config is not UTF-8",
        lambda t: ["--config", str(write(t / "l.toml", b'[source]\nspec = "caf\xe9"\n'))],
        ("not UTF-8", "0xe9"),
    ),
    Case(
        "config with a BOM and a bad value",
        lambda t: ["--config", str(write(t / "bom.toml", b"\xef\xbb\xbf[source]\nfps = 0\n"))],
        ("bom.toml", "'source.fps'", "0"),
    ),
    Case("config is /dev/zero", lambda t: ["--config", "/dev/zero"], ("not a regular file",)),
    Case("config is missing", lambda t: ["--config", str(t / "nope.toml")], ("does not exist",)),
    Case("config is not TOML", lambda t: config(t, "[source\nfps = 3"), ("not valid TOML",)),
    Case("config name too long", lambda t: ["--config", LONG_NAME], ("File name too long",)),
    # config values: the error names the field
    Case("config fps 0", lambda t: config(t, "[source]\nfps = 0\n"), ("'source.fps'", "1 to 240")),
    Case(
        "config reopen 1e10",
        lambda t: config(t, "[source]\nreopen_interval_s = 1e10\n"),
        ("'source.reopen_interval_s'", "0.05 to 60"),
    ),
    Case(
        "config status 1e10",
        lambda t: config(t, "[run]\nstatus_interval_s = 1e10\n"),
        ("'run.status_interval_s'", "0.1 to 3600"),
    ),
    Case(
        "config unknown field",
        lambda t: config(t, "[source]\nfsp = 30\n"),
        ("unknown config field", "'fsp'"),
    ),
    # options: the error names the option as typed
    Case("fps 0", lambda t: ["--fps", "0"], ("--fps 0 is invalid", "1 to 240")),
    Case("fps 1e-300", lambda t: ["--fps", "1e-300"], ("--fps 1e-300 is invalid",)),
    Case("fps nan", lambda t: ["--fps", "nan"], ("--fps nan is invalid",)),
    Case("output fps 1e-10", lambda t: ["--output-fps", "1e-10"], ("--output-fps 1e-10",)),
    Case("odd size", lambda t: ["--size", "1281x720"], ("--size 1281x720 is invalid", "even")),
    Case("size text", lambda t: ["--size", "big"], ("argument --size", "1280x720")),
    Case("frames 0", lambda t: ["--frames", "0"], ("--frames 0 is invalid",)),
    Case("frames 1e10", lambda t: ["--frames", "10000000000"], ("--frames", "1000000000")),
    Case("fps word", lambda t: ["--fps", "fast"], ("argument --fps", "'fast'")),
    Case(
        "mouth mask 101",
        lambda t: ["--mouth-mask", "101"],
        ("--mouth-mask 101 is invalid", "an integer from 0 to 100"),
    ),
    Case("unknown swapper", lambda t: ["--swapper", "x"], ("argument --swapper", "'x'")),
    Case(
        "config unknown swapper",
        lambda t: config(t, '[swap]\nswapper = "x"\n'),
        ("'swap.neural.swapper'", "'inswapper-128'"),
    ),
    Case(
        "config unknown preset",
        lambda t: config(t, '[swap]\npreset = "fast"\n'),
        ("'swap.preset'", "'lite'", "'offline'", "'auto'"),
    ),
    Case(
        "a hidden knob that would be ignored",
        lambda t: ["--cuda-graph"],
        ("--cuda-graph applies only with the swap stage",),
    ),
    Case(
        "unknown option",
        lambda t: ["--fsp", "30"],
        ("unrecognized arguments: --fsp", "see `livecam run --help`"),
    ),
    Case(
        "neural preset, licences not accepted",
        lambda t: ["--face", str(FACE), "--preset", "standard"],
        ("licence not accepted for scrfd-10g", "non-commercial", "--accept-licence"),
    ),
    # options that would be ignored
    Case(
        "reference without select",
        lambda t: ["--face", str(FACE), "--reference", str(FACE)],
        ("--reference applies only with --select reference",),
    ),
    Case(
        "select reference without the photo",
        lambda t: ["--face", str(FACE), "--select", "reference"],
        ("the reference photo",),
    ),
    Case("stamp on a camera", lambda t: ["--source", "camera:0", "--stamp"], ("--stamp",)),
    Case(
        "face motion on a file",
        lambda t: ["--source", str(FACE), "--face-motion", str(FACE)],
        ("--face-motion applies only with --source synthetic",),
    ),
    Case("yunet without facebox", lambda t: ["--yunet", "x.onnx"], ("--stage facebox",)),
    Case(
        "overlap without a swap",
        lambda t: ["--overlap"],
        ("--overlap applies only with the swap stage",),
    ),
    Case(
        "config overlap not a bool",
        lambda t: config(t, '[pipeline]\noverlap = "yes"\n'),
        ("'pipeline.overlap'", "true or false (or leave the field out)"),
    ),
    Case(
        "face on passthrough",
        lambda t: ["--face", str(FACE), "--stage", "passthrough"],
        ("--face",),
    ),
    # files that are not what they should be
    Case("face is a folder", lambda t: ["--face", str(t)], ("--face", "is a folder")),
    Case("face is /dev/zero", lambda t: ["--face", "/dev/zero"], ("not a regular file",)),
    Case("face name too long", lambda t: ["--face", LONG_NAME], ("File name too long",)),
    Case("face is missing", lambda t: ["--face", str(t / "me.jpg")], ("does not exist",)),
    Case(
        "face is not an image",
        lambda t: ["--face", str(write(t / "me.jpg", b"not a jpeg"))],
        ("me.jpg",),
    ),
    Case(
        "reference is a folder",
        lambda t: ["--face", str(FACE), "--select", "reference", "--reference", str(t)],
        ("the reference photo", "is a folder"),
    ),
    Case(  # echoed cut at 200 characters, with its length (livecam.errors.cut)
        "source name too long",
        lambda t: ["--source", LONG_NAME],
        (f"source '{LONG_NAME[:199]}... (302 characters)",),
    ),
    Case("source is a folder", lambda t: ["--source", str(t)], ("not a regular file",)),
    Case(
        "yunet is garbage",
        lambda t: ["--stage", "facebox", "--yunet", str(write(t / "y.onnx", b"\x08garbage"))],
        ("y.onnx",),
    ),
    Case(
        "save config into a missing folder",
        lambda t: ["--save-config", str(t / "no" / "c.toml")],
        ("does not exist",),
    ),
    Case("unknown sink", lambda t: ["--sink", "nowhere.xyz"], ("nowhere.xyz",)),
    Case(
        "stats into a file's 'folder'",
        lambda t: ["--stats-json", "/dev/null/s.json"],
        ("--stats-json", "not a folder"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input_is_a_one_line_error(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """(What the process writes is read, so that a C library's own line would be seen.)"""
    args = case.args(tmp_path)
    base = [x for option, value in BASE.items() if option not in args for x in (option, value)]
    capfd.readouterr()
    code = main(["run", *base, "-q", *args])
    out, err = capfd.readouterr()
    line = one_line_error(err)
    assert code == 2, err
    for text in case.says:
        assert text in line, line
    assert not [t for t in threading.enumerate() if t.name.startswith("livecam-")]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--frames", "0"], "--frames 0 is invalid"),
        (["--frames", "-3"], "--frames -3 is invalid"),
        (["--output", "{tmp}"], "is not the name of a video file"),
        (["--output", "notes.txt"], "--output notes.txt is not the name of a video file"),
    ],
)
def test_bad_demo_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    argv = ["demo", "--no-window", *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert says in one_line_error(err) and out == "", "nothing announced, nothing run"


def test_a_wrong_model_for_yunet_is_named(
    testdata: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another real ONNX model (a landmarker) loads in OpenCV, then fails on its first
    frame: still one line, naming the file and the model to use."""
    model = testdata / "models" / "face_landmark.onnx"
    assert main(["run", *SMALL, "--stage", "facebox", "--yunet", str(model)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "face_landmark.onnx is not a YuNet 2023mar face detector" in line


def test_a_config_error_names_the_field_and_an_option_error_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = write(tmp_path / "c.toml", b"[source]\nfps = 300\n")
    assert main(["run", "--config", str(toml)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "'source.fps'" in line and "--fps" not in line and "c.toml" in line
    assert main(["run", "--fps", "300"]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert line.startswith("error: --fps 300 is invalid\n") and "source.fps" not in line


def test_a_config_field_that_would_be_ignored_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    toml = write(tmp_path / "c.toml", b'[source]\nstamp = true\nspec = "synthetic"\n')
    args = ["run", "--config", str(toml), "--size", "160x120", "--sink", "null", "-q"]
    assert main([*args, "--frames", "3"]) == 0
    assert "ignored" not in caplog.text  # stamp applies to the synthetic source
    assert main([*args, "--frames", "3", "--source", str(FACE)]) == 0
    assert "config field 'source.stamp' is ignored" in caplog.text
    assert "source.spec = 'synthetic'" in caplog.text


def test_auto_with_no_virtual_camera_and_no_display_does_not_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code = main(["run", *SMALL[:4], "--sink", "auto", "--vcam-backend", "no-such-backend"])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2
    assert "no virtual camera" in line and "no preview window" in line


def test_an_interrupted_start_closes_what_it_opened(vcam: RecordingStore) -> None:
    """Ctrl-C while a stage warms up (sinks already open): the virtual camera is closed,
    the stage too, and no thread is left."""

    class SlowStage(PlainStage):
        name, required, closed, providers = "slow", True, False, None

        def warmup(self, width: int, height: int) -> None:
            raise StopSignal(signal.SIGINT)  # what the CLI's handler raises

        def process(self, batch: list[FramePacket]) -> list[FramePacket]:
            return batch

        def close(self) -> None:
            self.closed = True

    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [160, 120]},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        }
    )
    stage = SlowStage()
    app = App(cfg, stages=[stage], sinks=[make_sink("virtualcam", cfg.output)])
    with pytest.raises(StopSignal):
        app.start()
    assert len(vcam.opened) == 1 and vcam.closed == 1, "the opened virtual camera is closed"
    assert stage.closed
    assert not [t for t in threading.enumerate() if t.name.startswith("livecam-")]


def test_a_signal_at_any_checkpoint_of_the_start_stops_it_and_closes_everything(
    vcam: RecordingStore,
) -> None:
    """The CLI's handler only records a signal; the start raises it at its next
    checkpoint. At every checkpoint of a real start in turn: the start stops with the
    signal, the opened virtual camera is closed and no thread is left."""
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [160, 120]},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        }
    )
    passed: list[int] = []
    app = App(cfg, sinks=[make_sink("virtualcam", cfg.output)])
    app.start(lambda: passed.append(len(passed)))
    app.stop()
    assert len(passed) >= 4, passed  # after the parts, the first frame, the sinks, threads
    for stop_at in range(len(passed)):
        calls: list[int] = []

        def checkpoint(stop_at: int = stop_at, calls: list[int] = calls) -> None:
            calls.append(1)
            if len(calls) > stop_at:
                raise StopSignal(signal.SIGTERM)

        opened_before, closed_before = len(vcam.opened), vcam.closed
        app = App(cfg, sinks=[make_sink("virtualcam", cfg.output)])
        with pytest.raises(StopSignal):
            app.start(checkpoint)
        opened = len(vcam.opened) - opened_before
        assert vcam.closed - closed_before == opened, f"checkpoint {stop_at}: left open"
        assert poll(
            lambda: not [t for t in threading.enumerate() if t.name.startswith("livecam-")], 10
        )


# ------------------------------------------------------------ signals (child processes)


def start(args: list[str], tmp: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LIVECAM_CACHE_DIR": str(tmp / "cache")}
    env.pop("DISPLAY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "livecam", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_line(proc: subprocess.Popen[str], text: str) -> list[str]:
    """Read stderr lines until one contains ``text``; the lines read."""
    assert proc.stderr is not None
    lines: list[str] = []
    while True:
        line = proc.stderr.readline()
        assert line, f"the process ended before {text!r}: {''.join(lines)}"
        lines.append(line)
        if text in line:
            return lines


def catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a SIGTERM handler (LiveCam's entry point installs one
    before it imports anything heavy)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(status.split("SigCgt:")[1].split()[0], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_modules_load_exits_cleanly(tmp_path: Path, signum: int) -> None:
    """The very first moment LiveCam's own code runs (numpy, OpenCV, Qt not imported yet)."""
    if not Path("/proc/self/status").is_file():
        missing("/proc (Linux), which tells when the process catches SIGTERM")
    proc = start(SMALL, tmp_path)
    try:
        while proc.poll() is None and not catches_sigterm(proc.pid):
            time.sleep(0.001)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and "frames in" not in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_stops_and_leaves_nothing(
    tmp_path: Path, testdata: Path, signum: int
) -> None:
    """While the source photo is analysed (a fresh cache: a group photo takes a second):
    the process stops at the start's next checkpoint with 130 / 143, before the stream
    runs, and writes no recording, no temporary file and no stats."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    photo = testdata / "faces" / "group_solvay_conference_1927.png"
    args = [
        *("--source", "synthetic", "--size", "320x240", "--face", str(photo)),
        *("--face-index", "0", "--sink", str(out_dir / "rec.mp4")),
        *("--stats-json", str(out_dir / "stats.json")),
    ]
    proc = start(args, tmp_path)
    try:
        wait_for_line(proc, "starting:")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert "livecam.app: running" not in err and "frames in" not in out, "stopped in the start"
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_running_stops_with_the_summary(tmp_path: Path, signum: int) -> None:
    proc = start(["--source", "synthetic", "--size", "160x120", "--sink", "null"], tmp_path)
    try:
        # the first status line: the run loop is going (App.start has returned), so the
        # signal comes mid-stream, not at the end of the start
        wait_for_line(proc, "latency p50/p99")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and "frames in" in out


def test_panel_help_says_what_the_panel_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["panel", "--help"]) == 0
    out = capsys.readouterr().out
    assert "The LiveCam desktop panel: a live preview" in out and "--verbose" in out


@pytest.fixture
def malformed_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The checkout's model manifest with its first entry's ``task`` broken, read in its
    place."""
    from livecam.models import manifest

    text = (REPO / "models" / "manifest.toml").read_text(encoding="utf-8")
    broken = text.replace('task = "detector"', 'task = "bogus"', 1)
    assert broken != text
    (tmp_path / "manifest.toml").write_text(broken, encoding="utf-8")
    monkeypatch.setattr(manifest, "CHECKOUT_MODELS", tmp_path)
    manifest.default_manifest.cache_clear()
    yield tmp_path / "manifest.toml"
    manifest.default_manifest.cache_clear()


def test_a_malformed_model_manifest_leaves_help_working_and_is_one_line(
    malformed_manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == 0
    assert main(["run", "--help"]) == 0
    assert "--swapper" in capsys.readouterr().out
    for command in (["models", "list"], ["run", *SMALL]):
        assert main(command) == 2
        line = one_line_error(capsys.readouterr().err)
        assert str(malformed_manifest) in line and ".task must be one of" in line, line
        assert "fix: correct models." in line, line


def test_an_opencv_error_is_said_in_one_line_without_its_source_path() -> None:
    with pytest.raises(cv2.error) as raised:
        cv2.resize(np.zeros((0, 5, 3), np.uint8), (3, 3))
    line = format_error(as_livecam_error(raised.value, "pipeline"))
    assert line.startswith(
        "error: pipeline: an image operation failed (OpenCV resize: assertion failed "
        "(!ssize.empty()))\n  fix: this is a bug in LiveCam"
    ), line
    assert "/io/opencv" not in line and ".cpp" not in line
