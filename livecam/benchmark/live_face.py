"""Figures of a live swapped face on a clip: does the output follow the camera face's
expression, ride the head and stay still where the picture is still, and does it read as
the source? (issue 16, item 5; ``bench/bench_live_face.py`` runs them over the talking-head
clips, ``livecam check`` uses the 68-point measures).

* ``FaceMesh``: MediaPipe's 468-point face mesh (``face_landmark.onnx``) on a crop around a
  face box, the points in frame pixels.
* ``mesh_measures`` / ``dlib68_measures`` (in ``livecam.face.landmarks.measures``): mouth
  opening (inner-lip gap over mouth width), eye opening (lid gap over eye width, each eye
  and their mean) and the eye-corner distance, from mesh points or from 68 iBUG
  (dlib-order) landmarks.
* ``ClipMeter``: camera and output frames in order -> ``ClipFigures`` (coverage, identity
  retrieval and margin, mouth/eye correlation and mean absolute difference, swim, flicker,
  the seam step, the sharpness ratio and the mouth-corner error) and, with ``ceiling``,
  the mesh's own ceiling for the correlations (``perturbed``: the camera frame moved half a
  pixel and re-encoded).
* ``seam_steps`` / ``high_frequency_energy``: the colour step across the swap's boundary
  and the fine-detail energy of a face region (issue 29).
* ``glasses_lines``: the dark thin lines where glasses sit (a photo's frames pasted on).
* ``WebcamPlacement``: a clip frame inside a 1280x720 webcam frame at 12 % face width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from livecam.face.identity.onnx import OnnxRecognizer
from livecam.face.identity.swap_check import swap_strength
from livecam.face.landmarks.measures import MESH_LAYOUT, mesh_measures, pearson, swim
from livecam.face.parts import Box, Points
from livecam.face.swap import mesh
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, Frame, FrameContext

Floats = npt.NDArray[np.float64]

MESH_SIZE = 192
"""The mesh model's input side (``input_1`` [1, 3, 192, 192])."""
MESH_CROP_SCALE = 1.5
"""The crop side over the face box's long side. MediaPipe crops its detector's box 1.5x,
rotated upright by the eye line; with YuNet's box the mesh spans ~45 % of the crop on the
test clips and fits lips and lids (checked by drawing the points on liveportrait_d6)."""
MESH_POINTS = 468
FLICKER_FLOOR = 2.0
"""Grey levels: the camera's warping error is floored at this before the ratio (compressed
video of a still face warps with about this much error)."""
CHANGED_GREY = 2.0
"""Mean absolute grey difference over the eyes-to-mouth box above which a frame counts as
swapped (coverage)."""
CEILING_COPIES = ((0.5, 0.5, 90), (-0.5, 0.5, 85))
"""The camera frame's near-copies (dx, dy in pixels, JPEG quality) whose mesh openings the
camera's are correlated with for the correlations' ceiling (``ClipMeter(ceiling=True)``)."""


# ---------------------------------------------------------------- the mesh


