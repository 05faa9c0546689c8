"""The quality ladder: one list of levels, each a set of swap settings over the user's own.

Levels, best first; each is the one above plus one change (``swap.runtime.quality`` names them):

================  ==================================================================
``full``          the user's settings, unchanged
``small-batch``   ``face_batch = 1``: one face (or pixel-boost tile) per model call
``enhance-half``  ``enhance_every = max(user's, 2)``: the enhancer every other frame
``no-enhancer``   ``enhancer = "none"``
``small-detector`` ``detect_size = min(user's, 256)``
``cpu``           ``provider = "cpu"``: every ONNX model on the CPU
================  ==================================================================

A level that changes nothing for the running settings (the enhancer levels when the preset
has no enhancer, ``cpu`` when already on the CPU) is skipped when stepping. Settings the
user changes while a level is in force are kept (``rebase``). The controller that steps
this ladder is ``livecam.control.quality_controller``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from livecam.config.schema import Config, SwapConfig
from livecam.config.swap import setting_sections
from livecam.errors import ConfigError

AUTO = "auto"
SMALL_DETECTOR = 256  # px, the ``small-detector`` level's detector size at most


@dataclass(frozen=True)
class Level:
    """One rung: its name, what it does (for events), and its swap settings computed from
    the user's config (only the fields it changes over the level above)."""

    name: str
    what: str
    settings: Callable[[SwapConfig], Mapping[str, Any]]


LADDER: tuple[Level, ...] = (
    Level("full", "the configured settings", lambda c: {}),
    Level("small-batch", "one face per model call", lambda c: {"face_batch": 1}),
    Level(
        "enhance-half",
        "the enhancer every other frame",
        lambda c: {"enhance_every": max(c.neural.enhance_every, 2)},
    ),
    Level("no-enhancer", "the enhancer off", lambda c: {"enhancer": "none"}),
    Level(
        "small-detector",
        f"the detector at {SMALL_DETECTOR} px",
        lambda c: {"detect_size": min(c.detect.detect_size, SMALL_DETECTOR)},
    ),
    Level("cpu", "every model on the CPU", lambda c: {"provider": "cpu"}),
)
NAMES = tuple(level.name for level in LADDER)
#: the swap fields any level changes
FIELDS = tuple(dict.fromkeys(k for level in LADDER for k in level.settings(SwapConfig())))
_ENHANCER_LEVELS = ("enhance-half", "no-enhancer")


def index_of(name: str) -> int:
    """The position of level ``name`` on the ladder (0: full); a ConfigError naming the
    allowed values for anything else."""
    if name not in NAMES:
        raise ConfigError(
            f"quality level {name!r} does not exist",
            f"use auto or one of {', '.join(NAMES)}",
            field="swap.runtime.quality",
            value=name,
            allowed=", ".join((AUTO, *NAMES)),
        )
    return NAMES.index(name)


def level_settings(base: SwapConfig, index: int) -> dict[str, Any]:
    """The swap settings of level ``index`` for the user's config ``base``: every change of
    the levels down to it (fields equal to ``base``'s left out)."""
    settings: dict[str, Any] = {}
    for level in LADDER[1 : index + 1]:
        settings.update(level.settings(base))
    return {k: v for k, v in settings.items() if base.value(k) != v}


def level_config(base: SwapConfig, index: int) -> SwapConfig:
    """``base`` at level ``index``."""
    return base.changed(**level_settings(base, index))


def rebase(base: SwapConfig, current: SwapConfig, index: int) -> SwapConfig:
    """The user's config after changes made while level ``index`` was in force: every field
    of ``current`` that differs from what the level set is the user's new choice."""
    at_level = level_config(base, index)
    theirs = {
        name: current.value(name)
        for name in setting_sections()
        if current.value(name) != at_level.value(name)
    }
    return base.changed(**theirs)


def has_enhancer(cfg: SwapConfig) -> bool:
    """Whether ``cfg`` runs an enhancer (True when it cannot be told: preset ``auto``)."""
    if cfg.neural.enhancer is not None or cfg.neural.enhancer_model is not None:
        return cfg.neural.enhancer != "none"
    from livecam.models.presets import preset_row

    row = preset_row(cfg.preset)
    return row is None or row.enhancer is not None


def applies(base: SwapConfig, index: int) -> bool:
    """Whether level ``index`` changes something over the level above it for ``base``."""
    if index == 0:
        return True
    if LADDER[index].name in _ENHANCER_LEVELS and not has_enhancer(base):
        return False
    return level_config(base, index) != level_config(base, index - 1)


def step_down(base: SwapConfig, index: int) -> int | None:
    """The next level below ``index`` that changes something, or None at the bottom."""
    return next((i for i in range(index + 1, len(LADDER)) if applies(base, i)), None)


def step_up(base: SwapConfig, index: int, ceiling: int = 0) -> int | None:
    """The next level above ``index`` (not above ``ceiling``) that changes something, or
    None at the ceiling."""
    if index <= ceiling:
        return None
    return next((i for i in range(index - 1, ceiling, -1) if applies(base, i)), ceiling)


def pinned_config(cfg: Config) -> Config:
    """``cfg`` with the settings of its pinned level (``swap.runtime.quality``) applied: what a
    stream starts with."""
    setting = cfg.swap.runtime.quality
    if setting == AUTO:
        return cfg
    return cfg.with_section("swap", **level_settings(cfg.swap, index_of(setting)))
