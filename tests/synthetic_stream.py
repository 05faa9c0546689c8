"""The synthetic face-motion stream the control and panel tests drive: its config and the
exact set of frames it can send (so "passed through" means "one of the source's own frames")."""

from __future__ import annotations

import hashlib
from pathlib import Path

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