class FaceMesh:
    """MediaPipe's face mesh (``face_landmark.onnx``: 192x192 RGB in [0, 1] -> 468 x (x, y,
    z) in crop pixels, and a face-presence logit).

    The crop is MediaPipe's: a square ``MESH_CROP_SCALE`` times the face box's long side
    around its centre, turned upright by the eye line when the face's 5 keypoints are
    given (eyes first, as every LiveCam detector gives them). The input normalisation was
    checked on liveportrait_d6: [0, 1] RGB gives the highest presence logit of [0, 1] RGB,
    [-1, 1] RGB and [0, 1] BGR on 5 frames and fits lips and lids.
    """

    def __init__(self, model_path: str | Path, *, threads: int = 1) -> None:
        self.model = OnnxModel(model_path, RuntimeOptions(provider="cpu", threads=threads))
        self._input = self.model.input_names[0]
        self.presence = 0.0
        """The face-presence logit of the last call (> 0: a face; ~20 on real faces)."""

    def crop_affine(self, box: Box, kps: Points | None = None) -> npt.NDArray[np.float64]:
        """The (2, 3) affine mapping frame pixels onto the mesh's 192x192 crop."""
        b = np.asarray(box, np.float64).reshape(4)
        centre = (b[:2] + b[2:]) / 2
        side = MESH_CROP_SCALE * max(b[2] - b[0], b[3] - b[1], 1.0)
        angle = 0.0
        if kps is not None:
            k = np.asarray(kps, np.float64).reshape(-1, 2)
            angle = math.atan2(k[1, 1] - k[0, 1], k[1, 0] - k[0, 0])
        s = MESH_SIZE / side
        c, n = math.cos(-angle) * s, math.sin(-angle) * s
        m = np.array([[c, -n, 0.0], [n, c, 0.0]])
        m[:, 2] = MESH_SIZE / 2 - m[:, :2] @ centre
        return m

    def points(self, frame: Frame, box: Box, kps: Points | None = None) -> Floats:
        """The 468 (x, y) mesh points of the face in ``box`` (and its 5 ``kps``, for the
        crop's roll) of the BGR ``frame``, in frame pixels."""
        m = self.crop_affine(box, kps)
        crop = cv2.warpAffine(
            frame,
            m,
            (MESH_SIZE, MESH_SIZE),
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )
        blob = crop[None, :, :, ::-1].transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
        out = self.model.run({self._input: np.ascontiguousarray(blob)})
        by_size = sorted(out, key=lambda a: np.asarray(a).size)
        self.presence = float(np.asarray(by_size[0]).reshape(-1)[0])
        xy = np.asarray(by_size[-1], np.float64).reshape(MESH_POINTS, 3)[:, :2]
        inverse = cv2.invertAffineTransform(m)
        return np.asarray(xy @ inverse[:, :2].T + inverse[:, 2], np.float64)

    def close(self) -> None:
        self.model.close()


# ---------------------------------------------------------------- clip figures


def mesh_offset(output: Floats, camera: Floats) -> Floats:
    """The mean (dx, dy) of the output's mesh points minus the camera's, over the camera's
    eye-corner distance."""
    d = mesh_measures(camera).eye_distance
    return np.asarray((output - camera).mean(axis=0) / max(d, 1e-6), np.float64)


def grey(frame: Frame) -> npt.NDArray[np.float32]:
    """A BGR frame's grey levels as float32."""
    return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32)


FLOW_MARGIN = 0.25
"""The flow is computed on the face box grown by this share of its size on every side
(not the whole frame: a 1280x720 Farneback flow costs ~10x a face's)."""


def backward_flow(prev: npt.NDArray[np.float32], cur: npt.NDArray[np.float32]) -> Floats:
    """The remap grids (x, y) that warp frame t-1 onto frame t: Farneback flow from ``cur``
    (t) to ``prev`` (t-1), added to the pixel grid."""
    none: npt.NDArray[np.float32] = None  # type: ignore[assignment]  # OpenCV: no initial flow
    flow = np.asarray(
        cv2.calcOpticalFlowFarneback(
            cur.astype(np.uint8), prev.astype(np.uint8), none, 0.5, 3, 15, 3, 5, 1.2, 0
        ),
        np.float32,
    )
    h, w = cur.shape
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return np.stack([gx + flow[..., 0], gy + flow[..., 1]])


