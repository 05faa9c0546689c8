"""How long the panel takes to end after Ctrl+Q (the window's close): ``livecam`` with no
arguments (``livecam.__main__.main``: the panel) in a child process on an Xvfb display,
idle or with a running stream (a looping testdata clip, face swap with the lite preset,
into "Preview only"); a timer in the child closes the window as Ctrl+Q does; the time
from that close to the child's exit (interpreter teardown included), measured by the
parent.

    .venv/bin/python bench/bench_panel_close.py [--runs 3] [--running]

Needs Xvfb. Printed: each run's seconds and the median (goal: at most 1 s). Wall-clock:
say whether the machine was loaded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402
from media import xvfb_display  # noqa: E402

from livecam.config.schema import Config  # noqa: E402
from ui.settings import UiSettings  # noqa: E402

CLIP = Path("video") / "openmpf_video_01_short_h264_aac.mp4"
SETTLE_MS = 2500  # the window's start-up work (device lists, checks), or the stream's start


def child(running: bool) -> None:
    """Run the panel; start the stream (``running``), then close the window; the close's
    time (``time.time``) on stdout."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from livecam.__main__ import main as livecam_main
    from ui.main_window import MainWindow

    app = QApplication(["livecam"])

    def window() -> MainWindow:
        return next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))

    def close() -> None:
        w = window()
        if running and not w.stream.running:
            QTimer.singleShot(100, close)  # still starting
            return
        print(f"{time.time():.6f}", flush=True)
        w.close()

    if running:
        QTimer.singleShot(SETTLE_MS, lambda: window().toggle_running())
    QTimer.singleShot(2 * SETTLE_MS if running else SETTLE_MS, close)
    sys.argv = ["livecam"]  # no arguments: the panel, through the real entry point
    livecam_main()


def one_close(display: str, folder: Path, running: bool) -> float:
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    env["LIVECAM_CONFIG_DIR"] = str(folder)
    command = [sys.executable, __file__, "--child", *(["--running"] if running else [])]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        closed = float(proc.stdout.readline())
        proc.wait(timeout=60)
        return time.time() - closed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--running", action="store_true", help="close with the stream running")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.running)
    testdata = find_testdata()
    if testdata is None:
        sys.exit("../shared/testdata not found (set LIVECAM_TESTDATA)")
    folder = Path(tempfile.mkdtemp(prefix="livecam-close-"))
    settings = UiSettings(folder)
    settings.panel.notice_acknowledged = True
    settings.save_panel()
    settings.save_config(
        Config.from_dict(
            {
                "source": {"spec": str(testdata / CLIP), "loop": True},
                "output": {"sinks": ["null"]},
                "pipeline": {"stages": ["swap"]},
                "swap": {"face": str(REPO / "assets" / "grace_hopper.jpg"), "preset": "lite"},
            }
        )
    )
    with xvfb_display() as display:
        if display is None:
            sys.exit("Xvfb is not installed")
        times = [one_close(display, folder, args.running) for _ in range(args.runs)]
    what = "running stream" if args.running else "idle panel"
    print(f"Ctrl+Q to exit ({what}): " + ", ".join(f"{t:.2f}" for t in times) + " s")
    print(f"median {statistics.median(times):.2f} s (goal <= 1 s)")


if __name__ == "__main__":
    main()
