"""Panel errors speak panel and can be read: fixes name the panel's tabs and buttons, not
CLI options; a start-up error lists every cause; every error, warning and info colour of
the panel has a WCAG contrast ratio of at least 4.5:1 against its background."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot
from recording_backend import register_failing_backend, unregister
from synthetic_stream import small_config

import ui
from livecam.app import App
from livecam.config.schema import Config
from livecam.errors import StartupError
from ui.main_window import MainWindow, apply_theme, startup_text
from ui.notice import ERROR_STYLE, MIN_CONTRAST, WINDOW, contrast_ratio
from ui.panels.input_panel import KINDS, InputPanel
from ui.settings import UiSettings
from ui.stream import StreamController

_COLOUR = re.compile(r"(?<![-\w])color:\s*([#\w]+)")
_BACKGROUND = re.compile(r"background(?:-color)?:\s*([#\w]+)")


def style_contrast(style: str, window: str = WINDOW) -> float:
    """The lowest contrast ratio of a style sheet's text colours against its background
    (its own ``background``, else ``window``); each ``{...}`` block is judged alone.
    ``inf`` when the style sets no text colour."""
    blocks = re.findall(r"\{([^}]*)\}", style) or [style]
    ratios = []
    for block in blocks:
        back = _BACKGROUND.search(block)
        ratios += [
            contrast_ratio(fg, back.group(1) if back else window) for fg in _COLOUR.findall(block)
        ]
    return min(ratios, default=float("inf"))


UI = Path(ui.__file__).resolve().parent


def test_the_contrast_ratio_is_wcag_2s() -> None:
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#ffffff", "#000000") == pytest.approx(21.0)  # order-free
    assert contrast_ratio("#24242b", "#24242b") == pytest.approx(1.0)
    # WCAG's own borderline examples: #777 on white just fails AA, #767676 just passes
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)
    assert contrast_ratio("white", "#2e7d4f") == contrast_ratio("#ffffff", "#2e7d4f")
    # the old panel error colour: dark red on the dark window
    assert contrast_ratio("#b00020", WINDOW) < 2.5
    assert style_contrast("color: #b00020;") < MIN_CONTRAST
    assert style_contrast("color: #ffb4b4; background: #4a1d1d;") > 8
    assert style_contrast("QPushButton { padding: 6px; }") == float("inf")  # no colour


def ui_styles() -> dict[str, str]:
    """Every style sheet of the panel: each ``*_STYLE`` constant of every ui module, and
    each literal passed to ``setStyleSheet`` in ui's sources."""
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages([str(UI)], "ui."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.endswith("_STYLE") and isinstance(value, str):
                found[f"{info.name}.{name}"] = value
    for path in sorted(UI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setStyleSheet"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                where = f"{path.relative_to(UI.parent)}:{node.lineno}"
                found[where] = node.args[0].value
    return found


def test_every_style_of_the_panel_is_readable(qapp: QApplication) -> None:
    styles = ui_styles()
    assert {"ui.notice.ERROR_STYLE", "ui.notice.WARNING_STYLE", "ui.notice.INFO_STYLE"} <= set(
        styles
    )
    assert "ui.main_window.FALLBACK_STYLE" in styles
    low = {
        where: round(style_contrast(style), 2)
        for where, style in styles.items()
        if style_contrast(style) < MIN_CONTRAST
    }
    assert low == {}, f"below {MIN_CONTRAST}:1 against their background: {low}"


def test_the_dark_palette_is_readable_and_its_window_is_the_notices(qapp: QApplication) -> None:
    style, palette = qapp.style().name(), qapp.palette()
    try:
        apply_theme(qapp)
        p = qapp.palette()
        assert p.color(QPalette.ColorRole.Window).name() == WINDOW  # notices assume it
        pairs = (
            (QPalette.ColorRole.WindowText, QPalette.ColorRole.Window),
            (QPalette.ColorRole.Text, QPalette.ColorRole.Base),
            (QPalette.ColorRole.ButtonText, QPalette.ColorRole.Button),
            (QPalette.ColorRole.HighlightedText, QPalette.ColorRole.Highlight),
            (QPalette.ColorRole.ToolTipText, QPalette.ColorRole.ToolTipBase),
            (QPalette.ColorRole.PlaceholderText, QPalette.ColorRole.Base),
        )
        for fg, bg in pairs:
            ratio = contrast_ratio(p.color(fg).name(), p.color(bg).name())
            assert ratio >= MIN_CONTRAST, (fg, bg, ratio)
    finally:
        qapp.setStyle(style)
        qapp.setPalette(palette)


# --- every cause, in the panel's words ---------------------------------------------------
CLI_WORDS = ("--face", "--source", "--face-index", "--reference", "livecam doctor")


def every_problem_config(backend: str) -> Config:
    """Three problems at once: a camera that is not there, no face photo for the swap, and
    a virtual camera that cannot open."""
    return Config.from_dict(
        {
            "source": {"spec": "camera:97", "fps": 30},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": backend},
            "pipeline": {"stages": ["swap"]},
            "swap": {"preset": "lite"},
        }
    )


@pytest.fixture
def failing_vcam() -> Iterator[str]:
    name = register_failing_backend()
    yield name
    unregister(name)


def test_start_up_reports_every_cause(failing_vcam: str) -> None:
    with pytest.raises(StartupError) as caught:
        App(every_problem_config(failing_vcam)).start()
    causes = caught.value.causes
    kinds = sorted(type(c).__name__ for c in causes)
    assert kinds == ["ConfigError", "SourceError", "VirtualCameraUnavailable"], causes
    assert any("swap.face" in c.hint and "face to swap in" in c.message for c in causes)
    assert any(c.message == "cannot open camera 97" for c in causes)
    # the CLI keeps its own words; the panel gets its own (panel_fix)
    assert any("--source camera:1" in c.hint for c in causes)
    text = startup_text(caught.value)
    assert len(text.splitlines()) == 2 * len(causes)  # each cause and its fix
    assert "Source tab" in text and "choose another camera in the Input tab" in text
    assert not [w for w in CLI_WORDS if w in text], text


def test_the_window_lists_every_cause_with_panel_fixes(
    qtbot: QtBot, settings: UiSettings, failing_vcam: str
) -> None:
    settings.save_config(every_problem_config(failing_vcam))
    window = MainWindow(StreamController(settings.config), settings)
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: "NOT AVAILABLE" in window.vcam_label.text(), timeout=10000)
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.message.text().startswith("Could not"), timeout=60000)
        text = window.message.text()
        lines = text.splitlines()
        # the face and the camera; the virtual camera is in the status bar (preview only)
        assert [ln for ln in lines if ln.startswith("Could not start: ")] == [
            lines[0],
            lines[2],
        ], text
        assert "fix: pick a face photo in the Source tab" in text
        assert "fix: close other apps" in text and "choose another camera in the Input tab" in text
        assert not [w for w in CLI_WORDS if w in text], text
        assert not window.stream.running
        style = window.message.styleSheet()
        assert style == ERROR_STYLE and style_contrast(style) >= MIN_CONTRAST

        # another input chosen: the camera's cause goes, the face photo's stays
        inputs = window.panels["Input"]
        assert isinstance(inputs, InputPanel)
        inputs.kind.setCurrentIndex(KINDS.index("synthetic"))
        assert window.stream.config.source.spec == "synthetic"
        text = window.message.text()
        assert window.message.isVisible() and "camera 97" not in text, text
        assert text.startswith("Could not start: ") and len(text.splitlines()) == 2, text
        assert "fix: pick a face photo in the Source tab" in text
    finally:
        window.close()


def test_a_missing_video_is_file_not_found(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path
) -> None:
    gone = tmp_path / "holiday.mp4"
    settings.save_config(
        Config.from_dict({"source": {"spec": str(gone)}, "output": {"sinks": ["null"]}})
    )
    window = MainWindow(StreamController(settings.config), settings)
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.message.text().startswith("Could not"), timeout=30000)
        assert window.message.text() == (
            f"Could not start: file not found: {gone}\n"
            "fix: choose the video again in the Input tab (Video file: Choose…)"
        )
    finally:
        window.close()


def test_a_running_warning_gives_the_panels_fix(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    """No face in the picture for 5 s: the status bar's fix is the panel's ("move closer"),
    not the CLI's option (--detect-size)."""
    settings.save_config(small_config(testdata / "faces/astronaut_eileen_collins.png"))
    window = MainWindow(StreamController(settings.config), settings)
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "no face" in window.statusBar().currentMessage(), timeout=60000)
        text = window.statusBar().currentMessage()
        assert "fix: " in text and "move closer to the camera" in text, text
        assert "--" not in text, text  # no CLI option (--detect-size)
    finally:
        window.close()
