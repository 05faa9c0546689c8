"""Which command-line option sets which config field, derived from the fields' Settings
(``livecam.config.setting``), and config errors reworded to name the option the user typed.
``livecam run``'s options (``livecam.cli.options``) and ``livecam bench`` use them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from livecam.config.schema import Config
from livecam.config.setting import Setting, leaf_fields, option_text, setting_of
from livecam.errors import ConfigError, cut


def config_settings() -> Iterator[tuple[str, dataclasses.Field[Any], Any, Setting]]:
    """``(section.field, field, type hint, Setting)`` of every field with an option."""
    for name, f, hint in leaf_fields(Config):
        info = setting_of(f)
        if info.option is not None:
            yield name, f, hint, info


#: config field -> (the option that sets it, its argparse dest); derived from the fields
FIELD_OPTIONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {name: (info.option, info.dest) for name, _, _, info in config_settings() if info.option}
)


def _field_of(error: ConfigError) -> str | None:
    """The ``section.field`` a ConfigError is about (``pipeline.stages[1]`` -> its list)."""
    return error.field.partition("[")[0] if error.field else None


def as_option_error(error: ConfigError, given: Mapping[str, Any]) -> ConfigError:
    """``error`` about a field set by an option, reworded to name the option."""
    name = _field_of(error)
    if name is None or name not in given or name not in FIELD_OPTIONS:
        return error
    option = FIELD_OPTIONS[name][0]
    return ConfigError(
        f"{option} {cut(option_text(error.value))} is invalid",
        f"allowed: {error.allowed}" if error.allowed else error.hint,
        field=error.field,
        value=error.value,
        allowed=error.allowed,
    )
