"""Core data types that cross module boundaries: frames, packets, faces, per-face work
records, timings, events."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from livecam.errors import ControlError, FrameFormatError

Frame = npt.NDArray[np.uint8]
"""A frame at every boundary: uint8, BGR, shape (H, W, 3), C-contiguous."""


def validate_frame(frame: object, where: str) -> Frame:
    """Check ``frame`` follows the frame contract; raise FrameFormatError naming ``where``."""
    expected = "numpy.uint8 BGR array of shape (H, W, 3), C-contiguous"
    if not isinstance(frame, np.ndarray):
        raise FrameFormatError(
            f"{where}: expected a {expected}, got {type(frame).__name__}",
            "convert the image with livecam.userfiles.images.to_bgr8 first",
        )
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise FrameFormatError(
            f"{where}: expected a {expected}, got dtype {frame.dtype} shape {frame.shape}",
            "convert the image with livecam.userfiles.images.to_bgr8 first",
        )
    if frame.shape[0] < 2 or frame.shape[1] < 2:
        raise FrameFormatError(f"{where}: frame of shape {frame.shape} is too small")
    if not frame.flags.c_contiguous:
        raise FrameFormatError(
            f"{where}: frame of shape {frame.shape} is not C-contiguous",
            "pass numpy.ascontiguousarray(frame)",
        )
    return frame


@dataclass
class Face:
    """One detected face in one frame. Coordinates are frame pixels (x, y)."""

    bbox: npt.NDArray[np.float32]  # (4,) x1, y1, x2, y2
    score: float
    kps: npt.NDArray[np.float32]  # (5, 2): eye left-in-image, eye right, nose, mouth left, right
    landmarks: npt.NDArray[np.float32] | None = None  # (68|106|468, 2)
    embedding: npt.NDArray[np.float32] | None = None
    track_id: int = -1

    @property
    def width(self) -> float:
        return float(self.bbox[2] - self.bbox[0])

    @property
    def height(self) -> float:
        return float(self.bbox[3] - self.bbox[1])

    @property
    def area(self) -> float:
        return max(self.width, 0.0) * max(self.height, 0.0)

    @property
    def center(self) -> tuple[float, float]:
        return float(self.bbox[0] + self.bbox[2]) / 2, float(self.bbox[1] + self.bbox[3]) / 2


Affine = npt.NDArray[np.float32]
"""A (2, 3) float32 affine transform of pixel coordinates."""

Mask = npt.NDArray[np.float32]
"""A float32 (h, w) weight in [0, 1]."""


@dataclass
class FaceWork:
    """One face of one frame on its way through the face pipeline's parts.

    ``face`` is what is known about the face (box, score, 5 keypoints, landmarks,
    embedding, track id). The other fields are filled by the parts that need them:
    ``affine`` maps frame pixels to ``crop`` pixels, ``crop`` is the part of the frame a
    swapper works on, ``mask`` (crop space, 0..1) says where the result replaces the frame
    and ``output`` (crop space) is the swapped (then enhanced) crop that a blender pastes
    back. ``frame_index`` is the frame's position in its batch, ``seq`` its sequence number.
    ``source_index`` says which of the prepared source faces goes onto this face (0 unless
    several sources are mapped to target identities).
    """

    frame_index: int
    seq: int
    face: Face
    affine: Affine | None = None
    crop: Frame | None = None
    mask: Mask | None = None
    output: Frame | None = None
    source_index: int = 0


@dataclass(frozen=True)
class StageTiming:
    """How long one stage took on one batch, in milliseconds."""

    name: str
    ms: float


@dataclass
class FramePacket:
    """A frame travelling through the pipeline, with its sequence number and timings.

    ``t_media_ns``: the frame's timestamp in its file (video sources; None for live ones).
    ``faces``: the faces found in it; ``faces_swapped``: how many of them the swap stage
    replaced (None: no face stage worked on this frame: swap off, blank, freeze);
    ``faces_reused``: how many of those got their track's previous swapped face again
    instead of a swapper run (``swap.reuse.reuse``). ``analysis``: what a stage's ``prepare``
    found in the frame, by stage name, until its ``process`` takes it. ``swapped``: the
    swap changed its pixels (it swapped a face, or it is a frozen repeat of a frame that
    did); the output thread sets it before the sinks get the frame. ``stand_in``: a blank,
    frozen or held picture goes out in the camera frame's place (no stage made it: its
    capture time says nothing of the pipeline's latency).
    """

    frame: Frame
    seq: int
    t_capture_ns: int
    timings: list[StageTiming] = field(default_factory=list)
    faces: list[Face] = field(default_factory=list)
    t_media_ns: int | None = None
    faces_swapped: int | None = None
    faces_reused: int = 0
    analysis: dict[str, Any] = field(default_factory=dict)
    swapped: bool = False
    stand_in: bool = False


EventLevel = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class Event:
    """Something the user should know about while running (a camera lost, a stage failing)."""

    level: EventLevel
    origin: str
    message: str
    hint: str = ""
    t_ns: int = field(default_factory=time.perf_counter_ns)
    #: the fix in the panel's words (its tabs), where ``hint`` names CLI options
    panel_hint: str = ""

    def __str__(self) -> str:
        text = f"[{self.level}] {self.origin}: {self.message}"
        return f"{text} (fix: {self.hint})" if self.hint else text


class RemoteReading(Protocol):
    """The remote swap's figures as telemetry shows them (``remote.swapper.RemoteStats``)."""

    @property
    def lost(self) -> str | None:
        """Why the local swap stands in, with the fix (None: the remote swap runs)."""
        ...

    def label(self) -> str:
        """Its part of the status line."""
        ...

    def details(self) -> str:
        """Its lines in the panel's Stats tab."""
        ...

    def as_dict(self) -> dict[str, Any]:
        """Its part of the ``--stats-json`` summary."""
        ...


