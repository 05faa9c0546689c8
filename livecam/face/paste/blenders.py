"""Blender parts: paste swapped faces back into their frames.

``RoiBlender`` pastes crops that are axis-aligned regions of the frame (the classic
swapper's face ROI: a pure translation affine). ``AffineBlender`` pastes rotated or scaled
aligned crops (the neural swappers' and enhancers' 5-point crops) through the inverse of
their affine, optionally with insightface's eroded paste-back edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Self, TypeVar

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.schema import BlendMode
from livecam.config.swap import ClassicSettings
from livecam.face.crops import align
from livecam.face.parts import CpuPart
from livecam.face.paste import colour as blend
from livecam.types import Affine, FaceWork, Frame, FrameContext, Mask


def roi_origin(affine: Affine) -> tuple[int, int]:
    """(x0, y0) of a crop whose affine is a whole-pixel translation; ValueError otherwise."""
    a = np.asarray(affine, np.float64)
    x0, y0 = -a[0, 2], -a[1, 2]
    if (
        a.shape != (2, 3)
        or not np.array_equal(a[:, :2], np.eye(2))
        or x0 != round(x0)
        or y0 != round(y0)
    ):
        raise ValueError(
            "RoiBlender pastes crops that are whole-pixel regions of the frame; this crop's "
            f"affine {a.tolist()} rotates, scales or shifts by a fraction of a pixel"
        )
    return int(round(x0)), int(round(y0))


class RoiBlender(CpuPart):
    """Pastes each record's ``output`` into its ROI through its ``mask``.

    ``feather``: ``frame + mask * (output - frame)``. ``seamless``: a Poisson clone of the
    output inside ``mask > 0.5`` first, then the same feathered blend (pixels where the
    mask is 0 keep the frame exactly). The faces of one frame are pasted in order onto one
    copy of it; a frame with nothing to paste is handed on as the very same array.
    """

    @classmethod
    def from_section(cls, classic: ClassicSettings) -> Self:
        """The classic swap's paste as its config section (``[swap.classic]``) sets it."""
        return cls(classic.blend)

    def __init__(self, mode: BlendMode = "feather") -> None:
        self.mode = mode
        self.model_id = f"roi-{mode}"

    def blend(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Frame]:
        out = [frame.image for frame in frames]
        for work in faces:
            if work.output is None or work.mask is None or work.affine is None:
                continue
            i = work.frame_index
            if out[i] is frames[i].image:
                out[i] = frames[i].image.copy()
            x0, y0 = roi_origin(work.affine)
            h, w = work.output.shape[:2]
            region = out[i][y0 : y0 + h, x0 : x0 + w]
            if self.mode == "seamless":
                region[:] = blend.seamless_blend(region, work.output, work.mask)
            else:
                region[:] = blend.alpha_blend(region, work.output, work.mask)
        return out


Edge = Literal["mask", "insightface"]
DT = TypeVar("DT", np.uint8, np.float32)


def paste_region(
    frame_shape: tuple[int, ...], inverse: Affine, size: tuple[int, int], pad: int = 0
) -> tuple[int, int, int, int]:
    """(x1, y1, x2, y2): the frame pixels a ``size`` (w, h) crop covers once mapped through
    ``inverse`` (crop -> frame), grown by ``pad`` and clipped to the frame."""
    w, h = size
    corners = align.transform_points([[0, 0], [w, 0], [w, h], [0, h]], inverse)
    lo = np.floor(corners.min(axis=0)).astype(int) - pad
    hi = np.ceil(corners.max(axis=0)).astype(int) + pad
    x1, y1 = np.clip(lo, 0, [frame_shape[1], frame_shape[0]])
    x2, y2 = np.clip(hi, 0, [frame_shape[1], frame_shape[0]])
    return int(x1), int(y1), int(x2), int(y2)


def scaled_inverse(affine: Affine, crop_size: tuple[int, int], size: tuple[int, int]) -> Affine:
    """Crop -> frame for an image of ``size`` (w, h) standing for the ``crop_size`` crop
    that ``affine`` (frame -> crop) was made for (an enhancer's 1024 output of a 512 crop)."""
    a = np.asarray(affine, np.float64).copy()
    a[0] *= size[0] / crop_size[0]
    a[1] *= size[1] / crop_size[1]
    return align.invert(a.astype(np.float32))


