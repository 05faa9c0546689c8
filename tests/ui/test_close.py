"""What a stopped stream and a closed window leave behind: Stop/Start keeps no ONNX Runtime
session or thread of the last run alive (the lite preset's face swap on a looping testdata
clip); closing the window leaves no thread that would hold the process; the panel's
process leaves through the exit handlers without the slow interpreter teardown.
(RSS over 20 Stop/Start cycles and the close time are figures: bench/bench_panel_restarts.py,
bench/bench_panel_close.py.)"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import onnxruntime as ort
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from livecam.config.schema import Config
from ui.main_window import MainWindow
from ui.settings import UiSettings
from ui.stream import TRIM_MS, StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CLIP = Path("video") / "openmpf_video_01_short_h264_aac.mp4"
TIMEOUT_MS = 60000  # the swap's start loads and warms its models on a loaded machine


def swap_clip_config(testdata: Path) -> Config:
    return Config.from_dict(
        {
            "source": {"spec": str(testdata / CLIP), "loop": True},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "preset": "lite"},
        }
    )


def sessions() -> list[weakref.ref[ort.InferenceSession]]:
    gc.collect()
    return [weakref.ref(o) for o in gc.get_objects() if issubclass(type(o), ort.InferenceSession)]


def stream_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("livecam-", "panel-"))]


def run_once(qtbot: QtBot, stream: StreamController) -> list[weakref.ref[object]]:
    """Start, wait for frames, stop; weak references to the app and the sessions it used."""
    frames: list[object] = []
    stream.frame.connect(frames.append)
    with qtbot.waitSignal(stream.running_changed, timeout=TIMEOUT_MS):
        stream.start()
    qtbot.waitUntil(lambda: len(frames) >= 5, timeout=TIMEOUT_MS)
    alive: list[weakref.ref[object]] = [weakref.ref(stream.app), *sessions()]
    assert len(alive) > 1, "the swap runs ONNX Runtime sessions"
    trim = stream.findChild(QTimer, "heap-trim")
    assert trim is not None and trim.isActive() and trim.interval() == TRIM_MS  # while running
    assert stream.stop() == []
    assert not trim.isActive()
    stream.frame.disconnect(frames.append)
    return alive


def test_a_stopped_stream_keeps_no_session_or_thread(qtbot: QtBot, testdata: Path) -> None:
    before = sessions()
    stream = StreamController(swap_clip_config(testdata))
    for _ in range(2):  # and the second start does not keep the first's either
        used = [ref for ref in run_once(qtbot, stream) if ref not in before]
        QApplication.sendPostedEvents()  # deliver the queued signals that carried the app
        gc.collect()
        assert [ref() for ref in used if ref() is not None] == []  # the App, its sessions
        assert stream_threads() == []
        assert stream.app is None


def test_closing_the_window_leaves_no_thread_behind(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    settings.save_config(swap_clip_config(testdata))
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.stream.running_changed, timeout=TIMEOUT_MS):
        window.toggle_running()
    assert window.stream.running
    seen: list[tuple[bool, bool]] = []  # (running, window on screen) when the stream stops
    window.stream.running_changed.connect(lambda on: seen.append((on, window.isVisible())))
    window.close()
    assert seen == [(False, False)], "the window leaves the screen before the stream's stop"
    assert not window.stream.running and window.stuck_threads == []
    qtbot.waitUntil(lambda: not stream_threads(), timeout=5000)  # short helper threads
    others = [t.name for t in threading.enumerate() if not t.daemon]
    assert others == [threading.main_thread().name], "a non-daemon thread holds the exit"


def test_the_panel_process_leaves_through_the_exit_handlers() -> None:
    code = (
        "import atexit, sys\n"
        "from livecam.__main__ import leave_now\n"
        "atexit.register(lambda: print('exit handlers ran'))\n"
        "sys.stdout.write('buffered line, no newline yet')\n"
        "leave_now(3)\n"
        "print('not reached')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "buffered line, no newline yetexit handlers ran\n"
