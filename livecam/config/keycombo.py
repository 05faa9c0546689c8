"""Key combinations of the hotkeys: "Ctrl+Alt+S" text, checked, made canonical, and turned
into pynput's "<ctrl>+<alt>+s" form.

The text is what Qt's ``QKeySequence`` shows (PortableText), so the panel's key editor
and the config file read alike: modifiers ``Meta`` (the Super / Windows / Command key),
``Ctrl``, ``Alt``, ``Shift``, in that order, then one key: a letter, a digit, a
punctuation key, ``F1``-``F20``, or a named key (``Left``, ``PgUp``, ``Space``, ...).
Case and aliases (``Control``, ``Win``, ``Super``, ``PageUp``, ``Delete``, ``Enter``...)
are accepted and written back canonically. A global hotkey needs Ctrl, Alt or Meta (or is
a function key): a plain or Shift-only key would fire whenever the user types it.
An empty text leaves the action without a hotkey.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: canonical modifier -> pynput name, in canonical order
MODIFIERS: Mapping[str, str] = MappingProxyType(
    {"Meta": "cmd", "Ctrl": "ctrl", "Alt": "alt", "Shift": "shift"}
)
_MODIFIER_ALIASES = MappingProxyType(
    {
        "meta": "Meta",
        "super": "Meta",
        "win": "Meta",
        "cmd": "Meta",
        "command": "Meta",
        "ctrl": "Ctrl",
        "control": "Ctrl",
        "alt": "Alt",
        "option": "Alt",
        "shift": "Shift",
    }
)
#: canonical key name -> pynput key name
NAMED_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "Left": "left",
        "Right": "right",
        "Up": "up",
        "Down": "down",
        "Home": "home",
        "End": "end",
        "PgUp": "page_up",
        "PgDown": "page_down",
        "Ins": "insert",
        "Del": "delete",
        "Space": "space",
        "Tab": "tab",
        "Return": "enter",
        "Esc": "esc",
        "Backspace": "backspace",
        **{f"F{n}": f"f{n}" for n in range(1, 21)},
    }
)
_KEY_ALIASES = MappingProxyType(
    {
        **{name.lower(): name for name in NAMED_KEYS},
        "pageup": "PgUp",
        "page_up": "PgUp",
        "pagedown": "PgDown",
        "page_down": "PgDown",
        "pgdn": "PgDown",
        "insert": "Ins",
        "delete": "Del",
        "enter": "Return",
        "escape": "Esc",
    }
)
PUNCTUATION = "-=[];',./\\`"  # keys typed as themselves ("+" is the separator: use "=")
ALLOWED = (
    "modifiers Meta, Ctrl, Alt, Shift joined by '+' to one key (a letter, a digit, one of "
    f"{PUNCTUATION}, F1-F20, {', '.join(n for n in NAMED_KEYS if not n.startswith('F'))}), "
    "e.g. Ctrl+Alt+S; empty for no hotkey"
)


@dataclass(frozen=True)
class Combo:
    """One key combination: its modifiers (canonical order) and key."""

    modifiers: tuple[str, ...]
    key: str

    @property
    def text(self) -> str:
        """The canonical text, e.g. ``Ctrl+Alt+S``."""
        return "+".join((*self.modifiers, self.key))

    @property
    def pynput(self) -> str:
        """pynput's form, e.g. ``<ctrl>+<alt>+s``."""
        key = NAMED_KEYS.get(self.key)
        parts = [f"<{MODIFIERS[m]}>" for m in self.modifiers]
        parts.append(f"<{key}>" if key is not None else self.key.lower())
        return "+".join(parts)


def parse_combo(text: str) -> Combo:
    """The combination ``text`` names; ValueError saying what is wrong (see ``ALLOWED``)."""
    parts = [p.strip() for p in text.split("+")]
    if any(not p for p in parts):
        raise ValueError(f"{text!r} has an empty part (a key before or after each '+')")
    *mods, last = parts
    modifiers = set()
    for m in mods:
        name = _MODIFIER_ALIASES.get(m.lower())
        if name is None:
            raise ValueError(f"{m!r} in {text!r} is not a modifier (Meta, Ctrl, Alt, Shift)")
        if name in modifiers:
            raise ValueError(f"{text!r} names {name} twice")
        modifiers.add(name)
    if last.lower() in _MODIFIER_ALIASES:
        raise ValueError(f"{text!r} ends with a modifier: add the key, e.g. Ctrl+Alt+S")
    key = _key_name(last)
    if not key:
        raise ValueError(f"{last!r} in {text!r} is not a key LiveCam knows")
    if "Shift" in modifiers and len(key) == 1 and not key.isalpha():
        raise ValueError(f"{text!r}: Shift changes what {key!r} types; use a letter or a named key")
    function_key = key in NAMED_KEYS and key.startswith("F")
    if not modifiers - {"Shift"} and not function_key:
        raise ValueError(
            f"{text!r} needs Ctrl, Alt or Meta: a global hotkey without one fires while typing"
        )
    return Combo(tuple(m for m in MODIFIERS if m in modifiers), key)


def _key_name(text: str) -> str:
    """The canonical name of key ``text`` ("" when it is none)."""
    if len(text) == 1:
        ok = text.isascii() and (text.isalnum() or text in PUNCTUATION)
        return text.upper() if ok else ""
    return _KEY_ALIASES.get(text.lower(), "")


def canonical(text: str) -> str:
    """``text`` written canonically ("" stays ""); ValueError when it is no combination."""
    return parse_combo(text).text if text.strip() else ""


def find_conflict(bindings: Mapping[str, str]) -> tuple[str, str, str] | None:
    """The first two actions bound to the same combination, and it: ``(first, second,
    combo)``; None when every combination is distinct. Unbound ("") actions never clash."""
    seen: dict[str, str] = {}
    for action, text in bindings.items():
        combo = canonical(text)
        if not combo:
            continue
        if combo in seen:
            return seen[combo], action, combo
        seen[combo] = action
    return None
