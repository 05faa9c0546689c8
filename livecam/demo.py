"""`livecam demo`: swap one bundled portrait onto the other, animated, with no downloads."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from livecam.cli import print_summary, run_pipeline
from livecam.config import Config
from livecam.errors import LivecamError

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parents[1] / "assets"
DEMO_SOURCE_FACE = ASSETS / "grace_hopper.jpg"
DEMO_TARGET = ASSETS / "astronaut.png"


HEADLESS_FRAMES = 90


def demo_config(output: str, frames: int | None, window: bool) -> Config:
    """The offline-preset demo: the target portrait moves like a head on a webcam."""
    for path in (DEMO_SOURCE_FACE, DEMO_TARGET):
        if not path.is_file():
            raise LivecamError(
                f"demo input {path} is missing",
                "run the demo from a LiveCam checkout (the portraits live in assets/)",
            )
    return Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(DEMO_TARGET),
                "fps": 30,
                "unpaced": not window,
            },
            "buffer": {"lossless": not window},
            "output": {"sinks": ["window"] if window else [output]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(DEMO_SOURCE_FACE), "preset": "offline", "select": "one"},
            "run": {"frames": frames},
        }
    )


def run_demo(args: argparse.Namespace) -> int:
    from livecam.sinks.preview import window_problem

    window = args.window if args.window is not None else window_problem() is None
    frames = args.frames if args.frames is not None or window else HEADLESS_FRAMES
    cfg = demo_config(args.output, frames, window)
    where = "a preview window (close it or press q to stop)" if window else args.output
    length = f"{frames} frames" if frames else "until stopped"
    print(
        f"LiveCam demo: {DEMO_SOURCE_FACE.name} swapped onto an animated {DEMO_TARGET.name} "
        f"({length}, offline preset) -> {where}"
    )
    summary = run_pipeline(cfg, quiet=False)
    print_summary(summary)
    if not window:
        print(f"wrote {args.output}")
    return 0
