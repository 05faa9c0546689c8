"""The Qt preview window of the ``window`` sink: the hand-off, the widget's pixels (offscreen,
in process) and the whole path on Xvfb (``livecam run --sink window`` in a child process)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import missing
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot
from waiting import poll
from xwindow import grab, press, require_windows, wait_window, window_title

from livecam.errors import SinkError
from livecam.sinks.preview import (
    APT_PACKAGES,
    FrameHandoff,
    PreviewWindowSink,
    display_available,
    missing_libraries,
    pyside6_dir,
    wayland_problem,
    window_problem,
)
from livecam.sources.image import load_image_bgr
from livecam.telemetry.hub import Telemetry
from livecam.telemetry.meters import Percentiles
from livecam.telemetry.snapshot import Snapshot
from ui.preview_window import (
    INFO_MARGIN,
    PreviewWindow,
    fit_rect,
    info_text,
    initial_size,
    render_text,
    run_preview,
)

LINUX = sys.platform.startswith("linux")


def quadrants(w: int = 160, h: int = 120) -> np.ndarray:
    """A BGR frame with four flat quadrants: blue, green / red, white."""
    frame = np.zeros((h, w, 3), np.uint8)
    frame[: h // 2, : w // 2] = (255, 0, 0)
    frame[: h // 2, w // 2 :] = (0, 255, 0)
    frame[h // 2 :, : w // 2] = (0, 0, 255)
    frame[h // 2 :, w // 2 :] = (255, 255, 255)
    return frame


def grab_bgr(widget: QWidget) -> np.ndarray:
    """What the widget paints, as a BGR array."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_BGR888)
    w, h = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(h, image.bytesPerLine())
    return rows[:, : w * 3].reshape(h, w, 3).copy()


def test_pyside6_keeps_the_reference_to_none(qapp: QApplication) -> None:
    """PySide6 6.12.0 on Python 3.11 drops a reference to None per void Qt call and the
    window dies with "deallocating None" after minutes; pyproject excludes it."""
    widget = QWidget()
    before = sys.getrefcount(None)
    for _ in range(2000):
        widget.setWindowTitle("x")
        widget.update()
    assert sys.getrefcount(None) - before > -100


def test_handoff_keeps_only_the_newest_frame() -> None:
    handoff = FrameHandoff()
    assert handoff.newest() is None
    a, b = quadrants(), quadrants()[::-1].copy()
    handoff.put(a)
    handoff.put(a)  # a repeat of the same frame is not a new frame
    number, got = handoff.newest() or (0, None)
    assert number == 1 and got is a
    assert handoff.newest(after=1) is None
    handoff.put(b)
    assert handoff.newest(after=1) == (2, b)


def test_window_shows_the_newest_frame_scaled_with_its_aspect(qtbot: QtBot) -> None:
    handoff = FrameHandoff()
    window = PreviewWindow(handoff, "t", size=(400, 200))
    qtbot.addWidget(window)
    window.show()
    handoff.put(np.full((120, 160, 3), 90, np.uint8))  # never shown: a newer one follows
    frame = quadrants()
    handoff.put(frame)
    qtbot.waitUntil(lambda: window.frames_shown >= 1)
    pixels = grab_bgr(window)
    assert pixels.shape == (200, 400, 3)
    # 160x120 in 400x200 keeps 4:3 -> 267x200 centred, black bars left and right
    rect = fit_rect(160, 120, QRect(0, 0, 400, 200))
    assert (rect.x(), rect.width(), rect.height()) == (66, 267, 200)
    assert pixels[:, :60].max() == 0 and pixels[:, 340:].max() == 0
    x0, x1 = rect.x() + rect.width() // 4, rect.x() + 3 * rect.width() // 4
    for (x, y), bgr in {
        (x0, 50): (255, 0, 0),
        (x1, 50): (0, 255, 0),
        (x0, 150): (0, 0, 255),
        (x1, 150): (255, 255, 255),
    }.items():
        np.testing.assert_allclose(pixels[y, x], bgr, atol=2, err_msg=f"pixel {(x, y)}")
    assert window.frames_shown == 1  # the older frame was never drawn
    handoff.put(np.full((120, 160, 3), 200, np.uint8))
    qtbot.waitUntil(lambda: window.frames_shown == 2)
    assert abs(int(grab_bgr(window)[100, 200, 0]) - 200) <= 2


