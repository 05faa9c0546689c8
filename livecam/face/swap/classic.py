"""The classic (no neural network) face swapper of the offline preset, a ``Swapper`` part.

The source face is analysed once (``prepare``): its 68 landmarks are extended over the
forehead and just outside the jaw, triangulated (Delaunay) and the face patch is cut out
at a few scales. For each target face (``swap``) the source patch is warped onto the
target's own mesh (piecewise affine, one remap over the face ROI) and colour- and
light-matched to the target inside the face; its own mask is wide and feathered, gated by
skin outside the inner face, and leaves out the target's inner mouth so expressions stay
the target's. The crop is the face ROI, an axis-aligned region of the frame, so a
``RoiBlender`` pastes the result back; only that ROI is touched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.schema import SwapConfig
from livecam.errors import LivecamError, ModelError
from livecam.face.parts import CpuPart, FrameContext
from livecam.face.paste import colour as blend
from livecam.face.swap import mesh
from livecam.types import FaceWork, Frame, validate_frame

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

Points = npt.NDArray[np.float32]

_PATCH_MARGIN = 6  # pixels kept around the source mesh


@dataclass(frozen=True)
class _Level:
    patch: npt.NDArray[np.uint8]  # BGR crop of the source around its mesh
    points: Points  # extended source landmarks in patch coordinates
    face_size: float  # eye-to-chin distance in this level's pixels
    skin: npt.NDArray[np.uint8]  # 0..255 skin likelihood of the patch (hair, cap, background low)


@dataclass(frozen=True)
class SourceModel:
    """Everything ``swap`` needs from the source face, computed once by ``prepare``."""

    landmarks: Points  # (68, 2) in source-image coordinates
    triangles: mesh.Triangles  # (T, 3) indices into the extended points
    levels: tuple[_Level, ...]  # full scale first, then halvings

    def level_for(self, target_size: float) -> _Level:
        """The smallest source scale still at least as large as the target face."""
        best = self.levels[0]
        for lv in self.levels:
            if lv.face_size >= target_size:
                best = lv
        return best


@dataclass(frozen=True)
class ClassicOptions:
    """Tuning knobs of the classic swapper (defaults chosen on the swap-quality bench)."""

    feather: float = 0.16  # feather width, fraction of the eye-to-chin distance
    local_light: float = 1.0  # strength of the local illumination matching (lab mode)
    shape_weight: float = 0.5  # move the target mesh toward the source's face shape (0..1)
    map_step: int = 2  # evaluate the warp map every N pixels (1 = exact)
    skin_gate: bool = True  # outside the inner face, blend only where both faces show skin
    # a target face with a larger eye-to-chin distance (px) than this and than the source's
    # is swapped on its ROI shrunk to that size, then scaled back (its cost grows with area)
    max_work_size: float = 160.0


def roi_affine(x0: int, y0: int) -> npt.NDArray[np.float32]:
    """The affine from frame pixels to a crop whose top-left corner is (x0, y0)."""
    return np.array([[1, 0, -x0], [0, 1, -y0]], np.float32)


class ClassicSwapper(CpuPart):
    """Piecewise-affine mesh face swap with colour matching and its own feathered,
    skin-gated mask (needs the targets' 68 landmarks)."""

    model_id = "classic-mesh"
    needs_identity = False  # it warps the source's pixels: no embedding needed

    def __init__(self, config: SwapConfig | None = None, options: ClassicOptions | None = None):
        self.config = config or SwapConfig()
        self.options = options or ClassicOptions()

    def prepare(self, source: SourceFace) -> SourceModel:
        """The source model of an analysed source face (it needs its 68 landmarks)."""
        if source.face.landmarks is None:
            raise ModelError(f"no landmarks for the source face in {source.path}")
        return self.prepare_landmarks(source.image, source.face.landmarks)

    def prepare_landmarks(self, source_image: Frame, source_landmarks: Points) -> SourceModel:
        """Analyse the source face once: mesh, triangles and the patch pyramid."""
        img = validate_frame(source_image, "ClassicSwapper.prepare(source_image)")
        lm = mesh.check_landmarks(source_landmarks, "ClassicSwapper.prepare(source_landmarks)")
        ext = mesh.extend_landmarks(lm)
        tris = mesh.delaunay(ext)
        _, _, size = mesh.face_frame(lm)
        h, w = img.shape[:2]
        lo = np.floor(ext.min(axis=0)).astype(int) - _PATCH_MARGIN
        hi = np.ceil(ext.max(axis=0)).astype(int) + _PATCH_MARGIN
        x0, y0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
        x1, y1 = min(int(hi[0]), w), min(int(hi[1]), h)
        if x1 - x0 < 4 or y1 - y0 < 4:
            raise LivecamError(
                "the source face lies outside its image",
                "pass landmarks detected on this very image",
            )
        patch = np.ascontiguousarray(img[y0:y1, x0:x1])
        pts = ext - np.array([x0, y0], np.float32)
        sample = blend.polygon_mask(
            patch.shape[:2], mesh.skin_sample_polygons(pts[:68]), convex=False
        )
        skin = blend.skin_likelihood(blend.to_lab(patch), sample > 0, size / 30)
        skin8 = np.clip(skin * 255 + 0.5, 0, 255).astype(np.uint8)
        levels = [_Level(patch, pts, size, skin8)]
        while levels[-1].face_size > 48 and min(levels[-1].patch.shape[:2]) > 16:
            prev = levels[-1]
            down = np.asarray(cv2.pyrDown(prev.patch), np.uint8)
            sx = down.shape[1] / prev.patch.shape[1]
            sy = down.shape[0] / prev.patch.shape[0]
            levels.append(
                _Level(
                    down,
                    (prev.points * np.array([sx, sy], np.float32)).astype(np.float32),
                    prev.face_size * (sx + sy) / 2,
                    np.asarray(cv2.pyrDown(prev.skin), np.uint8),
                )
            )
        log.debug("source prepared: %d triangles, %d levels", len(tris), len(levels))
        return SourceModel(lm, tris, tuple(levels))

    def face_roi(
        self, target_landmarks: Points, frame_shape: tuple[int, ...]
    ) -> tuple[int, int, int, int] | None:
        """The (x0, y0, x1, y1) region ``swap`` may change for this target; None if empty.

        Every pixel outside it is left bit-for-bit unchanged."""
        lm = mesh.check_landmarks(target_landmarks, "target landmarks")
        ext = mesh.extend_landmarks(lm)
        h, w = frame_shape[:2]
        lo = np.floor(ext.min(axis=0)).astype(int) - 1
        hi = np.ceil(ext.max(axis=0)).astype(int) + 2
        x0, y0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
        x1, y1 = min(int(hi[0]), w), min(int(hi[1]), h)
        if x1 - x0 < 2 or y1 - y0 < 2:
            return None
        return x0, y0, x1, y1

    def swap(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[SourceModel],
    ) -> list[FaceWork]:
        """Fill each record's ``affine`` (a translation), ``crop`` (the face ROI of its
        frame), ``output`` (its source face, colour-matched and warped onto it) and
        ``mask``. Records without 68 landmarks or whose ROI is empty keep ``output`` None."""
        for work in faces:
            if work.face.landmarks is not None:
                self._swap_one(frames[work.frame_index].image, work, sources[work.source_index])
        return list(faces)

    def _target_mesh(self, lm: Points, source: SourceModel) -> Points:
        w = self.options.shape_weight
        if w > 0:
            m, _ = cv2.estimateAffinePartial2D(source.landmarks, lm, method=cv2.LMEDS)
            if m is not None:
                aligned = source.landmarks @ m[:, :2].T + m[:, 2]
                lm = (lm + w * (aligned - lm)).astype(np.float32)
        return mesh.extend_landmarks(lm)

    def _swap_one(self, frame: Frame, work: FaceWork, source: SourceModel) -> None:
        target_lm = np.asarray(work.face.landmarks, np.float32)
        roi = self.face_roi(target_lm, frame.shape)
        if roi is None:
            return
        x0, y0, x1, y1 = roi
        target = frame[y0:y1, x0:x1]
        origin = np.array([x0, y0], np.float32)
        lm_roi = target_lm - origin
        ext = self._target_mesh(target_lm, source) - origin
        _, _, size = mesh.face_frame(target_lm)
        scale = self.work_scale(size, source)
        if scale < 1.0:  # work on the ROI shrunk to the source's detail, then scale back
            h, w = target.shape[:2]
            small = (max(2, round(w * scale)), max(2, round(h * scale)))
            k = np.array([small[0] / w, small[1] / h], np.float32)
            shrunk = cv2.resize(target, small, interpolation=cv2.INTER_AREA)
            colored, alpha = self._render(np.asarray(shrunk, np.uint8), lm_roi * k, ext * k, source)
            colored = np.asarray(cv2.resize(colored, (w, h)), np.uint8)  # bilinear
            alpha = np.asarray(cv2.resize(alpha, (w, h)), np.float32)
        else:
            colored, alpha = self._render(target, lm_roi, ext, source)
        work.affine = roi_affine(x0, y0)
        work.crop = target
        work.output = colored
        work.mask = alpha

    def work_scale(self, size: float, source: SourceModel) -> float:
        """The scale a target face of eye-to-chin ``size`` px is swapped at: 1, or less for
        a face larger than both the source's own face and ``options.max_work_size`` (the
        source has no finer detail to give; the cost grows with the face's area)."""
        limit = max(self.options.max_work_size, source.levels[0].face_size)
        return min(1.0, limit / size) if size > 0 else 1.0

    def _render(
        self, target: Frame, lm_roi: Points, ext: Points, source: SourceModel
    ) -> tuple[Frame, npt.NDArray[np.float32]]:
        """The colour-matched source face warped onto ``target`` (a face ROI whose 68
        landmarks are ``lm_roi`` and target mesh ``ext``, in its pixels) and its mask."""
        opts = self.options
        _, _, size = mesh.face_frame(lm_roi)
        level = source.level_for(size)
        shape = target.shape[:2]
        mx, my, hull = mesh.piecewise_affine_maps(
            level.points, ext, source.triangles, shape, step=opts.map_step
        )
        warped = np.asarray(
            cv2.remap(level.patch, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
            np.uint8,
        )
        up, _, _ = mesh.face_frame(lm_roi)
        # inner face: the 68-point hull plus the brows (thickened upwards)
        face = blend.polygon_mask(shape, [lm_roi[:27]], convex=True)
        for brow in (lm_roi[17:22], lm_roi[22:27]):
            band = np.vstack([brow, brow[::-1] + up * (0.05 * size)])
            face |= blend.polygon_mask(shape, [band], convex=False)
        keep_out = None
        if self.config.keep_mouth or self.config.keep_eyes:
            polys = []
            if self.config.keep_mouth:
                polys.append(lm_roi[mesh.INNER_MOUTH])
            if self.config.keep_eyes:
                polys += [lm_roi[mesh.LEFT_EYE], lm_roi[mesh.RIGHT_EYE]]
            keep_out = blend.polygon_mask(shape, polys, convex=False)
        region = (face > 0) & (hull > 0)
        if keep_out is not None:
            region &= keep_out == 0
        target_lab = blend.to_lab(target)
        colored_lab = blend.color_transfer_lab(
            blend.to_lab(warped), target_lab, region, self.config.color, size, opts.local_light
        )
        colored = blend.from_lab(colored_lab) if self.config.color != "none" else warped
        alpha = blend.feather_mask(hull, opts.feather * size, keep_out)
        if opts.skin_gate:
            # Outside the inner face (forehead band, beyond the jaw) paste only where both
            # faces show skin: no source fringe or cap, no paste over the target's hair.
            sample = blend.polygon_mask(shape, mesh.skin_sample_polygons(lm_roi), convex=False)
            tgt_skin = blend.skin_likelihood(target_lab, sample > 0, size / 30)
            src_skin = cv2.remap(
                level.skin, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
            )
            inner = cv2.GaussianBlur(face.astype(np.float32) * (1 / 255), (0, 0), 0.025 * size)
            skin = src_skin.astype(np.float32) * (1 / 255) * tgt_skin
            alpha *= 1.0 - (1.0 - inner) * (1.0 - skin)
        return colored, alpha
