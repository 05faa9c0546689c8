"""Memory across Stop/Start in the panel: the process's RSS after Stop/Start cycles of the
real main window (Start button path: ``StreamController.start_async``), a face swap with
the bundled lite preset on a looping testdata clip into "Preview only".

    xvfb-run -a .venv/bin/python bench/bench_panel_restarts.py [--cycles 20] [--frames 10]

Each cycle starts the stream, waits for ``--frames`` preview frames, stops it, lets Qt
deliver its events and runs the garbage collector. Printed: RSS (MiB) after cycles 1, 5,
10 and 20 (those done), the ratio last / first (goal: at most 1.10), and what a stopped
stream left alive (ONNX Runtime sessions, threads). ``--before``: without the fix (glibc's
default malloc arenas, no ``malloc_trim`` after a stop). Memory is not timing: fine under
load.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("LIVECAM_CONFIG_DIR", tempfile.mkdtemp(prefix="livecam-bench-"))

from conftest import find_testdata  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

import ui.stream  # noqa: E402
from livecam.config.schema import Config  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.settings import UiSettings  # noqa: E402
from ui.stream import StreamController, limit_malloc_arenas  # noqa: E402

CLIP = Path("video") / "openmpf_video_01_short_h264_aac.mp4"
REPORTED = (1, 5, 10, 20)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def live_sessions() -> int:
    import onnxruntime as ort

    return sum(issubclass(type(o), ort.InferenceSession) for o in gc.get_objects())


def spin(app: QApplication, until: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if callable(until) and until():
            return True
        time.sleep(0.005)
    return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--frames", type=int, default=10, help="preview frames per cycle")
    p.add_argument(
        "--before", action="store_true", help="glibc's default arenas, no trim after a stop"
    )
    args = p.parse_args()
    if args.before:  # the panel before the fix
        ui.stream.trim_malloc = lambda: None
    else:
        limit_malloc_arenas()  # as run_panel does first
    testdata = find_testdata()
    if testdata is None:
        sys.exit("../shared/testdata not found (set LIVECAM_TESTDATA)")
    config = Config.from_dict(
        {
            "source": {"spec": str(testdata / CLIP), "loop": True},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(REPO / "assets" / "grace_hopper.jpg"), "preset": "lite"},
        }
    )
    qt = QApplication.instance() or QApplication(["bench"])
    assert isinstance(qt, QApplication)
    settings = UiSettings()
    settings.save_config(config)
    stream = StreamController(Config())
    window = MainWindow(stream, settings)
    window.show()
    frames = [0]
    stream.frame.connect(lambda _f: frames.__setitem__(0, frames[0] + 1))
    figures: dict[int, float] = {}
    for cycle in range(1, args.cycles + 1):
        frames[0] = 0
        window.toggle_running()
        if not spin(qt, lambda: stream.running and frames[0] >= args.frames, 120):
            sys.exit(f"cycle {cycle}: no frames ({window.message.text()})")
        window.toggle_running()
        spin(qt, lambda: not stream.running, 10)
        spin(qt, None, 0.3)  # queued signals, deleteLater
        gc.collect()
        figures[cycle] = rss_mib()
        if cycle in REPORTED or cycle == args.cycles:
            print(f"cycle {cycle:2d}: RSS {figures[cycle]:7.1f} MiB", flush=True)
    first, last = figures[1], figures[args.cycles]
    print(f"ratio cycle {args.cycles} / cycle 1: {last / first:.3f} (goal <= 1.10)")
    names = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
    print(f"after the last stop: {live_sessions()} ONNX sessions alive, threads: {names}")
    window.close()


if __name__ == "__main__":
    main()