def insightface_edge(white: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """insightface's paste-back alpha (0..1) from the crop's box warped into the frame
    (``white``: 255 inside, border 0): values > 20 become 255; mask_size = sqrt(h*w) of the
    255 pixels' bounding box; erode with a k x k box, k = max(mask_size // 10, 10); Gaussian
    blur of kernel 2*max(mask_size // 20, 5) + 1, sigma 0; / 255."""
    mask = white.copy()
    mask[mask > 20] = 255
    rows, cols = np.nonzero(mask == 255)
    if len(rows) == 0:
        return np.zeros_like(mask)
    mask_size = int(np.sqrt(float(rows.max() - rows.min()) * float(cols.max() - cols.min())))
    k = max(mask_size // 10, 10)
    eroded = cv2.erode(mask, np.ones((k, k), np.uint8), iterations=1)
    b = 2 * max(mask_size // 20, 5) + 1
    return np.asarray(cv2.GaussianBlur(eroded, (b, b), 0) / np.float32(255), np.float32)


def _warp(
    image: npt.NDArray[DT], matrix: Affine, size: tuple[int, int], border: int = cv2.BORDER_CONSTANT
) -> npt.NDArray[DT]:
    """``image`` warped by ``matrix`` (bilinear) into a ``size`` (w, h) image."""
    return np.asarray(cv2.warpAffine(image, matrix, size, borderMode=border), image.dtype)


class AffineBlender(CpuPart):
    """Pastes each record's ``output`` (any size) into its frame through the inverse of its
    ``affine`` and its ``mask`` (crop space, any size; None: the whole crop), working only
    on the frame region the crop covers.

    ``edge="mask"``: alpha is the mask warped back (bilinear, 0 outside the crop).
    ``edge="insightface"``: alpha is also limited (elementwise minimum) by insightface's
    inswapper paste-back edge, computed in frame space as insightface does it
    (``insightface_edge``): with no record mask the result equals insightface's within
    rounding. The faces of one frame are pasted in order onto one copy of it; a frame with
    nothing to paste is handed on as the very same array.
    """

    def __init__(self, edge: Edge = "mask") -> None:
        if edge not in ("mask", "insightface"):
            raise ValueError(f"AffineBlender edge must be 'mask' or 'insightface', got {edge!r}")
        self.edge = edge
        self.model_id = f"affine-{edge}"

    def blend(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Frame]:
        out = [frame.image for frame in frames]
        for work in faces:
            if work.output is None or work.affine is None:
                continue
            i = work.frame_index
            if out[i] is frames[i].image:
                out[i] = frames[i].image.copy()
            self._paste(out[i], work.output, work.mask, work.affine, _crop_size(work))
        return out

    def _paste(
        self,
        frame: Frame,
        output: Frame,
        mask: Mask | None,
        affine: Affine,
        crop_size: tuple[int, int],
    ) -> None:
        size = (output.shape[1], output.shape[0])
        inverse = scaled_inverse(affine, crop_size, size)
        pad = 2
        if self.edge == "insightface":  # room for the blur, as on the full frame
            scale = float(np.sqrt(abs(np.linalg.det(np.asarray(inverse)[:, :2]))))
            pad += max(int(max(size) * scale * 1.5) // 20, 5) + 1
        x1, y1, x2, y2 = paste_region(frame.shape, inverse, size, pad)
        if x2 <= x1 or y2 <= y1:
            return
        roi = (x2 - x1, y2 - y1)
        shift = np.array([[0, 0, x1], [0, 0, y1]], np.float32)
        # insightface warps with border 0, FaceFusion replicates the crop's edge
        border = cv2.BORDER_CONSTANT if self.edge == "insightface" else cv2.BORDER_REPLICATE
        warped = _warp(output, inverse - shift, roi, border)
        alpha: Mask | None = None
        if mask is not None:
            m = np.asarray(mask, np.float32)
            m_inverse = scaled_inverse(affine, crop_size, (m.shape[1], m.shape[0]))
            alpha = np.clip(_warp(m, m_inverse - shift, roi), 0.0, 1.0)
        if self.edge == "insightface":
            white = np.full((output.shape[0], output.shape[1]), 255, np.float32)
            edge = insightface_edge(_warp(white, inverse - shift, roi))
            alpha = edge if alpha is None else np.minimum(alpha, edge)
        if alpha is None:
            ones = np.ones((output.shape[0], output.shape[1]), np.float32)
            alpha = np.clip(_warp(ones, inverse - shift, roi), 0.0, 1.0)
        region = frame[y1:y2, x1:x2]
        region[:] = blend.alpha_blend(region, warped, alpha)


def _crop_size(work: FaceWork) -> tuple[int, int]:
    """(w, h) of the crop the record's affine maps to: its ``crop``, else its ``output``."""
    ref = work.crop if work.crop is not None else work.output
    assert ref is not None
    return ref.shape[1], ref.shape[0]
