"""The global shortcuts desktops and streaming tools use out of the box, so that LiveCam can
warn when a hotkey is one of them (the Hotkeys tab, ``livecam run --hotkeys``): the desktop
takes such a key before LiveCam sees it, or both act on it. No Qt.

Rows are written in LiveCam's combination text (``livecam.config.keycombo``; Meta is the
Super / Windows / Command key) and hold only combinations LiveCam accepts. Only defaults
are known; a user's own shortcuts are not. Sources (checked December 2026):

* GNOME: the org.gnome.desktop.wm.keybindings defaults (mutter; e.g. the list in the
  mzur/gnome-shell-wsmatrix wiki) and the GNOME Shell shortcut sheet (gist rothgar/7079722);
  Ubuntu adds Ctrl+Alt+T. Cinnamon and MATE keep GNOME 2's workspace keys.
* KDE Plasma 6: the default kglobalshortcutsrc (kwin, ksmserver, kxkb, kaccess, krunner;
  e.g. a plasma-manager dump of a fresh Plasma 6). Plasma 5 used Ctrl+Alt for kill
  window, the attention window, the layout switch, Klipper and the no-confirmation
  logout/reboot/halt (still found on LTS distributions).
* Xfce: xfce4-keyboard-shortcuts.xml's defaults (commands: Thunar, xflock4, xkill,
  terminal, app finder; xfwm4: workspaces, window moves).
* openbox: the keybinds of data/rc.xml (also LXDE/LXQt and many spins).
* Windows 10/11: Microsoft's "Keyboard shortcuts in Windows" (Ctrl+Alt+Del, Ctrl+Shift+Esc,
  the Windows-key set, Game Bar, Win+Ctrl+Shift+B; the Office key is Win+Ctrl+Alt+Shift),
  the Intel graphics driver's Ctrl+Alt+arrow rotation, and AltGr (= Ctrl+Alt) typing
  characters on most European layouts (AltGr+E is the euro sign).
* macOS: Apple's "Mac keyboard shortcuts" (Spotlight, Mission Control, spaces, lock, force
  quit, zoom).
* Linux on X11: Ctrl+Alt+F1..F12 switch the virtual console on every desktop.
* OBS Studio binds no hotkey by default (Settings > Hotkeys starts empty), so it has no
  row; the NVIDIA overlay's Alt keys (ShadowPlay recording) do have rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from livecam.config.keycombo import canonical

ARROWS = ("Left", "Right", "Up", "Down")
WHERE = {"Left": "on the left", "Right": "on the right", "Up": "above", "Down": "below"}


@dataclass(frozen=True)
class DesktopShortcut:
    """One default shortcut: who uses ``combo`` (canonical text) and for what."""

    desktop: str
    combo: str
    does: str


def _rows(desktop: str, pairs: Iterable[tuple[str, str]]) -> tuple[DesktopShortcut, ...]:
    return tuple(DesktopShortcut(desktop, combo, does) for combo, does in pairs)


def _each(pattern: str, keys: Iterable[str], does: str) -> list[tuple[str, str]]:
    """``pattern`` ("Ctrl+Alt+{}") for each key, with ``does`` ("... {}") saying where (an
    arrow) or naming the key."""
    return [(pattern.format(k), does.format(WHERE.get(k, k))) for k in keys]


FKEYS = [f"F{n}" for n in range(1, 13)]

SHORTCUTS: tuple[DesktopShortcut, ...] = (
    *_rows(
        "GNOME",
        [
            *_each("Ctrl+Alt+{}", ARROWS, "switch to the workspace {}"),
            *_each("Ctrl+Alt+Shift+{}", ARROWS, "move the window to the workspace {}"),
            ("Ctrl+Alt+Shift+R", "screen recording"),
            ("Ctrl+Alt+Del", "log out"),
            ("Ctrl+Alt+Tab", "move the focus to the system controls"),
            ("Ctrl+Alt+Esc", "switch the system controls directly"),
            ("Ctrl+Alt+D", "hide all windows"),
            ("Ctrl+Alt+T", "open a terminal (Ubuntu)"),
            ("Meta+L", "lock the screen"),
            ("Meta+D", "hide all windows"),
            ("Meta+A", "show the applications"),
            ("Meta+V", "show the notifications"),
            ("Meta+Space", "switch the input source"),
            ("Meta+Tab", "switch applications"),
            ("Meta+PgUp", "previous workspace"),
            ("Meta+PgDown", "next workspace"),
            *_each("Meta+{}", ARROWS, "tile or maximize the window"),
            ("Alt+Tab", "switch applications"),
            ("Alt+F2", "run a command"),
            ("Alt+F4", "close the window"),
            ("Alt+F7", "move the window"),
            ("Alt+F8", "resize the window"),
            ("Alt+F10", "maximize the window"),
        ],
    ),
    *_rows(
        "Cinnamon",
        [
            ("Ctrl+Alt+Left", "switch to the workspace on the left"),
            ("Ctrl+Alt+Right", "switch to the workspace on the right"),
            ("Ctrl+Alt+Up", "show all workspaces"),
            ("Ctrl+Alt+Down", "show the windows of the workspace"),
            ("Ctrl+Alt+Shift+Left", "move the window to the workspace on the left"),
            ("Ctrl+Alt+Shift+Right", "move the window to the workspace on the right"),
        ],
    ),
    *_rows("MATE", _each("Ctrl+Alt+{}", ARROWS, "switch to the workspace {}")),
    *_rows(
        "KDE Plasma",
        [
            ("Ctrl+Alt+Del", "log out"),
            ("Ctrl+Alt+T", "open Konsole"),
            ("Meta+Ctrl+Esc", "kill a window"),
            *_each("Meta+Ctrl+{}", ARROWS, "switch to the desktop {}"),
            *_each("Meta+Alt+{}", ARROWS, "switch to the window {}"),
            *_each("Meta+{}", ARROWS, "quick-tile the window"),
            *[(f"Ctrl+F{n}", f"switch to desktop {n}") for n in range(1, 5)],
            ("Ctrl+F7", "present the windows of the application"),
            ("Ctrl+F9", "present the windows of the desktop"),
            ("Ctrl+F10", "present all windows"),
            ("Meta+Ctrl+A", "activate the window demanding attention"),
            ("Meta+Alt+K", "switch to the next keyboard layout"),
            ("Meta+Alt+S", "screen reader on/off"),
            ("Meta+D", "show the desktop"),
            ("Meta+W", "overview"),
            ("Meta+G", "grid view"),
            ("Meta+L", "lock the session"),
            ("Meta+V", "clipboard"),
            ("Meta+T", "edit tiles"),
            ("Alt+Space", "KRunner"),
            ("Alt+F2", "KRunner"),
            ("Alt+F1", "application launcher"),
            ("Alt+Tab", "walk through windows"),
            ("Alt+F4", "close the window"),
        ],
    ),
    *_rows(
        "KDE Plasma 5",
        [
            ("Ctrl+Alt+Esc", "kill a window"),
            ("Ctrl+Alt+Shift+Del", "log out without confirmation"),
            ("Ctrl+Alt+Shift+PgUp", "reboot without confirmation"),
            ("Ctrl+Alt+Shift+PgDown", "halt without confirmation"),
            ("Ctrl+Alt+A", "activate the window demanding attention"),
            ("Ctrl+Alt+K", "switch to the next keyboard layout"),
            ("Ctrl+Alt+L", "lock the session"),
            ("Ctrl+Alt+V", "Klipper at the mouse"),
            ("Ctrl+Alt+R", "Klipper: act on the clipboard"),
            ("Ctrl+Alt+X", "Klipper: clipboard actions on/off"),
        ],
    ),
    *_rows(
        "Xfce",
        [
            *_each("Ctrl+Alt+{}", ARROWS, "switch to the workspace {}"),
            *_each("Ctrl+Alt+Shift+{}", ARROWS, "move the window to the workspace {}"),
            ("Ctrl+Alt+Home", "move the window to the previous workspace"),
            ("Ctrl+Alt+End", "move the window to the next workspace"),
            ("Ctrl+Alt+D", "show the desktop"),
            ("Ctrl+Alt+Del", "lock the screen / log out"),
            ("Ctrl+Alt+L", "lock the screen"),
            ("Ctrl+Alt+T", "open a terminal"),
            ("Ctrl+Alt+F", "open the file manager"),
            ("Ctrl+Alt+Esc", "xkill (click a window to kill it)"),
            ("Ctrl+Esc", "desktop menu"),
            ("Ctrl+Shift+Esc", "task manager"),
            *[(f"Ctrl+F{n}", f"switch to workspace {n}") for n in range(1, 13)],
            ("Alt+F1", "applications menu"),
            ("Alt+F2", "application finder"),
            ("Alt+F3", "application finder"),
            ("Alt+Tab", "cycle windows"),
            ("Alt+F4", "close the window"),
            ("Meta+E", "open the file manager"),
            ("Meta+P", "display settings"),
            ("Meta+R", "application finder"),
        ],
    ),
    *_rows(
        "openbox",
        [
            *_each("Ctrl+Alt+{}", ARROWS, "go to the desktop {}"),
            *_each("Alt+Shift+{}", ARROWS, "send the window to the desktop {}"),
            *[(f"Meta+F{n}", f"go to desktop {n}") for n in range(1, 5)],
            ("Meta+D", "show the desktop"),
            ("Meta+E", "open the file manager"),
            ("Alt+F4", "close the window"),
            ("Alt+Esc", "lower the window"),
            ("Alt+Space", "window menu"),
            ("Alt+Tab", "next window"),
            ("Alt+Shift+Tab", "previous window"),
            ("Ctrl+Alt+Tab", "next window, panels and desktop too"),
        ],
    ),
    *_rows(
        "Windows",
        [
            ("Ctrl+Alt+Del", "security screen"),
            ("Ctrl+Alt+Tab", "switch apps (stays open)"),
            ("Ctrl+Shift+Esc", "Task Manager"),
            ("Ctrl+Esc", "Start menu"),
            *_each("Ctrl+Alt+{}", ARROWS, "rotate the screen with Intel graphics"),
            ("Ctrl+Alt+E", "types the euro sign (AltGr+E on most European layouts)"),
            ("Ctrl+Alt+Q", "types @ (AltGr+Q on German layouts)"),
            ("Alt+Tab", "switch apps"),
            ("Alt+F4", "close the window"),
            ("Alt+Esc", "cycle windows"),
            ("Meta+L", "lock"),
            ("Meta+D", "show the desktop"),
            ("Meta+E", "File Explorer"),
            ("Meta+R", "Run"),
            ("Meta+I", "Settings"),
            ("Meta+S", "search"),
            ("Meta+V", "clipboard history"),
            ("Meta+Tab", "task view"),
            ("Meta+G", "Game Bar"),
            ("Meta+Alt+R", "Game Bar: record"),
            ("Meta+Alt+G", "Game Bar: record what happened"),
            ("Meta+Shift+S", "Snipping Tool"),
            ("Meta+Ctrl+Left", "previous virtual desktop"),
            ("Meta+Ctrl+Right", "next virtual desktop"),
            ("Meta+Ctrl+D", "new virtual desktop"),
            ("Meta+Ctrl+F4", "close the virtual desktop"),
            ("Meta+Ctrl+Shift+B", "restart the graphics driver"),
            *_each("Meta+{}", ARROWS, "snap the window"),
            *[
                (f"Meta+Ctrl+Alt+Shift+{k}", f"Office key + {k} (opens a Microsoft 365 app)")
                for k in "WTOPXNDLY"
            ],
        ],
    ),
    *_rows(
        "macOS",
        [
            ("Meta+Space", "Spotlight"),
            ("Meta+Alt+Space", "Spotlight in Finder"),
            ("Meta+Ctrl+Space", "emoji and symbols"),
            ("Meta+Ctrl+Q", "lock the screen"),
            ("Meta+Alt+Esc", "force quit"),
            ("Meta+Tab", "switch apps"),
            ("Meta+Shift+Q", "log out"),
            ("Meta+Alt+Shift+Q", "log out at once"),
            ("Meta+Ctrl+F", "full screen"),
            ("Meta+Alt+D", "show/hide the Dock"),
            ("Meta+F5", "VoiceOver on/off"),
            ("Meta+Alt+8", "zoom on/off"),
            ("Meta+Alt+=", "zoom in"),
            ("Meta+Alt+-", "zoom out"),
            ("Ctrl+Up", "Mission Control"),
            ("Ctrl+Down", "application windows"),
            ("Ctrl+Left", "the space to the left"),
            ("Ctrl+Right", "the space to the right"),
            ("Ctrl+F1", "full keyboard access on/off"),
            ("Ctrl+F2", "focus the menu bar"),
            ("Ctrl+F3", "focus the Dock"),
        ],
    ),
    *_rows(
        "Linux (X11)",
        [
            *[(f"Ctrl+Alt+{f}", f"switch to virtual console {f[1:]}") for f in FKEYS],
            ("Ctrl+Alt+Backspace", "kill the X server (where enabled)"),
        ],
    ),
    *_rows(
        "NVIDIA overlay",
        [
            ("Alt+Z", "open the overlay"),
            ("Alt+F9", "start/stop recording"),
            ("Alt+F10", "save the instant replay"),
            ("Alt+F1", "screenshot"),
        ],
    ),
)

_BY_COMBO: dict[str, tuple[DesktopShortcut, ...]] = {}
for _row in SHORTCUTS:
    _BY_COMBO[_row.combo] = (*_BY_COMBO.get(_row.combo, ()), _row)


def desktop_uses(combo: str) -> tuple[DesktopShortcut, ...]:
    """The known default shortcuts on ``combo`` (any spelling LiveCam accepts); () when
    none, for "" and for a text that is no combination."""
    try:
        text = canonical(combo)
    except ValueError:
        return ()
    return _BY_COMBO.get(text, ()) if text else ()


def describe_uses(combo: str) -> str:
    """Who uses ``combo`` in one phrase: "GNOME (switch to the workspace left), Xfce (...)";
    "" when nobody."""
    return ", ".join(f"{s.desktop} ({s.does})" for s in desktop_uses(combo))


def clash_warnings(bindings: Mapping[str, str]) -> dict[str, str]:
    """Action -> a warning for each binding (action -> combination) that is a known
    desktop or overlay shortcut."""
    warnings = {}
    for action, combo in bindings.items():
        uses = describe_uses(combo)
        if uses:
            warnings[action] = f"{canonical(combo)} is also a shortcut of {uses}"
    return warnings
