"""Frame sources on real inputs: OpenCV on real video files, mss on an Xvfb display started
here, synthetic frames, pixel time stamps, and ``make_source`` parsing.

Image-file conversion of every kind is in test_image_inputs.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import http.server
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import cv2
import numpy as np
import pytest
from conftest import missing
from face_helpers import lite_detector
from waiting import poll

from livecam.config.schema import SourceConfig
from livecam.config.specs import SourceKind
from livecam.errors import SourceError
from livecam.sources import (
    SOURCES,
    CameraSource,
    ImageSource,
    ScreenSource,
    SyntheticSource,
    VideoSource,
    list_cameras,
    load_image_bgr,
    make_source,
)
from livecam.sources.base import EndOfStream
from livecam.sources.camera import camera_api, camera_hint
from livecam.sources.synthetic.pattern import MOTION_PERIOD, head_motion
from livecam.sources.synthetic.stamp import HEIGHT, WIDTH, read_stamp, write_stamp
from livecam.types import Frame, FrameContext, validate_frame


def _bgr(img: object) -> Frame:
    """An OpenCV result as a typed frame (asserts it is one)."""
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8
    return np.ascontiguousarray(img)


# ---------------------------------------------------------------- camera path (OpenCV)


@pytest.fixture(scope="module")
def video01(testdata: Path) -> Path:
    return testdata / "video" / "openmpf_video_01.mp4"


def test_every_source_kind_has_a_factory() -> None:
    """Every kind a spec can name (``SourceSpec.kind``) is made by one registry entry."""
    assert set(SOURCES) == set(get_args(SourceKind))
    made = make_source(SourceConfig(spec="synthetic", size=(64, 48)))
    assert isinstance(made, SyntheticSource)


def test_camera_path_reads_a_video_file_and_replays_it(video01: Path) -> None:
    cam = CameraSource(str(video01), SourceConfig(spec="camera", fps=5.0))
    assert cam.self_paced
    cam.open()
    try:
        assert cam.fps == pytest.approx(29.97, abs=0.01)  # the stream's rate, not cfg.fps
        frames = [cam.read() for _ in range(92)]
    finally:
        cam.close()
    for f in frames:
        validate_frame(f, "camera")
        assert f.shape == (480, 640, 3)
    assert not np.array_equal(frames[0], frames[45])  # real decoded motion
    # 90 frames in the file: frame 90 is the first frame again (an endless "camera")
    np.testing.assert_array_equal(frames[90], frames[0])
    np.testing.assert_array_equal(frames[91], frames[1])


def test_camera_path_resizes_to_requested_size(video01: Path) -> None:
    cam = CameraSource(video01, SourceConfig(spec="camera", size=(320, 180)))
    cam.open()
    try:
        frame = cam.read()
    finally:
        cam.close()
    validate_frame(frame, "camera")
    assert frame.shape == (180, 320, 3)


def test_camera_that_disappears_raises_with_hint(video01: Path, tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    shutil.copy(video01, clip)
    cam = CameraSource(str(clip))
    cam.open()
    clip.unlink()  # the device goes away while streaming
    with pytest.raises(SourceError) as err:
        for _ in range(200):
            cam.read()
    assert "clip.mp4" in err.value.message and err.value.hint
    cam.close()
    cam.close()  # twice is fine


def test_missing_camera_index_fails_with_hint() -> None:
    with pytest.raises(SourceError) as err:
        CameraSource(97).open()
    assert "camera 97" in err.value.message
    assert "livecam doctor" in err.value.hint and "close other apps" in err.value.hint
    if sys.platform.startswith("linux"):
        assert "/dev/video" in err.value.hint


def test_camera_backend_per_os() -> None:
    assert camera_api("auto", "win32") == cv2.CAP_DSHOW
    assert camera_api("auto", "darwin") == cv2.CAP_AVFOUNDATION
    assert camera_api("auto", "linux") == cv2.CAP_V4L2
    assert camera_api("msmf", "linux") == cv2.CAP_MSMF
    assert camera_api("gstreamer") == cv2.CAP_GSTREAMER
    with pytest.raises(SourceError):
        camera_api("quicktime")
    assert "Privacy" in camera_hint(0, "win32") and "Privacy" in camera_hint(0, "darwin")
    assert "/dev/video" in camera_hint(0, "linux")


def test_list_cameras_without_devices() -> None:
    found = list_cameras(5)
    for cam in found:
        assert {"index", "backend", "width", "height", "fps"} <= cam.keys()
    if sys.platform.startswith("linux") and not list(Path("/dev").glob("video*")):
        assert found == []


def test_close_from_another_thread_while_reading(video01: Path) -> None:
    cam = CameraSource(str(video01))
    cam.open()
    errors: list[SourceError] = []
    reads = 0
    stop = threading.Event()

    def loop() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                cam.read()
                reads += 1
            except SourceError as e:  # closed under us: the contract is a typed error
                errors.append(e)
                return

    t = threading.Thread(target=loop)
    t.start()
    assert poll(lambda: reads > 0), "the reader runs"
    cam.close()
    t.join(timeout=5)
    stop.set()
    t.join(timeout=5)
    assert not t.is_alive()
    assert reads > 0
    assert len(errors) == 1 and "not open" in errors[0].message


# ---------------------------------------------------------------- streams: URLs, FIFOs


def join_blocked_opens() -> None:
    """Wait for the helper threads of opens that were given up on to end (the test has
    just unblocked them), so no thread outlives its test."""
    for thread in threading.enumerate():
        if thread.name == "livecam-source-open":
            thread.join(15)
            assert not thread.is_alive(), "a blocked open did not end once unblocked"


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A named pipe; whatever still waits to open it for reading is released at the end."""
    path = tmp_path / "camera.fifo"
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):  # a reader still blocked in open(): let it go
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    join_blocked_opens()


