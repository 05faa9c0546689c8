"""Text commands for a running stream (``livecam run --commands``): one line, one control.

Each line is turned into a call on ``app.controls``; a line that is not a valid command
is a LivecamError whose fix is that command's syntax (an unknown one lists the commands).
The outcome of a command arrives as an event (printed by the status printer like every
other event; ``live_event`` words its fix as a command, not as a CLI option). ``quit``
(or ``exit``), and the end of the input, end the run.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import tomllib
from collections.abc import Callable
from concurrent.futures import wait as wait_futures
from typing import IO, Any

from livecam.control.controls import SWITCHES, Change, Controls, Switch
from livecam.errors import ControlError, LivecamError, cut
from livecam.types import Event

HELP = """commands (one per line):
  swap on|off|toggle          face swap on or off
  blank on|off|toggle [IMAGE]
                              privacy: black frames (or IMAGE) instead of the camera
  freeze on|off|toggle        repeat the current frame
  mirror on|off               flip the camera picture left-right (a selfie view)
  face IMAGE [INDEX]          another source face (INDEX for group photos)
  select one|all|reference [IMAGE]   which faces to replace
  preset NAME                 another model set (offline, auto, ...)
  target X Y|auto             select one: swap the person at X Y (0..1 of the frame)
                              until they leave; auto: the main face
  set FIELD VALUE             a swap setting, e.g. set detect_size 800, set blend seamless
  stage NAME on|off           run or skip a stage
  help                        this text
  quit                        stop the stream and end the run (so does the end of input)"""

QUIT_WORDS = ("quit", "exit")
#: the most seconds the end of input waits for the commands read before it to be applied
#: (a preset or face change loads models on the loader thread)
SETTLE_S = 30.0
#: the switches ``NAME toggle`` flips (from the state last asked for: quick toggles alternate)
TOGGLES: dict[str, Switch] = {s: s for s in SWITCHES}


def _usages() -> dict[str, str]:
    """Each command's syntax, read from ``HELP`` (``face`` -> ``face IMAGE [INDEX]``)."""
    usages: dict[str, str] = {}
    for line in HELP.splitlines()[1:]:
        text = line.strip().split("  ")[0]
        if line.startswith("  ") and not line.startswith("   ") and text:
            usages.setdefault(text.split()[0], text)
    return usages


USAGES = _usages()
COMMANDS_TEXT = f"commands: {', '.join(USAGES)} (type `help` for their syntax)"

#: CLI options in the fixes of shared errors, and the live command that does the same
LIVE_FIXES = (
    (re.compile(r"--face-index (\d+) is"), r"face index \1 is"),
    (re.compile(r"(?:add |use )?--face-index between"), "type `face IMAGE N` with N between"),
    (re.compile(r"(?:add |use )?--face-index N"), "type `face IMAGE N`"),
    (re.compile(r"(?:add |use )?--face (?:PHOTO|IMG|IMAGE)"), "type `face IMAGE`"),
    (re.compile(r"(?:add |use )?--select reference"), "type `select reference IMAGE`"),
    (re.compile(r"(?:add |use )?--select (one|all)"), r"type `select \1`"),
    (re.compile(r"(?:add |use )?--preset (\w+)"), r"type `preset \1`"),
    (re.compile(r"(?:add |use )?--stage swap"), "type `face IMAGE`"),
)


def live_text(text: str) -> str:
    """``text`` with the CLI options it names put as live commands."""
    for pattern, command in LIVE_FIXES:
        text = pattern.sub(command, text)
    return text


def live_event(event: Event) -> Event:
    """A control's event with its message and fix worded for ``--commands``."""
    if event.origin != "controls":
        return event
    return dataclasses.replace(event, message=live_text(event.message), hint=live_text(event.hint))


def usage_hint(name: str) -> str:
    """The fix for a wrong ``name`` line: its syntax (``face``: ``face IMAGE N`` too)."""
    usage = USAGES.get(name)
    if usage is None:
        return COMMANDS_TEXT
    if name == "face":
        return "`face IMAGE` or `face IMAGE N` (N: which face of a group photo, 0 = the largest)"
    return f"`{usage}`"


class CommandError(ControlError, ValueError):
    """A line that is not a valid command: a word or number that does not fit (so a
    ValueError too), or a missing argument; its fix is the command's syntax."""