@pytest.mark.parametrize("how", ["escape", "q", "close button"])
def test_closing_the_window_marks_the_sink_closed(qtbot: QtBot, how: str) -> None:
    handoff = FrameHandoff()
    window = PreviewWindow(handoff)
    qtbot.addWidget(window)
    window.show()
    if how == "escape":
        qtbot.keyClick(window, Qt.Key.Key_Escape)
    elif how == "q":
        qtbot.keyClick(window, Qt.Key.Key_Q)
    else:
        window.close()  # what the title bar's close button does: a close event
    assert handoff.user_closed.is_set() and not window.isVisible()


def test_closing_quietly_is_not_a_user_close(qtbot: QtBot) -> None:
    handoff = FrameHandoff()
    window = PreviewWindow(handoff)
    qtbot.addWidget(window)
    window.show()
    qtbot.keyClick(window, Qt.Key.Key_Space)  # other keys do nothing
    assert window.isVisible()
    window.close_quietly()
    assert not handoff.user_closed.is_set() and not window.isVisible()


def snapshot(fps_out: float, p50: float, p99: float, dropped: int) -> Snapshot:
    return Snapshot(
        elapsed_s=1.0,
        frames_in=30,
        frames_out=30,
        repeats=0,
        dropped=dropped,
        fps_in=30.0,
        fps_out=fps_out,
        latency_ms=Percentiles(p50, p99),
        stages_ms={},
        rss_mb=100.0,
        gpu=None,
        events=0,
    )


def test_info_text_names_fps_latency_and_drops() -> None:
    assert info_text(snapshot(29.97, 41.4, 88.6, 3)) == (
        "30.0 fps | latency 41 ms (p99 89) | drops 3"
    )
    assert "latency n/a" in info_text(
        Snapshot(**{**snapshot(0, 0, 0, 0).__dict__, "latency_ms": None})
    )


def test_the_info_corner_shows_fps_and_latency_and_i_toggles_it(qtbot: QtBot) -> None:
    """The corner is drawn over the frame (white text on a dark box) until ``i`` is pressed;
    a second ``i`` brings it back. The title carries the fps."""
    handoff = FrameHandoff()
    readings = [snapshot(24.0, 35.0, 60.0, 0)]
    window = PreviewWindow(handoff, "t", size=(320, 240), stats=lambda: readings[-1])
    qtbot.addWidget(window)
    window.show()
    handoff.put(np.full((240, 320, 3), 128, np.uint8))
    qtbot.waitUntil(lambda: window.frames_shown >= 1)
    window.update_info()
    assert window.info == "24.0 fps | latency 35 ms (p99 60) | drops 0"
    assert window.windowTitle() == "t - 24.0 fps"
    box = render_text(window.info)
    h, w = box.shape[:2]
    x, y = INFO_MARGIN, INFO_MARGIN

    def corner() -> np.ndarray:
        return grab_bgr(window)[y : y + h, x : x + w].astype(int)

    shown = corner()
    assert shown.max() > 200 and shown.min() < 60, "white text on a dark box over gray"
    assert np.abs(grab_bgr(window)[200:, 200:].astype(int) - 128).max() <= 2, "rest untouched"
    qtbot.keyClick(window, Qt.Key.Key_I)
    assert not window.show_info and np.abs(corner() - 128).max() <= 2
    qtbot.keyClick(window, Qt.Key.Key_I)
    assert window.show_info and np.array_equal(corner(), shown)
    readings.append(snapshot(30.0, 20.0, 30.0, 2))
    window.update_info()
    assert window.info == "30.0 fps | latency 20 ms (p99 30) | drops 2"


def test_initial_size_fits_the_screen() -> None:
    assert initial_size((640, 480), QRect(0, 0, 1920, 1080)) == (640, 480)
    assert initial_size((1920, 1080), QRect(0, 0, 1280, 720)) == (1152, 648)
    assert initial_size((0, 0), QRect(0, 0, 1920, 1080)) == (640, 480)


