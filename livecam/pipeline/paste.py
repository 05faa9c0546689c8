"""Blender parts: paste swapped faces back into their frames.

``RoiBlender`` pastes crops that are axis-aligned regions of the frame (the classic
swapper's face ROI: a pure translation affine). Rotated or scaled aligned crops (the
neural swappers' 5-point crops) need a warping blender, which comes with those swappers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from livecam.config import BlendMode
from livecam.pipeline import blend
from livecam.pipeline.parts import CpuPart, FrameContext
from livecam.types import Affine, FaceWork, Frame


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
