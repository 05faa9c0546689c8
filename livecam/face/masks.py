"""Masker parts: where a swapped face replaces the frame, in crop space (0..1).

Every masker makes one mask per record at the size of the record's ``output`` (what the
blender pastes; its ``crop`` when it has no output yet) and combines it with the mask the
record already has by elementwise minimum, so maskers chain: ``CombinedMasker`` runs
several in turn. The box and region masks follow FaceFusion 3.8's ``face_masker``, the
ellipse Deep-Live-Cam's; insightface's eroded edge is computed in frame space by
``paste.AffineBlender(edge="insightface")``, as insightface does it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Self

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.swap import MaskSettings
from livecam.errors import ModelError
from livecam.face.crops import align
from livecam.face.crops.onnx_input import to_blob
from livecam.face.parts import CpuPart, Masker
from livecam.runtime.onnx_model import OnnxModel
from livecam.runtime.providers import Providers
from livecam.types import FaceWork, FrameContext, Mask

log = logging.getLogger(__name__)

#: lip points of the 68-point layout (outer 48-59, inner 60-67)
LIPS_68 = tuple(range(48, 68))
#: lip points of insightface's 106-point layout (2d106det)
LIPS_106 = tuple(range(52, 72))

#: BiSeNet face-parsing classes (FaceFusion's ``face_mask_region_set``, CelebAMask-HQ order)
PARSER_REGIONS = {
    "skin": 1,
    "left-eyebrow": 2,
    "right-eyebrow": 3,
    "left-eye": 4,
    "right-eye": 5,
    "glasses": 6,
    "nose": 10,
    "mouth": 11,
    "upper-lip": 12,
    "lower-lip": 13,
}


def mask_size(work: FaceWork) -> tuple[int, int] | None:
    """(h, w) of the masks for ``work``: its output's, else its crop's (None: neither)."""
    ref = work.output if work.output is not None else work.crop
    return None if ref is None else (int(ref.shape[0]), int(ref.shape[1]))


def combine(work: FaceWork, mask: Mask | None) -> FaceWork:
    """``work`` with ``mask`` combined into its mask by minimum (resized to the existing
    mask's size when they differ); unchanged when ``mask`` is None."""
    if mask is None:
        return work
    if work.mask is None:
        return dataclasses.replace(work, mask=mask)
    old = np.asarray(work.mask, np.float32)
    if old.shape != mask.shape:
        size = (old.shape[1], old.shape[0])
        mask = np.asarray(cv2.resize(mask, size, interpolation=cv2.INTER_LINEAR), np.float32)
    return dataclasses.replace(work, mask=np.minimum(old, mask))


class CropMasker(CpuPart):
    """Base of the maskers: ``masks`` gives one mask (or None: no opinion) per record;
    ``mask`` combines them into the records by minimum."""

    model_id = "mask"

    def mask(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        return [combine(w, m) for w, m in zip(faces, self.masks(frames, faces), strict=True)]

    def masks(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Mask | None]:
        return [self.one(w) for w in faces]

    def one(self, work: FaceWork) -> Mask | None:
        raise NotImplementedError


class FixedMasker(CropMasker):
    """A masker whose mask depends only on the crop's size: built once per size."""

    _cache: dict[tuple[int, int], Mask]

    def one(self, work: FaceWork) -> Mask | None:
        size = mask_size(work)
        if size is None:
            return None
        if size not in self._cache:
            mask = self.build(size)
            mask.flags.writeable = False  # shared by every record of this size
            self._cache[size] = mask
        return self._cache[size]

    def build(self, size: tuple[int, int]) -> Mask:
        raise NotImplementedError


def box_mask(
    size: tuple[int, int], blur: float, padding: tuple[float, float, float, float]
) -> Mask:
    """FaceFusion's box mask for a (h, w) crop: 1 inside, a border of
    max(int(w * blur * 0.5) // 2, 1) px (or the padding, percent of the side, top, right,
    bottom, left, if larger) zeroed, then a Gaussian blur of sigma int(w * 0.5 * blur) * 0.25."""
    h, w = size
    amount = int(w * 0.5 * blur)
    area = max(amount // 2, 1)
    top, right, bottom, left = padding
    mask = np.ones((h, w), np.float32)
    mask[: max(area, int(h * top / 100)), :] = 0
    mask[-max(area, int(h * bottom / 100)) :, :] = 0
    mask[:, : max(area, int(w * left / 100))] = 0
    mask[:, -max(area, int(w * right / 100)) :] = 0
    if amount > 0:
        mask = np.asarray(cv2.GaussianBlur(mask, (0, 0), amount * 0.25), np.float32)
    return mask


class BoxMasker(FixedMasker):
    """FaceFusion's box mask (``box_mask``): ``blur`` 0..1 of half the crop's width,
    ``padding`` (top, right, bottom, left) in percent of the crop's side."""

    @classmethod
    def from_section(cls, masks: MaskSettings) -> Self:
        """The box mask as its config section (``[swap.masks]``) sets it."""
        return cls(masks.mask_blur, masks.mask_padding)

    def __init__(
        self, blur: float = 0.3, padding: tuple[float, float, float, float] = (0, 0, 0, 0)
    ) -> None:
        if not 0.0 <= blur <= 1.0:
            raise ValueError(f"box mask blur must be within 0..1, got {blur}")
        if len(padding) != 4 or not all(0 <= p <= 100 for p in padding):
            raise ValueError(f"box mask padding must be 4 percentages 0..100, got {padding}")
        self.blur = float(blur)
        self.padding = (float(padding[0]), float(padding[1]), float(padding[2]), float(padding[3]))
        self.model_id = f"box:{self.blur:g}:{'/'.join(f'{p:g}' for p in self.padding)}"
        self._cache = {}

    def build(self, size: tuple[int, int]) -> Mask:
        return box_mask(size, self.blur, self.padding)


class EllipseMasker(FixedMasker):
    """Deep-Live-Cam's feathered ellipse in the aligned crop: centred, semi-axes
    ``axes`` x the crop's width and height (0.44), filled with 1, then a Gaussian blur of
    kernel 31 and sigma 12 at 128 px, both scaled with the crop's size."""

    @classmethod
    def from_section(cls, masks: MaskSettings) -> Self:
        """The ellipse mask as its config section (``[swap.masks]``) sets it."""
        return cls()

    def __init__(self, axes: float = 0.44) -> None:
        if not 0.0 < axes <= 1.0:
            raise ValueError(f"ellipse mask axes must be within 0..1, got {axes}")
        self.axes = float(axes)
        self.model_id = f"ellipse:{self.axes:g}"
        self._cache = {}

    def build(self, size: tuple[int, int]) -> Mask:
        h, w = size
        mask = np.zeros((h, w), np.float32)
        axes = (int(self.axes * w), int(self.axes * h))
        cv2.ellipse(mask, (w // 2, h // 2), axes, 0, 0, 360, 1.0, -1)
        scale = w / 128
        k = max(3, int(round(31 * scale)) | 1)
        return np.asarray(np.clip(cv2.GaussianBlur(mask, (k, k), 12 * scale), 0, 1), np.float32)


class MouthMasker(CropMasker):
    """Keeps the user's real mouth: mask = 1 - strength / 100 * mouth, where mouth is the
    convex hull of the lip landmarks (68-point 48-67, or 106-point 52-71) mapped into the
    crop with the record's affine, grown by ``grow`` of its size about its centre and
    feathered outward (Gaussian, sigma ``feather`` of its size). A face without 68 or 106
    landmarks (or without an affine) gets no mouth mask."""

    @classmethod
    def from_section(cls, masks: MaskSettings) -> Self | None:
        """The mouth mask as its config section (``[swap.masks]``) sets it; None when
        ``mouth_mask`` is 0 (off)."""
        return cls(masks.mouth_mask) if masks.mouth_mask > 0 else None

    def __init__(self, strength: float = 100.0, *, grow: float = 0.15, feather: float = 0.12):
        if not 0.0 <= strength <= 100.0:
            raise ValueError(f"mouth mask strength must be within 0..100, got {strength}")
        self.strength = float(strength)
        self.grow = float(grow)
        self.feather = float(feather)
        self.model_id = f"mouth:{self.strength:g}:{self.grow:g}:{self.feather:g}"

    def one(self, work: FaceWork) -> Mask | None:
        size = mask_size(work)
        mouth = self.mouth(work, size) if size is not None else None
        if mouth is None:
            return None
        return np.asarray(1.0 - (self.strength / 100.0) * mouth, np.float32)

    def mouth(self, work: FaceWork, size: tuple[int, int]) -> Mask | None:
        """The feathered mouth region (0..1) in a ``size`` (h, w) crop, or None."""
        landmarks = work.face.landmarks
        if landmarks is None or work.affine is None or self.strength == 0:
            return None
        lips = {68: LIPS_68, 106: LIPS_106}.get(len(landmarks))
        if lips is None:
            return None
        ref = work.crop if work.crop is not None else work.output
        assert ref is not None
        points = align.transform_points(np.asarray(landmarks)[list(lips)], work.affine)
        points *= np.array([size[1] / ref.shape[1], size[0] / ref.shape[0]], np.float32)
        centre = points.mean(axis=0)
        points = (points - centre) * (1.0 + self.grow) + centre
        extent = float(max(np.ptp(points[:, 0]), np.ptp(points[:, 1]), 1.0))
        mask = np.zeros(size, np.float32)
        hull = cv2.convexHull(np.round(points).astype(np.int32))
        cv2.fillConvexPoly(mask, hull, 1.0, cv2.LINE_AA)
        soft = cv2.GaussianBlur(mask, (0, 0), max(1.0, self.feather * extent))
        # the hull's edge is 0.5 after the blur: the hull stays fully kept, the feather lies outside
        return np.asarray(np.clip(soft * 2.0, 0.0, 1.0), np.float32)


class RegionMasker(CropMasker):
    """FaceFusion's face-parser region mask (BiSeNet ResNet-34, MIT): the swapped crop
    resized to ``input_size``, RGB, (x - mean) / std per channel (ImageNet), all records
    in one model call; the pixels whose most likely class is one of ``regions`` (names of
    ``PARSER_REGIONS``) -> 1, resized to the crop, then FaceFusion's edge
    (Gaussian sigma 5, clip 0.5..1, stretched to 0..1)."""

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int = 512,
        mean: Sequence[float] = (123.675, 116.28, 103.53),
        std: Sequence[float] = (58.395, 57.12, 57.375),
        color: str = "rgb",
        regions: Sequence[str] = tuple(PARSER_REGIONS),
    ) -> None:
        unknown = [r for r in regions if r not in PARSER_REGIONS]
        if unknown or not regions:
            raise ValueError(
                f"unknown face-parser regions {unknown or '(none given)'}: "
                f"choose from {', '.join(PARSER_REGIONS)}"
            )
        if color not in ("rgb", "bgr"):
            raise ValueError(f"face parser color must be 'rgb' or 'bgr', got {color!r}")
        spatial = model.inputs[0].shape[2:4] if model.inputs else ()
        if any(isinstance(d, int) and d > 0 and d != input_size for d in spatial):
            raise ModelError(
                f"face parser {model.model_id} takes {spatial} images, not {input_size}",
                f"set the parser's input_size to {spatial[0]}",
            )
        self.model = model
        self.providers: Providers = model.providers
        self.input_size = int(input_size)
        self.mean = np.broadcast_to(np.asarray(mean, np.float32), (3,)).copy()
        self.std = np.broadcast_to(np.asarray(std, np.float32), (3,)).copy()
        self.color = color
        self.regions = tuple(regions)
        self._classes = np.array([PARSER_REGIONS[r] for r in self.regions])
        self.model_id = f"{model.model_id}:regions={'+'.join(self.regions)}"

    def warmup(self) -> None:
        self.model.warmup()

    def close(self) -> None:
        self.model.close()

    def masks(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Mask | None]:
        todo = [
            i
            for i, w in enumerate(faces)
            if (w.output if w.output is not None else w.crop) is not None
        ]
        out: list[Mask | None] = [None] * len(faces)
        if not todo:
            return out
        s = self.input_size
        resized = np.empty((len(todo), s, s, 3), np.uint8)
        for row, i in enumerate(todo):
            image = faces[i].output if faces[i].output is not None else faces[i].crop
            assert image is not None
            resized[row] = cv2.resize(image, (s, s), interpolation=cv2.INTER_LINEAR)
        blob = to_blob(resized, self.mean, self.std, self.color)
        scores = self.model.run_batch(
            {self.model.input_names[0]: blob}, [self.model.input_names[0]]
        )[0]
        kept = winner_in(np.asarray(scores, np.float32), set(self._classes.tolist()))
        for row, i in enumerate(todo):
            size = mask_size(faces[i])
            assert size is not None
            keep = kept[row].astype(np.float32)
            big = cv2.resize(keep, (size[1], size[0]), interpolation=cv2.INTER_LINEAR)
            soft = cv2.GaussianBlur(np.clip(big, 0, 1), (0, 0), 5)
            out[i] = np.asarray((np.clip(soft, 0.5, 1.0) - 0.5) * 2.0, np.float32)
        return out


def winner_in(scores: npt.NDArray[np.float32], classes: set[int]) -> npt.NDArray[np.bool_]:
    """Per pixel of (N, C, H, W) class scores: whether its most likely class (the first
    one on a tie, as ``argmax``) is one of ``classes``. One pass per class plane, several
    times faster than ``argmax`` over the strided class axis."""
    best = scores[:, 0].copy()
    kept = np.full(best.shape, 0 in classes)
    for c in range(1, scores.shape[1]):
        better = scores[:, c] > best
        np.copyto(best, scores[:, c], where=better)
        if c in classes:
            kept |= better
        else:
            kept &= ~better
    return kept


class CombinedMasker(CpuPart):
    """Several maskers as one: each record's mask is the elementwise minimum of theirs
    (each combines with the record's mask by minimum, so running them in turn is that)."""

    def __init__(self, maskers: Sequence[Masker]) -> None:
        if not maskers:
            raise ValueError("CombinedMasker needs at least one masker")
        self.maskers = tuple(maskers)
        self.model_id = "+".join(m.model_id for m in self.maskers)
        self.providers = Providers(
            requested=tuple(dict.fromkeys(n for m in self.maskers for n in m.providers.requested)),
            used=tuple(dict.fromkeys(n for m in self.maskers for n in m.providers.used)),
        )

    def warmup(self) -> None:
        for m in self.maskers:
            m.warmup()

    def close(self) -> None:
        for m in self.maskers:
            m.close()

    def mask(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        works = list(faces)
        for m in self.maskers:
            works = m.mask(frames, works)
        return works
