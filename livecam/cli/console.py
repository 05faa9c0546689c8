"""Text commands for a running stream (``livecam run --commands``): one line, one control.

Each line is turned into a call on ``app.controls``; a line that is not a valid command
is a LivecamError that says what is accepted. The outcome of a command arrives as an
event (printed by the status printer like every other event).
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Callable
from typing import IO, Any

from livecam.control.controls import TUNABLE_SWAP_FIELDS, Change, Controls
from livecam.errors import ControlError, LivecamError

HELP = """commands (one per line):
  swap on|off|toggle          face swap on or off
  blank on|off [IMAGE]        privacy: black frames (or IMAGE) instead of the camera
  freeze on|off               repeat the current frame
  face IMAGE [INDEX]          another source face (INDEX for group photos)
  select one|all|reference [IMAGE]   which faces to replace
  preset NAME                 another model set (offline, auto, ...)
  target X Y|auto             select one: swap the person at X Y (0..1 of the frame)
                              until they leave; auto: the main face
  set FIELD VALUE             a swap setting, e.g. set detect_size 800, set blend seamless
  stage NAME on|off           run or skip a stage
  help                        this text"""


def _switch(word: str) -> bool:
    if word in ("on", "off"):
        return word == "on"
    raise ControlError(f"expected on or off, got {word!r}", "e.g. `swap off`")


def _value(text: str) -> Any:
    """A TOML-style value (800, 0.5, true, "x"), else the text itself (seamless)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def execute(controls: Controls, line: str) -> Change | str | None:
    """Run one command line: its Change, the help text for ``help``, None for a blank line."""
    words = line.split()
    if not words:
        return None
    name, args = words[0].lower(), words[1:]
    try:
        return _dispatch(controls, name, args)
    except IndexError:
        raise ControlError(f"'{line.strip()}' is missing an argument", "type `help`") from None


def _dispatch(controls: Controls, name: str, args: list[str]) -> Change | str:
    if name == "help":
        return HELP
    if name == "swap":
        return (
            controls.toggle_swap() if args[0] == "toggle" else controls.set_swap(_switch(args[0]))
        )
    if name == "blank":
        return controls.set_blank(_switch(args[0]), args[1] if len(args) > 1 else None)
    if name == "freeze":
        return controls.set_freeze(_switch(args[0]))
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
    raise ControlError(
        f"unknown command {name!r}",
        f"type `help`; settings for `set`: {', '.join(TUNABLE_SWAP_FIELDS)}",
    )


class CommandReader(threading.Thread):
    """Reads command lines from ``stream`` until it ends; errors go to ``report``.

    A daemon thread: a blocking read of a terminal cannot time out portably, and the
    process may exit while it waits (it holds nothing that needs closing)."""

    def __init__(self, controls: Controls, stream: IO[str], report: Callable[[str], None]) -> None:
        super().__init__(name="livecam-commands", daemon=True)
        self.controls = controls
        self.stream = stream
        self.report = report

    def run(self) -> None:
        for line in self.stream:
            try:
                outcome = execute(self.controls, line)
            except LivecamError as e:
                self.report(f"error: {e}")
            except ValueError as e:
                self.report(f"error: {e} (type `help`)")
            else:
                if isinstance(outcome, str):
                    self.report(outcome)