def warp_errors(
    camera: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    output: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    box: Box,
) -> tuple[float, float]:
    """The camera's and the output's warping errors at frame t: mean absolute grey
    difference inside ``box`` between frame t and frame t-1 warped onto it by the CAMERA
    frames' flow (``backward_flow``, on the box grown by ``FLOW_MARGIN``). ``camera`` and
    ``output``: their grey (t-1, t) frames. nan when the box lies outside the frame."""
    h, w = camera[1].shape
    rx1, ry1, rx2, ry2 = _clip_box(_grow(box, FLOW_MARGIN), w, h)
    x1, y1, x2, y2 = _clip_box(box, w, h)
    if x2 <= x1 or y2 <= y1:
        return math.nan, math.nan
    region = (slice(ry1, ry2), slice(rx1, rx2))
    grid = backward_flow(camera[0][region], camera[1][region])
    inner = (slice(y1 - ry1, y2 - ry1), slice(x1 - rx1, x2 - rx1))
    gx, gy = grid[0][inner].astype(np.float32), grid[1][inner].astype(np.float32)

    def error(frames: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]) -> float:
        warped = cv2.remap(
            frames[0][region], gx, gy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        return float(np.abs(frames[1][region][inner] - warped).mean())

    return error(camera), error(output)


def _clip_box(box: npt.ArrayLike, w: int, h: int) -> tuple[int, int, int, int]:
    b = np.asarray(box, np.float64).reshape(4)
    return (
        int(np.clip(np.floor(b[0]), 0, w)),
        int(np.clip(np.floor(b[1]), 0, h)),
        int(np.clip(np.ceil(b[2]), 0, w)),
        int(np.clip(np.ceil(b[3]), 0, h)),
    )


def eyes_mouth_box(face: Face) -> Box:
    """The box of a face's 5 keypoints (eyes to mouth corners)."""
    k = np.asarray(face.kps, np.float32).reshape(-1, 2)
    return np.array([*k.min(axis=0), *k.max(axis=0)], np.float32)


def changed(camera: Frame, output: Frame, box: Box, threshold: float = CHANGED_GREY) -> bool:
    """Whether the output differs from the camera frame inside ``box`` by more than
    ``threshold`` grey levels on average."""
    x1, y1, x2, y2 = _clip_box(box, camera.shape[1], camera.shape[0])
    if x2 <= x1 or y2 <= y1:
        return False
    a = grey(camera[y1:y2, x1:x2])
    b = grey(output[y1:y2, x1:x2])
    return float(np.abs(a - b).mean()) > threshold


SEAM_CHANGE_GREY = 4.0
"""Grey levels (after a small blur) above which a pixel counts as changed by the swap:
the swapped region whose boundary ``seam_steps`` measures."""
SEAM_BAND = 0.06
"""The width of the bands on either side of the swap boundary, as a share of the face
box's width (about the feather of the swaps' masks)."""
SEAM_SKIN_STEP = 8.0
"""ΔE below which the camera's own step across a boundary pixel counts as skin to skin:
the seam figure reads those pixels (where a tone step shows), all of them when they are
under a fifth of the boundary."""
SHARPNESS_SIGMA = 1.0
"""The Gaussian whose residual (grey minus its blur) is the fine detail that
``high_frequency_energy`` sums."""


def _grow(box: Box, share: float) -> Floats:
    """``box`` grown by ``share`` of its width / height on every side."""
    b = np.asarray(box, np.float64).reshape(4)
    return b + share * np.array([b[0] - b[2], b[1] - b[3], b[2] - b[0], b[3] - b[1]])


def swapped_region(camera: Frame, output: Frame) -> npt.NDArray[np.uint8]:
    """255 where ``output`` differs from ``camera`` (grey, blurred, by more than
    ``SEAM_CHANGE_GREY``): the largest such blob, its holes filled (the kept eyes and
    mouth are inside the swap, not outside it); all 0 when nothing changed."""
    diff = np.abs(grey(output) - grey(camera))
    changed_px = (cv2.GaussianBlur(diff, (0, 0), 1.5) > SEAM_CHANGE_GREY).astype(np.uint8)
    contours, _ = cv2.findContours(changed_px, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    region = np.zeros(camera.shape[:2], np.uint8)
    if contours:
        biggest = max(contours, key=cv2.contourArea)
        cv2.drawContours(region, [biggest], -1, 255, cv2.FILLED)
    return region


def seam_steps(camera: Frame, output: Frame, box: Box) -> tuple[float, float]:
    """The mean colour step across the swap's boundary in the camera and in the output
    frame: (camera's, output's), nan, nan when the swap changed less than a tenth of the
    face ``box``.

    The boundary is that of ``swapped_region`` (around the face box, grown by half). On
    each side a band ``SEAM_BAND`` of the face width wide; at every boundary pixel the
    Lab colour (ΔE, 8-bit scaling) between the local means of the inner and the outer
    band (masked Gaussian, sigma the band's width), averaged over the boundary pixels
    where the camera's own step on the same bands is skin to skin (``SEAM_SKIN_STEP``):
    the output's step over the camera's says how much the seam adds."""
    h, w = camera.shape[:2]
    x1, y1, x2, y2 = _clip_box(_grow(box, 0.5), w, h)
    bx1, by1, bx2, by2 = _clip_box(box, w, h)
    if x2 - x1 < 8 or y2 - y1 < 8:
        return math.nan, math.nan
    cam, out = camera[y1:y2, x1:x2], output[y1:y2, x1:x2]
    region = swapped_region(cam, out)
    if np.count_nonzero(region) < 0.1 * max((bx2 - bx1) * (by2 - by1), 1):
        return math.nan, math.nan
    band = max(2, round(SEAM_BAND * (bx2 - bx1)))
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1, 2 * band + 1))
    inner = (region > 0) & (cv2.erode(region, disk) == 0)
    outer = (region == 0) & (cv2.dilate(region, disk) > 0)
    edge = (region > 0) & (cv2.erode(region, np.ones((3, 3), np.uint8)) == 0)
    # the frame's own border is no seam
    edge[:band, :] = edge[-band:, :] = False
    edge[:, :band] = edge[:, -band:] = False
    if np.count_nonzero(edge) < 4 or not inner.any() or not outer.any():
        return math.nan, math.nan
    sigma = float(band)

    def step(image: Frame) -> npt.NDArray[np.float32]:
        lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
        means = []
        for side in (inner, outer):
            m = side.astype(np.float32)
            num = cv2.GaussianBlur(lab * m[..., None], (0, 0), sigma)
            den = cv2.GaussianBlur(m, (0, 0), sigma)[..., None]
            means.append(num / np.maximum(den, 1e-3))
        return np.asarray(np.linalg.norm(means[0] - means[1], axis=2), np.float32)

    cam_step, out_step = step(cam), step(out)
    # where the camera itself steps (skin to hair or background) a seam hides; where it
    # does not (skin to skin: forehead, jaw to neck) it shows
    seen = edge & (cam_step < SEAM_SKIN_STEP)
    if np.count_nonzero(seen) < 0.2 * np.count_nonzero(edge):
        seen = edge
    return float(cam_step[seen].mean()), float(out_step[seen].mean())


