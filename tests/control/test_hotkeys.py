"""Global hotkeys: combination parsing and conflicts, the quality ladder and face cycle, the
actions on a real stream, real key presses through X (Xvfb + xdotool), and the panel."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import missing
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config
from waiting import poll

from livecam.app import App
from livecam.config.keycombo import NAMED_KEYS, parse_combo
from livecam.config.schema import Config, HotkeysConfig
from livecam.control.hotkeys import (
    ACTIONS,
    HotkeyActions,
    HotkeyError,
    HotkeyListener,
    face_cycle,
    hotkeys_available,
    quality_ladder,
    step_face,
    step_quality,
)
from livecam.errors import ConfigError
from livecam.models.store import ModelStore
from livecam.types import Event
from ui.panels.hotkeys_panel import HotkeysPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FACE = ASSETS / "grace_hopper.jpg"


# --- combinations and config --------------------------------------------------------------
def test_combos_are_made_canonical_and_turned_into_pynput_form() -> None:
    assert parse_combo("ctrl+alt+s").text == "Ctrl+Alt+S"
    assert parse_combo("ctrl+alt+s").pynput == "<ctrl>+<alt>+s"
    assert parse_combo("Alt + Control + right").text == "Ctrl+Alt+Right"
    assert parse_combo("win+ctrl+pageup").pynput == "<cmd>+<ctrl>+<page_up>"
    assert parse_combo("F9").pynput == "<f9>"  # a function key may stand alone


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("S", "needs Ctrl, Alt or Meta"),
        ("Shift+S", "needs Ctrl, Alt or Meta"),
        ("Ctrl+Alt+", "empty part"),
        ("Ctrl+Alt", "ends with a modifier"),
        ("Ctrl+Alt+Foo", "not a key"),
        ("Ctrl+Ctrl+S", "twice"),
        ("Ctrl+Alt+S+B", "not a modifier"),
        ("Ctrl+Shift+1", "Shift changes"),
    ],
)
def test_bad_combos_say_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_combo(text)


def test_config_defaults_validation_and_conflicts(tmp_path: Path) -> None:
    hk = HotkeysConfig()
    assert hk.bindings()["swap"] == "Ctrl+Alt+Shift+S" and tuple(hk.bindings()) == ACTIONS
    assert hk.next_face == "Ctrl+Alt+Shift+N" and hk.quality_down == "Ctrl+Alt+Shift+D"
    with pytest.raises(ConfigError, match="hotkeys.freeze") as bad:
        HotkeysConfig(freeze="Ctrl+Alt+Nope")
    assert bad.value.field == "hotkeys.freeze"
    with pytest.raises(ConfigError) as clash:
        HotkeysConfig(blank="shift+ctrl+alt+s")
    assert clash.value.message == "hotkeys.swap and hotkeys.blank both use Ctrl+Alt+Shift+S"
    assert HotkeysConfig(blank="", freeze="").bindings()["blank"] == ""  # unbound: no clash
    # saved and loaded back canonically, faces relative to the file
    cfg = Config().with_section("hotkeys", swap="alt+ctrl+x", faces=("me.jpg",))
    cfg.save(tmp_path / "c.toml")
    back = Config.load(tmp_path / "c.toml")
    assert back.hotkeys.swap == "Ctrl+Alt+X"
    assert back.hotkeys.faces == (str(Path.cwd() / "me.jpg"),)


def test_availability_names_the_reason() -> None:
    wayland = {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}
    ok, why = hotkeys_available(wayland)
    assert not ok and "Wayland" in why
    ok, why = hotkeys_available({"WAYLAND_DISPLAY": "wayland-0"})
    assert not ok and "Wayland" in why
    ok, why = hotkeys_available({})
    assert not ok and "DISPLAY" in why


# --- the quality ladder and the face cycle -------------------------------------------------
def test_quality_ladder_holds_only_presets_whose_models_are_here(
    tmp_path: Path, testdata: Path
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    empty = ModelStore(models_dir=models, data_dir=tmp_path / "data")
    base = Config()
    # lite ships inside LiveCam: always on the ladder; standard and quality need downloads
    assert quality_ladder(base, None) == quality_ladder(base, empty) == ["lite"]
    for name in ("scrfd_2.5g_kps.onnx", "mobilefacenet.onnx"):  # not standard's files
        shutil.copy(testdata / "models" / name, models / name)
    ladder = quality_ladder(base, ModelStore(models_dir=models, data_dir=tmp_path / "data"))
    assert ladder == ["lite"]
    assert step_quality("lite", ladder, +1) is None and step_quality("lite", ladder, -1) is None
    assert step_quality("lite", ["lite", "quality"], +1) == "quality"  # skips standard
    assert step_quality("quality", ["lite", "standard", "quality"], -1) == "standard"


def test_face_cycle_wraps_and_keeps_each_photo_once() -> None:
    a, b = str(ASSETS / "grace_hopper.jpg"), str(ASSETS / "astronaut.png")
    cycle = face_cycle([b, a], a)
    assert cycle == [b, a]
    assert step_face(a, cycle, +1) == b and step_face(b, cycle, +1) == a
    assert step_face(a, cycle, -1) == b
    assert step_face(a, [a], +1) is None  # no other face
    assert face_cycle([b], a) == [b, a]  # the run's first face joins the ring, last


def test_next_and_previous_walk_one_ring_through_every_face(app: App, testdata: Path) -> None:
    """Four faces (the Source tab's order): N walks all four and back to the first, P
    walks back; a face opened while streaming joins the ring at its place at once."""
    faces = testdata / "faces"
    shown = [
        str(FACE),
        str(ASSETS / "astronaut.png"),
        str(faces / "obama_official_portrait_2012.jpg"),
        str(faces / "biden_official_portrait.jpg"),
    ]
    recent = list(shown)  # what the panel's Source tab shows, read at each press
    actions = HotkeyActions(app.controls, faces=lambda: recent, report=lambda e: None)

    def press(action: str) -> str:
        change = actions.run(action)
        assert change is not None
        face = change.wait(30).config.swap.face
        assert face is not None
        return face

    assert [press("next_face") for _ in shown] == [*shown[1:], shown[0]]
    assert [press("previous_face") for _ in range(2)] == [shown[3], shown[2]]
    opened = str(faces / "grace_hopper_navy_portrait.jpg")
    recent.insert(0, opened)  # opened in the Source tab while streaming: first
    assert press("previous_face") == shown[1]
    assert [press("previous_face") for _ in range(2)] == [shown[0], opened]


# --- the actions on a real stream ----------------------------------------------------------
@pytest.fixture
def app() -> Iterator[App]:
    running = App(small_config(FACE))
    running.start()
    yield running
    running.stop()


def test_actions_toggle_cycle_and_report_on_a_real_stream(app: App) -> None:
    events: list[Event] = []
    actions = HotkeyActions(
        app.controls, faces=[str(ASSETS / "astronaut.png")], report=events.append
    )
    assert app.controls.state.swap
    change = actions.run("swap")
    assert change is not None
    assert not change.wait(10).state.swap
    # two quick presses act twice: the second steps from the first's target
    first, second = actions.run("freeze"), actions.run("freeze")
    assert first is not None and second is not None
    assert first.wait(10).state.frozen and not second.wait(10).state.frozen
    face = actions.run("next_face")
    assert face is not None
    assert face.wait(30).config.swap.face == str(ASSETS / "astronaut.png")
    # lite has no enhancer to switch on, and nothing better is installed: reported
    assert actions.run("enhancer") is None
    assert actions.run("quality_up") is None
    assert [e.level for e in events] == ["info", "info"]
    assert "no enhancer" in events[0].message and "already the best" in events[1].message
    # a refused command becomes an error event, never an exception in the caller's thread
    actions.handlers()["blank"]()
    assert poll(lambda: app.controls.state.blank)


def test_refused_action_is_an_error_event_not_an_exception() -> None:
    cfg = small_config(FACE).with_section("pipeline", stages=("passthrough",))
    running = App(cfg)
    running.start()
    try:
        events: list[Event] = []
        HotkeyActions(running.controls, report=events.append).handlers()["swap"]()
        assert events[0].level == "error" and "no face swap" in events[0].message
    finally:
        running.stop()


# --- real key presses on X -----------------------------------------------------------------
@pytest.fixture
def display(xvfb: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if shutil.which("xdotool") is None:
        missing("xdotool is not installed (apt-get install xdotool)")
    monkeypatch.setenv("DISPLAY", xvfb)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("XDG_SESSION_TYPE", "x11")
    return xvfb


def press(keys: str) -> None:
    subprocess.run(["xdotool", "key", keys], check=True, env=os.environ, timeout=10)


def test_global_hotkeys_toggle_the_stream_through_x(display: str, app: App) -> None:
    ok, why = hotkeys_available()
    assert ok and why == "global hotkeys work while other apps have the focus", why
    actions = HotkeyActions(app.controls, report=lambda e: None)
    listener = HotkeyListener(app.config.hotkeys.bindings(), actions.handlers())
    listener.start()
    try:
        assert app.controls.state.swap
        press("ctrl+alt+shift+s")
        assert poll(lambda: not app.controls.state.swap), "Ctrl+Alt+Shift+S: the swap stayed on"
        press("ctrl+alt+shift+s")
        assert poll(lambda: app.controls.state.swap), "Ctrl+Alt+Shift+S: the swap stayed off"
        press("ctrl+alt+shift+b")
        assert poll(lambda: app.controls.state.blank), "Ctrl+Alt+Shift+B did not blank"
        press("s")  # the key alone is no hotkey
        press("ctrl+alt+s")  # nor the old default without Shift
        press("ctrl+alt+shift+b")
        assert poll(lambda: not app.controls.state.blank)
        assert app.controls.state.swap
    finally:
        listener.stop()
    assert not listener.running


def test_every_named_key_is_one_pynput_reads(display: str) -> None:
    from pynput.keyboard import HotKey

    for name in NAMED_KEYS:
        assert HotKey.parse(parse_combo(f"Ctrl+Alt+{name}").pynput)


def test_listener_refuses_where_global_capture_is_impossible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_SESSION_TYPE", "wayland")
    listener = HotkeyListener({"swap": "Ctrl+Alt+S"}, {"swap": lambda: None})
    with pytest.raises(HotkeyError, match="Wayland"):
        listener.start()
    listener.stop()  # harmless when never started


def test_cli_run_with_hotkeys_prints_the_bindings(
    display: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from livecam.cli.main import main

    argv = ["run", "--source", "synthetic", "--sink", "null", "--frames", "10", "--hotkeys", "-q"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "hotkeys: Ctrl+Alt+Shift+S swap, Ctrl+Alt+Shift+B blank" in err


def test_cli_hotkeys_without_a_display_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from livecam.cli.main import main

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    assert main(["run", "--source", "synthetic", "--sink", "null", "--hotkeys"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --hotkeys: global hotkeys are not available here: no X display")
    assert "Traceback" not in err


# --- the panel -----------------------------------------------------------------------------
def make_panel(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[HotkeysPanel, StreamController]:
    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(tmp_path))
    settings = UiSettings()
    stream = StreamController(small_config(FACE))
    panel = HotkeysPanel(stream, settings)
    qtbot.addWidget(panel)
    return panel, stream


def test_panel_refuses_conflicts_and_saves_a_valid_edit(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel, stream = make_panel(qtbot, tmp_path, monkeypatch)
    assert panel.editors["swap"].text() == "Ctrl+Alt+Shift+S"
    panel.capture("blank", "Ctrl+Alt+Shift+S")
    assert "is already the hotkey of \u201cface swap on/off\u201d (hotkeys.swap)" in (
        panel.error.text()
    )
    assert panel.bindings()["blank"] == "Ctrl+Alt+Shift+B"  # the old binding kept
    assert not (tmp_path / "config.toml").exists()  # nothing saved
    panel.capture("blank", "Ctrl+Alt+K")
    assert panel.error.text() == ""
    assert UiSettings(tmp_path).config.hotkeys.blank == "Ctrl+Alt+K"
    assert stream.config.hotkeys.blank == "Ctrl+Alt+K"  # the next start uses it
    assert UiSettings(tmp_path).config.swap.face == str(FACE)  # the rest kept
    panel.restore_defaults()
    assert UiSettings(tmp_path).config.hotkeys == HotkeysConfig()


def test_panel_falls_back_to_in_window_shortcuts_and_says_why(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    panel, stream = make_panel(qtbot, tmp_path, monkeypatch)
    assert "not available: no X display" in panel.availability.text()
    assert "In-window shortcuts" in panel.availability.text()
    panel.show()
    qtbot.waitExposed(panel)
    panel.activateWindow()
    qtbot.waitUntil(panel.isActiveWindow)
    focused = QApplication.focusWidget()  # the window gave a field the focus: while a
    if focused is not None:  # field has it the hotkeys pause (see the listener's test)
        focused.clearFocus()
    stream.start()
    try:
        assert set(panel.shortcuts) == set(ACTIONS) and panel.listener is None
        assert panel.shortcuts["swap"].key().toString() == "Ctrl+Alt+Shift+S"
        panel.shortcuts["swap"].activated.emit()  # what Qt does on the key press
        assert poll(lambda: stream.controls is not None and not stream.controls.state.swap)
        # typed into an editor, blank's keys are a combination to capture, not the shortcut
        blank_keys = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
        blank_keys |= Qt.KeyboardModifier.ShiftModifier
        qtbot.keyClick(panel.editors["freeze"], Qt.Key.Key_B, blank_keys)
        assert "(hotkeys.blank)" in panel.error.text()
        assert stream.controls is not None and not stream.controls.requested("blank")
        qtbot.keyClick(panel.availability, Qt.Key.Key_B, blank_keys)  # elsewhere: the shortcut
        assert poll(lambda: stream.controls is not None and stream.controls.state.blank)
    finally:
        stream.stop()
    assert panel.shortcuts == {}


def test_panel_owns_the_global_listener_while_the_stream_runs(
    display: str, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel, stream = make_panel(qtbot, tmp_path, monkeypatch)
    assert panel.global_ok and "other apps" in panel.availability.text()
    stream.start()
    try:
        assert panel.listener is not None and panel.listener.running and not panel.shortcuts
        press("ctrl+alt+shift+s")
        assert poll(lambda: stream.controls is not None and not stream.controls.state.swap)
        # a new binding applies to the running hotkeys at once
        panel.capture("blank", "Ctrl+Alt+K")
        assert panel.listener is not None and panel.listener.bindings["blank"] == "Ctrl+Alt+K"
        press("ctrl+alt+k")
        assert poll(lambda: stream.controls is not None and stream.controls.state.blank)
        # while an editor has the focus the hotkeys pause: the keys are being entered there
        panel.show()
        panel.activateWindow()
        panel.editors["freeze"].setFocus()
        qtbot.waitUntil(panel.editors["freeze"].hasFocus)
        press("ctrl+alt+k")
        panel.editors["freeze"].clearFocus()
        press("ctrl+alt+shift+s")  # handled in order after the paused press
        assert poll(lambda: stream.controls is not None and stream.controls.state.swap)
        assert stream.controls is not None and stream.controls.state.blank, "ran while editing"
        listener = panel.listener
    finally:
        stream.stop()
    assert panel.listener is None and not listener.running
