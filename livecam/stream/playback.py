"""How a run is timed: real time (like a camera) or a conversion (every frame, unpaced).

A video file played once into files is a *conversion*: every frame, in order, as fast as
the pipeline goes, each with its timestamp in the file, so the output has the input's
frame count and duration. Everything else is *real time*: the source is paced to its
rate and the newest frame wins. ``source.unpaced`` and ``buffer.lossless`` force either
side; unset (None) they follow this rule.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from livecam.config.schema import Config
from livecam.sinks.base import Sink
from livecam.sources.base import Source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Playback:
    """``paced``: the capture thread paces the source to its fps and the output thread
    sends on its clock; ``lossless``: no frame is dropped (the source waits instead);
    ``conversion``: a finite source run unpaced, whose frames carry file timestamps;
    ``frames``: the frames to capture (None: until the source ends or the run is
    stopped)."""

    paced: bool
    lossless: bool
    conversion: bool
    frames: int | None = None


def plan_playback(config: Config, source: Source, sinks: Sequence[Sink]) -> Playback:
    """The timing of a run of ``source`` into ``sinks`` (see the module docstring).

    A finite source (a video file played once) is converted unpaced and lossless when no
    sink needs a steady rate (a virtual camera, a window, ``auto``); with such a sink it
    plays in real time. Other sources are paced unless ``source.unpaced``."""
    unpaced = config.source.unpaced
    if unpaced is None:
        unpaced = source.finite and not any(s.wants_repeats for s in sinks)
    lossless = config.buffer.lossless
    if lossless is None:
        lossless = source.finite and unpaced
    frames = config.run.frames
    if frames is None and source.still and sinks and all(s.still_file for s in sinks):
        log.info("a still photo into still files: one frame (give --frames for more)")
        frames = 1
    conversion = source.finite and unpaced
    return Playback(paced=not unpaced, lossless=lossless, conversion=conversion, frames=frames)


def expected_frames(config: Config, source: Source) -> int | None:
    """How many frames the run will capture, when known: the source's frame count
    (a video file played once), or ``run.frames`` when that is fewer."""
    counts = [n for n in (source.frame_count, config.run.frames) if n is not None]
    return min(counts) if counts and source.frame_count is not None else None