def high_frequency_energy(frame: Frame, box: Box) -> float:
    """The mean squared fine detail (grey minus its Gaussian blur of sigma
    ``SHARPNESS_SIGMA``) inside ``box``; nan for an empty box."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = _clip_box(box, w, h)
    if x2 - x1 < 4 or y2 - y1 < 4:
        return math.nan
    g = grey(frame[y1:y2, x1:x2])
    detail = g - cv2.GaussianBlur(g, (0, 0), SHARPNESS_SIGMA)
    return float(np.mean(detail * detail))


GLASSES_LINE = 0.08
"""The glasses figure's structuring element, a share of the eye-to-chin distance (a thick
plastic rim fits in it)."""


def glasses_lines(frame: Frame, landmarks: Points) -> float:
    """The mean dark thin-line energy (black-hat of the Lab lightness, an ellipse of
    ``GLASSES_LINE`` face sizes) of ``frame`` where glasses sit on the face with these 68
    landmarks: temple to temple, from a little above the brows to the nose's middle, the
    eye openings left out; nan when that region is empty. A swap that pastes a photo's
    glasses frames raises it over the camera face's own (brows, lashes, creases)."""
    lm = np.asarray(landmarks, np.float32)
    up, _, size = mesh.face_frame(lm)
    band = np.vstack(
        [lm[[0, 1, 2]], lm[29][None], lm[[14, 15, 16]], lm[26:16:-1] + up * 0.12 * size]
    )
    shape = frame.shape[:2]
    region = np.zeros(shape, np.uint8)
    cv2.fillPoly(region, [np.round(band).astype(np.int32)], 255)
    eyes = np.zeros(shape, np.uint8)
    cv2.fillPoly(
        eyes, [np.round(lm[36:42]).astype(np.int32), np.round(lm[42:48]).astype(np.int32)], 255
    )
    inside = (region > 0) & (cv2.dilate(eyes, np.ones((7, 7), np.uint8)) == 0)
    if not inside.any():
        return math.nan
    k = max(3, int(GLASSES_LINE * size) | 1)
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    lightness = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
    dark = cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, disk)
    return float(dark[inside].mean())


