"""What the ONNX keypoint detectors (SCRFD, YuNet on ONNX Runtime) share: the patches a
frame is cut into for the model, one batched session call per patch size, and the merge of
every patch's faces by one NMS per frame.

A pass is the frame at one scale. ``max_sides`` None: one pass, the frame letterboxed into
the model's canvas (top-left on zeros), or, for a model with free spatial axes and no
canvas, the frame as it is padded bottom/right to a multiple of 32. With ``max_sides``:
one pass per side, the frame shrunk by a whole factor so its long side is at most that
(``shrink``); a shrunk frame larger than a fixed canvas is cut into canvas-sized tiles
overlapping by a third of the canvas, and a face touching a tile's inner edge is left to
the tile that holds it whole (faces larger than the overlap are found by a coarser pass).
Every patch of every frame that shares a size goes through the model in one call.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from livecam.errors import ModelError
from livecam.face.crops.onnx_input import channel_values
from livecam.face.detect.yunet import shrink
from livecam.face.parts import Box, Points
from livecam.runtime.onnx_model import OnnxModel
from livecam.runtime.providers import Providers
from livecam.types import Face, Frame, FrameContext

log = logging.getLogger(__name__)

Size = tuple[int, int]
"""(width, height) in pixels."""

Floats = npt.NDArray[np.float32]
EDGE_PX = 2.0  # a box this close to a tile's inner edge is cut by it


def as_size(value: int | Sequence[int]) -> Size:
    """``640`` or ``(640, 640)`` as (width, height)."""
    if isinstance(value, int):
        return value, value
    w, h = (int(v) for v in value)
    return w, h


def pad_to(image: Frame, multiple: int = 32) -> Frame:
    """``image`` padded with zeros bottom/right to a multiple of ``multiple`` (itself when
    it already is one)."""
    h, w = image.shape[:2]
    ph, pw = -h % multiple, -w % multiple
    if ph == 0 and pw == 0:
        return image
    padded = cv2.copyMakeBorder(image, 0, ph, 0, pw, cv2.BORDER_CONSTANT, value=0)
    return np.asarray(padded, np.uint8)


def letterbox(image: Frame, canvas: Size, upscale: bool = True) -> tuple[Frame, float]:
    """``image`` resized to fit ``canvas`` with its aspect ratio kept, top-left on a zero
    canvas, and the scale (insightface's SCRFD: new height / image height). ``upscale``
    False: an image that fits already keeps its size."""
    h, w = image.shape[:2]
    cw, ch = canvas
    if not upscale and w <= cw and h <= ch:
        new_w, new_h = w, h
    elif h / w > ch / cw:
        new_h, new_w = ch, int(ch / (h / w))
    else:
        new_w, new_h = cw, int(cw * (h / w))
    new_w, new_h = max(new_w, 1), max(new_h, 1)
    resized = image if (new_w, new_h) == (w, h) else cv2.resize(image, (new_w, new_h))
    out = np.zeros((ch, cw, 3), np.uint8)
    out[:new_h, :new_w] = resized
    return out, new_h / h


def tile_starts(length: int, tile: int) -> list[int]:
    """Starts of ``tile``-long windows covering ``length``, overlapping by at least a third
    of a tile, the last one flush with the end."""
    if length <= tile:
        return [0]
    step = tile - tile // 3
    n = math.ceil((length - tile) / step) + 1
    return [round(i * (length - tile) / (n - 1)) for i in range(n)]


@dataclass(frozen=True)
class Patch:
    """One model input cut from frame ``frame``: model pixel p is frame pixel
    (p + origin) / scale. ``inner``: the patch's edges (x1, y1, x2, y2) that cut the
    scaled frame (inf where the edge is the frame's own)."""

    frame: int
    image: Frame
    scale: float
    origin: tuple[int, int]
    inner: tuple[float, float, float, float]


def plan(
    index: int,
    image: Frame,
    canvas: Size | None,
    max_sides: Sequence[int] | None,
    upscale: bool,
) -> list[Patch]:
    """The patches of one frame (see the module docstring)."""
    none = (-math.inf, -math.inf, math.inf, math.inf)
    if max_sides is None:
        if canvas is None:
            return [Patch(index, pad_to(image), 1.0, (0, 0), none)]
        boxed, scale = letterbox(image, canvas, upscale)
        return [Patch(index, boxed, scale, (0, 0), none)]
    patches: list[Patch] = []
    done: set[float] = set()
    for side in max_sides:
        small, scale = shrink(image, side, whole=True)
        if scale in done:  # two sides above the frame's size: one pass
            continue
        done.add(scale)
        h, w = small.shape[:2]
        if canvas is None:
            patches.append(Patch(index, pad_to(small), scale, (0, 0), none))
            continue
        cw, ch = canvas
        for y in tile_starts(h, ch):
            for x in tile_starts(w, cw):
                piece = np.zeros((ch, cw, 3), np.uint8)
                crop = small[y : y + ch, x : x + cw]
                piece[: crop.shape[0], : crop.shape[1]] = crop
                inner = (
                    EDGE_PX if x > 0 else -math.inf,
                    EDGE_PX if y > 0 else -math.inf,
                    cw - EDGE_PX if x + cw < w else math.inf,
                    ch - EDGE_PX if y + ch < h else math.inf,
                )
                patches.append(Patch(index, piece, scale, (x, y), inner))
    return patches


@dataclass(frozen=True)
class Found:
    """Detections of one patch in its pixels: boxes (N, 4) x1 y1 x2 y2, scores (N,),
    keypoints (N, 5, 2)."""

    boxes: Floats
    scores: Floats
    kps: Floats

    @staticmethod
    def empty() -> Found:
        z = np.zeros
        return Found(z((0, 4), np.float32), z(0, np.float32), z((0, 5, 2), np.float32))

    def to_frame(self, patch: Patch) -> Found:
        """Those not cut by the patch's inner edges, in frame pixels."""
        b = self.boxes
        x1, y1, x2, y2 = patch.inner
        keep = (b[:, 0] >= x1) & (b[:, 1] >= y1) & (b[:, 2] <= x2) & (b[:, 3] <= y2)
        origin = np.array(patch.origin, np.float32)
        s = np.float32(patch.scale)
        boxes = (b[keep] + np.tile(origin, 2)) / s
        kps = (self.kps[keep] + origin) / s
        return Found(boxes.astype(np.float32), self.scores[keep], kps.astype(np.float32))


def concat(found: Sequence[Found]) -> Found:
    if not found:
        return Found.empty()
    return Found(
        np.concatenate([f.boxes for f in found]),
        np.concatenate([f.scores for f in found]),
        np.concatenate([f.kps for f in found]),
    )


def nms(found: Found, score_threshold: float, iou: float) -> list[int]:
    """Indices kept by OpenCV's NMS (``cv2.dnn.NMSBoxes``), best score first."""
    if len(found.scores) == 0:
        return []
    b = found.boxes
    xywh = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    keep = cv2.dnn.NMSBoxes(
        xywh.tolist(), found.scores.tolist(), float(score_threshold), float(iou)
    )
    return [int(i) for i in np.asarray(keep).reshape(-1)]


def canvas_of(model: OnnxModel, wanted: Size | None, name: str) -> Size | None:
    """The canvas a detector feeds the model: its fixed spatial size, or ``wanted`` where
    the axes are free (None: any multiple of 32). A fixed size other than ``wanted`` is a
    ModelError."""
    if not model.inputs or len(model.inputs[0].shape) != 4:
        raise ModelError(
            f"{name} model {model.path.name} has no NCHW image input",
            f"pass a {name} ONNX file",
        )
    h, w = model.inputs[0].shape[2:]
    if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
        if wanted is not None and wanted != (w, h):
            raise ModelError(
                f"{name} model {model.path.name} takes {w}x{h} images, not {wanted[0]}x{wanted[1]}",
                f"set its input_size to {w}",
            )
        return w, h
    if wanted is not None and (wanted[0] % 32 or wanted[1] % 32):
        raise ValueError(f"input_size must be multiples of 32, got {wanted}")
    return wanted


class PatchDetector:
    """Base of the ONNX keypoint detectors: cuts frames into patches, runs every patch
    size as one batch, decodes each patch (``_decode``, in the subclass) and keeps a
    frame's faces by one NMS. ``canvas``: the model's input size (None: free, the frame
    padded to a multiple of 32); ``upscale``: whether a letterbox may enlarge a frame."""

    model: OnnxModel
    model_id: str
    providers: Providers
    canvas: Size | None
    upscale: bool
    score_threshold: float
    nms_iou: float
    max_sides: tuple[int, ...] | None
    start_score: float
    _box_for_kps: Callable[[Points], Box] | None
    _mean: Floats
    _std: Floats
    _rgb: bool

    def __init__(
        self,
        model: OnnxModel,
        canvas: Size | None,
        *,
        upscale: bool,
        mean: float | Sequence[float],
        std: float | Sequence[float],
        color: str,
        score_threshold: float,
        nms_iou: float,
        max_sides: Sequence[int] | None,
        start_score: float | None,
        box_for_kps: Callable[[Points], Box] | None,
    ) -> None:
        if color not in ("rgb", "bgr"):
            raise ValueError(f"color must be 'rgb' or 'bgr', got {color!r}")
        if max_sides is not None and (not max_sides or min(max_sides) < 32):
            raise ValueError(f"max_sides must be None or sizes >= 32, got {max_sides}")
        self.model = model
        self.providers = model.providers
        self.canvas = canvas
        self.upscale = upscale
        self.score_threshold = score_threshold
        self.nms_iou = nms_iou
        self.max_sides = tuple(max_sides) if max_sides is not None else None
        self.start_score = score_threshold if start_score is None else start_score
        self._box_for_kps = box_for_kps
        self._mean = channel_values(mean, "mean")
        self._std = channel_values(std, "std")
        self._rgb = color == "rgb"
        self._batched_outputs = all(len(o.shape) == 3 for o in model.outputs)

    def settings_id(self) -> str:
        """The model-id tail every such detector shares: size, threshold, passes, box."""
        size = f"{self.canvas[0]}x{self.canvas[1]}" if self.canvas else "free"
        sides = "x".join(str(s) for s in self.max_sides) if self.max_sides else "full"
        box = self._box_for_kps
        tail = f":box={box.__qualname__}" if box is not None else ""
        return (
            f"{size}:{self.score_threshold:g}:nms{self.nms_iou:g}:start{self.start_score:g}"
            f":{sides}px{tail}"
        )

    def warmup(self) -> None:
        side = self.canvas if self.canvas is not None else (320, 320)
        self.detect([FrameContext(np.zeros((side[1], side[0], 3), np.uint8))])

    def close(self) -> None:
        self.model.close()

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        patches = [
            p
            for i, frame in enumerate(frames)
            for p in plan(i, frame.image, self.canvas, self.max_sides, self.upscale)
        ]
        per_frame: list[list[Found]] = [[] for _ in frames]
        by_size: dict[tuple[int, ...], list[Patch]] = {}
        for p in patches:
            by_size.setdefault(p.image.shape, []).append(p)
        for group in by_size.values():
            outputs = self._run([p.image for p in group])
            for patch, outs in zip(group, outputs, strict=True):
                found = self._decode(outs, patch.image.shape[1], patch.image.shape[0])
                per_frame[patch.frame].append(found.to_frame(patch))
        return [self._faces(concat(found)) for found in per_frame]

    def _blob(self, images: Sequence[Frame]) -> Floats:
        """NCHW float32 of same-size images in the model's colour order, normalised
        in place (per-channel constants are in that order)."""
        h, w = images[0].shape[:2]
        blob = np.empty((len(images), 3, h, w), np.float32)
        for i, image in enumerate(images):
            planes = image.transpose(2, 0, 1)
            blob[i] = planes[::-1] if self._rgb else planes
        blob -= self._mean
        blob /= self._std
        return blob

    def _run(self, images: Sequence[Frame]) -> list[list[Floats]]:
        """Every output per image, batch axis removed: one call where the model takes a
        batch (``run_batch`` chunks a fixed one), one per image where its outputs have
        no batch axis."""
        name = self.model.input_names[0]
        blob = self._blob(images)
        if self._batched_outputs:
            outs = self.model.run_batch({name: blob}, [name])
            return [[np.asarray(o[i], np.float32) for o in outs] for i in range(len(images))]
        return [
            [np.asarray(o, np.float32) for o in self.model.run({name: blob[i : i + 1]})]
            for i in range(len(images))
        ]

    def _decode(self, outs: list[Floats], width: int, height: int) -> Found:
        """A patch's detections (score at least ``score_threshold``) in its pixels."""
        raise NotImplementedError

    def _faces(self, found: Found) -> list[Face]:
        faces = []
        for i in nms(found, self.score_threshold, self.nms_iou):
            kps = found.kps[i].astype(np.float32)
            box = found.boxes[i] if self._box_for_kps is None else self._box_for_kps(kps)
            faces.append(Face(np.asarray(box, np.float32), float(found.scores[i]), kps))
        return faces
