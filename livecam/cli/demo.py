"""`livecam demo`: swap one bundled portrait onto the other, animated, with no downloads."""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import logging
from collections.abc import Iterator
from pathlib import Path

from livecam.cli.terminal_run import exit_status, print_summary, run_pipeline
from livecam.config.schema import Config
from livecam.errors import ConfigError, LivecamError

log = logging.getLogger(__name__)

#: the package data that holds the portraits (the repository's assets/ folder)
ASSETS_PACKAGE = "livecam.assets"
SOURCE_FACE = "grace_hopper.jpg"
TARGET = "astronaut.png"
HEADLESS_FRAMES = 90


@contextlib.contextmanager
def demo_portraits() -> Iterator[tuple[Path, Path]]:
    """(source face, target portrait) as files on disk, from the installed package data."""
    fix = (
        "reinstall LiveCam (`pip install --force-reinstall livecam`; "
        "in a checkout `pip install -e .`)"
    )
    try:
        root = importlib.resources.files(ASSETS_PACKAGE)
    except ModuleNotFoundError:
        raise LivecamError(
            f"the demo portraits ({ASSETS_PACKAGE}) are not installed", fix
        ) from None
    with contextlib.ExitStack() as stack:
        paths = []
        for name in (SOURCE_FACE, TARGET):
            resource = root / name
            if not resource.is_file():
                raise LivecamError(f"demo portrait {name} is missing from {ASSETS_PACKAGE}", fix)
            paths.append(stack.enter_context(importlib.resources.as_file(resource)))
        yield paths[0], paths[1]


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
            "swap": {"face": str(face), "preset": "lite", "select": "one"},
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
