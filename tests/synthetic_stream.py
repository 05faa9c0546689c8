"""The synthetic streams the control and panel tests drive: the face-motion stream's config
and the exact set of frames it can send (so "passed through" means "one of the source's own
frames"), and the small stream most panel and hotkey tests start (``small_config``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from livecam.config.schema import Config
from livecam.sources.synthetic.pattern import MOTION_PERIOD, SyntheticSource

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SYNTHETIC = {"spec": "synthetic", "face_motion": str(ASSETS / "astronaut.png"), "size": [512, 512]}


def source_frames() -> set[bytes]:
    """Every frame the synthetic source can send (its motion repeats every MOTION_PERIOD)."""
    source = SyntheticSource(Config.from_dict({"source": SYNTHETIC}).source)
    source.open()
    return {hashlib.sha1(source.render(i).tobytes()).digest() for i in range(MOTION_PERIOD)}


def passed_through(frame: np.ndarray, plain: set[bytes]) -> bool:
    return hashlib.sha1(frame.tobytes()).digest() in plain


def small_config(face: str | Path | None = None, **sections: dict[str, Any]) -> Config:
    """A 320x240 synthetic stream at 30 fps into the null sink, swapping in ``face`` when
    given (else passed through); each of ``sections`` adds to (or replaces keys of) its
    section, e.g. ``small_config(face, swap={"preset": "lite"})``."""
    config: dict[str, dict[str, Any]] = {
        "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
        "output": {"sinks": ["null"]},
        "pipeline": {"stages": ["swap"] if face else ["passthrough"]},
        "swap": {"face": str(face)} if face else {},
    }
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    return Config.from_dict(config)