def perturbed(frame: Frame, dx: float, dy: float, quality: int) -> Frame:
    """``frame`` moved by (``dx``, ``dy``) pixels (sub-pixel: bilinear) and re-encoded as
    JPEG at ``quality``: to the eye the same picture, so what a landmarker reads differently
    on it is the landmarker's own noise."""
    m = np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]])
    moved = cv2.warpAffine(
        frame, m, (frame.shape[1], frame.shape[0]), borderMode=cv2.BORDER_REPLICATE
    )
    ok, data = cv2.imencode(".jpg", moved, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("could not JPEG-encode the frame")
    return np.asarray(cv2.imdecode(data, cv2.IMREAD_COLOR), np.uint8)


def inner_face_box(face: Face) -> Box:
    """The box of a face's 5 keypoints grown by a quarter on every side: brows to chin,
    cheek to cheek, no hair or background (where the sharpness ratio is read)."""
    b = eyes_mouth_box(face)
    return np.asarray(_grow(b, 0.25), np.float32)


@dataclass(frozen=True)
class ClipFigures:
    """One clip's figures (nan where a figure had no frames to go on).

    ``frames``: frames measured; ``faces``: of them, frames with a camera face; coverage =
    share of those whose eyes-to-mouth box changed. ``retrieval``: share of embedded
    frames whose output is nearer (cosine) its source than the camera face and every other
    gallery face; ``margin``: mean cos(output, source) - cos(output, camera face).
    ``mouth_corr``/``eye_corr``: Pearson correlation of the output's and the camera's mesh
    mouth / eye opening (eye: the two eyes' mean) over the clip; ``mouth_mad``/``eye_mad``
    their mean absolute difference. ``swim``: std over frames of the mean offset between
    output and camera mesh points, in eye-corner distances. ``flicker_mean``/``flicker_p95``:
    of the per-frame ratio of the output's warping error to the camera's (floored at
    ``FLICKER_FLOOR``), with the camera frames' flow, inside the camera face box.
    ``camera_mouth_sd``/``camera_eye_sd``: how much the camera face's mouth / eye opening
    varies over the clip (a correlation over a nearly still mouth says little).
    ``seam``: the mean colour step across the swap boundary over the camera's own step on
    the same bands (``seam_steps``; 1 = the boundary adds nothing); ``sharpness``: the
    median over frames of the output's fine-detail energy over the camera's in the inner
    face (``high_frequency_energy``; 1 = as sharp as the camera); ``mouth_corner``: the mean
    distance of the output's mesh mouth corners from the camera's, in eye-corner distances.
    ``strength``: the median over embedded frames of the live swap check's swap strength
    (``swap_check.swap_strength``, 0-100: 50 = as near the source as the camera face); nan
    when the source and the camera face are too alike for it.
    ``mouth_ceiling``/``eye_ceiling`` (``ClipMeter(ceiling=True)``, else nan): the mean
    correlation of the camera's mouth / eye opening with the same openings on near-copies
    of the camera frames (``CEILING_COPIES``: moved half a pixel, re-encoded): the most a
    swap that changed nothing could score. Where the camera's opening hardly moves (a
    speaker with small mouth movements) it falls below 1: the correlation there is mostly
    of the mesh's own noise.
    """

    frames: int
    faces: int
    coverage: float
    retrieval: float
    margin: float
    mouth_corr: float
    eye_corr: float
    mouth_mad: float
    eye_mad: float
    swim: float
    flicker_mean: float
    flicker_p95: float
    camera_mouth_sd: float = math.nan
    camera_eye_sd: float = math.nan
    seam: float = math.nan
    sharpness: float = math.nan
    mouth_corner: float = math.nan
    strength: float = math.nan
    mouth_ceiling: float = math.nan
    eye_ceiling: float = math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


@dataclass
class _Series:
    cam_mouth: list[float] = field(default_factory=list)
    out_mouth: list[float] = field(default_factory=list)
    cam_eye: list[float] = field(default_factory=list)
    out_eye: list[float] = field(default_factory=list)
    offsets: list[Floats] = field(default_factory=list)
    changed: list[bool] = field(default_factory=list)
    flicker: list[float] = field(default_factory=list)
    nearest: list[bool] = field(default_factory=list)
    margins: list[float] = field(default_factory=list)
    strengths: list[float] = field(default_factory=list)
    cam_seam: list[float] = field(default_factory=list)
    out_seam: list[float] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)
    mouth_corner: list[float] = field(default_factory=list)
    # per near-copy of the camera frame (CEILING_COPIES): its mouth and eye openings
    copy_mouth: list[list[float]] = field(default_factory=list)
    copy_eye: list[list[float]] = field(default_factory=list)


