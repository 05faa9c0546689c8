"""`livecam demo`: swap one bundled portrait onto the other, animated, with no downloads."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from livecam.cli.terminal_run import exit_status, print_summary, run_pipeline
from livecam.config.schema import Config
from livecam.errors import ConfigError
from livecam.sources.synthetic.portraits import SOURCE_FACE, TARGET, demo_portraits

log = logging.getLogger(__name__)

HEADLESS_FRAMES = 90


def demo_config(
    output: str,
    frames: int | None,
    window: bool,
    face: Path,
    target: Path,
    overwrite: bool = False,
) -> Config:
    """The lite-preset demo (bundled, no download): the target portrait moves like a head
    on a webcam. ``overwrite``: replace an existing ``output`` (else a timestamped name is
    used)."""
    return Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(target),
                "fps": 30,
                "unpaced": not window,
            },
            "buffer": {"lossless": not window},
            "output": {"sinks": ["window"] if window else [output], "overwrite": overwrite},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(face), "preset": "lite", "select": {"select": "one"}},
            "run": {"frames": frames},
        }
    )


def run_demo(args: argparse.Namespace) -> int:
    from livecam.sinks.preview import window_problem
    from livecam.sinks.recording.video import VIDEO_CODECS

    window = args.window if args.window is not None else window_problem() is None
    frames = args.frames if args.frames is not None or window else HEADLESS_FRAMES
    if not window and Path(args.output).suffix.lower() not in VIDEO_CODECS:
        raise ConfigError(
            f"--output {args.output} is not the name of a video file",
            f"end it in {', '.join(VIDEO_CODECS)}, e.g. --output demo.mp4",
        )
    where = "a preview window (close it or press q to stop)" if window else args.output
    length = f"{frames} frames" if frames else "until stopped"
    with demo_portraits() as (face, target):
        try:
            cfg = demo_config(args.output, frames, window, face, target, args.overwrite)
        except ConfigError as e:  # only --frames can be wrong
            raise ConfigError(f"--frames {frames} is invalid", e.hint) from None
        print(
            f"LiveCam demo: the face of {SOURCE_FACE} onto an animated {TARGET} "
            f"({length}, lite preset) -> {where}"
        )
        summary = run_pipeline(cfg)
    print_summary(summary)
    return exit_status(summary)
