"""The sound of a converted video file, carried into the recording (PyAV).

The audio of the source file is copied packet by packet when its codec suits the
recording's container, else transcoded to AAC. Packets are interleaved with the video as
it is written (``mux_until``) and shifted onto the recording's timeline: the recording
starts at the file's first video frame, so audio before it is left out, and audio after
the last recorded frame is cut (``finish``), so both streams last as long as each other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

log = logging.getLogger(__name__)

#: audio codecs each container takes as they are (others are transcoded to AAC)
COPYABLE: dict[str, frozenset[str]] = {
    "mp4": frozenset({"aac", "mp3", "opus", "alac", "ac3", "eac3", "flac"}),
    "mov": frozenset({"aac", "mp3", "alac", "ac3", "eac3"})  # no Opus or FLAC in a .mov
    | frozenset({"pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s32le", "pcm_f32le", "pcm_u8"}),
    "matroska": frozenset(
        {"aac", "mp3", "opus", "vorbis", "flac", "alac", "ac3", "eac3", "dts", "truehd"}
    )
    | frozenset({"pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le", "pcm_u8"}),
}


def has_audio(path: Path) -> bool:
    """Whether ``path`` holds an audio stream PyAV can read (False when it cannot open it)."""
    try:
        with av.open(str(path)) as container:
            return bool(container.streams.audio)
    except Exception:
        return False


class AudioTrack:
    """The first audio stream of ``source``, added to the output ``container`` (in format
    ``fmt``, a key of COPYABLE) before its header is written.

    ``copied`` says whether packets are copied (True) or transcoded to AAC. Raises
    whatever PyAV raises when the file or its audio cannot be read.
    """

    def __init__(self, source: Path, container: Any, fmt: str) -> None:
        self.source = source
        self._input: Any = av.open(str(source))
        try:
            stream = self._input.streams.audio[0]
            # the recording's time 0 is the file's first video frame
            video = self._input.streams.video[0] if self._input.streams.video else None
            start = video.start_time if video is not None else None
            tb = video.time_base if video is not None else None
            self._origin_s = float(start * tb) if start is not None and tb is not None else 0.0
            ctx = stream.codec_context
            self.copied = ctx.name in COPYABLE.get(fmt, frozenset())
            if self.copied:
                self.output = container.add_stream_from_template(stream)
            else:
                layout = "mono" if ctx.channels == 1 else "stereo"
                self.output = container.add_stream("aac", rate=ctx.sample_rate, layout=layout)
                self._rate = int(ctx.sample_rate)
            self.codec = ctx.name
        except Exception:
            self._input.close()
            raise
        self._container = container
        self._packets: Iterator[Any] = self._input.demux(stream)
        self._next: Any = None  # a packet read but not yet due
        self.end_s = 0.0  # recording time the audio reaches so far

    def mux_until(self, t_s: float) -> None:
        """Write every audio packet that starts before recording time ``t_s``."""
        while True:
            packet = self._next if self._next is not None else next(self._packets, None)
            self._next = None
            if packet is None:
                return
            if packet.pts is None or packet.dts is None:
                continue  # the demuxer's final empty packet
            at_s = float(packet.pts * packet.time_base) - self._origin_s
            if at_s >= t_s:
                self._next = packet
                return
            if at_s >= 0:
                self._write(packet, at_s)

    def _write(self, packet: Any, at_s: float) -> None:
        shift = round(self._origin_s / packet.time_base)
        if self.copied:
            packet.pts -= shift
            packet.dts -= shift
            packet.stream = self.output
            self._container.mux(packet)
        else:
            for frame in packet.decode():
                frame.pts = round(float(frame.pts * frame.time_base - self._origin_s) * self._rate)
                frame.time_base = Fraction(1, self._rate)
                self._mux_all(self.output.encode(frame))
        duration = float(packet.duration * packet.time_base) if packet.duration else 0.0
        self.end_s = max(self.end_s, at_s + duration)

    def _mux_all(self, packets: list[Any]) -> None:
        for out in packets:
            self._container.mux(out)

    def finish(self, end_s: float) -> None:
        """Write the audio up to recording time ``end_s`` (the video's end), flush the
        encoder and close the source file."""
        try:
            self.mux_until(end_s)
            if not self.copied:
                self._mux_all(self.output.encode(None))
        finally:
            self.close()

    def close(self) -> None:
        self._input.close()
