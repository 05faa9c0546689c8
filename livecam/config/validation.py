"""Validation and coercion of config values: every value is converted to its field's type
and checked against the field's range and choices (``livecam.config.setting``), or a
ConfigError names the field (``section.field``) and the allowed values."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import fields
from typing import Any, ClassVar, Literal, Self, get_args, get_origin, get_type_hints

from livecam.config.setting import (
    choices_text,
    is_optional,
    plain_type,
    setting_of,
)
from livecam.errors import ConfigError


def type_name(hint: Any) -> str:
    """The values of type ``hint`` in words, as an error's "allowed:" says them."""
    origin = get_origin(hint)
    if origin is Literal:
        return choices_text(get_args(hint))
    if origin in (typing.Union, types.UnionType):
        named = [type_name(a) for a in get_args(hint) if a is not type(None)]
        optional = len(named) < len(get_args(hint))  # TOML has no none: leave the field out
        return " or ".join(named) + (" (or leave the field out)" if optional else "")
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of ({type_name(args[0])})"
        return f"list of {len(args)} values"
    if hint is bool:
        return "true or false"
    return "none" if hint is type(None) else getattr(hint, "__name__", str(hint))


def coerce(path: str, hint: Any, value: Any) -> Any:
    """Return ``value`` converted to ``hint`` or raise ConfigError naming ``path``."""
    origin = get_origin(hint)
    bad = ConfigError.bad_value(path, value, type_name(hint))
    if origin in (typing.Union, types.UnionType):
        for arg in get_args(hint):
            try:
                return coerce(path, arg, value)
            except ConfigError:
                continue
        raise bad
    if hint is type(None):
        if value is None:
            return None
        raise bad
    if origin is Literal:
        if value in get_args(hint):
            return value
        raise bad
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise bad
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(f"{path}[{i}]", args[0], v) for i, v in enumerate(value))
        if len(value) != len(args):
            raise bad
        return tuple(coerce(f"{path}[{i}]", a, v) for i, (a, v) in enumerate(zip(args, value)))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise bad
    if hint is str:
        if isinstance(value, str):
            return value
        raise bad
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, hint):
            return value
        if isinstance(value, dict):
            return from_dict(hint, value, path)
        raise bad
    raise TypeError(f"unsupported config type {hint!r} at {path}")


def from_dict(cls: type[Any], data: dict[str, Any], path: str) -> Any:
    """``cls`` built from a TOML table (after its ``_from_table``); unknown keys are a
    ConfigError listing the fields."""
    if issubclass(cls, Validated):
        data = cls._from_table(data, path)
    hints = get_type_hints(cls)
    names = [f.name for f in fields(cls) if f.init]
    unknown = sorted(set(data) - set(names))
    if unknown:
        where = f"[{path}]" if path else "the top level"
        raise ConfigError(
            f"unknown config field(s) {', '.join(map(repr, unknown))} in {where}",
            f"allowed fields: {', '.join(names)}",
        )
    kwargs = {k: coerce(f"{path}.{k}" if path else k, hints[k], v) for k, v in data.items()}
    return cls(**kwargs)


def field_problem(f: dataclasses.Field[Any], hint: Any, value: Any) -> str | None:
    """What field ``f``'s Setting does not allow in ``value`` (its allowed values in
    words), or None. The default is always allowed (computed choices are not loaded for
    it)."""
    info = setting_of(f)
    if value is None:
        return None
    values = value if isinstance(value, tuple) else (value,)
    if info.range is not None:
        low, high = info.range
        if not all(low <= v <= high for v in values):  # NaN is in no range
            return info.range_text(plain_type(hint))
    if info.choices is not None and value != f.default:
        allowed = info.choices()
        if not all(v in allowed for v in values):
            return choices_text(allowed, is_optional(hint))
    return None


class Validated:
    """Mixin: type-checks every field on construction, checks the ranges and choices of
    its Setting, then runs ``_check`` for what metadata cannot say."""

    SECTION: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            path = f"{self.SECTION}.{f.name}" if self.SECTION else f.name
            value = coerce(path, hints[f.name], getattr(self, f.name))
            object.__setattr__(self, f.name, value)
            problem = field_problem(f, hints[f.name], value)
            if problem is not None:
                raise ConfigError.bad_value(path, value, problem)
        self._check()

    def _check(self) -> None:
        """Checks beyond the type, range and choices; raise ConfigError naming the field."""

    def changed(self, **changes: Any) -> Self:
        """A copy with fields changed (validated)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    @classmethod
    def _from_table(cls, data: dict[str, Any], path: str) -> dict[str, Any]:
        """The TOML table ``data`` of this section as its fields are laid out now (a
        section whose fields moved reads its old layout here)."""
        return data

    def _require(self, ok: bool, name: str, allowed: str) -> None:
        if not ok:
            raise ConfigError.bad_value(f"{self.SECTION}.{name}", getattr(self, name), allowed)
