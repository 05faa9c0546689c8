"""The panel fits a 1366x768 laptop (with or without a taskbar) and a 1920x1080 screen:
the window with its status bar, every button of the window and of each side tab on screen,
no side tab wider than its tab (no sideways scrolling), a full recent-faces box showing
every face at once, and the model download dialog of
each preset with Download and Cancel on screen; the splitter stays where it was left
across a restart. Measured in a child process on a private
Xvfb of that size with the real xcb platform (the test session draws offscreen on an
800x800 screen)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import missing
from media import xvfb_display

MARK = "LAYOUT "
REPO = Path(__file__).resolve().parents[2]
#: the download dialog of each preset: lite needs none by itself, so with neural parts chosen
DIALOGS: dict[str, dict[str, str]] = {
    "lite": {"swapper": "inswapper-128-fp16", "enhancer": "gfpgan-1.4"},
    "standard": {},
    "quality": {},
}

Rect = tuple[int, int, int, int]  # x, y, width, height


def inside(inner: Rect, outer: Rect) -> bool:
    x, y, w, h = inner
    ox, oy, ow, oh = outer
    return ox <= x and oy <= y and x + w <= ox + ow and y + h <= oy + oh


def probe() -> dict[str, Any]:  # the child process, on the real display
    from PySide6.QtCore import QRect
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import (
        QAbstractButton,
        QApplication,
        QListWidget,
        QScrollArea,
        QWidget,
    )

    from livecam.config.schema import SwapConfig
    from livecam.models.presets import PRESETS
    from livecam.models.store import ModelStore
    from ui.main_window import MainWindow, apply_theme
    from ui.model_download import ModelDownloadDialog
    from ui.settings import MAX_RECENT_FACES, UiSettings
    from ui.stream import StreamController

    app = QApplication(sys.argv)
    apply_theme(app)

    def settle(widget: QWidget) -> None:
        """Shown, and laid out: posted events delivered until the geometry of every
        child stays the same through one more round (a real state, no fixed wait)."""
        QTest.qWaitForWindowExposed(widget)

        def layout() -> list[tuple[int, int, int, int]]:
            return [rect(w.geometry()) for w in (widget, *widget.findChildren(QWidget))]

        last = None
        for _ in range(200):
            QApplication.sendPostedEvents()
            app.processEvents()
            now = layout()
            if now == last:
                return
            last = now
        raise AssertionError("the layout did not settle in 200 rounds of events")

    def on_screen(widget: QWidget) -> Rect:
        top_left = widget.mapToGlobal(widget.rect().topLeft())
        return (top_left.x(), top_left.y(), widget.width(), widget.height())

    def rect(r: QRect) -> Rect:
        return (r.x(), r.y(), r.width(), r.height())

    settings = UiSettings()
    faces = settings.folder / "faces"  # a full recent-faces box, long file names included
    faces.mkdir(parents=True, exist_ok=True)
    for i in range(MAX_RECENT_FACES):
        photo = faces / f"{i:02d}_a_rather_long_name_of_a_face_photo_{'x' * i}.jpg"
        shutil.copy(REPO / "assets" / "grace_hopper.jpg", photo)
        settings.add_recent_face(photo)
    window = MainWindow(StreamController(settings.config), settings)
    window.show()
    settle(window)
    screen = window.screen().availableGeometry()
    report: dict[str, Any] = {
        "screen": rect(screen),
        "window": rect(window.frameGeometry()),
        "status_bar": on_screen(window.statusBar()),
        "buttons": {
            b.text(): on_screen(b)
            for b in window.findChildren(QAbstractButton)
            if b.isVisible() and not _in_scroll_area(b, QScrollArea)
        },
        "tabs": {},
        "dialogs": {},
    }
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        settle(window)
        scroll = window.tabs.widget(i)
        assert isinstance(scroll, QScrollArea)
        content = scroll.widget()
        assert content is not None
        report["tabs"][window.tabs.tabText(i)] = {
            "viewport": on_screen(scroll.viewport()),
            "content_width": content.width(),
            "hbar": scroll.horizontalScrollBar().isVisible(),
            "buttons": {
                b.text() or b.objectName(): on_screen(b)
                for b in content.findChildren(QAbstractButton)
                if b.isVisibleTo(content)
            },
        }
        gallery = getattr(content, "gallery", None)
        if isinstance(gallery, QListWidget):  # the Source tab's recent faces
            viewport = gallery.viewport().rect()
            report["gallery"] = {
                "faces": gallery.count(),
                "shown": sum(
                    viewport.contains(gallery.visualItemRect(gallery.item(j)))
                    for j in range(gallery.count())
                ),
                "scrolls": gallery.verticalScrollBar().maximum() > 0
                or gallery.horizontalScrollBar().maximum() > 0,
                "box": on_screen(gallery),
                "tab": on_screen(scroll.viewport()),
            }
    total = sum(window.splitter.sizes())
    window.splitter.setSizes([total - 640, 640])  # a wide side panel, then a restart
    moved = window.splitter.sizes()
    window.close()  # saves the geometry and the splitter
    again = MainWindow(StreamController(UiSettings().config), UiSettings())
    again.show()
    settle(again)
    report["splitter"] = {
        "moved": moved,
        "saved": UiSettings().panel.splitter,
        "restarted": again.splitter.sizes(),
    }
    again.close()

    store = ModelStore()
    for preset, parts in DIALOGS.items():
        cfg = SwapConfig.of(preset=preset, **parts)
        names = PRESETS[preset].model_names(cfg, store.manifest)
        dialog = ModelDownloadDialog(store, [store.entry(n) for n in dict.fromkeys(names)])
        dialog.show()
        settle(dialog)
        report["dialogs"][preset] = {
            "models": len(names),
            "dialog": rect(dialog.frameGeometry()),
            "download": on_screen(dialog.download_button),
            "cancel": on_screen(dialog.cancel_button),
            "table_hbar": dialog.table.horizontalScrollBar().isVisible(),
            "table_fits": dialog.table.horizontalHeader().length()
            <= dialog.table.viewport().width(),
            "licences_shown": dialog.accept_list.isVisible(),
        }
        dialog.close()
    return report


def _in_scroll_area(widget: Any, kind: type) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, kind):
            return True
        parent = parent.parentWidget()
    return False


def measure(size: str, folder: Path) -> dict[str, Any]:
    """``probe`` in a child process on a private Xvfb of ``size``, with fresh settings."""
    with xvfb_display(size) as display:
        if display is None:
            missing("Xvfb is not installed (apt-get install xvfb): this test needs a display")
        assert display is not None
        env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "LIVECAM_CONFIG_DIR": str(folder / "config"),
            "LIVECAM_MODELS_DIR": str(folder / "models"),
            "XDG_DATA_HOME": str(folder / "data"),
            "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
        }
        done = subprocess.run(
            [sys.executable, __file__],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    return report


# 1366x720: a 1366x768 laptop less a 48 px taskbar (what the window may use there)
@pytest.mark.parametrize("size", ["1366x768", "1366x720", "1920x1080"])
def test_the_window_and_the_download_dialogs_fit_the_screen(size: str, tmp_path: Path) -> None:
    report = measure(size, tmp_path)
    screen = tuple(report["screen"])
    assert screen[2:] == tuple(int(v) for v in size.split("x"))
    assert inside(report["window"], screen), report["window"]
    assert inside(report["status_bar"], screen), report["status_bar"]
    assert {"Start", "Auto"} <= {t.split(":")[0] for t in report["buttons"]}
    for text, button in report["buttons"].items():
        assert inside(button, screen), (text, button)
    assert set(report["tabs"]) >= {"Input", "Output", "Processing"}
    for title, tab in report["tabs"].items():
        viewport = tab["viewport"]
        assert inside(viewport, screen), (title, viewport)
        assert not tab["hbar"], title
        assert tab["content_width"] <= viewport[2], (title, tab["content_width"], viewport)
        for text, (x, _y, w, _h) in tab["buttons"].items():
            # a tall tab scrolls down; sideways every button is in its tab
            assert viewport[0] <= x and x + w <= viewport[0] + viewport[2], (title, text)
    gallery = report["gallery"]  # every recent face shows at once, inside the tab
    assert gallery["faces"] == 12 and gallery["shown"] == 12 and not gallery["scrolls"], gallery
    box, tab = gallery["box"], gallery["tab"]
    assert tab[0] <= box[0] and box[0] + box[2] <= tab[0] + tab[2], gallery
    splitter = report["splitter"]  # where the user left it, after a restart
    assert splitter["moved"][1] == 640 and splitter["saved"] == splitter["moved"]
    assert splitter["restarted"] == splitter["moved"], splitter
    for preset, dialog in report["dialogs"].items():
        assert dialog["models"] > 0, preset
        assert inside(dialog["dialog"], screen), (preset, dialog["dialog"])
        assert inside(dialog["download"], screen) and inside(dialog["cancel"], screen), preset
        assert not dialog["table_hbar"] and dialog["table_fits"], preset
        assert dialog["licences_shown"], preset  # non-commercial licences, not accepted here


if __name__ == "__main__":
    print(MARK + json.dumps(probe()), flush=True)