@pytest.fixture
def window_sink(xvfb: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PreviewWindowSink]:
    """A preview sink opened for real against the Xvfb display (the in-process Qt itself
    draws offscreen)."""
    require_windows(xvfb)
    monkeypatch.setenv("DISPLAY", xvfb)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    sink = PreviewWindowSink(title="LiveCam test")
    sink.open(160, 120, 30.0)
    yield sink
    sink.close()


def feed(sink: PreviewWindowSink, frames: int, stop: threading.Event) -> threading.Thread:
    """Send ``frames`` distinct frames from another thread, as the output thread does."""

    def run() -> None:
        for i in range(frames):
            if stop.wait(0.01):
                return
            sink.send(np.full((120, 160, 3), i % 256, np.uint8))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_run_preview_until_the_stream_ends(
    qapp: QApplication, window_sink: PreviewWindowSink
) -> None:
    stop = threading.Event()
    feeder = feed(window_sink, 60, stop)
    ticks: list[int] = []
    shown = run_preview(
        [window_sink], lambda: not feeder.is_alive(), tick=lambda: ticks.append(1), tick_s=0.05
    )
    feeder.join()
    assert 0 < shown <= 60 and ticks
    assert not window_sink.closed  # the stream ended; the user did not close it


def test_run_preview_deletes_its_windows_and_timers_on_the_gui_thread(
    qapp: QApplication, window_sink: PreviewWindowSink
) -> None:
    """Nothing of the preview outlives ``run_preview``: a window kept alive by its signal
    connections would be destroyed by the garbage collector on a pipeline thread, where Qt
    warns "Timers cannot be stopped from another thread"."""
    stop = threading.Event()
    feeder = feed(window_sink, 20, stop)
    telemetry = Telemetry()
    run_preview([window_sink], lambda: not feeder.is_alive(), stats=telemetry.snapshot)
    feeder.join()
    assert not [w for w in qapp.topLevelWidgets() if isinstance(w, PreviewWindow)]


def test_run_preview_returns_when_the_user_closes_the_window(
    qapp: QApplication, window_sink: PreviewWindowSink
) -> None:
    stop = threading.Event()
    feeder = feed(window_sink, 10_000, stop)

    def close_windows() -> None:
        for w in qapp.topLevelWidgets():
            if isinstance(w, PreviewWindow) and w.frames_shown > 0:
                w.close()
                return
        QTimer.singleShot(20, close_windows)

    QTimer.singleShot(20, close_windows)
    try:
        shown = run_preview([window_sink], lambda: False)
    finally:
        stop.set()
        feeder.join()
    assert shown > 0 and window_sink.closed
    window_sink.send(np.zeros((120, 160, 3), np.uint8))  # still accepted, never blocks


