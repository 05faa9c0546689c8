"""A window saved at ``QT_SCALE_FACTOR=1.5`` reopens at the same size and place in logical
pixels (issue 26). The scale factor is read when the QApplication starts, so each run of
the panel is its own child process, on a private 1920x1080 Xvfb with the real xcb platform
(1280x720 logical pixels at 1.5): the first moves and resizes the window and closes it
(the close saves the geometry), the second opens it again from that saved state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import missing
from media import xvfb_display

MARK = "GEOMETRY "
REPO = Path(__file__).resolve().parents[2]
SCALE = "1.5"
#: x, y, width, height in logical pixels: inside 1280x720 with the window manager's margin,
#: and even, so that the device pixels (x1.5) are whole
PLACED = (100, 60, 1000, 560)


def panel_run(resize: bool) -> dict[str, Any]:  # the child process, on the real display
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from ui.main_window import MainWindow
    from ui.settings import UiSettings
    from ui.stream import StreamController

    app = QApplication(sys.argv)
    settings = UiSettings()
    window = MainWindow(StreamController(settings.config), settings)
    window.show()
    assert QTest.qWaitForWindowExposed(window)
    if resize:
        window.setGeometry(QRect(*PLACED))
        QGuiApplication.sync()  # the X server has the new geometry and told Qt
        app.processEvents()
    g = window.geometry()
    report = {
        "ratio": window.devicePixelRatioF(),
        "geometry": [g.x(), g.y(), g.width(), g.height()],
    }
    window.close()  # saves the geometry
    report["saved"] = UiSettings().panel.geometry
    return report


def run_panel(display: str, folder: Path, resize: bool) -> dict[str, Any]:
    env = {
        **os.environ,
        "DISPLAY": display,
        "QT_QPA_PLATFORM": "xcb",
        "QT_SCALE_FACTOR": SCALE,
        "LIVECAM_CONFIG_DIR": str(folder / "config"),
        "LIVECAM_MODELS_DIR": str(folder / "models"),
        "XDG_DATA_HOME": str(folder / "data"),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
    }
    args = [sys.executable, __file__, *(["resize"] if resize else [])]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    return report


def test_a_window_saved_at_scale_1_5_reopens_at_the_same_logical_geometry(
    tmp_path: Path,
) -> None:
    with xvfb_display("1920x1080") as display:
        if display is None:
            missing("Xvfb is not installed (apt-get install xvfb): this test needs a display")
        assert display is not None
        first = run_panel(display, tmp_path, resize=True)
        again = run_panel(display, tmp_path, resize=False)
    assert first["ratio"] == again["ratio"] == float(SCALE)
    assert first["geometry"] == list(PLACED), first  # placed where asked
    assert first["saved"] == list(PLACED), first  # saved in logical pixels
    assert again["geometry"] == list(PLACED), again  # and reopened there


if __name__ == "__main__":
    print(MARK + json.dumps(panel_run("resize" in sys.argv[1:])), flush=True)
