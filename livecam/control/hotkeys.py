"""Global hotkeys: key combinations that drive a running stream while another app has
the focus (``livecam run --hotkeys``; the panel configures and owns them too). No Qt.

* ``HotkeyActions`` turns each action (``ACTIONS``) into a call on the control plane.
  A handler runs on pynput's listener thread: it only gives the command (the ``Change``
  is never waited on) and reports a refused one as an event; it never raises.
* ``HotkeyListener`` listens with ``pynput.keyboard.GlobalHotKeys`` (imported when
  started); ``stop`` joins its thread within ``STOP_JOIN_S``.
* ``hotkeys_available`` says whether global capture can work here, and why not: Wayland
  does not let an app read keys typed into other apps' windows.

Quality up/down steps through the presets (``QUALITY_LADDER``: offline < lite < standard <
quality), skipping those whose models are not on this machine. Presets, not pixel boost:
the preset is what "quality" means everywhere in LiveCam and each step is a visible
change on every machine (pixel boost does nothing for the default offline preset), and
stepping only among installed presets never starts a download in the middle of a stream.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livecam.config.keycombo import parse_combo
from livecam.config.schema import Config, HotkeysConfig
from livecam.control.desktop_shortcuts import clash_warnings
from livecam.errors import ConfigError, LivecamError, as_livecam_error
from livecam.models.presets import PRESETS, models_present, resolve_preset
from livecam.types import Event

if TYPE_CHECKING:
    from livecam.control.controls import Change, Controls
    from livecam.models.store import ModelStore

log = logging.getLogger(__name__)

ACTIONS = tuple(HotkeysConfig().bindings())
#: what each action does, for the help line and the panel
ACTION_TITLES: Mapping[str, str] = {
    "swap": "face swap on/off",
    "blank": "blank (privacy) on/off",
    "freeze": "freeze on/off",
    "enhancer": "enhancer off/on",
    "next_face": "next source face",
    "previous_face": "previous source face",
    "quality_up": "quality up (better preset)",
    "quality_down": "quality down (faster preset)",
}
QUALITY_LADDER = ("lite", "standard", "quality")
START_WAIT_S = 5.0  # the listener connects to the display within this
START_ATTEMPTS = 3
STOP_JOIN_S = 1.0
ORIGIN = "hotkeys"

HINT = "use the panel's in-window shortcuts, or `livecam run --commands` from a terminal"

Report = Callable[[Event], None]
Handler = Callable[[], None]


class HotkeyError(LivecamError):
    """Global hotkeys cannot be used here (Wayland, no display, pynput failing)."""


def hotkeys_available(env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether global hotkeys can work here, and the reason when not (Wayland, no display,
    pynput missing or failing to load). ``env``: the environment (default ``os.environ``)."""
    env = os.environ if env is None else env
    if sys.platform.startswith("linux"):
        wayland = env.get("XDG_SESSION_TYPE", "").lower() == "wayland"
        if wayland or (env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY")):
            return False, (
                "this is a Wayland session: Wayland does not let an app read keys typed into "
                "other windows (log in to an X11 session for global hotkeys)"
            )
        if not env.get("DISPLAY"):
            return False, "no X display (DISPLAY is not set)"
    try:
        import pynput.keyboard  # noqa: F401  (loads the platform backend: X, Win32, Quartz)
    except Exception as e:
        return False, f"pynput cannot listen to the keyboard here: {_first_line(e)}"
    return True, "global hotkeys work while other apps have the focus"


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def describe_bindings(bindings: Mapping[str, str]) -> str:
    """For the terminal: ``hotkeys: Ctrl+Alt+Shift+S swap, ...``, then a ``warning:`` line
    for each binding that a desktop, the OS or an overlay uses too (desktop_shortcuts)."""
    bound = [f"{combo} {action}" for action, combo in bindings.items() if combo]
    warnings = [f"\nwarning: hotkeys.{a} {w}" for a, w in clash_warnings(bindings).items()]
    return "hotkeys: " + (", ".join(bound) if bound else "none bound") + "".join(warnings)


def quality_ladder(cfg: Config, store: ModelStore | None) -> list[str]:
    """The presets of ``QUALITY_LADDER`` whose models are on this machine (for ``cfg``'s
    swap settings); without a store, those that need no model file."""
    return [
        name
        for name in QUALITY_LADDER
        if not PRESETS[name].model_names(cfg.swap)
        or (store is not None and models_present(PRESETS[name], store, cfg.swap))
    ]


def step_quality(current: str, ladder: Sequence[str], step: int) -> str | None:
    """The preset one ``step`` (+1 better, -1 faster) from ``current`` on ``ladder``, or
    None at its end."""
    rank = QUALITY_LADDER.index(current)
    if step > 0:
        above = [p for p in ladder if QUALITY_LADDER.index(p) > rank]
        return above[0] if above else None
    below = [p for p in ladder if QUALITY_LADDER.index(p) < rank]
    return below[-1] if below else None


def face_cycle(faces: Sequence[str], start: str | None = None) -> list[str]:
    """The ring next/previous face walk: ``faces`` in their order (the panel's recent faces
    as its Source tab shows them, ``hotkeys.faces``), each once (compared as absolute
    paths), and ``start`` (the face the run began with) last when it is not among them."""
    cycle: list[str] = []
    for f in (*faces, start):
        if f and str(Path(f).expanduser().absolute()) not in cycle:
            cycle.append(str(Path(f).expanduser().absolute()))
    return cycle


def step_face(current: str | None, cycle: Sequence[str], step: int) -> str | None:
    """The photo one ``step`` from ``current`` on ``cycle`` (wrapping), None when there is
    no other."""
    here = str(Path(current).expanduser().absolute()) if current else None
    if here in cycle:
        target = cycle[(cycle.index(here) + step) % len(cycle)]
        return None if target == here else target
    return cycle[0 if step > 0 else -1] if cycle else None


class HotkeyActions:
    """The action handlers on one stream's ``controls``.

    ``faces``: the photos next/previous face walk, in order (``face_cycle``; the face the
    run began with joins them), or a function giving them at each press (the panel's
    recent faces: faces opened while streaming join at once); ``store``:
    the model store that says which presets quality up/down may use; ``report``: where a
    refused action goes as an event (default: the log). While a command of the same action
    is still being applied, the next press steps on from its target, not from the old
    state, so pressing twice quickly acts twice.
    """

    def __init__(
        self,
        controls: Controls,
        faces: Sequence[str] | Callable[[], Sequence[str]] = (),
        store: ModelStore | None = None,
        report: Report | None = None,
    ) -> None:
        self.controls = controls
        self._faces = faces
        self._start_face = controls.config.swap.face
        self.store = store
        self._report = report or _log_event
        self._pending: dict[str, tuple[Any, Change]] = {}
        self._enhancer_before: str | None = None  # the enhancer switched off (None: preset's)
        self._lock = threading.Lock()  # pynput's thread and the panel's shortcuts

    def handlers(self) -> dict[str, Handler]:
        """Action -> handler that never raises (a refused command is reported)."""
        return {action: self._guarded(action) for action in ACTIONS}

    def run(self, action: str) -> Change | None:
        """Do ``action`` now: its Change, or None when there was nothing to do (reported)."""
        with self._lock:
            do: Callable[[], Change | None] = getattr(self, f"_{action}")
            return do()

    def _guarded(self, action: str) -> Handler:
        def handle() -> None:
            try:
                self.run(action)
            except Exception as e:  # never into pynput's thread: an event instead
                error = as_livecam_error(e)
                self._report(Event("error", ORIGIN, f"{action}: {error.message}", error.hint))

        return handle

    # --- state as it will be once the pending commands are applied ----------------------
    def _current(self, action: str, now: Any) -> Any:
        pending = self._pending.get(action)
        return pending[0] if pending is not None and not pending[1].done() else now

    def _give(self, action: str, target: Any, change: Change) -> Change:
        self._pending[action] = (target, change)
        return change

    def _info(self, message: str, hint: str = "") -> None:
        self._report(Event("info", ORIGIN, message, hint))

    # --- the actions --------------------------------------------------------------------
    # swap, blank and freeze flip the state last asked for by anyone (``Controls.toggle``)
    def _swap(self) -> Change:
        return self.controls.toggle("swap")

    def _blank(self) -> Change:
        return self.controls.toggle("blank")

    def _freeze(self) -> Change:
        return self.controls.toggle("freeze")

    def _enhancer(self) -> Change | None:
        cfg = self.controls.config
        value = self._current("enhancer", cfg.swap.neural.enhancer)
        preset = resolve_preset(cfg.swap.preset, self.store, cfg.swap)
        if value != "none" and (value is not None or preset.enhancer is not None):
            self._enhancer_before = value
            target: str | None = "none"
        elif self._enhancer_before is not None or preset.enhancer is not None:
            target = self._enhancer_before
        else:
            self._info(
                f"enhancer: the {preset.name} preset has no enhancer to switch on",
                "choose one (--enhancer, or the panel's Processing tab)",
            )
            return None
        return self._give("enhancer", target, self.controls.update_swap(enhancer=target))

    def _next_face(self) -> Change | None:
        return self._step_face("next_face", +1)

    def _previous_face(self) -> Change | None:
        return self._step_face("previous_face", -1)

    @property
    def faces(self) -> tuple[str, ...]:
        """The photos next/previous face walk now (before the run's first face)."""
        faces = self._faces
        return tuple(faces() if callable(faces) else faces)

    def _step_face(self, action: str, step: int) -> Change | None:
        cfg = self.controls.config
        cycle = face_cycle(self.faces, self._start_face)
        current = self._current("face", cfg.swap.face)
        target = step_face(current, cycle, step)
        if target is None:
            self._info(
                f"{action}: no other source face to switch to",
                "add photos to hotkeys.faces in the config, or open faces in the panel",
            )
            return None
        return self._give("face", target, self.controls.set_face(target))

    def _quality_up(self) -> Change | None:
        return self._step_quality("quality_up", +1)

    def _quality_down(self) -> Change | None:
        return self._step_quality("quality_down", -1)

    def _step_quality(self, action: str, step: int) -> Change | None:
        cfg = self.controls.config
        now = resolve_preset(cfg.swap.preset, self.store, cfg.swap).name
        current = self._current("quality", now)
        ladder = quality_ladder(cfg, self.store)
        target = step_quality(current, ladder, step)
        if target is None:
            end = "best" if step > 0 else "fastest"
            self._info(
                f"{action}: {current} is already the {end} preset whose models are here "
                f"({' < '.join(ladder)})",
                "get more with `livecam models fetch PRESET`" if step > 0 else "",
            )
            return None
        return self._give("quality", target, self.controls.set_preset(target))


def _started_listener(bindings: Mapping[str, Handler]) -> Any:
    """A started, ready ``GlobalHotKeys``, or None when its thread died starting."""
    from pynput.keyboard import GlobalHotKeys

    listener = GlobalHotKeys(bindings)
    listener.daemon = True
    listener.name = "livecam-hotkeys"
    listener.start()
    deadline = time.monotonic() + START_WAIT_S
    while not getattr(listener, "_ready", True) and listener.is_alive():
        if time.monotonic() > deadline:
            listener.stop()
            return None
        time.sleep(0.01)
    return listener if listener.is_alive() else None


def _wake_xorg(listener: Any) -> None:
    """Make an X listener's thread see its stop now. pynput asks the server to end the
    record context on the connection its thread is blocked reading, and that request only
    leaves with the next key event; sent on its other connection, it leaves at once."""
    display, context = getattr(listener, "_display_stop", None), getattr(listener, "_context", None)
    if display is None or context is None:
        return  # not the X backend
    try:
        display.record_disable_context(context)
        display.flush()
    except Exception as e:  # the display went away: the thread ends by itself
        log.debug("waking the hotkey listener: %s", _first_line(e))


def _log_event(event: Event) -> None:
    log.log(logging.ERROR if event.level == "error" else logging.INFO, "%s", event)


class HotkeyListener:
    """Global hotkeys: ``bindings`` (action -> "Ctrl+Alt+S"; "" unbound) call ``handlers``
    (action -> callable) on pynput's listener thread. ``start`` raises a HotkeyError when
    the listener cannot start; ``stop`` is safe to call twice."""

    def __init__(self, bindings: Mapping[str, str], handlers: Mapping[str, Handler]) -> None:
        self.bindings = {a: c for a, c in bindings.items() if c}
        missing = sorted(set(self.bindings) - set(handlers))
        if missing:
            raise ValueError(f"no handler for hotkey action(s) {', '.join(missing)}")
        self.handlers = dict(handlers)
        self._listener: Any = None

    @property
    def running(self) -> bool:
        return self._listener is not None and self._listener.is_alive()

    def pynput_bindings(self) -> dict[str, Handler]:
        """pynput combination -> handler; a ConfigError naming the action(s) for a
        combination pynput cannot read or two that it reads as the same keys."""
        from pynput.keyboard import HotKey

        keys: dict[frozenset[Any], str] = {}
        mapping: dict[str, Handler] = {}
        for action, text in self.bindings.items():
            try:
                combo = parse_combo(text).pynput
                parsed = frozenset(HotKey.parse(combo))
            except ValueError as e:
                raise ConfigError(
                    f"hotkeys.{action}: {text!r} cannot be used as a global hotkey ({e})",
                    "choose another key combination, e.g. Ctrl+Alt+S",
                ) from None
            if parsed in keys:
                raise ConfigError(
                    f"hotkeys.{keys[parsed]} and hotkeys.{action} are the same keys ({text})",
                    "give each action its own key combination",
                )
            keys[parsed] = action
            mapping[combo] = self.handlers[action]
        return mapping

    def start(self) -> None:
        """Start listening (connects to the display); HotkeyError when it cannot."""
        if self.running:
            return
        ok, why = hotkeys_available()
        if not ok:
            raise HotkeyError(f"global hotkeys are not available: {why}", HINT)
        bindings = self.pynput_bindings()
        for _attempt in range(START_ATTEMPTS):  # an X server may reset a new connection
            listener = _started_listener(bindings)
            if listener is not None:
                break
        else:
            raise HotkeyError("the global hotkey listener did not start", HINT)
        self._listener = listener
        log.debug("hotkeys listening: %s", self.bindings)

    def stop(self) -> None:
        """Stop listening; the listener's thread is joined within ``STOP_JOIN_S``."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.stop()
        deadline = time.monotonic() + STOP_JOIN_S
        while listener.is_alive() and time.monotonic() < deadline:
            _wake_xorg(listener)  # again if it was sent before the thread began to read
            try:
                listener.join(0.05)
            except Exception as e:  # pynput re-raises its thread's error here
                log.warning("the hotkey listener ended with an error: %s", _first_line(e))
                break
        if listener.is_alive():
            log.warning("the hotkey listener did not stop within %.1f s", STOP_JOIN_S)

    def __enter__(self) -> HotkeyListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
