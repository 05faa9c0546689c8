"""`livecam verify FILE|DEVICE`: the command around ``livecam.stream.verify`` (see there
what it reads and its exit status: 0 marked, 1 not marked, 2 bad input)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm import tqdm

from livecam.errors import LivecamError, one_line
from livecam.stream.verify import (
    DEVICE_FRAMES,
    FILE_FRAMES,
    WINDOW_S,
    VerifyError,
    report_text,
    verify,
)


def add_verify_command(sub: Any) -> None:
    """The `verify` subcommand (``sub``: the CLI's subparsers)."""
    p = sub.add_parser(
        "verify",
        help="check a video, image or camera for LiveCam's AI mark and signed provenance",
        description="Look for the invisible AI mark in the frames of a video or image file "
        "or a camera device (e.g. /dev/video2, camera:1, a stream URL: point it at a "
        "virtual camera or a downloaded call recording) and read a file's C2PA manifest. "
        "Exit status: 0 marked as AI-modified, 1 not marked, 2 bad input.",
    )
    p.add_argument("target", metavar="FILE|DEVICE", help="video or image file, or camera")
    p.add_argument(
        "--frames",
        type=_positive,
        metavar="N",
        help=f"frames to read (default: {FILE_FRAMES} of a file, {DEVICE_FRAMES} of a camera)",
    )
    p.add_argument(
        "--window",
        type=_positive,
        metavar="N",
        help=f"frames per detection window (default: {WINDOW_S:g} seconds of frames)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.set_defaults(func=cmd_verify)


#: seconds a part of the check runs before its progress bar shows (a short file: none)
SHOW_AFTER_S = 2.0
_BARS = {
    "bytes": ("checking the C2PA hashes", "B"),
    "frames": ("looking for the mark", "frame"),
}


class ProgressBars:
    """The bars of a long ``verify`` on standard error: the hashing of the whole file by
    the C2PA check (bytes, with the rate and the time left) and the frames looked at,
    each shown only once it has run ``SHOW_AFTER_S`` seconds; removed when done."""

    def __init__(self) -> None:
        self._bars: dict[str, tqdm[Any]] = {}

    def update(self, what: str, done: int, total: int) -> None:
        bar = self._bars.get(what)
        if bar is None:
            label, unit = _BARS[what]
            bar = self._bars[what] = tqdm(
                total=total,
                desc=label,
                unit=unit,
                unit_scale=unit == "B",
                file=sys.stderr,
                delay=SHOW_AFTER_S,
                leave=False,
                dynamic_ncols=True,
            )
        if bar.disable:  # finished and closed
            return
        bar.update(max(0, done - bar.n))
        if done >= total:  # its line goes: the next part's bar takes it
            bar.close()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def cmd_verify(args: argparse.Namespace) -> int:
    bars = ProgressBars()
    try:
        verdict = verify(args.target, args.frames, args.window, bars.update)
    except LivecamError as e:  # one line, fix included: the exit status says the rest
        fix = f" (fix: {one_line(e.hint)})" if e.hint else ""
        raise VerifyError(f"{one_line(e.message)}{fix}") from None
    finally:
        bars.close()
    print(report_text(verdict))
    if verdict.mark.frames_total == 0 and not verdict.marked:
        return 2  # nothing decodes: its provenance is reported, the mark cannot be checked
    return 0 if verdict.marked else 1
