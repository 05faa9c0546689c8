"""One definition per setting: a config field carries its command-line option, help text,
range and choices as dataclass field metadata (``setting(...)``).

Everything else is derived from it: the options of ``livecam run`` (livecam.cli.options),
the option-to-field mapping (livecam.config.option_map), the range and choice checks with
their error texts (livecam.config.validation), the fuzz test's options and the panel's
choice lists.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

#: the metadata key of a field's Setting
KEY = "setting"
#: capture and output rates (frames per second): the range of every fps field
MIN_FPS, MAX_FPS = 1, 240
FPS_RANGE = (MIN_FPS, MAX_FPS)
FPS_WORDS = "a number of frames per second from {min} to {max}"


def _any_file(value: str) -> str | None:
    return value


@dataclass(frozen=True)
class Setting:
    """What a config field is, beyond its type and default.

    ``option``: the ``livecam run`` option that sets it (``None``: config file only); a
    bool option named ``--no-...`` sets False, any other bool option True; ``negatable``
    adds ``--no-OPTION`` (argparse's BooleanOptionalAction); ``off`` names a second option
    that sets False (``--realtime``), exclusive with the first. ``help`` may hold
    ``{default}``: the field's default as it is typed on the command line. ``range``:
    (min, max), inclusive, of a number or of every number of a tuple; ``allowed`` says it
    in words (``{min}`` and ``{max}`` are filled in; default "an integer / a number from
    MIN to MAX"). ``choices``: the allowed strings, computed when asked (model and preset
    names come from their tables); a Literal field's come from its type. ``parse``: the
    command line's converter when the value is not a plain number or string (``WxH``).
    ``debug``: a test or bench knob, left out of ``livecam run --help`` (shown by
    ``--help-debug``). ``path``: which values are file paths (relative ones are taken from
    the config file's folder); ``pairs``: ``A=B`` path pairs. ``input``: the field names
    an input file checked before the stream starts: (what it is called, the fix).
    ``applies_with``: the scope the field applies in only (``livecam.cli.options.SCOPES``,
    e.g. ``synthetic``): set while its scope does not hold, it is an error (an option) or a
    warning (a config file field); every field of the swap section is in ``swap`` too.
    """

    option: str | None = None
    help: str = ""
    range: tuple[float, float] | None = None
    allowed: str | None = None
    choices: Callable[[], tuple[str, ...]] | None = None
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None
    negatable: bool = False
    off: str | None = None
    off_help: str = ""
    group: str | None = None
    debug: bool = False
    path: Callable[[str], str | None] | None = None
    pairs: bool = False
    input: tuple[str, str] | None = None
    applies_with: str | None = None

    @property
    def dest(self) -> str:
        """The argparse attribute of ``option`` (``--no-mjpg`` -> ``mjpg``)."""
        assert self.option is not None
        name = self.option.removeprefix("--")
        return name.removeprefix("no-").replace("-", "_")

    def range_text(self, kind: type) -> str:
        """The allowed range in words."""
        assert self.range is not None
        low, high = (number_text(v) for v in self.range)
        words = self.allowed or (
            "an integer from {min} to {max}" if kind is int else "a number from {min} to {max}"
        )
        return words.format(min=low, max=high)


def setting(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    path: bool | Callable[[str], str | None] = False,
    **meta: Any,
) -> Any:
    """A config field with its Setting (see ``Setting`` for the keywords); ``path=True``
    marks a field holding a path, ``path=FUNC`` one where FUNC says which values are files."""
    which = _any_file if path is True else (path or None)
    info = Setting(path=which, **meta)
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata={KEY: info})
    return field(default=default, metadata={KEY: info})


def setting_of(f: dataclasses.Field[Any]) -> Setting:
    """The Setting of field ``f`` (an empty one when it has none)."""
    info = f.metadata.get(KEY)
    return info if isinstance(info, Setting) else Setting()


def sections(config_cls: type[Any]) -> Iterator[tuple[str, type[Any]]]:
    """``(section name, section class)`` of the config tree, in order."""
    hints = typing.get_type_hints(config_cls)
    for f in dataclasses.fields(config_cls):
        yield f.name, hints[f.name]


def is_section(hint: Any) -> bool:
    """True when a field of type ``hint`` is a section of its own (a config dataclass)."""
    return dataclasses.is_dataclass(hint) and isinstance(hint, type)


def leaf_fields(
    config_cls: type[Any], prefix: str = ""
) -> Iterator[tuple[str, dataclasses.Field[Any], Any]]:
    """``(section.field, field, type hint)`` of every field that holds a value, in config
    order, into every section of a section (``swap.detect.detect_size``)."""
    hints = typing.get_type_hints(config_cls)
    for f in dataclasses.fields(config_cls):
        path = f"{prefix}.{f.name}" if prefix else f.name
        if is_section(hints[f.name]):
            yield from leaf_fields(hints[f.name], path)
        else:
            yield path, f, hints[f.name]


def value_at(config: Any, path: str) -> Any:
    """The value of field ``path`` (``swap.detect.detect_size``) of the config tree."""
    for name in path.split("."):
        config = getattr(config, name)
    return config


def number_text(value: float) -> str:
    """``3600.0`` -> ``3600``, ``0.05`` -> ``0.05``, ``1e9`` -> ``1000000000``."""
    if isinstance(value, int) or (math.isfinite(value) and value == int(value)):
        return str(int(value))
    return repr(value)


def literal_choices(hint: Any) -> tuple[Any, ...] | None:
    """The values of a Literal type, of an optional one, or of a tuple of one; else None."""
    origin = get_origin(hint)
    if origin is Literal:
        return get_args(hint)
    if origin in (typing.Union, types.UnionType, tuple):
        for arg in get_args(hint):
            if arg is not type(None) and arg is not Ellipsis:
                found = literal_choices(arg)
                if found is not None:
                    return found
    return None


def plain_type(hint: Any) -> Any:
    """``float | None`` -> ``float``; ``tuple[str, ...]`` -> ``str``; a Literal -> ``str``."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return plain_type(next(a for a in get_args(hint) if a is not type(None)))
    if origin is tuple:
        return plain_type(get_args(hint)[0])
    if origin is Literal:
        return type(get_args(hint)[0])
    return hint


def is_optional(hint: Any) -> bool:
    return get_origin(hint) in (typing.Union, types.UnionType) and type(None) in get_args(hint)


def is_list(hint: Any) -> bool:
    """``tuple[X, ...]`` (an option given once per value)."""
    args = get_args(hint)
    return get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis


def choices_text(values: tuple[Any, ...], optional: bool = False) -> str:
    """The allowed values as a config error says them (``'a' | 'b'``)."""
    text = " | ".join(repr(v) for v in values)
    return text + (" (or leave the field out)" if optional else "")


def option_text(value: Any, sep: str = " ") -> str:
    """A config value as it is typed on the command line (``sep`` between a list's values)."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple | list):
        return sep.join(str(v) for v in value)
    return str(value)