def test_a_fifo_is_read_as_a_stream(fifo: Path, testdata: Path) -> None:
    """Another program (here a thread) writes a WebM stream into the FIFO."""
    data = (testdata / "video" / "openmpf_video_01_short_vp8_opus.webm").read_bytes()

    def write() -> None:
        with open(fifo, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    src = make_source(SourceConfig(spec=str(fifo)))
    assert isinstance(src, CameraSource) and src.opens_may_block and not src.is_device
    src.open()
    try:
        frames = [src.read() for _ in range(10)]
    finally:
        src.close()
    writer.join(10)
    assert all(f.shape == (480, 640, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[9])


def test_a_fifo_nobody_writes_to_fails_to_open_instead_of_hanging(fifo: Path) -> None:
    src = make_source(SourceConfig(spec=str(fifo)))
    assert isinstance(src, CameraSource)
    src.open_timeout_s = 0.3
    with pytest.raises(SourceError) as err:
        src.open()
    assert "did not open within 0.3 s" in err.value.message and str(fifo) in err.value.message
    assert "FIFO" in err.value.message and "VLC" in err.value.hint
    with pytest.raises(SourceError, match="did not open"):
        src.open()  # a retry waits for the same attempt, it does not start another
    assert sum(t.name == "livecam-source-open" for t in threading.enumerate()) == 1


@pytest.fixture
def hung_server() -> Iterator[str]:
    """A network camera that accepts connections and never answers: its http:// URL."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/camera.mjpg"
    done.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    server.close()
    join_blocked_opens()


def test_a_hung_network_camera_fails_to_open_instead_of_hanging(hung_server: str) -> None:
    src = make_source(SourceConfig(spec=hung_server))
    assert isinstance(src, CameraSource) and src.device == hung_server
    src.open_timeout_s = 0.5
    with pytest.raises(SourceError) as err:
        src.open()
    assert hung_server in err.value.message and "did not open within" in err.value.message


@pytest.fixture
def http_video(testdata: Path) -> Iterator[str]:
    """The test videos served over HTTP on localhost: the URL of the WebM clip."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None: ...

    handler = functools.partial(Quiet, directory=str(testdata / "video"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/openmpf_video_01_short_vp8_opus.webm"
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_a_stream_url_is_read(http_video: str) -> None:
    src = make_source(SourceConfig(spec=http_video))
    assert isinstance(src, CameraSource)
    src.open()
    try:
        frames = [src.read() for _ in range(5)]
    finally:
        src.close()
    assert all(f.shape == (480, 640, 3) and f.std() > 10 for f in frames)


def test_ctrl_c_while_a_source_blocks_on_open_stops_at_once(fifo: Path) -> None:
    """The source's open is stuck (a FIFO nobody writes to): Ctrl-C still ends LiveCam
    with the shell's status for it, and no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "livecam", "run", "--source", str(fifo), "--sink", "null"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # wait until the run is starting
        lines.append(line)
        if "starting" in line:
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=30)
    err = "".join(lines) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err


# ---------------------------------------------------------------- video files


def read_all(src: VideoSource, limit: int = 10_000) -> tuple[list[Frame], list[int | None]]:
    """Every frame ``src`` delivers until EndOfStream (at most ``limit``), with its file
    timestamp."""
    frames: list[Frame] = []
    times: list[int | None] = []
    src.open()
    try:
        while len(frames) < limit:
            try:
                frames.append(src.read())
            except EndOfStream:
                break
            times.append(src.media_ns)
    finally:
        src.close()
    return frames, times


def test_video_file_plays_once_with_its_timestamps(video01: Path) -> None:
    src = make_source(SourceConfig(spec=str(video01), fps=5.0))
    assert isinstance(src, VideoSource) and not src.self_paced
    assert src.finite and src.media_path == video01
    frames, times = read_all(src)
    assert src.fps == pytest.approx(30000 / 1001, rel=1e-4)  # from the file
    assert src.frame_count == 90 == len(frames)
    for f in frames:
        validate_frame(f, "video")
    assert not np.array_equal(frames[1], frames[0])
    assert times == pytest.approx([round(i * 1001 / 30000 * 1e9) for i in range(90)], abs=1e6)
    assert src.take_notices() == []


def test_looped_video_plays_again_and_its_time_runs_on(video01: Path) -> None:
    src = VideoSource(video01, SourceConfig(spec=str(video01), loop=True))
    assert not src.finite and src.frame_count is None
    frames, times = read_all(src, limit=92)
    np.testing.assert_array_equal(frames[90], frames[0])
    np.testing.assert_array_equal(frames[91], frames[1])
    period_ns = 1001 / 30000 * 1e9
    assert times[90] == pytest.approx(90 * period_ns, abs=1e6), "the second pass goes on"
    stamps = [t for t in times if t is not None]
    assert len(stamps) == len(times) and all(b > a for a, b in zip(stamps, stamps[1:]))


def test_animated_gif_plays_once_with_its_own_frame_times(testdata: Path) -> None:
    src = VideoSource(testdata / "video" / "face_morphing.gif")
    frames, times = read_all(src)
    assert src.fps == pytest.approx(8.33, abs=0.01)
    assert len(frames) == 29 == src.frame_count
    assert frames[0].shape == (400, 308, 3)
    assert times[:3] == [0, 300_000_000, 450_000_000]  # a GIF's frames last unequal times


def test_a_portrait_clip_is_fitted_whole_into_a_wide_size(
    testdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gif = testdata / "video" / "face_morphing.gif"  # 308x400: at 640x360, cropping cut the face
    src = VideoSource(gif, SourceConfig(spec=str(gif), size=(640, 360)))
    with caplog.at_level(logging.INFO, logger="livecam.sources.video"):
        src.open()
    try:
        frame = src.read()
    finally:
        src.close()
    assert frame.shape == (360, 640, 3)
    first = cv2.VideoCapture(str(gif)).read()[1]
    width = round(308 * 360 / 400)  # the whole height kept, bars at the sides
    x0 = (640 - width) // 2
    whole = cv2.resize(first, (width, 360), interpolation=cv2.INTER_AREA)
    assert np.abs(frame[:, x0 : x0 + width].astype(int) - whole).max() <= 1
    assert frame[:, : x0 - 1].mean() < whole.mean() / 1.5  # darkened bars, not the picture
    (face,) = lite_detector().detect([FrameContext(frame)])[0]
    top, bottom = face.bbox[1], face.bbox[3]  # the face found whole: forehead to chin
    assert top > 0 and bottom - top < 360 * 0.7, face.bbox
    assert "is 308x400: fitted whole into 640x360 with bars at its sides" in caplog.text


def test_a_half_truncated_video_is_reported_once(video01: Path, tmp_path: Path) -> None:
    """The file's header promises 90 frames, its data ends after about 38: the source
    plays what is there and says once that the file is damaged, also when looping."""
    half = tmp_path / "half.mp4"
    half.write_bytes(video01.read_bytes()[:200_000])
    once, _ = read_all(VideoSource(half))
    assert 0 < len(once) < 60
    looped = VideoSource(half, SourceConfig(spec=str(half), loop=True))
    looped.open()
    notices = []
    try:
        for _ in range(3 * len(once) + 1):
            looped.read()
            notices += looped.take_notices()
    finally:
        looped.close()
    assert len(notices) == 1
    assert "half.mp4" in notices[0].message and f"after {len(once)} of 90" in notices[0].message
    assert "truncated" in notices[0].message and "re-encode" in notices[0].hint


@pytest.mark.parametrize(
    "name",
    ["openmpf_video_01_short_h265_aac.mp4", "openmpf_video_01_short_vp8_opus.webm"],
)
def test_video_codecs(testdata: Path, name: str) -> None:
    src = VideoSource(testdata / "video" / name, SourceConfig(spec="x", size=(320, 240)))
    src.open()
    try:
        frame = src.read()
    finally:
        src.close()
    validate_frame(frame, name)
    assert frame.shape == (240, 320, 3)
    assert frame.std() > 10  # real picture, not a blank frame


def test_corrupt_or_truncated_video_raises_naming_the_file(video01: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 50_000, np.uint8).tobytes())
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(video01.read_bytes()[:3000])
    for path in (garbage, truncated):
        with pytest.raises(SourceError) as err:
            VideoSource(path).open()
        assert path.name in err.value.message and "re-encode" in err.value.hint


# ---------------------------------------------------------------- screen (mss on Xvfb)


class _X11:
    """Paint the root window of an X display through libX11 (known pixels to capture)."""

    def __init__(self, display: str) -> None:
        lib = ctypes.util.find_library("X11")
        if lib is None:
            missing("libX11 (apt-get install libx11-6): it draws on the Xvfb display")
        x = ctypes.CDLL(lib)
        x.XOpenDisplay.restype = ctypes.c_void_p
        x.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x.XDefaultRootWindow.restype = ctypes.c_ulong
        x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x.XDefaultScreen.argtypes = [ctypes.c_void_p]
        x.XDefaultGC.restype = ctypes.c_void_p
        x.XDefaultGC.argtypes = [ctypes.c_void_p, ctypes.c_int]
        x.XSetWindowBackground.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
        x.XClearWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        x.XSetForeground.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]
        x.XFillRectangle.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
        x.XFillRectangle.argtypes += [ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint]
        x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        x.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self.x = x
        self.dpy = x.XOpenDisplay(display.encode())
        assert self.dpy, f"cannot open X display {display}"
        self.root = x.XDefaultRootWindow(self.dpy)
        self.gc = x.XDefaultGC(self.dpy, x.XDefaultScreen(self.dpy))

    def paint(self, background: int, rect: tuple[int, int, int, int], colour: int) -> None:
        self.x.XSetWindowBackground(self.dpy, self.root, background)
        self.x.XClearWindow(self.dpy, self.root)
        self.x.XSetForeground(self.dpy, self.gc, colour)
        self.x.XFillRectangle(self.dpy, self.root, self.gc, *rect)
        self.x.XSync(self.dpy, 0)

    def close(self) -> None:
        self.x.XCloseDisplay(self.dpy)


BG_BGR = (0xCC, 0x66, 0x33)  # root background 0x3366CC (RGB)
RECT = (100, 50, 200, 100)  # x, y, w, h
RECT_BGR = (0x00, 0x80, 0xFF)  # 0xFF8000


@pytest.fixture()
def display(xvfb: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("DISPLAY", xvfb)
    painter = _X11(xvfb)
    painter.paint(0x3366CC, RECT, 0xFF8000)
    yield xvfb
    painter.close()


def _grab(spec: str, size: tuple[int, int] | None = None) -> np.ndarray:
    src = make_source(SourceConfig(spec=spec, size=size))
    assert isinstance(src, ScreenSource) and not src.self_paced
    src.open()
    try:
        frame = src.read()
        validate_frame(frame, spec)
        return frame
    finally:
        src.close()


def test_screen_full_monitor(display: str) -> None:
    frame = _grab("screen")
    assert frame.shape == (480, 640, 3)
    assert tuple(frame[10, 10]) == BG_BGR
    assert tuple(frame[479, 639]) == BG_BGR
    x, y, w, h = RECT
    assert tuple(frame[y + h // 2, x + w // 2]) == RECT_BGR
    assert tuple(frame[y + h + 1, x]) == BG_BGR


def test_screen_region_captures_exactly_that_area(display: str) -> None:
    x, y, w, h = RECT
    frame = _grab(f"screen:{x},{y},{w},{h}")
    assert frame.shape == (h, w, 3)
    assert np.all(frame == np.array(RECT_BGR, np.uint8))
    # a region straddling the rectangle's top-left corner: both colours where expected
    edge = _grab(f"screen:{x - 10},{y - 10},20,20")
    assert tuple(edge[0, 0]) == BG_BGR and tuple(edge[15, 15]) == RECT_BGR


def test_screen_odd_region_and_requested_size(display: str) -> None:
    assert _grab("screen:10,10,101,51").shape == (50, 100, 3)
    assert _grab("screen:1", size=(320, 240)).shape == (240, 320, 3)
    assert _grab("screen:0").shape == (480, 640, 3)  # all monitors


@pytest.mark.parametrize("spec", ["screen:600,400,100,100", "screen:-5,0,50,50", "screen:3"])
def test_screen_out_of_range_says_what_exists(display: str, spec: str) -> None:
    with pytest.raises(SourceError) as err:
        make_source(SourceConfig(spec=spec)).open()
    assert "1: 640x480 at (0,0)" in err.value.message and err.value.hint


def test_screen_without_display(monkeypatch: pytest.MonkeyPatch) -> None:
    if not sys.platform.startswith("linux"):
        missing("Linux (DISPLAY is X11-only)")
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(SourceError) as err:
        ScreenSource().open()
    assert "DISPLAY" in err.value.message and "Xvfb" in err.value.hint


# ---------------------------------------------------------------- synthetic


def test_synthetic_pattern_moves_and_is_deterministic() -> None:
    src = make_source(SourceConfig(spec="synthetic"))
    assert isinstance(src, SyntheticSource)
    src.open()
    frames = [src.read() for _ in range(5)]
    assert src.frame_index == 4
    for f in frames:
        validate_frame(f, "synthetic")
        assert f.shape == (720, 1280, 3)
    for a, b in zip(frames, frames[1:], strict=False):
        assert not np.array_equal(a, b)
    np.testing.assert_array_equal(src.render(3), frames[3])
    src.close()
    small = SyntheticSource(SourceConfig(spec="synthetic", size=(320, 240)))
    small.open()
    assert small.read().shape == (240, 320, 3)


@pytest.fixture(scope="module")
def portrait(testdata: Path) -> Path:
    return testdata / "faces" / "obama_official_portrait_2012.jpg"  # 910x1137


def _rotation_between(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(angle in degrees, scale) of the similarity transform mapping a onto b (ORB)."""
    orb = cv2.ORB.create(2000)
    ka, da = orb.detectAndCompute(cv2.cvtColor(a, cv2.COLOR_BGR2GRAY), None)
    kb, db = orb.detectAndCompute(cv2.cvtColor(b, cv2.COLOR_BGR2GRAY), None)
    matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(da, db)
    pa = np.array([ka[m.queryIdx].pt for m in matches], dtype=np.float32)
    pb = np.array([kb[m.trainIdx].pt for m in matches], dtype=np.float32)
    m, _ = cv2.estimateAffinePartial2D(pa, pb, method=cv2.RANSAC)
    return math.degrees(math.atan2(-m[1, 0], m[0, 0])), math.hypot(m[0, 0], m[1, 0])


def test_face_motion_is_deterministic_smooth_and_periodic(portrait: Path) -> None:
    cfg = SourceConfig(spec="synthetic", face_motion=str(portrait))
    one, two = SyntheticSource(cfg), SyntheticSource(cfg)
    one.open()
    two.open()
    first = [one.read() for _ in range(3)]
    assert first[0].shape == (1136, 910, 3)  # the portrait's size made even
    np.testing.assert_array_equal(first[2], two.render(2))  # same index, same pixels
    np.testing.assert_array_equal(one.render(MOTION_PERIOD + 7), two.render(7))
    assert not np.array_equal(first[0], first[1])
    # the geometry between two frames is the motion the model says (rotation and scale)
    a0, s0, _, _ = head_motion(0)
    a1, s1, _, _ = head_motion(40)
    angle, scale = _rotation_between(one.render(0), one.render(40))
    assert angle == pytest.approx(a1 - a0, abs=0.4)
    assert scale == pytest.approx(s1 / s0, abs=0.01)
    # bounded, smooth motion over a whole period
    poses = np.array([head_motion(i) for i in range(MOTION_PERIOD)])
    assert np.abs(poses[:, 0]).max() <= 6.0 and np.abs(poses[:, 1] - 1).max() <= 0.05
    assert np.abs(np.diff(poses[:, 0])).max() < 0.5  # < 0.5 degree per frame


def test_face_motion_at_requested_size(portrait: Path) -> None:
    src = SyntheticSource(
        SourceConfig(spec="synthetic", face_motion=str(portrait), size=(640, 360))
    )
    src.open()
    frame = src.read()
    validate_frame(frame, "synthetic")
    assert frame.shape == (360, 640, 3)


# ---------------------------------------------------------------- stamps


def test_stamp_round_trips_and_survives_jpeg(portrait: Path) -> None:
    rng = np.random.default_rng(1)
    frame = _bgr(cv2.resize(load_image_bgr(portrait), (640, 480)))
    for value in [0, 1, time.perf_counter_ns(), 2**64 - 1, int(rng.integers(0, 2**63))]:
        write_stamp(frame, value)
        assert read_stamp(frame) == value
        ok, jpeg = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 90])
        assert ok
        assert read_stamp(_bgr(cv2.imdecode(jpeg, cv2.IMREAD_COLOR))) == value
    clean = _bgr(cv2.resize(load_image_bgr(portrait), (640, 480)))
    np.testing.assert_array_equal(frame[HEIGHT:], clean[HEIGHT:])  # only the strip changes
    np.testing.assert_array_equal(frame[:, WIDTH:], clean[:, WIDTH:])
    flipped = frame.copy()
    flipped[0:8, 12 * 8 : 13 * 8] ^= 255  # one payload bit inverted
    assert read_stamp(flipped) is None  # the CRC catches it


def test_unstamped_frames_read_none(testdata: Path) -> None:
    pattern = SyntheticSource(SourceConfig(spec="synthetic", size=(640, 360)))
    pattern.open()
    frames = [
        np.zeros((480, 640, 3), np.uint8),
        np.full((480, 640, 3), 255, np.uint8),
        np.zeros((20, 20, 3), np.uint8),
        pattern.read(),
    ] + [load_image_bgr(p) for p in sorted((testdata / "faces").glob("*.jpg"))]
    for f in frames:
        assert read_stamp(f) is None


def test_synthetic_stamp_is_capture_time() -> None:
    src = SyntheticSource(SourceConfig(spec="synthetic", size=(640, 360), stamp=True))
    src.open()
    before = time.perf_counter_ns()
    frame = src.read()
    after = time.perf_counter_ns()
    value = read_stamp(frame)
    assert value is not None and before <= value <= after


def test_still_image_source_repeats_copies(portrait: Path) -> None:
    src = make_source(SourceConfig(spec=str(portrait), fps=12.0))
    assert isinstance(src, ImageSource) and src.fps == 12.0
    src.open()
    a = src.read()
    a[:] = 0  # a stage drawing on its frame must not change the still
    b = src.read()
    assert b.shape == (1136, 910, 3) and b.any()


# ---------------------------------------------------------------- make_source


def test_make_source_parses_every_form(video01: Path, portrait: Path) -> None:
    cam = make_source(SourceConfig(spec="camera"))
    assert isinstance(cam, CameraSource) and cam.device == 0
    cam = make_source(SourceConfig(spec="camera:3"))
    assert isinstance(cam, CameraSource) and cam.device == 3
    cam = make_source(SourceConfig(spec="0"))
    assert isinstance(cam, CameraSource) and cam.device == 0 and not cam.opens_may_block
    cam = make_source(SourceConfig(spec="/dev/video7"))
    assert isinstance(cam, CameraSource) and cam.device == "/dev/video7" and cam.is_device
    for url in ("rtsp://10.0.0.5:554/stream1", "http://cam.local/video.mjpg"):
        cam = make_source(SourceConfig(spec=url))
        assert isinstance(cam, CameraSource) and cam.device == url and not cam.is_device
    scr = make_source(SourceConfig(spec="screen"))
    assert isinstance(scr, ScreenSource) and (scr.monitor, scr.region) == (1, None)
    scr = make_source(SourceConfig(spec="screen:2"))
    assert isinstance(scr, ScreenSource) and scr.monitor == 2
    scr = make_source(SourceConfig(spec="screen:10,20,300,200"))
    assert isinstance(scr, ScreenSource) and scr.region == (10, 20, 300, 200)
    assert isinstance(make_source(SourceConfig(spec="synthetic")), SyntheticSource)
    assert isinstance(make_source(SourceConfig(spec=str(portrait))), ImageSource)
    assert isinstance(make_source(SourceConfig(spec=str(video01))), VideoSource)
    for bad in ["webcam", "screen:a", "screen:1,2,3", "camera:-1"]:
        with pytest.raises(SourceError) as err:
            make_source(SourceConfig(spec=bad))
        assert "screen:x,y,w,h" in err.value.hint and "synthetic" in err.value.hint
    # a missing file is "file not found", not the whole source syntax (issue 18.7)
    with pytest.raises(SourceError) as err:
        make_source(SourceConfig(spec="/no/such/file.mp4"))
    assert err.value.message == "file not found: /no/such/file.mp4"
    assert "check the path" in err.value.hint and "screen:x,y,w,h" not in err.value.hint
