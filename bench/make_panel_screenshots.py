"""Screenshots of the desktop panel for the README, taken on a private Xvfb display:
idle, live with a swap (Grace Hopper's face on the animated astronaut), and a start error
(no camera), and the Hotkeys tab with a desktop-shortcut warning (previous face on
Ctrl+Alt+Left). Settings go to a temporary folder, never the user's.

    python bench/make_panel_screenshots.py [--out docs/images] [--live-s 8] [--only hotkeys]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "assets"
SCREEN = "1920x1080x24"
WINDOW = (1360, 740)  # fits a 1366x768 laptop screen


@contextmanager
def xvfb() -> Iterator[str]:
    """A private Xvfb display (``:N``)."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise SystemExit("error: Xvfb is not installed\n  fix: sudo apt-get install xvfb")
    r, w = os.pipe()
    proc = subprocess.Popen(
        [exe, "-displayfd", str(w), "-screen", "0", SCREEN, "-nolisten", "tcp"],
        pass_fds=(w,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(w)
    try:
        with os.fdopen(r) as f:
            yield f":{f.readline().strip()}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def take(out: Path, live_s: float, only: list[str] | None = None) -> None:
    """Open the panel once per shot and save panel_idle/live/error/hotkeys.png into
    ``out`` (``only``: those shots)."""
    from PySide6.QtCore import QEventLoop, QRect, QTimer
    from PySide6.QtWidgets import QApplication

    from livecam.config.schema import Config
    from ui.main_window import MainWindow, apply_theme
    from ui.settings import UiSettings
    from ui.stream import StreamController

    app = QApplication(["livecam"])
    apply_theme(app)

    def wait(seconds: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000), loop.quit)
        loop.exec()

    live = Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(ASSETS / "astronaut.png"),
                "size": [960, 540],
                "fps": 30,
            },
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg")},
        }
    )
    shots = {
        "idle": (live, None),
        "live": (live.with_section("output", sinks=["null", "RECORDING"]), "Stats"),
        "badges": (live, "Source"),
        "error": (Config.from_dict({"source": {"spec": "camera:0"}}), None),
        "hotkeys": (live.with_section("hotkeys", previous_face="Ctrl+Alt+Left"), "Hotkeys"),
    }
    for name, (config, tab) in shots.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            if "RECORDING" in config.output.sinks:  # a recording, so the REC line shows
                sinks = [
                    s if s != "RECORDING" else f"{folder}/show.mp4" for s in config.output.sinks
                ]
                config = config.with_section("output", sinks=sinks)
            settings = UiSettings(Path(folder))
            settings.save_config(config)
            window = MainWindow(StreamController(config), settings)
            window.resize(*WINDOW)
            window.show()
            if tab is not None:
                window.tabs.setCurrentIndex(list(window.panels).index(tab))
            wait(0.5)
            if name in ("live", "badges", "error"):
                window.start_button.click()
                while window.stream.starting:  # the start runs on a worker thread
                    wait(0.1)
                wait(live_s if window.stream.running else 0.5)
            controls = window.stream.controls
            if name == "badges" and controls is not None:  # as a hotkey would: not the panel
                controls.set_swap(False).wait(5)
                controls.set_freeze(True).wait(5)
                wait(1.0)
            path = out / f"panel_{name}.png"
            shot = window.grab()
            if name == "hotkeys":  # the tab alone, down to its last line
                tabs = window.tabs
                height = tabs.tabBar().height() + window.panels["Hotkeys"].sizeHint().height()
                shot = tabs.grab(QRect(0, 0, tabs.width(), min(tabs.height(), height + 16)))
            if not shot.save(str(path)):
                raise SystemExit(f"error: could not write {path}")
            print(f"wrote {path}")
            window.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--live-s", type=float, default=8.0, help="seconds live before the shot")
    parser.add_argument("--only", nargs="+", help="these shots (idle live badges error hotkeys)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with xvfb() as display:
        os.environ["DISPLAY"] = display
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        os.environ["LIVECAM_CONFIG_DIR"] = tempfile.mkdtemp(prefix="livecam-shots-")
        take(args.out, args.live_s, args.only)


if __name__ == "__main__":
    main()