class ClipMeter:
    """Feeds of (camera frame, output frame, camera face) in clip order -> ``figures()``.

    Both frames' meshes are taken from the camera face's box and keypoints (one crop: the
    figures then see what the swap changed, not two detections' noise). ``recognizer``
    (with the ``source`` embedding and optional other ``gallery`` embeddings) gives the
    identity figures on every ``identity_every``-th face frame, the output's face aligned
    by the camera face's keypoints; None: identity figures are nan. Frames without a face
    (None) only break the flicker chain.
    """

    def __init__(
        self,
        mesh: FaceMesh,
        recognizer: OnnxRecognizer | None = None,
        source: npt.NDArray[np.float32] | None = None,
        gallery: Sequence[npt.NDArray[np.float32]] = (),
        *,
        identity_every: int = 1,
        ceiling: bool = False,
    ) -> None:
        if recognizer is not None and source is None:
            raise ValueError("a recognizer needs the source embedding")
        self.mesh = mesh
        self.recognizer = recognizer
        self.source = source
        self.gallery = list(gallery)
        self.identity_every = max(1, identity_every)
        self.ceiling = ceiling
        self.frames = 0
        self._s = _Series()
        self._prev: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None = None

    def add(self, camera: Frame, output: Frame, face: Face | None) -> None:
        """One frame pair; ``face``: the camera frame's face (None: no face)."""
        self.frames += 1
        s = self._s
        cam_g, out_g = grey(camera), grey(output)
        prev, self._prev = self._prev, (cam_g, out_g)
        if face is None:
            self._prev = None
            return
        cam_pts = self.mesh.points(camera, face.bbox, face.kps)
        out_pts = self.mesh.points(output, face.bbox, face.kps)
        cam_m, out_m = mesh_measures(cam_pts), mesh_measures(out_pts)
        s.cam_mouth.append(cam_m.mouth)
        s.out_mouth.append(out_m.mouth)
        s.cam_eye.append(cam_m.eye)
        s.out_eye.append(out_m.eye)
        s.offsets.append(mesh_offset(out_pts, cam_pts))
        s.changed.append(changed(camera, output, eyes_mouth_box(face)))
        corners = list(MESH_LAYOUT.mouth_corners)
        corner_error = np.hypot(*(out_pts[corners] - cam_pts[corners]).T).mean()
        s.mouth_corner.append(float(corner_error) / max(cam_m.eye_distance, 1e-6))
        if self.ceiling:
            if not s.copy_mouth:
                s.copy_mouth = [[] for _ in CEILING_COPIES]
                s.copy_eye = [[] for _ in CEILING_COPIES]
            for i, (dx, dy, quality) in enumerate(CEILING_COPIES):
                near = perturbed(camera, dx, dy, quality)
                copy_m = mesh_measures(self.mesh.points(near, face.bbox, face.kps))
                s.copy_mouth[i].append(copy_m.mouth)
                s.copy_eye[i].append(copy_m.eye)
        cam_step, out_step = seam_steps(camera, output, face.bbox)
        if not math.isnan(cam_step):
            s.cam_seam.append(cam_step)
            s.out_seam.append(out_step)
        inner = inner_face_box(face)
        cam_hf = high_frequency_energy(camera, inner)
        if cam_hf > 1e-6:
            s.sharpness.append(high_frequency_energy(output, inner) / cam_hf)
        if prev is not None:
            cam_err, out_err = warp_errors((prev[0], cam_g), (prev[1], out_g), face.bbox)
            if not (math.isnan(cam_err) or math.isnan(out_err)):
                s.flicker.append(out_err / max(cam_err, FLICKER_FLOOR))
        if self.recognizer is not None and (len(s.changed) - 1) % self.identity_every == 0:
            self._identity(camera, output, face)

    def _identity(self, camera: Frame, output: Frame, face: Face) -> None:
        assert self.recognizer is not None and self.source is not None
        works = [FaceWork(0, 0, face), FaceWork(1, 1, face)]
        embedded = self.recognizer.embed([FrameContext(camera), FrameContext(output)], works)
        cam_e, out_e = (w.face.embedding for w in embedded)
        assert cam_e is not None and out_e is not None
        to_source = float(out_e @ self.source)
        to_camera = float(out_e @ cam_e)
        others = [float(out_e @ g) for g in self.gallery]
        self._s.nearest.append(to_source > max([to_camera, *others]))
        self._s.margins.append(to_source - to_camera)
        strength = swap_strength(to_source, to_camera, float(cam_e @ self.source))
        if strength is not None:
            self._s.strengths.append(strength)

    def figures(self) -> ClipFigures:
        s = self._s
        mouth = np.abs(np.subtract(s.out_mouth, s.cam_mouth))
        eye = np.abs(np.subtract(s.out_eye, s.cam_eye))
        flicker = np.asarray(s.flicker, np.float64)
        return ClipFigures(
            frames=self.frames,
            faces=len(s.changed),
            coverage=_mean([float(c) for c in s.changed]),
            retrieval=_mean([float(n) for n in s.nearest]),
            margin=_mean(s.margins),
            mouth_corr=pearson(s.out_mouth, s.cam_mouth),
            eye_corr=pearson(s.out_eye, s.cam_eye),
            mouth_mad=float(mouth.mean()) if mouth.size else math.nan,
            eye_mad=float(eye.mean()) if eye.size else math.nan,
            swim=swim(s.offsets),
            flicker_mean=float(flicker.mean()) if flicker.size else math.nan,
            flicker_p95=float(np.percentile(flicker, 95)) if flicker.size else math.nan,
            camera_mouth_sd=float(np.std(s.cam_mouth)) if s.cam_mouth else math.nan,
            camera_eye_sd=float(np.std(s.cam_eye)) if s.cam_eye else math.nan,
            seam=_mean(s.out_seam) / max(_mean(s.cam_seam), 1e-6) if s.cam_seam else math.nan,
            sharpness=float(np.median(s.sharpness)) if s.sharpness else math.nan,
            mouth_corner=_mean(s.mouth_corner),
            strength=float(np.median(s.strengths)) if s.strengths else math.nan,
            mouth_ceiling=_mean([pearson(s.cam_mouth, c) for c in s.copy_mouth]),
            eye_ceiling=_mean([pearson(s.cam_eye, c) for c in s.copy_eye]),
        )