def _switch(word: str) -> bool:
    if word in ("on", "off"):
        return word == "on"
    raise ValueError(f"expected on or off, got {word!r}")


def _value(text: str) -> Any:
    """A TOML-style value (800, 0.5, true, "x"), else the text itself (seamless)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def execute(controls: Controls, line: str) -> Change | str | None:
    """Run one command line: its Change, the help text for ``help``, None for a blank line.
    An error echoes at most ``SHOWN_CHARS`` of the line (a pasted megabyte is cut)."""
    words = line.split()
    if not words:
        return None
    name, args = words[0].lower(), words[1:]
    try:
        return _dispatch(controls, name, args)
    except IndexError:
        raise CommandError(
            f"'{cut(line.strip())}' is missing an argument", usage_hint(name)
        ) from None
    except LivecamError as e:  # the control refused (its own type): its fix as a command
        e.message, e.hint = live_text(e.message), live_text(e.hint) or usage_hint(name)
        raise
    except ValueError as e:  # on/off, a number
        raise CommandError(f"'{cut(line.strip())}': {cut(str(e))}", usage_hint(name)) from None


def _dispatch(controls: Controls, name: str, args: list[str]) -> Change | str:
    if name == "help":
        return HELP
    switch = TOGGLES.get(name)
    if switch is not None and args[0] == "toggle":  # flips the state last asked for
        return controls.toggle(switch)
    if name == "swap":
        return controls.set_swap(_switch(args[0]))
    if name == "blank":
        return controls.set_blank(_switch(args[0]), args[1] if len(args) > 1 else None)
    if name == "freeze":
        return controls.set_freeze(_switch(args[0]))
    if name == "mirror":
        return controls.set_mirror(_switch(args[0]))
    if name == "face":
        return controls.set_face(args[0], int(args[1]) if len(args) > 1 else None)
    if name == "select":
        return controls.set_selection(args[0], args[1] if len(args) > 1 else None)  # type: ignore[arg-type]
    if name == "preset":
        return controls.set_preset(args[0])
    if name == "target":
        if args[0].lower() == "auto":
            return controls.set_target(None)
        return controls.set_target((float(args[0]), float(args[1])))
    if name == "set":
        field, value = args[0], " ".join(args[1:])
        if not value:
            raise IndexError(field)
        return controls.update_swap(**{field: _value(value)})
    if name == "stage":
        return controls.set_stage_enabled(args[0], _switch(args[1]))
    raise CommandError(f"unknown command {cut(name)!r}", COMMANDS_TEXT)


class CommandReader(threading.Thread):
    """Reads command lines from ``stream`` until ``quit`` or its end, then calls ``on_end``
    (which ends the run); errors go to ``report``.

    A daemon thread: a blocking read of a terminal cannot time out portably, and the
    process may exit while it waits (it holds nothing that needs closing)."""

    def __init__(
        self,
        controls: Controls,
        stream: IO[str],
        report: Callable[[str], None],
        on_end: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(name="livecam-commands", daemon=True)
        self.controls = controls
        self.stream = stream
        self.report = report
        self.on_end = on_end

    def run(self) -> None:
        try:
            self._read()
        finally:
            self.on_end()

    def _read(self) -> None:
        pending: list[Change] = []  # commands on their way to the stream
        why = "end of input"
        for line in self.stream:
            if line.strip().lower() in QUIT_WORDS:
                why = "quit"
                break
            try:
                outcome = execute(self.controls, line)
            except LivecamError as e:
                self.report(f"error: {e}")
                continue
            if isinstance(outcome, str):
                self.report(outcome)
            elif isinstance(outcome, Change):
                pending = [change for change in pending if not change.done()] + [outcome]
        self._settle(pending)
        self.report(f"commands: {why}: stopping the stream")

    def _settle(self, pending: list[Change]) -> None:
        """Wait until every command read is applied (its outcome is an event), at most
        ``SETTLE_S``: the end of input straight after a command must not drop it."""
        wait_futures(pending, timeout=SETTLE_S)
        late = [change for change in pending if not change.done()]
        if late:
            names = ", ".join(cut(change.command, 40) for change in late)
            self.report(f"commands: not applied within {SETTLE_S:g} s: {names}")