class RunReport(Protocol):
    """Where a running stage and its parts send what they see (``telemetry.hub.Telemetry``
    is one): events, the swap check's newest reading and the remote swap's figures."""

    def event(self, event: Event) -> None: ...

    def swap_check(self, reading: SwapReading | None) -> None: ...

    def remote(self, reading: RemoteReading | None) -> None: ...


class FrameContext:
    """One frame as the parts see it.

    ``image`` follows the frame contract (uint8 BGR (H, W, 3)); ``seq`` is the packet's
    sequence number and ``t_s`` its time in seconds (a video file's own timestamp, else the
    capture time). Built per frame by whoever
    runs the parts and used on one thread only.
    """

    def __init__(self, image: Frame, seq: int = 0, t_s: float = 0.0) -> None:
        self.image = image
        self.seq = seq
        self.t_s = t_s

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.image.shape)


@dataclass(frozen=True)
class PrepareFailed:
    """What ``prepare`` raised, kept on a packet for ``process`` to raise."""

    error: Exception


def take_analysis(batch: list[FramePacket], name: str) -> list[Any] | None:
    """Each packet's ``analysis[name]``, taken off it; None unless every packet has one.
    Raises the error of a failed ``prepare`` (``PrepareFailed``)."""
    found = [p.analysis.pop(name, None) for p in batch]
    for item in found:
        if isinstance(item, PrepareFailed):
            raise item.error
    return found if all(item is not None for item in found) else None


@dataclass(frozen=True)
class SwapReading:
    """One check of one swapped face (``livecam.face.identity.swap_check`` reads them; telemetry
    and the panel show the newest).

    ``cos_source`` = cos(output, source), ``cos_camera`` = cos(output, camera face),
    ``cos_source_camera`` = cos(source, camera face); ``strength`` from them (None: the
    source and camera face are the same person); ``taking``: strength at least
    ``weak_below`` (None with no strength); ``t_s``: the sampled frame's time; ``samples``:
    checks so far in this stage; ``warning``: the not-taking (or the blind-judge) warning
    is up; ``judge``: the recognizer's name.
    """

    strength: float | None
    cos_source: float
    cos_camera: float
    cos_source_camera: float
    taking: bool | None
    t_s: float
    samples: int
    warning: bool = False
    judge: str = "MobileFaceNet"

    def label(self) -> str:
        """``swap 87/100``, ``swap 3/100 NOT TAKING`` or ``swap n/a (MobileFaceNet cannot
        tell the source from the camera face)``."""
        if self.strength is None:
            return f"swap n/a ({self.judge} cannot tell the source from the camera face)"
        text = f"swap {self.strength:.0f}/100"
        return text if self.taking else f"{text} NOT TAKING"

    def as_dict(self) -> dict[str, Any]:
        """For ``--stats-json``."""
        return {
            "strength": None if self.strength is None else round(self.strength, 1),
            "cos_source": round(self.cos_source, 4),
            "cos_camera": round(self.cos_camera, 4),
            "cos_source_camera": round(self.cos_source_camera, 4),
            "taking": self.taking,
            "warning": self.warning,
            "samples": self.samples,
            "judge": self.judge,
        }


#: how far beside a face box a click still picks that face, in box sizes (a hair, a chin)
PICK_REACH = 0.5


def within_reach(box: tuple[float, float, float, float], x: float, y: float) -> bool:
    """True when point ``x``, ``y`` is in ``box`` (x1, y1, x2, y2, the same units) grown by
    ``PICK_REACH`` of its size on each side: a click there picks that face."""
    x1, y1, x2, y2 = box
    dx, dy = PICK_REACH * (x2 - x1), PICK_REACH * (y2 - y1)
    return x1 - dx <= x <= x2 + dx and y1 - dy <= y <= y2 + dy


@dataclass(frozen=True)
class SeenFace:
    """A face of a stage's newest frame, as the panel numbers it while the user picks one:
    its track id (``face #3``) and its box (x1, y1, x2, y2) normalised to the frame (0..1)."""

    track_id: int
    box: tuple[float, float, float, float]

    def reaches(self, point: tuple[float, float]) -> bool:
        """True when a click at ``point`` (normalised x, y) picks this face or one nearer
        (``within_reach``); False: far from it."""
        return within_reach(self.box, point[0], point[1])


class PlainStage:
    """The answers of a stage (``livecam.stream.stage.Stage``) that warns of nothing,
    reports nothing and picks no face: a base for such stages (they still need ``name``,
    ``required``, ``providers`` (None when they run no model), ``warmup``, ``process`` and
    ``close``)."""

    name: str
    warnings: tuple[str, ...] = ()
    can_target = False
    target: int | None = None
    faces_seen: tuple[SeenFace, ...] = ()

    def set_target(self, point: tuple[float, float] | None) -> None:
        raise ControlError(
            f"stage {self.name} does not pick faces",
            "only the swap stage with select one swaps a person picked in the frame",
        )

    def report_to(self, telemetry: object) -> None:
        pass