def test_sink_refuses_a_headless_qt_and_sends_before_open(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SinkError, match="send"):
        PreviewWindowSink().send(np.zeros((8, 8, 3), np.uint8))
    env = {"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}
    assert "QT_QPA_PLATFORM=offscreen draws no visible window" in (window_problem(env) or "")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    with pytest.raises(SinkError) as info:
        PreviewWindowSink().open(160, 120, 30.0)
    assert "QT_QPA_PLATFORM" in info.value.message and "virtualcam" in info.value.hint


def test_window_without_display_is_a_sink_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if not LINUX:
        missing("Linux (display detection by environment is Linux-only)")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    assert display_available()[0] is False
    with pytest.raises(SinkError) as info:
        PreviewWindowSink().open(160, 120, 30.0)
    assert "DISPLAY" in info.value.message
    assert "xvfb-run" in info.value.hint and "virtualcam" in info.value.hint


def test_window_problem_on_linux(xvfb: str) -> None:
    if not LINUX:
        missing("Linux (the display rules by environment are Linux-only)")
    assert window_problem({"DISPLAY": xvfb}) is None
    assert "DISPLAY" in (window_problem({}) or "")
    no_x = window_problem({"DISPLAY": ":4711"}) or ""
    assert no_x.startswith("no X server answers on DISPLAY=:4711 (set DISPLAY to"), no_x
    assert window_problem({"DISPLAY": xvfb, "QT_QPA_PLATFORM": "minimal"})
    # Wayland is tried first when both are set; X11 when the Wayland plugin lacks libraries
    both = {"DISPLAY": xvfb, "WAYLAND_DISPLAY": "wayland-4711"}
    assert window_problem(both) is None


def test_a_wayland_display_without_a_compositor_is_a_problem_not_an_abort(
    tmp_path: Path,
) -> None:
    """Qt aborts the whole process when its wayland platform cannot connect: a
    WAYLAND_DISPLAY whose socket nobody listens on is said, with the fix, before Qt."""
    if not LINUX:
        missing("Linux (the display rules by environment are Linux-only)")
    env = {"WAYLAND_DISPLAY": "wayland-4711", "XDG_RUNTIME_DIR": str(tmp_path)}
    why = window_problem(env) or ""
    assert why.startswith("no Wayland compositor answers on WAYLAND_DISPLAY=wayland-4711 ("), why
    assert "unset WAYLAND_DISPLAY" in why and "DISPLAY, which is not set" in why
    unset_runtime = window_problem({"WAYLAND_DISPLAY": "wayland-4711"}) or ""
    assert "XDG_RUNTIME_DIR is not" in unset_runtime, unset_runtime
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as compositor:
        compositor.bind(str(tmp_path / "wayland-4711"))
        compositor.listen(1)
        assert wayland_problem(env) is None  # a socket that answers: Qt may connect
    assert wayland_problem(env) is not None  # closed: refused


def resolved_system_libraries(library: Path) -> dict[str, Path]:
    """The system libraries ``library`` needs that the loader finds, with the apt package
    LiveCam names for each: {soname: path}."""
    out = subprocess.run(["ldd", str(library)], capture_output=True, text=True, check=True)
    found = re.findall(r"^\s*(\S+) => (/\S+)", out.stdout, flags=re.MULTILINE)
    return {name: Path(path) for name, path in found if name in APT_PACKAGES}


#: run in a private user and mount namespace: an overlay on the folder of one library hides
#: it (a whiteout), then ``window_problem`` is asked as a Wayland session would ask it
HIDE_AND_ASK = """
import json, os, subprocess, sys
folder, name = sys.argv[1], sys.argv[2]
subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
    f"lowerdir={folder},upperdir={sys.argv[3]},workdir={sys.argv[4]}", folder], check=True)
os.remove(os.path.join(folder, name))
from livecam.sinks.preview import window_problem
print(json.dumps(window_problem({"WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "wayland"})))
"""


def test_missing_plugin_libraries_are_named_with_their_apt_packages(tmp_path: Path) -> None:
    """One system library of Qt's Wayland plugin is hidden (whatever this machine has
    installed): the window problem names it and the apt package that brings it."""
    if not LINUX:
        missing("Linux (ldd and apt are Linux things)")
    unshare = shutil.which("unshare") or missing(
        "util-linux's unshare (to hide a library in a private mount namespace)"
    )
    qt = pyside6_dir()
    assert qt is not None
    xcb = qt / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    assert missing_libraries(xcb) == [], "CI installs what Qt's xcb plugin needs"
    wayland = qt / "Qt" / "plugins" / "platforms" / "libqwayland.so"
    present = resolved_system_libraries(wayland)
    assert present, "the Wayland plugin links to libraries LiveCam has apt packages for"
    name = "libwayland-client.so.0" if "libwayland-client.so.0" in present else sorted(present)[0]
    folder = present[name].parent
    for d in ("upper", "work"):
        (tmp_path / d).mkdir()
    done = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", sys.executable, "-c", HIDE_AND_ASK]
        + [str(folder), name, str(tmp_path / "upper"), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0 and "unshare" in done.stderr:
        missing(f"a private mount namespace ({done.stderr.strip()})")
    assert done.returncode == 0, done.stderr
    problem = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(problem, str) and "sudo apt-get install" in problem, problem
    assert name in problem and APT_PACKAGES[name] in problem, problem
    # outside the namespace nothing was hidden
    assert name not in missing_libraries(wayland)


# ------------------------------------------------ the whole path on Xvfb (child processes)


#: what Qt prints about fonts and timers (on a bare Xvfb, and when a window dies on the
#: wrong thread); a LiveCam run prints none of it
QT_WARNINGS = re.compile(r"QFont|qt\.qpa\.fonts|Timers cannot|QObject::|QBasicTimer")
#: the window's title once the stats were read with frames going out
FPS_TITLE = re.compile(r"LiveCam - [1-9][0-9]*\.[0-9] fps$")


def start_livecam(
    args: list[str], display: str, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    require_windows(display)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = display
    env.update(env_extra or {})
    return subprocess.Popen(
        [sys.executable, "-m", "livecam", "run", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], code: int = 0) -> tuple[str, str]:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err[-3000:]
    return out, err


def test_window_on_screen_shows_the_frames_and_escape_ends_the_stream(
    xvfb: str, testdata: Path
) -> None:
    image = testdata / "faces" / "grace_hopper_navy_portrait.jpg"
    proc = start_livecam(["--source", str(image), "--sink", "window"], xvfb)
    try:
        wid, rect = wait_window(xvfb)
        expected = cv2.resize(load_image_bgr(image), rect[2:], interpolation=cv2.INTER_AREA)

        def diff() -> float:
            return float(np.abs(grab(xvfb, rect).astype(np.float32) - expected).mean())

        assert poll(lambda: diff() < 8, 30, every_s=0.1), (  # until the first frame is painted
            f"the window does not show the source image (mean diff {diff():.1f})"
        )
        press(xvfb, wid, "Escape")
        out, err = finish(proc)
    finally:
        proc.kill()
    assert "sink window: closed by the user" in err
    assert re.search(r"frames in \d+, out \d+", out)


@pytest.mark.parametrize(("signum", "fonts"), [(signal.SIGINT, "system"), (signal.SIGTERM, "none")])
def test_a_signal_stops_the_window_and_the_stream(
    xvfb: str, tmp_path: Path, signum: int, fonts: str
) -> None:
    """Also: no Qt warning on stderr, even when fontconfig finds no font at all (a bare
    Xvfb), while the fps/latency corner is drawn."""
    env = {}
    if fonts == "none":
        empty = tmp_path / "fonts.conf"
        empty.write_text('<?xml version="1.0"?>\n<fontconfig></fontconfig>\n')
        env["FONTCONFIG_FILE"] = str(empty)
    proc = start_livecam(
        ["--source", "synthetic", "--size", "320x240", "--sink", "window"], xvfb, env
    )
    try:
        wid, rect = wait_window(xvfb)
        # frames painted (the window is black until the first one) and the fps/latency
        # corner read at least once (its reading also sets the title's fps)
        assert poll(lambda: grab(xvfb, rect).max() > 0, 30), "no frame was drawn"
        assert poll(lambda: FPS_TITLE.match(window_title(xvfb, wid)) is not None, 30), (
            f"the stats were never shown: title {window_title(xvfb, wid)!r}"
        )
        proc.send_signal(signum)
        out, err = finish(proc, 128 + signum)  # 130 after Ctrl-C, 143 after SIGTERM
    finally:
        proc.kill()
    assert not QT_WARNINGS.search(err), err
    assert "closed by the user" not in err
    match = re.search(r"frames in (\d+), out (\d+)", out)
    assert match is not None and int(match[2]) > 0, out


def test_auto_sink_falls_back_to_the_window_and_closing_it_ends_the_stream(xvfb: str) -> None:
    """No virtual camera (a backend that does not exist): ``auto`` shows the window, which the
    main thread runs; Esc closes it and, with no other sink, the stream ends."""
    proc = start_livecam(
        ["--source", "synthetic", "--size", "320x240", "--vcam-backend", "no-such-backend"],
        xvfb,
    )
    try:
        wid, _ = wait_window(xvfb)
        press(xvfb, wid, "Escape")
        out, err = finish(proc)
    finally:
        proc.kill()
    assert "NO VIRTUAL CAMERA" in err and "preview window instead" in err
    assert "sink auto: closed by the user" in err
    assert re.search(r"frames in \d+, out \d+", out)
