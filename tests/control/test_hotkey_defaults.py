"""The default hotkeys against the table of desktop, OS and overlay shortcuts: the defaults
are free everywhere the table knows, the old Ctrl+Alt+arrow defaults are caught, and
`livecam run --hotkeys` warns at start-up about a binding a desktop uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from livecam.config.keycombo import canonical
from livecam.config.schema import Config, HotkeysConfig
from livecam.control.desktop_shortcuts import (
    SHORTCUTS,
    clash_warnings,
    describe_uses,
    desktop_uses,
)
from livecam.control.hotkeys import describe_bindings

DESKTOPS = {"GNOME", "KDE Plasma", "Xfce", "openbox", "Windows", "macOS"}


def test_every_row_is_a_canonical_combination_livecam_accepts() -> None:
    assert {s.desktop for s in SHORTCUTS} >= DESKTOPS
    for row in SHORTCUTS:
        assert canonical(row.combo) == row.combo, row
        assert row.does
    assert len({(s.desktop, s.combo) for s in SHORTCUTS}) == len(SHORTCUTS)  # no duplicates


def test_the_defaults_collide_with_no_known_shortcut() -> None:
    defaults = HotkeysConfig().bindings()
    assert all(defaults.values())  # every action has a default
    assert clash_warnings(defaults) == {}
    for combo in defaults.values():
        assert desktop_uses(combo) == (), combo


@pytest.mark.parametrize(
    ("combo", "who"),
    [
        ("Ctrl+Alt+Left", {"GNOME", "Xfce", "openbox", "Cinnamon", "MATE"}),
        ("ctrl+alt+right", {"GNOME", "Xfce", "openbox"}),
        ("Alt+Ctrl+Up", {"GNOME", "Xfce", "openbox"}),
        ("Ctrl+Alt+Down", {"GNOME", "Xfce", "openbox"}),
        ("Ctrl+Alt+F", {"Xfce"}),  # the old freeze default opens Thunar
        ("Ctrl+Alt+E", {"Windows"}),  # the old enhancer default types the euro sign
        ("Ctrl+Alt+F2", {"Linux (X11)"}),
        ("Ctrl+Alt+Del", {"GNOME", "KDE Plasma", "Xfce", "Windows"}),
        ("Meta+Space", {"macOS", "GNOME"}),
    ],
)
def test_known_shortcuts_are_found_in_any_spelling(combo: str, who: set[str]) -> None:
    assert {s.desktop for s in desktop_uses(combo)} >= who
    assert all(w in describe_uses(combo) for w in who)


def test_unknown_empty_and_invalid_texts_are_no_clash() -> None:
    assert desktop_uses("") == () and desktop_uses("Ctrl+Alt+Nope") == ()
    assert describe_uses("Ctrl+Alt+Shift+S") == ""
    warnings = clash_warnings({"swap": "Ctrl+Alt+Shift+S", "next_face": "ctrl+alt+right"})
    assert list(warnings) == ["next_face"]
    assert warnings["next_face"].startswith("Ctrl+Alt+Right is also a shortcut of GNOME (")
    assert "Xfce (switch to the workspace on the right)" in warnings["next_face"]


def test_cli_start_line_warns_about_a_desktop_shortcut() -> None:
    cfg = Config().with_section("hotkeys", previous_face="Ctrl+Alt+Left")
    line = describe_bindings(cfg.hotkeys.bindings())
    first, *rest = line.splitlines()
    assert first.startswith("hotkeys: Ctrl+Alt+Shift+S swap, Ctrl+Alt+Shift+B blank")
    assert rest == [
        "warning: hotkeys.previous_face Ctrl+Alt+Left is also a shortcut of "
        + describe_uses("Ctrl+Alt+Left")
    ]
    assert len(describe_bindings(HotkeysConfig().bindings()).splitlines()) == 1  # defaults


def test_livecam_run_hotkeys_warns_at_start(
    xvfb: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from livecam.cli.main import main

    monkeypatch.setenv("DISPLAY", xvfb)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("XDG_SESSION_TYPE", "x11")
    config = tmp_path / "hotkeys.toml"
    Config().with_section("hotkeys", next_face="Ctrl+Alt+Right").save(config)
    argv = ["run", "--config", str(config), "--source", "synthetic", "--sink", "null"]
    assert main([*argv, "--frames", "10", "--hotkeys", "-q"]) == 0
    err = capsys.readouterr().err
    assert "hotkeys: Ctrl+Alt+Shift+S swap" in err
    warning = "warning: hotkeys.next_face Ctrl+Alt+Right is also a shortcut of GNOME ("
    assert warning in err and "openbox (go to the desktop on the right)" in err