# ---------------------------------------------------------------- webcam placement

WEBCAM_SIZE = (1280, 720)
FACE_WIDTH_SHARE = 0.12


def webcam_background(size: tuple[int, int] = WEBCAM_SIZE, seed: int = 16) -> Frame:
    """A neutral, non-flat room-like background of ``size`` (w, h): a warm-grey vertical
    gradient, soft blurred blotches and a darker "floor" band; the same for one seed."""
    w, h = size
    rng = np.random.default_rng(seed)
    y = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None]
    top, bottom = np.array([150, 160, 168], np.float32), np.array([96, 108, 118], np.float32)
    image = np.broadcast_to(top + (bottom - top) * y, (h, w, 3)).copy()
    small = rng.normal(0.0, 1.0, (max(2, h // 60), max(2, w // 60), 3)).astype(np.float32)
    blotches = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    image += 14.0 * cv2.GaussianBlur(blotches, (0, 0), max(w, h) / 80)
    image[int(0.82 * h) :] *= 0.8
    return np.asarray(np.clip(image, 0, 255), np.uint8)


@dataclass(frozen=True)
class WebcamPlacement:
    """Places every frame of a clip into a webcam frame: one scale and offset for the clip,
    fixed from the first frame's face so that the face there is ``FACE_WIDTH_SHARE`` of
    the webcam frame's width and centred (a little above the middle); head motion stays.
    The clip's edge is feathered into ``background``."""

    scale: float
    offset: tuple[float, float]
    background: Frame

    @staticmethod
    def from_first(
        face_box: Box,
        size: tuple[int, int] = WEBCAM_SIZE,
        share: float = FACE_WIDTH_SHARE,
        background: Frame | None = None,
    ) -> WebcamPlacement:
        """The placement for a clip whose first frame's face is ``face_box``."""
        b = np.asarray(face_box, np.float64).reshape(4)
        scale = share * size[0] / max(float(b[2] - b[0]), 1.0)
        cx, cy = (b[0] + b[2]) / 2 * scale, (b[1] + b[3]) / 2 * scale
        offset = (size[0] / 2 - cx, 0.45 * size[1] - cy)
        bg = webcam_background(size) if background is None else background
        return WebcamPlacement(scale, (float(offset[0]), float(offset[1])), bg)

    def place(self, frame: Frame) -> Frame:
        """``frame`` scaled and shifted into a copy of the background."""
        h, w = self.background.shape[:2]
        m = np.array([[self.scale, 0.0, self.offset[0]], [0.0, self.scale, self.offset[1]]])
        interp = cv2.INTER_AREA if self.scale < 1 else cv2.INTER_LINEAR
        moved = cv2.warpAffine(frame, m, (w, h), flags=interp, borderMode=cv2.BORDER_REPLICATE)
        fh, fw = frame.shape[:2]
        feather = max(2.0, 0.03 * min(fw, fh) * self.scale)
        inside = np.zeros((h, w), np.float32)
        x1, y1 = self.offset
        x2, y2 = x1 + fw * self.scale, y1 + fh * self.scale
        cv2.rectangle(
            inside,
            (round(x1 + feather), round(y1 + feather)),
            (round(x2 - feather), round(y2 - feather)),
            1.0,
            -1,
        )
        alpha = cv2.GaussianBlur(inside, (0, 0), feather / 2)[..., None]
        out = moved.astype(np.float32) * alpha + self.background.astype(np.float32) * (1 - alpha)
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)
