"""How long the panel takes to end after Ctrl+Q (the window's close): ``livecam`` with no
arguments (``livecam.__main__.main``: the panel) in a child process on an Xvfb display,
idle or with a running stream (a looping testdata clip, face swap with the lite preset,
into "Preview only"); a timer in the child closes the window as Ctrl+Q does; the time
from that close to the child's exit (interpreter teardown included), measured by the
parent.

    .venv/bin/python bench/bench_panel_close.py [--runs 3] [--running] [--keys] [--load N]

``--keys`` sends a real Ctrl+Q through the X server (xdotool) and times from the key to
the exit, instead of closing from a timer inside; ``--load N`` keeps N busy processes
running meanwhile (a loaded machine). Each run also prints where the time went, from the
child's own clock: the close handler (the stream's stop, the settings saved), the rest of
the event loop, run_panel's end, and the exit handlers.

Needs Xvfb. Printed: each run's seconds and the median (goal: at most 1 s). Wall-clock:
say whether the machine was loaded (the load average is printed).
"""

from __future__ import annotations

import argparse
import multiprocessing
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


def mark(what: str) -> None:
    """A phase of the child's close, with its wall-clock time, on stderr."""
    print(f"phase {what} {time.time():.6f}", file=sys.stderr, flush=True)


def child(running: bool, keys: bool) -> None:
    """Run the panel; start the stream (``running``), then close the window (or, with
    ``keys``, say "ready" and wait for the parent's Ctrl+Q); the close's time
    (``time.time``) on stdout, the close's phases on stderr."""
    import atexit

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    import ui.panel_app
    from livecam.__main__ import main as livecam_main
    from ui.main_window import MainWindow

    app = QApplication(["livecam"])

    def window() -> MainWindow:
        return next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))

    close_event = MainWindow.closeEvent

    def traced_close(self: MainWindow, event: object) -> None:
        mark("close-event")
        handle = self.windowHandle()
        if handle is not None:  # when the window leaves the screen
            handle.visibleChanged.connect(lambda on: None if on else mark("window-hidden"))
        close_event(self, event)  # type: ignore[arg-type]
        mark("close-event-done")

    MainWindow.closeEvent = traced_close  # type: ignore[method-assign]
    run_panel = ui.panel_app.run_panel

    def traced_run(argv: object = ()) -> int:
        code = run_panel(argv)  # type: ignore[arg-type]
        mark("run-panel-done")
        return code

    ui.panel_app.run_panel = traced_run
    app.aboutToQuit.connect(lambda: mark("loop-ends"))
    atexit.register(lambda: mark("exit-handlers"))
    import livecam.__main__ as entry

    def traced_exit(code: int) -> None:
        mark("leave")
        leave_now(code)

    def traced_os_exit(code: int) -> None:
        status = Path("/proc/self/status").read_text()
        threads = next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:"))
        rss = next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS:"))
        torch = "torch" if "torch" in sys.modules else "no-torch"
        mark(f"os-exit({threads}-threads,{int(rss) // 1024}MB,{torch})")  # the rest: the kernel's
        os_exit(code)

    leave_now, os_exit = entry.leave_now, os._exit
    entry.leave_now = traced_exit
    os._exit = traced_os_exit  # type: ignore[assignment]

    def close() -> None:
        w = window()
        if running and not w.stream.running:
            QTimer.singleShot(100, close)  # still starting
            return
        if keys:
            print("ready", flush=True)
            return
        print(f"{time.time():.6f}", flush=True)
        w.close()

    if running:
        QTimer.singleShot(SETTLE_MS, lambda: window().toggle_running())
    QTimer.singleShot(2 * SETTLE_MS if running else SETTLE_MS, close)
    sys.argv = ["livecam"]  # no arguments: the panel, through the real entry point
    livecam_main()


def busy() -> None:
    """A CPU hog (the ``--load`` processes)."""
    while True:
        pass


def one_close(display: str, folder: Path, running: bool, keys: bool) -> tuple[float, str]:
    """Seconds from the close (or the Ctrl+Q key) to the child's exit, and its phases."""
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    env["LIVECAM_CONFIG_DIR"] = str(folder)
    flags = [*(["--running"] if running else []), *(["--keys"] if keys else [])]
    command = [sys.executable, __file__, "--child", *flags]
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        if keys:
            assert line.strip() == "ready", line
            window = subprocess.run(
                ["xdotool", "search", "--sync", "--onlyvisible", "--name", "^LiveCam$"],
                env=env, capture_output=True, text=True, timeout=30, check=True,
            ).stdout.split()[0]  # fmt: skip
            subprocess.run(["xdotool", "windowfocus", "--sync", window], env=env, check=True)
            closed = time.time()
            subprocess.run(["xdotool", "key", "ctrl+q"], env=env, check=True)
        else:
            closed = float(line)
        proc.wait(timeout=60)
        ended = time.time()
        phases = [ln.split() for ln in proc.stderr.read().splitlines() if ln.startswith("phase ")]
        steps = ", ".join(f"{name} +{float(t) - closed:.2f}" for _, name, t in phases)
        return ended - closed, steps
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--running", action="store_true", help="close with the stream running")
    p.add_argument("--keys", action="store_true", help="a real Ctrl+Q through X (xdotool)")
    p.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.running, args.keys)
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
    hogs = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
    for hog in hogs:
        hog.start()
    try:
        with xvfb_display() as display:
            if display is None:
                sys.exit("Xvfb is not installed")
            runs = [one_close(display, folder, args.running, args.keys) for _ in range(args.runs)]
    finally:
        for hog in hogs:
            hog.terminate()
    times = [t for t, _ in runs]
    what = "running stream" if args.running else "idle panel"
    how = "a real Ctrl+Q key" if args.keys else "the window's close"
    print(f"load average {os.getloadavg()[0]:.1f}, {args.load} busy processes added")
    for t, steps in runs:
        print(f"  {t:.2f} s: {steps}")
    print(f"{how} to exit ({what}): " + ", ".join(f"{t:.2f}" for t in times) + " s")
    print(f"median {statistics.median(times):.2f} s (goal <= 1 s)")


if __name__ == "__main__":
    main()
