"""The Hotkeys tab's editor with real key events: a whole combination is captured before
anything changes, a lone modifier or Escape changes nothing, a conflict keeps the old
binding and leaves the saved config file as it was, and a binding that desktops use is
saved with a warning naming them."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import HotkeysConfig
from ui.panels.hotkeys_panel import HotkeysPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CTRL = Qt.KeyboardModifier.ControlModifier
ALT = Qt.KeyboardModifier.AltModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def panel(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HotkeysPanel:
    """The tab over a saved config (the file exists, so 'unchanged' means something)."""
    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(tmp_path))
    settings = UiSettings()
    config = small_config(ASSETS / "grace_hopper.jpg")
    settings.save_config(config)
    widget = HotkeysPanel(StreamController(config), settings)
    qtbot.addWidget(widget)
    widget.show()
    return widget


def saved_file(tmp_path: Path) -> bytes:
    return (tmp_path / "config.toml").read_bytes()


def test_a_lone_modifier_or_escape_changes_nothing(
    panel: HotkeysPanel, qtbot: QtBot, tmp_path: Path
) -> None:
    before = saved_file(tmp_path)
    editor = panel.editors["blank"]
    qtbot.keyPress(editor, Qt.Key.Key_Control, CTRL)
    qtbot.keyPress(editor, Qt.Key.Key_Alt, CTRL | ALT)
    assert editor.text() == "Ctrl+Alt+…"  # the capture shows what is held
    assert panel.bindings()["blank"] == "Ctrl+Alt+Shift+B"
    assert saved_file(tmp_path) == before
    qtbot.keyRelease(editor, Qt.Key.Key_Alt, CTRL)  # QTest releases Alt, then Ctrl
    assert editor.text() == ""  # still capturing, nothing held
    assert panel.bindings()["blank"] == "Ctrl+Alt+Shift+B"
    assert saved_file(tmp_path) == before
    qtbot.keyClick(editor, Qt.Key.Key_Escape)  # cancels
    assert editor.text() == "Ctrl+Alt+Shift+B"
    assert panel.bindings() == HotkeysConfig().bindings()
    assert saved_file(tmp_path) == before
    assert panel.error.text() == ""


def test_a_conflict_keeps_the_old_binding_names_its_holder_and_saves_nothing(
    panel: HotkeysPanel, qtbot: QtBot, tmp_path: Path
) -> None:
    before = saved_file(tmp_path)
    editor = panel.editors["blank"]
    qtbot.keyClick(editor, Qt.Key.Key_S, CTRL | ALT | SHIFT)  # the swap's combination
    assert panel.error.text() == (
        "Ctrl+Alt+Shift+S is already the hotkey of \u201cface swap on/off\u201d "
        "(hotkeys.swap); \u201cblank (privacy) on/off\u201d keeps Ctrl+Alt+Shift+B. "
        "Choose another combination, or clear that one first."
    )
    assert editor.text() == "Ctrl+Alt+Shift+B"
    assert panel.bindings()["blank"] == "Ctrl+Alt+Shift+B"
    assert panel.stream.config.hotkeys == HotkeysConfig()
    assert saved_file(tmp_path) == before  # byte for byte
    # an invalid combination (no Ctrl/Alt/Meta) is refused the same way
    qtbot.keyClick(editor, Qt.Key.Key_K, SHIFT)
    assert "cannot be a hotkey" in panel.error.text() and "keeps Ctrl+Alt+Shift+B" in (
        panel.error.text()
    )
    assert saved_file(tmp_path) == before


def test_a_whole_free_combination_is_saved_and_backspace_unbinds(
    panel: HotkeysPanel, qtbot: QtBot, tmp_path: Path
) -> None:
    editor = panel.editors["blank"]
    qtbot.keyPress(editor, Qt.Key.Key_Control, CTRL)  # held first, as a user does
    qtbot.keyClick(editor, Qt.Key.Key_K, CTRL | ALT)
    assert editor.text() == "Ctrl+Alt+K"
    assert UiSettings(tmp_path).config.hotkeys.blank == "Ctrl+Alt+K"
    assert panel.stream.config.hotkeys.blank == "Ctrl+Alt+K"  # the next start uses it
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert UiSettings(tmp_path).config.hotkeys.blank == ""
    assert editor.text() == "" and panel.error.text() == ""
    panel.restore_defaults()
    assert UiSettings(tmp_path).config.hotkeys == HotkeysConfig()
    assert editor.text() == "Ctrl+Alt+Shift+B"


def test_a_desktop_shortcut_is_saved_with_a_warning_naming_the_desktops(
    panel: HotkeysPanel, qtbot: QtBot, tmp_path: Path
) -> None:
    assert panel.warning.isHidden() and panel.warning.text() == ""  # the defaults are free
    qtbot.keyClick(panel.editors["previous_face"], Qt.Key.Key_Left, CTRL | ALT)
    assert UiSettings(tmp_path).config.hotkeys.previous_face == "Ctrl+Alt+Left"
    text = panel.warning.text()
    assert not panel.warning.isHidden()
    assert text.startswith(
        "previous source face: Ctrl+Alt+Left is also a shortcut of GNOME (switch to the "
        "workspace on the left)"
    )
    for desktop in ("Xfce", "openbox", "Cinnamon", "Windows"):
        assert desktop in text
    assert panel.editors["previous_face"].styleSheet() != ""  # the row is marked
    assert panel.editors["next_face"].styleSheet() == ""
    panel.restore_defaults()
    assert panel.warning.isHidden() and panel.editors["previous_face"].styleSheet() == ""
