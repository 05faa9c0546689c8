"""The classic (no neural network) face swapper of the offline preset, a ``Swapper`` part.

The source face is analysed once (``prepare``): its 68 landmarks are extended over the
forehead and just outside the jaw, triangulated (Delaunay) and the face patch is cut out
at a few scales. For each target face (``swap``) the source patch is warped onto the
target's mesh (piecewise affine, one remap over the face ROI): the camera face's own
landmarks for everything that carries expression (brows, lids, lips), the source's shape
blended in only on the jaw line and nose (``mesh.blend_shape``), so the swapped face
speaks, blinks and frowns with the streamer. It is colour- and light-matched to the target
inside the face (deep inside at a wider scale, ``options.inner_light_scale``) and, on a
soft camera, its finest band damped to the camera picture's fine detail
(``options.camera_look``, ``options.camera_detail``: no crisp portrait pasted on a soft
webcam picture); towards the mask's edge its lightness at
low frequency is brought to the camera skin's it meets (``options.seam_match``: no tone step at
the seam, the inner face untouched), and its colour a little deeper (``options.edge_sigma``);
by default the eyes are the camera's
own (iris, gaze, lid edges) in the swapped skin's tone (``swap.classic.eyes``). Its own
mask follows the mesh outline with a feather and is gated by skin outside the inner face
(no source fringe, no paste over the target's hair), and leaves out the target's inner
mouth. With ``swap.classic.keep_glasses`` (on by default) the camera face's own glasses
frames are carried over the swapped face as the camera's finest detail there (their lines
and highlights, on the swapped face's tone), and the camera's lid edges kept around its eye
openings are narrower (``options.glasses_eye_lid``).
With ``swap.classic.drop_photo_glasses`` the source photo's own glasses (frames and lenses,
``glasses.photo_glasses``) are painted over when it is prepared and the swap shows the
camera's face there (brows, lids, skin) in the swapped skin's tone.
On a turned head the far side's jaw line and mask end on the camera's own silhouette
(``options.far_turn``).
Per tracked face (``work.face.track_id``) the colour and skin statistics and the blur are
smoothed over frames, held in the swapper (a repeated camera frame gives the same
output bit for bit) and dropped when the track is gone. The crop is the face ROI, an
axis-aligned region of the frame holding the whole mesh and its feather, so a
``RoiBlender`` pastes the result back; only that ROI is touched.

When the source is prepared, an open mouth's gap running on past its 68-point corners (a
broad smile) is painted over from the skin around it (``options.trim_corners``), so the
warped lips end on the camera's mouth corners. Per tracked face the upper lip's outer points
follow the camera picture's skin-to-lip edge from frame to frame (``options.lip_follow``),
which the 68-point landmarker moves too little as the mouth opens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.swap import ClassicSettings
from livecam.errors import LivecamError, ModelError
from livecam.face.landmarks.measures import dlib68_measures
from livecam.face.parts import CpuPart
from livecam.face.paste import colour as blend
from livecam.face.swap import glasses, mesh
from livecam.types import Face, FaceWork, Frame, FrameContext, RunReport, validate_frame

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

Points = npt.NDArray[np.float32]

_PATCH_MARGIN = 6  # pixels kept around the source mesh
_ROI_MARGIN = 3  # pixels between the mesh and the ROI's edge (the mask is 0 there)
# a turned head's far jaw line (landmarks 0-7 or 16-9, from the jaw's end to the chin) keeps
# this share of the camera's place (times the turn): the source's shape fades back in at the chin
_FAR_JAW = np.array([1, 1, 1, 1, 1, 1, 0.66, 0.33], np.float32)


@dataclass(frozen=True)
class _Level:
    patch: npt.NDArray[np.uint8]  # BGR crop of the source around its mesh
    points: Points  # extended source landmarks in patch coordinates
    face_size: float  # eye-to-chin distance in this level's pixels
    skin: npt.NDArray[np.uint8]  # 0..255 skin likelihood of the patch (hair, cap, background low)
    mouth: npt.NDArray[np.uint8]  # 255 inside the source's mouth (teeth, tongue, the dark gap)
    # 255 where the photo's own glasses (frames, lenses) were, painted over; None: it wears none
    glasses: npt.NDArray[np.uint8] | None = None


@dataclass(frozen=True)
class SourceModel:
    """Everything ``swap`` needs from the source face, computed once by ``prepare``."""

    landmarks: Points  # (68, 2) in source-image coordinates
    triangles: mesh.Triangles  # (T, 3) indices into the extended points
    levels: tuple[_Level, ...]  # full scale first, then halvings
    boundary: npt.NDArray[np.int32] = field(  # the triangulation's outline (mesh.outline)
        default_factory=lambda: np.zeros(0, np.int32)
    )

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

    feather: float = 0.10  # feather width, fraction of the eye-to-chin distance
    local_light: float = 0.5  # strength of the local illumination matching (lab mode)
    # ... and deep inside the face (brows, eyes, nose, lips) the camera's light is taken at
    # ``inner_light_scale`` times that low pass's sigma: its direction stays, but not the
    # shape of the camera's brow, eye sockets and nose at the narrower scale, which the
    # judge read as the camera person on weak pairs (the astronaut on d6 at 12 % of 720p,
    # her frames with your brows raised: retrieval 0.87 -> 0.97). Up to
    # ``inner_light_depth[0]`` face sizes inside the 68-point face (its outline and the
    # camera's own mouth) the narrow match, by ``inner_light_depth[1]`` the wide one
    # (smoothstep; from the outline itself d6's seam rose 1.37 -> 1.43, from 0.1 face
    # sizes with biden_standing_2010 1.54 -> 1.61); on a face turned
    # less than ``turned[0]``, fading out as it turns to ``turned[1]`` (a turned head's near
    # cheek keeps the narrow match: s18's seam rose 1.02 -> 1.16, s32's 1.38 -> 1.44). 1 = off.
    # docs/lite-swap.md: the weakest pair.
    inner_light_scale: float = 2.5
    inner_light_depth: tuple[float, float] = (0.15, 0.3)
    # move the target's jaw line and nose toward the source's face shape (0..1; brows, lids
    # and lips always stay the camera's: mesh.SHAPE_WEIGHTS)
    shape_weight: float = 0.6
    map_step: int = 2  # evaluate the warp map every N pixels (1 = exact)
    skin_gate: bool = True  # outside the inner face, blend only where both faces show skin
    # a target face with a larger eye-to-chin distance (px) than this and than the source's
    # is swapped on its ROI shrunk to that size, then scaled back (its cost grows with area)
    max_work_size: float = 160.0
    # a tracked face's colour and skin statistics move this share of the way to each new
    # frame's (1 = no smoothing); kept for ``track_ttl`` swap calls after its last face
    smoothing: float = 0.3
    track_ttl: int = 30
    eye_lid: float = 0.015  # own eyes: the lid edges kept around the eye opening
    # the camera look: the colour-matched face is blurred until its fine detail on the
    # cheeks and nose is at most this many times the camera face's there (measured on
    # every ``measure_every``-th frame, smoothed per track; 0 = off): a grainy portrait on
    # a soft webcam picture reads as a pasted mask. Only far sharper photos are blurred:
    # at 3x (the inner face then
    # as sharp as the camera's, 0.76-1.11) the grain of an old photo went with some of its
    # identity (`livecam check`'s clip, Grace Hopper on the astronaut: strength 69 -> 66;
    # 6x, 7x: 68; 8x, 10x: 69)
    camera_look: float = 8.0
    # ... and then its finest band (the face minus its Gaussian blur of sigma 1: grain,
    # pores, the softness a webcam's optics and compression take out) is damped until its
    # energy over the inner face (eyes to mouth, the camera's eyes left out) is this many
    # times the camera face's (0 = off). Only that band: the middle frequencies (the shape
    # of the features, wrinkles) stay the source's. Only where the camera is soft (its
    # fine-detail energy there, 8-bit lightness, fades the damping out from
    # ``detail_soft[0]`` to ``detail_soft[1]``: the webcam clips measure 2-5, a sharp
    # photo as the camera 15-90; on a sharp camera it cost `livecam check` 4 points of
    # strength), only a face more than ``detail_knee[0]`` times as sharp (fully from
    # ``detail_knee[1]``), and fading in over ``detail_edge`` face sizes from the mask's
    # edge (the seam stays where it was). The knee from 1.05 (fully from 1.3): from 1.4
    # (to 1.7) a crisp photo a little sharper than the camera was left alone and read
    # sharper than the soft video (d6 with biden_standing_2010.jpg: the bench's sharpness
    # 1.37 / 1.24, now 1.24 / 1.17). docs/lite-swap.md: the camera look.
    camera_detail: float = 0.97
    detail_soft: tuple[float, float] = (8.0, 12.0)
    detail_knee: tuple[float, float] = (1.05, 1.3)
    detail_edge: float = 0.15
    # the photo's pyramid level drawn on a face smaller than its own (the pyramid halves, so
    # up to 2x smaller) is first blurred by this times 0.5 * sqrt(shrink^2 - 1) (0 = off):
    # the bilinear warp takes one sample per target pixel, and a finer photo aliased into
    # grain the photo does not have (the Obama portrait, its 201 px face level drawn on a
    # crisp camera's 126 px face at 12 % of 720p: 1.63x the camera's fine detail, 1.14x
    # so filtered; docs/lite-swap.md: the camera look)
    anti_alias: float = 1.0
    # a face swapped on its ROI shrunk to ``max_work_size`` loses most of its finest band in
    # the shrinking and scaling back (a crisp 720p camera's big face came out at 0.3-0.8 of
    # the camera's fine detail); scaled back, that band is raised (at most this gain; 1 =
    # off) until its detail against the camera's is what it was against the shrunk camera
    detail_restore: float = 3.0
    # the seam: where the mask fades over skin of both faces, the swapped face's lightness
    # at low frequency (masked Gaussian of ``seam_sigma`` face sizes) is made the camera's,
    # and that correction fades out over ``seam_match`` face sizes inward from the mask's
    # edge (0 = off): the face meets the camera's skin without a tone step, and the inner
    # face (deeper than ``seam_match``) is untouched (docs/lite-swap.md: the seam). Its
    # colour is not moved: a cap brim or shirt at the edge tinted the face blue.
    seam_match: float = 0.3
    seam_sigma: float = 0.04
    # at most this much of a change (8-bit Lab lightness): a face of a skin far from the
    # camera's keeps some of its own tone at the edge (matched in full, the stills bench's
    # codait onto Obama read as Obama: retrieval 97.1 -> 94.1 %)
    seam_cap: float = 15.0
    # a turned head (``_turn``: none below ``turned[0]``, fully from ``turned[1]``; s32 turns
    # 0.21-0.29, s29 up to 0.15, d6 and d13 at most 0.10): the photo's narrower frontal jaw
    # ends inside the camera's near cheek, so the camera's skin runs on past the mask's edge
    # there, where the photo's own shading (a lit cheekbone over the camera's blush) made a
    # tone step. Its local light matching (``local_light``) is raised, on the lightness only
    # (the colour channels took a blue cap brim's tint), to ``turned_light`` at the hull's
    # edge, fading (smoothstep) to ``local_light`` ``turned_light_depth`` face sizes inside,
    # and the seam's match reaches ``turned_seam_match`` face sizes in (s32's seam 1.76 /
    # 1.94 -> 1.36 / 1.38). Not on a frontal face: there the same raised d6's seam (1.34 ->
    # 1.59); from a turn of 0.10 s29's retrieval at 12 % of 720p fell 0.97 -> 0.93
    # (docs/lite-swap.md: a turned head's near cheek).
    turned: tuple[float, float] = (0.15, 0.20)
    turned_light: float = 1.0
    turned_light_depth: float = 0.8
    turned_seam_match: float = 0.5
    # the seam match above moves the lightness only, on the feather ring: a colour step
    # stayed (along s29's jaw the face came out 2-3 levels bluer than the camera, b of Lab).
    # So the face's colour (a and b of Lab) at low frequency (a masked Gaussian of
    # ``edge_sigma`` face sizes over both faces' skin within 1.5 x ``edge_depth`` of the
    # hull's edge) is moved towards the camera's, by at most ``edge_cap`` levels (d13's
    # camera skin at the ring is 7 levels off the photo's: moved all the way, its seam rose
    # 1.39 -> 1.52), in full at the edge, fading (smoothstep) to nothing ``edge_depth`` face
    # sizes inside; in full on a face turned less than ``turned[0]``, fading out as the
    # turned head's own matching fades in (on s32 both together moved the step into the
    # near cheek). The lightness is left (any of it matched that deep cost s29 its
    # recognition at 12 % of 720p: retrieval 0.97 -> 0.93). Docs/lite-swap.md: the seam.
    edge_sigma: float = 0.07
    edge_depth: float = 0.5
    edge_cap: float = 3.0
    # a turned head: on its far side the camera's jaw line (landmarks 0-16) is the head's
    # silhouette, so there the mesh's jaw stays the camera's (not moved toward the source's
    # wider frontal jaw) and the mask ends just beyond it (fading from 1 at ``far_soft[1]``
    # to 0 at ``far_soft[0]`` face sizes, negative: outside), also under the chin: no rim
    # of pasted skin over the background past the cheek. Ending it on the line itself made
    # the edge crisper than the camera's (s18's sharpness at 12 % of 720p 1.24 -> 1.26-1.34).
    # The turn is how far the nose tip sits off the middle of the jaw ends (0 frontal, 0.5
    # on a jaw end): none below ``far_turn[0]``, fully from ``far_turn[1]`` (s32 and s18
    # turn 0.21-0.29, s29 up to 0.15, d6 and d13 at most 0.10). docs/lite-swap.md: a
    # turned head.
    far_turn: tuple[float, float] = (0.15, 0.20)
    far_soft: tuple[float, float] = (-0.05, -0.01)
    # the photo's mouth ends at its 68-point corners: an open mouth's gap running on past them
    # (a broad smile, whose corners the landmarker puts inside the visible ones) is painted
    # over with the skin around it, so the warped lips end on the camera's corners
    # (docs/lite-swap.md: the mouth; d13 with Biden's portrait: the mesh's mouth corners
    # 0.053 -> 0.048 eye distances from the camera's)
    trim_corners: bool = True
    # the upper lip follows the camera picture: the 68-point landmarker moves the upper lip
    # (points 49-53) less than the face does as the mouth opens (s32: the bench's mesh
    # mouth opening 0.70 from the landmarks). Each frame the skin-to-lip colour edge (Lab
    # a*) above each of those points is found on the camera frame and the point is moved by
    # its height over the point minus that height's running mean per track (which moves
    # this share of the way to each frame's: the landmarker's mean lip shape stays, the
    # edge gives the motion; 0 = off), at most ``lip_most`` eye distances. An untracked
    # face (a still) is left as it is. docs/lite-swap.md: the mouth.
    lip_follow: float = 0.02
    lip_most: float = 0.04
    # the forehead fill (skin gate only): where the camera's forehead is bare (its median
    # lightness at most ``fringe_bare[0]`` levels of 8-bit Lab below its skin's around
    # the forehead fills nothing, ``fringe_bare[1]`` and up all; d6 -11 to -16, the
    # astronaut's own fringe as the camera -90) and its lit part reads as mottled skin (its
    # shine as not skin: the mean skin likelihood over its pixels of Lab L > 100 under
    # ``fringe_mottled[0]``, fully skin from ``fringe_mottled[1]``; d6 0.58-0.65, s18 0.9,
    # s29 0.95; both smoothed per track), and the photo's forehead is mostly not skin (a
    # fringe, a cap: its share under 0.55 skin likelihood, from ``fringe_cover[0]`` to
    # ``fringe_cover[1]``; the astronaut 0.87, Grace Hopper 0.66, Obama's portrait 0.32),
    # the photo's fringe is filled over all of it with the camera's forehead, not as far as
    # the camera's mottled skin likelihood goes (its holes let the fringe through as brown
    # blotches that changed shape every frame), and the fringe's darkness comes back as a
    # smooth shadow: its masked low pass of ``fringe_sigma`` face sizes, darkening only, at
    # most ``fringe_shadow`` levels of 8-bit Lab lightness (filled clean, the photo lost
    # identity: d6 with the astronaut, retrieval 0.87 -> 0.70). docs/lite-swap.md: a
    # source's fringe.
    fringe_bare: tuple[float, float] = (-50.0, -30.0)
    fringe_mottled: tuple[float, float] = (0.65, 0.8)
    fringe_cover: tuple[float, float] = (0.4, 0.6)
    fringe_sigma: float = 0.15
    fringe_shadow: float = 15.0
    # your own glasses (``keep_glasses``, on by default): their frames are carried over the
    # swapped face as the camera's detail finer than a Gaussian of this sigma (px): the lines
    # and highlights at the camera's own resolution, the tone under them the swapped face's
    # (d13 with Biden's portrait: sigma 1 gave sharpness 0.67 / 0.76, 1.5 0.87 / 0.90, 2
    # 0.96 / 0.93, each wider band at more cost to the judge's identity; docs/lite-swap.md:
    # your own glasses)
    glasses_band: float = 1.5
    # ... and while they are kept, the camera's lid edges around its eye openings are this
    # share of the face wide (``eye_lid``'s 2 px become 1 at 12 % of 720p): the frames read
    # as the camera's face to a recogniser, and the source's skin around the eyes buys that
    # back (d13 with Biden's portrait at 12 % of 720p, glasses kept: retrieval 0.60 -> 1.00
    # on every third frame; the eye-opening correlation there 0.83 without them, 0.70 with)
    glasses_eye_lid: float = 0.008
    # a tracked face whose glasses cover (smoothed) is under ``glasses_idle`` is searched
    # again only every ``glasses_recheck`` frames: a bare face reads 0-0.4 where glasses
    # read 1.0 and are kept from 0.5, so the frames between give the same pixels, and the
    # search (0.8 ms a face at 12 % of 720p, 2.2 ms at 200 px) is paid a quarter as often;
    # glasses put on mid-stream are found within that many frames
    glasses_idle: float = 0.3
    glasses_recheck: int = 4
    # a tracked face's camera look (its two amounts) and forehead fill (how even, how bare)
    # are measured on every ``measure_every``-th frame of its track (the tracks in turn,
    # so that several faces share the cost over the frames; 1 = every frame); on the
    # frames between, the smoothed values move on towards the last measurement as if it
    # were new (``smoothing`` already averages over about three frames: they lag by a
    # frame more). The measuring was most of the camera look's cost (docs/lite-swap.md:
    # what the additions cost). The colour and skin statistics are measured every frame
    measure_every: int = 3


@dataclass
class _TrackStats:
    """One tracked face's smoothed statistics (colour transfer and target skin model)."""

    raw: npt.NDArray[np.float32]  # the last frame's own measurement
    value: npt.NDArray[np.float32]  # smoothed over the track's frames
    seen: int  # the swap call that last used it


def roi_affine(x0: int, y0: int) -> npt.NDArray[np.float32]:
    """The affine from frame pixels to a crop whose top-left corner is (x0, y0)."""
    return np.array([[1, 0, -x0], [0, 1, -y0]], np.float32)


class ClassicSwapper(CpuPart):
    """Piecewise-affine mesh face swap with colour matching and its own feathered,
    skin-gated mask (needs the targets' 68 landmarks)."""

    model_id = "classic-mesh"
    needs_identity = False  # it warps the source's pixels: no embedding needed

    def __init__(
        self, config: ClassicSettings | None = None, options: ClassicOptions | None = None
    ):
        self.config = config or ClassicSettings()
        self.options = options or ClassicOptions()
        # track id -> what is smoothed ("colour": colour and skin statistics, "look": the
        # camera look's blur) -> its statistics
        self._tracks: dict[int, dict[str, _TrackStats]] = {}
        self._calls = 0
        # track id -> its face's landmarks and ROI pixels at its last frame, how many frames
        # of it were swapped (less one; repeats not counted); of the face being swapped:
        # whether it repeats its track's last face, whether its statistics are measured
        # (``_visit``)
        self._landmarks: dict[int, tuple[Points, Frame]] = {}
        self._visits: dict[int, int] = {}
        self._still, self._due = False, True
        # (id of a photo level, sigma) -> (the level, its patch so blurred: _antialiased)
        self._blurred: dict[tuple[int, float], tuple[_Level, Frame]] = {}

    def reset(self) -> None:
        """Forget every track's smoothed statistics (a new stream, a new source)."""
        self._tracks.clear()
        self._blurred.clear()
        self._landmarks.clear()
        self._visits.clear()

    def _antialiased(self, level: _Level, sigma: float) -> Frame:
        """``level``'s photo patch blurred by ``sigma`` px (``_alias_sigma``; 0: as it is),
        reused while the same blur is asked of the same level."""
        if sigma <= 0.0:
            return level.patch
        kept = self._blurred.get((id(level), sigma))
        if kept is not None and kept[0] is level:
            return kept[1]
        patch = np.asarray(cv2.GaussianBlur(level.patch, (0, 0), sigma), np.uint8)
        if len(self._blurred) >= _ALIAS_KEPT:
            self._blurred.clear()
        self._blurred[(id(level), sigma)] = (level, patch)
        return patch

    @property
    def tracked(self) -> tuple[int, ...]:
        """The track ids whose statistics are held."""
        return tuple(self._tracks)

    def report_to(self, report: RunReport) -> None:
        """A local swapper reports nothing while it runs."""

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
        if self.options.trim_corners:
            patch = _trim_mouth_corners(patch, pts)
        frames = None
        if self.config.drop_photo_glasses:  # its frames and lenses, painted over
            frames = glasses.photo_glasses(blend.to_lab(patch), pts[:68])
        if frames is not None:
            radius = max(2, round(0.02 * size))
            patch = np.asarray(cv2.inpaint(patch, frames, radius, cv2.INPAINT_TELEA), np.uint8)
        sample = blend.polygon_mask(
            patch.shape[:2], mesh.skin_sample_polygons(pts[:68]), convex=False
        )
        skin = blend.skin_likelihood(blend.to_lab(patch), sample > 0, size / 60, full_size=True)
        # eroded: the soft edge of a fringe or cap counts as hair, not skin
        r = max(1, round(size / 20))
        disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
        skin8 = np.asarray(
            cv2.erode(np.clip(skin * 255 + 0.5, 0, 255).astype(np.uint8), disk), np.uint8
        )
        levels = [_Level(patch, pts, size, skin8, _mouth_interior(patch, pts), frames)]
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
                    np.asarray(cv2.pyrDown(prev.mouth), np.uint8),
                    None
                    if prev.glasses is None
                    else np.asarray(cv2.pyrDown(prev.glasses), np.uint8),
                )
            )
        log.debug("source prepared: %d triangles, %d levels", len(tris), len(levels))
        return SourceModel(lm, tris, tuple(levels), mesh.outline(tris))

    def face_roi(
        self,
        target_landmarks: Points,
        frame_shape: tuple[int, ...],
        source: SourceModel | None = None,
    ) -> tuple[int, int, int, int] | None:
        """The (x0, y0, x1, y1) region ``swap`` may change for this target swapped with
        ``source`` (None: its mesh without the source's shape); None if empty.

        Every pixel outside it is left bit-for-bit unchanged."""
        lm = mesh.check_landmarks(target_landmarks, "target landmarks")
        ext = mesh.extend_landmarks(lm) if source is None else self._target_mesh(lm, source)
        return _roi_around(ext, frame_shape)

    def _target_mesh(self, lm: Points, source: SourceModel) -> Points:
        aligned = mesh.align_shape(source.landmarks, lm)
        weights = None
        turn, far_left = _turn(lm, self.options.far_turn)
        if turn > 0:  # the far side's jaw line is the camera's silhouette: it stays there
            weights = mesh.SHAPE_WEIGHTS.copy()
            idx = np.arange(8) if far_left else 16 - np.arange(8)
            weights[idx] *= 1.0 - _FAR_JAW * np.float32(turn)
        return mesh.blend_shape(lm, aligned, self.options.shape_weight, source.triangles, weights)

    def swap(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[SourceModel],
    ) -> list[FaceWork]:
        """Fill each record's ``affine`` (a translation), ``crop`` (the face ROI of its
        frame), ``output`` (its source face, colour-matched and warped onto it) and
        ``mask``. Records without 68 landmarks or whose ROI is empty keep ``output`` None.
        Tracked faces' statistics are smoothed; tracks unseen for ``options.track_ttl``
        calls are forgotten."""
        self._calls += 1
        for work in faces:
            if work.face.landmarks is not None:
                self._swap_one(frames[work.frame_index].image, work, sources[work.source_index])
        stale = [
            t
            for t, named in self._tracks.items()
            if self._calls - max(st.seen for st in named.values()) > self.options.track_ttl
        ]
        for t in stale:
            del self._tracks[t]
        for t in set(self._visits) - set(self._tracks):
            del self._visits[t], self._landmarks[t]
        return list(faces)

    def _visit(self, face: Face, target: Frame) -> None:
        """Note a face about to be swapped on ``target`` (its ROI of the camera frame):
        whether it is its track's last face again, the same landmarks on the same pixels (a
        repeated camera frame: its measured statistics then stay as they are), and whether
        its track measures them on this frame (every ``options.measure_every``-th of its own
        frames, the tracks in turn); ``_measured`` reads both."""
        track, lm = face.track_id, face.landmarks
        self._still, self._due = False, True
        if track < 0 or lm is None:
            return
        last = self._landmarks.get(track)
        self._landmarks[track] = (lm.copy(), target.copy())
        self._still = (
            last is not None
            and np.array_equal(last[0], lm)
            and last[1].shape == target.shape
            and np.array_equal(last[1], target)
        )
        if not self._still:
            self._visits[track] = self._visits.get(track, -1) + 1
        every = max(1, self.options.measure_every)
        self._due = (self._visits[track] + track) % every == 0

    def _smoothed(
        self,
        track_id: int,
        raw: npt.NDArray[np.float32],
        name: str = "colour",
        rate: float | None = None,
        *,
        again: bool = False,
    ) -> npt.NDArray[np.float32]:
        """``raw`` statistics (of kind ``name``) of this frame, smoothed over the track's
        earlier frames (moving ``rate`` of the way to each new frame's; default
        ``options.smoothing``). A measurement equal to the last one (a repeated frame)
        leaves them as they are, unless ``again`` (the last one given again on a call
        that does not measure: ``_measured``)."""
        k = self.options.smoothing if rate is None else rate
        if track_id < 0 or k >= 1:
            return raw
        named = self._tracks.setdefault(track_id, {})
        st = named.get(name)
        if st is None or st.raw.shape != raw.shape:
            st = named[name] = _TrackStats(raw, raw.copy(), self._calls)
        elif again or not np.array_equal(st.raw, raw):
            st.value = (st.value + np.float32(k) * (raw - st.value)).astype(np.float32)
            st.raw = raw
        st.seen = self._calls
        return st.value

    def _measured(
        self, track_id: int, name: str, measure: Callable[[], npt.NDArray[np.float32]]
    ) -> npt.NDArray[np.float32]:
        """``_smoothed(track_id, measure(), name)`` on the calls this track measures
        ``name`` (every ``options.measure_every``-th, the tracks in turn; always for an
        untracked face and for a track's first); on the others the smoothed value moves
        on towards the track's last measurement, ``measure`` not called. A face with its
        track's last landmarks on the same pixels (``_visit``: a repeated camera frame)
        leaves the value as it is, so a repeated frame gives the very same output."""
        st = self._tracks.get(track_id, {}).get(name) if track_id >= 0 else None
        if st is not None and self._still:  # the same picture again
            st.seen = self._calls
            return st.value
        if st is None or self._due:
            return self._smoothed(track_id, measure(), name)
        return self._smoothed(track_id, st.raw, name, again=True)

    def _swap_one(self, frame: Frame, work: FaceWork, source: SourceModel) -> None:
        target_lm = mesh.check_landmarks(work.face.landmarks, "target landmarks")
        track = work.face.track_id
        if self.options.lip_follow > 0 and track >= 0:
            target_lm = self._follow_upper_lip(frame, target_lm, track)
        ext_frame = self._target_mesh(target_lm, source)
        roi = _roi_around(ext_frame, frame.shape)
        if roi is None:
            return
        x0, y0, x1, y1 = roi
        target = frame[y0:y1, x0:x1]
        self._visit(work.face, target)
        origin = np.array([x0, y0], np.float32)
        lm_roi = target_lm - origin
        ext = ext_frame - origin
        _, _, size = mesh.face_frame(target_lm)
        worn, frames = 0.0, None
        if self.config.keep_glasses:  # ``glasses``: thin lines across the nose bridge
            worn, frames = self._camera_glasses(target, lm_roi, track)
        scale = self.work_scale(size, source)
        if scale < 1.0:  # work on the ROI shrunk to the source's detail, then scale back
            h, w = target.shape[:2]
            small = (max(2, round(w * scale)), max(2, round(h * scale)))
            k = np.array([small[0] / w, small[1] / h], np.float32)
            shrunk = np.asarray(cv2.resize(target, small, interpolation=cv2.INTER_AREA), np.uint8)
            rendered, alpha = self._render(shrunk, lm_roi * k, ext * k, source, track, worn)
            colored = np.asarray(cv2.resize(rendered, (w, h)), np.uint8)  # bilinear
            alpha = np.asarray(cv2.resize(alpha, (w, h)), np.float32)
            colored = self._restore_detail(
                colored, target, (lm_roi, lm_roi * k), (rendered, shrunk), track
            )
        else:
            colored, alpha = self._render(target, lm_roi, ext, source, track, worn)
        if frames is not None:
            colored = self._keep_glasses(colored, target, frames, worn)
        work.affine = roi_affine(x0, y0)
        work.crop = target
        work.output = colored
        work.mask = alpha

    def _follow_upper_lip(self, frame: Frame, lm: Points, track: int) -> Points:
        """``lm`` with its upper lip's outer points (49-53) moved along the face's up
        direction by the camera's skin-to-lip edge height over them minus that height's
        running mean on this track (``options.lip_follow``, ``options.lip_most``)."""
        found = _upper_lip_edges(frame, lm)
        if found is None:
            return lm
        heights, up, eye = found
        mean = self._smoothed(track, heights, "lip", self.options.lip_follow)
        most = self.options.lip_most
        moved = lm.copy()
        # the lip moves as one: its five points by their mean (one by one, the edge's
        # noise on a closed mouth, +-0.02 eye distances on d6, bent the lip)
        shift = np.clip(float(np.mean(heights - mean)), -most, most) * eye
        moved[_UPPER_LIP] += np.float32(shift) * up
        return moved

    def _restore_detail(
        self,
        colored: Frame,
        target: Frame,
        landmarks: tuple[Points, Points],
        small: tuple[Frame, Frame],
        track: int,
    ) -> Frame:
        """``colored`` (the face rendered on the shrunk ROI and scaled back to ``target``'s
        size; ``small``: that rendering and the shrunk camera; ``landmarks``: the camera's
        68 points at full and shrunk size) with its finest band raised until its fine
        detail on the inner face is, against the camera's, what it was against the shrunk
        camera (at most the camera's); the gain (at most ``options.detail_restore``)
        smoothed over the track's frames."""
        most = self.options.detail_restore
        if most <= 1.0:
            return colored
        rendered, shrunk = small
        inner_small = _inner_box(landmarks[1], shrunk.shape[:2])
        camera_small = blend.detail_energy(_grey(shrunk), inner_small)
        if camera_small <= 0.0:
            return colored
        share = min(1.0, blend.detail_energy(_grey(rendered), inner_small) / camera_small)
        inner = _inner_box(landmarks[0], target.shape[:2])
        raw = blend.detail_gain(_grey(colored), _grey(target), inner, share, most=most)
        gain = float(self._smoothed(track, np.array([max(1.0, raw)], np.float32), "restore")[0])
        if gain < 1.01:
            return colored
        image = colored.astype(np.float32)
        blurred = cv2.GaussianBlur(image, (0, 0), blend.DETAIL_SIGMA)
        return np.asarray(np.clip(blurred + np.float32(gain) * (image - blurred), 0, 255), np.uint8)

    def work_scale(self, size: float, source: SourceModel) -> float:
        """The scale a target face of eye-to-chin ``size`` px is swapped at: 1, or less for
        a face larger than both the source's own face and ``options.max_work_size`` (the
        source has no finer detail to give; the cost grows with the face's area)."""
        limit = max(self.options.max_work_size, source.levels[0].face_size)
        return min(1.0, limit / size) if size > 0 else 1.0

    def _render(
        self,
        target: Frame,
        lm_roi: Points,
        ext: Points,
        source: SourceModel,
        track: int = -1,
        glasses_worn: float = 0.0,
    ) -> tuple[Frame, npt.NDArray[np.float32]]:
        """The colour-matched source face warped onto ``target`` (a face ROI whose 68
        landmarks are ``lm_roi`` and target mesh ``ext``, in its pixels) and its mask;
        ``track``: the face's track id (its statistics are smoothed; -1: none);
        ``glasses_worn``: how surely (0..1) the camera face's own glasses are kept over it."""
        opts = self.options
        up, _, size = mesh.face_frame(lm_roi)
        level = source.level_for(size)
        shape = target.shape[:2]
        mx, my, hull = mesh.piecewise_affine_maps(
            level.points, ext, source.triangles, shape, step=opts.map_step, boundary=source.boundary
        )
        patch = self._antialiased(level, _alias_sigma(level, size, opts.anti_alias))
        warped = np.asarray(
            cv2.remap(patch, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
            np.uint8,
        )
        src_skin = cv2.remap(
            level.skin, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        ).astype(np.float32) * np.float32(1 / 255)
        # inner face: the 68-point hull plus the brows (thickened upwards): always pasted,
        # so the source's brows cover the camera's (they sit on the camera's brow points)
        bands = [
            np.vstack([brow - up * (0.02 * size), brow[::-1] + up * (0.05 * size)])
            for brow in (
                _lengthened(lm_roi[17:22], 0.05 * size),
                _lengthened(lm_roi[22:27], 0.05 * size),
            )
        ]
        brow_mask = blend.polygon_mask(shape, bands, convex=False)
        face = blend.polygon_mask(shape, [lm_roi[:27]], convex=True) | brow_mask
        keep_out = None
        if self.config.keep_mouth:
            # the camera's mouth where its lips part, and where the source's teeth would
            # land (a toothy smile onto a closed mouth would otherwise draw them open)
            keep_out = blend.polygon_mask(shape, [lm_roi[mesh.INNER_MOUTH]], convex=False)
            src_mouth = cv2.remap(
                level.mouth, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
            )
            keep_out[src_mouth > 127] = 255
        region = (face > 0) & (hull > 0)
        if keep_out is not None:
            region &= keep_out == 0
        sample = blend.polygon_mask(shape, mesh.skin_sample_polygons(lm_roi), convex=False) > 0
        target_lab = blend.to_lab(target)
        warped_lab = blend.to_lab(warped)
        skin_model = blend.skin_model(target_lab, sample)
        stats = blend.transfer_stats(warped_lab, region, target_lab, region)
        raw = (
            stats.ravel()
            if skin_model is None
            else np.concatenate([stats.ravel(), skin_model.ravel()])
        )
        # measured on every frame: on the cadence of ``measure_every`` their lag narrowed
        # the eye openings (liveportrait_d13 with glasses at 12 % of 720p: the bench's eye
        # correlation 0.69 -> 0.66)
        smooth = self._smoothed(track, raw)
        dist = np.asarray(cv2.distanceTransform(hull, cv2.DIST_L2, 3), np.float32)  # from the edge
        turned = _turn(lm_roi, opts.turned)[0] if opts.turned[1] > 0 else 0.0
        if self.config.color != "none":
            warped_lab = blend.color_transfer_lab(
                warped_lab,
                target_lab,
                region,
                self.config.color,
                size,
                self._local_light(dist, size, turned),
                stats=smooth[:12].reshape(4, 3),
                broad=self._inner_light(region, size, turned),
                broad_scale=opts.inner_light_scale,
            )
        if opts.camera_look > 0 or opts.camera_detail > 0:  # after the colour transfer:
            # its contrast scales detail

            def look_inner() -> npt.NDArray[np.bool_]:  # made only on a measuring frame
                inner = _inner_box(lm_roi, shape) & region
                if self.config.eyes == "own":  # the camera's eyes go back over them
                    eyes = blend.polygon_mask(
                        shape, [lm_roi[mesh.LEFT_EYE], lm_roi[mesh.RIGHT_EYE]], convex=False
                    )
                    inner &= cv2.dilate(eyes, np.ones((5, 5), np.uint8)) == 0
                return inner

            warped_lab = self._camera_look(
                warped_lab,
                target_lab,
                sample,
                track,
                look_inner if opts.camera_detail > 0 else None,
                dist,
                size,
            )
        model = smooth[12:].reshape(4, 3) if smooth.size == 24 else None
        tgt_skin = blend.skin_likelihood(target_lab, None, size / 30, model=model)
        if opts.skin_gate:
            warped_lab, src_skin = self._fill_forehead(
                warped_lab, target_lab, ext, lm_roi, src_skin, tgt_skin, brow_mask, size, track
            )
        if level.glasses is not None:  # the photo's frames, painted over: the camera's face
            warped_lab = self._under_glasses(
                warped_lab, target_lab, level.glasses, mx, my, src_skin, tgt_skin, size
            )
        if self.config.eyes == "own":
            lid = opts.eye_lid + glasses_worn * (opts.glasses_eye_lid - opts.eye_lid)
            warped_lab = self._own_eyes(warped_lab, target_lab, lm_roi, tgt_skin, size, lid)
        cam_skin = blend.smoothstep(tgt_skin, 0.2, 0.6)  # the camera's skin, as the gate reads it
        # the seam's depth: the camera's side gated (its hair or background with a middling
        # skin likelihood pulled the edge grey: s32's near cheek); the edge's colour fades
        # out as the turned head's own matching fades in
        depth = 0.0
        if opts.seam_match > 0:
            depth = opts.seam_match + turned * max(0.0, opts.turned_seam_match - opts.seam_match)
        warped_lab = self._match_ring(
            warped_lab, target_lab, dist, src_skin * cam_skin, size, 1.0 - turned, depth
        )
        colored = blend.from_lab(warped_lab)
        alpha = blend.feather_mask(hull, opts.feather * size, keep_out, dist=dist)
        if opts.skin_gate:
            # Outside the inner face (forehead band, beyond the jaw) paste only where both
            # faces show skin: no source fringe or cap, no paste over the target's hair.
            inner = cv2.GaussianBlur(face.astype(np.float32) * (1 / 255), (0, 0), 0.025 * size)
            skin = blend.smoothstep(src_skin, 0.35, 0.75) * cam_skin
            alpha *= 1.0 - (1.0 - inner) * (1.0 - skin)
        if opts.far_turn[1] > 0:
            cut = _far_side_cut(lm_roi, shape, size, opts.far_turn, opts.far_soft)
            if cut is not None:
                alpha *= cut
        return colored, np.clip(alpha, 0.0, 1.0, out=alpha)

    def _local_light(
        self, dist: blend.FloatImage, size: float, turned: float
    ) -> float | blend.FloatImage:
        """The local light matching's strength: ``options.local_light``, or on a head
        turned ``turned`` (0..1, ``_turn``) per pixel and channel (H, W, 3): the lightness's
        raised towards ``options.turned_light`` at the hull's edge (``dist``: each pixel's
        distance from it), fading to ``local_light`` ``options.turned_light_depth`` face
        sizes inside; the colour channels' left at ``local_light`` (a blue cap brim or a
        teal shirt at the edge would tint the face)."""
        opts = self.options
        raise_by = turned * (opts.turned_light - opts.local_light)
        if raise_by <= 0:
            return opts.local_light
        t = np.clip(dist * (1.0 / max(opts.turned_light_depth * size, 1e-3)), 0.0, 1.0)
        light = np.full((*dist.shape, 3), opts.local_light, np.float32)
        light[..., 0] += raise_by * (1.0 - t * t * (3.0 - 2.0 * t))
        return light

    def _inner_light(
        self, region: npt.NDArray[np.bool_], size: float, turned: float
    ) -> blend.ShareOnGrid | None:
        """Per cell of the light matching's grid, the share of it taken at the wide scale
        (``options.inner_light_scale``): 0 up to ``options.inner_light_depth[0]`` face
        sizes inside ``region`` (the 68-point face less the camera's own mouth), ``1 -
        turned`` from ``inner_light_depth[1]`` (smoothstep); None when off or on a head
        turned in full (``turned``: 0..1, ``_turn``). The depth is measured on the grid
        itself (the cells ``region`` covers half or more, from their centres, a cell's half
        taken off): the share is only read there."""
        opts = self.options
        if opts.inner_light_scale <= 1.0 or turned >= 1.0 or not region.any():
            return None
        near, far = (d * size for d in opts.inner_light_depth)
        width = region.shape[1]

        def on_grid(cover: blend.FloatImage) -> blend.FloatImage:
            cell = width / cover.shape[1]
            inside = np.asarray(
                cv2.distanceTransform((cover >= 0.5).astype(np.uint8), cv2.DIST_L2, 3),
                np.float32,
            )
            t = np.clip((inside * cell - 0.5 * cell - near) / max(far - near, 1e-3), 0.0, 1.0)
            return np.asarray((1.0 - turned) * (t * t * (3.0 - 2.0 * t)), np.float32)

        return on_grid

    def _match_ring(
        self,
        lab: blend.FloatImage,
        target_lab: blend.FloatImage,
        dist: blend.FloatImage,
        skin: blend.FloatImage,
        size: float,
        strength: float,
        depth: float,
    ) -> blend.FloatImage:
        """``lab`` (the swapped face) brought to the camera's (``target_lab``) at low
        frequency near the mask's edge (``dist``: each pixel's distance from the hull's
        edge), both measured over ``skin`` (both faces' skin: no hair, no background):

        - the seam (``depth`` > 0): its lightness made the camera's, the difference camera
          minus face measured on the feather ring (the outer ``options.feather`` of the
          hull), low-passed (``options.seam_sigma``) and added in full at the hull's edge,
          fading (smoothstep) to nothing ``depth`` face sizes inside (``options.seam_match``,
          more on a turned head), at most ``options.seam_cap``: a narrow-band membrane, as a
          Poisson blend's, that leaves the inner face alone;
        - the edge's colour (``strength`` > 0): its a and b moved towards the camera's, both
          low-passed (``options.edge_sigma`` face sizes) within 1.5 x ``options.edge_depth``
          face sizes of the hull's edge, the difference (its length capped at
          ``options.edge_cap``) added times ``strength``, in full at the edge, fading to
          nothing ``edge_depth`` inside.

        One pass for both: the difference is taken once, weighted by each one's ring,
        reduced to one grid (a third of the edge's sigma or half the seam's, the finer),
        low-passed and faded there, and the correction scaled up and added once. Changed in
        place (this frame's own array)."""
        opts = self.options
        edge_depth = opts.edge_depth * size
        none = np.zeros(dist.shape, np.float32)
        w_edge = none
        if strength > 0 and opts.edge_sigma > 0:
            w_edge = _ring(dist, 1.5 * edge_depth, skin)
        w_seam = none
        if depth > 0:
            w_seam = _ring(dist, opts.feather * size, skin)
        edge, seam = float(w_edge.sum()) >= 1.0, float(w_seam.sum()) >= 1.0
        if not (edge or seam):
            return lab
        cells = []  # frame pixels per grid cell
        if edge:
            cells.append(max(1, int(opts.edge_sigma * size / 3)))
        if seam:
            cells.append(max(1, round(opts.seam_sigma * size / 2)))
        k = min(cells)
        # whole planes (a strided channel costs numpy several times more): the lightness's
        # difference weighted by the seam's ring, the colour's by the edge's; on the grid
        # one plane at a time (OpenCV's two-channel paths are its slowest)
        gap = cv2.multiply(cv2.subtract(target_lab, lab), cv2.merge([w_seam, w_edge, w_edge]))
        num = cv2.split(blend.to_grid(np.asarray(gap, np.float32), k))
        inside = blend.to_grid(dist, k)
        fix = [np.zeros(inside.shape, np.float32)] * 3
        if seam:
            sigma = opts.seam_sigma * size / k
            low = cv2.GaussianBlur(num[0], (0, 0), sigma)
            weight = cv2.GaussianBlur(blend.to_grid(w_seam, k), (0, 0), sigma)
            t = np.clip(inside * (1.0 / max(depth * size, 1e-3)), 0.0, 1.0)
            step = (1.0 - t * t * (3.0 - 2.0 * t)) * low / np.maximum(weight, 1e-4)
            fix[0] = np.clip(step, -opts.seam_cap, opts.seam_cap)
        if edge:
            sigma = opts.edge_sigma * size / k
            weight = np.maximum(cv2.GaussianBlur(blend.to_grid(w_edge, k), (0, 0), sigma), 1e-4)
            a, b = (
                np.asarray(cv2.GaussianBlur(plane, (0, 0), sigma) / weight, np.float32)
                for plane in num[1:]
            )
            t = np.clip(inside * (1.0 / max(edge_depth, 1e-3)), 0.0, 1.0)
            fade = strength * (1.0 - t * t * (3.0 - 2.0 * t))
            gain = fade * np.minimum(1.0, opts.edge_cap / np.maximum(cv2.magnitude(a, b), 1e-6))
            fix[1], fix[2] = a * gain, b * gain
        lab += blend.from_grid(np.asarray(cv2.merge(fix), np.float32), k, lab.shape)
        return lab

    def _camera_glasses(
        self, target: Frame, lm_roi: Points, track: int
    ) -> tuple[float, npt.NDArray[np.float32] | None]:
        """(worn, frames): the camera face's own glasses frames in ``target`` (the face ROI,
        ``lm_roi`` its landmarks; ``glasses.frame_lines``, 0..1 at ``target``'s size) and
        how surely it wears them (0..1: no line across its nose bridge gives 0, smoothed
        over the track's frames so that a frame that misses the bridge does not drop them);
        (0, None) when it wears none."""
        opts = self.options
        last = self._tracks.get(track, {}).get("glasses") if track >= 0 else None
        if (
            last is not None
            and float(last.value[0]) < opts.glasses_idle
            and self._calls - last.seen < opts.glasses_recheck
        ):
            return 0.0, None  # a bare face, searched again in a few frames
        h, w = target.shape[:2]
        # found at most at the work size (a big face's lines are as clear there, at a third
        # of the cost), applied at the camera's own resolution
        _, _, size = mesh.face_frame(lm_roi)
        k = min(1.0, self.options.max_work_size / size) if size > 0 else 1.0
        small = target
        if k < 1.0:
            dsize = (max(2, round(w * k)), max(2, round(h * k)))
            small = np.asarray(cv2.resize(target, dsize, interpolation=cv2.INTER_AREA), np.uint8)
        scale = np.array([small.shape[1] / w, small.shape[0] / h], np.float32)
        found = glasses.camera_lines(small, lm_roi * scale)
        cover = 0.0 if found is None else found.cover
        seen = float(self._smoothed(track, np.array([cover], np.float32), "glasses")[0])
        worn = float(blend.smoothstep(np.array([seen], np.float32), 0.5, 0.8)[0])
        if worn <= 0.0 or found is None:  # a bare face: its lines are not sorted into frames
            return 0.0, None
        frames = glasses.frame_lines(found, lm_roi * scale)
        if not frames.any():
            return 0.0, None
        if k < 1.0:
            frames = np.asarray(cv2.resize(frames, (w, h)), np.float32)  # bilinear
        return worn, frames

    def _keep_glasses(
        self, colored: Frame, target: Frame, frames: npt.NDArray[np.float32], worn: float
    ) -> Frame:
        """``colored`` (the swapped face, at ``target``'s size) with the camera face's own
        glasses ``frames`` (``_camera_glasses``, worn ``worn``) carried over it as the
        camera's finest detail there: the camera minus its Gaussian blur of
        ``options.glasses_band`` px is added where the frames are. The frames' crisp lines
        and highlights come through at the camera's own resolution, on the swapped face's
        tone (pasting the camera's pixels there brought its skin along: patches of it
        around the rims, and the judge read the face as the camera's)."""
        h, w = target.shape[:2]
        bx, by, bw, bh = cv2.boundingRect((frames > 0).astype(np.uint8))
        sigma = self.options.glasses_band
        pad = int(3 * sigma) + 2  # the blur's reach
        y0, y1 = max(0, by - pad), min(h, by + bh + pad)
        x0, x1 = max(0, bx - pad), min(w, bx + bw + pad)
        cam = target[y0:y1, x0:x1].astype(np.float32)
        band = cam - cv2.GaussianBlur(cam, (0, 0), sigma)
        weight = (frames[y0:y1, x0:x1] * np.float32(worn))[..., None]
        out = colored.copy()
        out[y0:y1, x0:x1] = np.clip(np.rint(colored[y0:y1, x0:x1] + weight * band), 0, 255)
        return out

    def _camera_look(
        self,
        lab: blend.FloatImage,
        target_lab: blend.FloatImage,
        skin: npt.NDArray[np.bool_],
        track: int,
        inner: Callable[[], npt.NDArray[np.bool_]] | None,
        dist: blend.FloatImage,
        size: float,
    ) -> blend.FloatImage:
        """``lab`` (the colour-matched source face on the camera's mesh) blurred so that
        its fine detail on ``skin`` (cheeks and nose of both faces) is at most
        ``options.camera_look`` times the camera face's (``blend.blur_to_match`` on the
        lightness), then its finest band damped to ``options.camera_detail`` times the
        camera's fine detail on ``inner()`` (made when measured; ``blend.detail_gain``; a
        Gaussian blur of sigma 1 or more where the band alone is not enough); both amounts
        smoothed over the track's frames (``_measured``): a crisp portrait on a soft webcam
        picture reads as a mask."""
        opts = self.options
        sigma = 0.0
        if opts.camera_look > 0:
            sigma = float(
                self._measured(
                    track,
                    "look",
                    lambda: np.array(
                        [
                            blend.blur_to_match(
                                lab[..., 0], target_lab[..., 0], skin, opts.camera_look
                            )
                        ],
                        np.float32,
                    ),
                )[0]
            )
        if sigma >= 0.3:
            lab = np.asarray(cv2.GaussianBlur(lab, (0, 0), sigma), np.float32)
        if inner is None:
            return lab
        # the damping fades in from the mask's edge (``dist``) over ``detail_edge`` face sizes
        scale = np.float32(1.0 / max(opts.detail_edge * size, 1e-3))
        depth = np.clip(dist * scale, 0.0, 1.0)
        amount = float(
            self._measured(
                track,
                "detail",
                lambda: np.array(
                    [self._detail_cut(lab[..., 0], target_lab[..., 0], inner(), depth)],
                    np.float32,
                ),
            )[0]
        )
        if amount < 0.01:
            return lab
        # lab - (the share of the band taken out) x band, the band: lab minus its blur
        low = cv2.GaussianBlur(lab, (0, 0), max(amount, blend.DETAIL_SIGMA))
        taken = depth * np.float32(min(amount, 1.0))
        return np.asarray(lab - blend.per_channel(taken, 3) * (lab - low), np.float32)

    def _detail_cut(
        self,
        face: blend.FloatImage,
        camera: blend.FloatImage,
        inner: npt.NDArray[np.bool_],
        depth: blend.FloatImage,
    ) -> float:
        """How much of ``face``'s finest band to take out (0..1: that share; above 1: the
        sigma of a Gaussian blur) for ``options.camera_detail`` times ``camera``'s fine
        detail on ``inner`` (lightness), faded out on a sharp camera and below the knee."""
        opts = self.options
        ref = blend.detail_energy(camera, inner)
        lo, hi = opts.detail_soft
        soft = 1.0 - float(blend.smoothstep(np.array([ref], np.float32), lo, hi)[0])
        if soft <= 0.0 or ref <= 0.0:
            return 0.0
        ratio = blend.detail_energy(face, inner) / ref
        k = opts.camera_detail
        if ratio <= k:
            return 0.0
        k = ratio + (k - ratio) * float(
            blend.smoothstep(np.array([ratio], np.float32), *opts.detail_knee)[0]
        )
        gain = blend.detail_gain(face, camera, inner, k, depth, ref_energy=ref)
        cut = 1.0 - gain
        if gain <= 0.0:  # the band alone is not enough: a Gaussian blur of sigma >= 1
            cut = max(1.0, blend.blur_to_match(face, camera, inner, k))
        return soft * cut

    def _fill_forehead(
        self,
        lab: blend.FloatImage,
        target_lab: blend.FloatImage,
        ext: Points,
        lm_roi: Points,
        src_skin: blend.FloatImage,
        tgt_skin: blend.FloatImage,
        brows_band: npt.NDArray[np.uint8],
        size: float,
        track: int,
    ) -> tuple[blend.FloatImage, blend.FloatImage]:
        """Where the source's forehead is not skin (a fringe, a cap) but the camera's is,
        show the camera's forehead in the swapped skin's tone (its pixels shifted by the
        low-pass colour change between the two faces' skin) instead of the source's hair:
        no dark band above the brows. The fill goes as far as the camera's skin
        likelihood, except where a photo's forehead is mostly hair or cap
        (``options.fringe_cover``) and the camera's bare forehead reads as mottled skin
        (``options.fringe_bare``, ``fringe_mottled``, per ``track``): that one is filled in
        full, the fringe's darkness kept as a smooth shadow (``options.fringe_sigma``,
        ``options.fringe_shadow``), so no brown blotches change shape every frame. Returns
        the face and the source skin likelihood with the filled forehead counted as skin
        (both changed in place)."""
        h, w = lab.shape[:2]
        # brows left to right, then back over the temples and forehead (mesh.extend_landmarks:
        # forehead points 68-73 left to right, temples 74 (left) and 75)
        poly = np.vstack([lm_roi[17:27], ext[[75, 73, 72, 71, 70, 69, 68, 74]]])
        pad = int(0.15 * size) + 2  # room for the blur and the skin sampled below the brows
        x0, y0 = (max(0, int(v) - pad) for v in poly.min(axis=0))
        x1, y1 = (int(v) + pad + 1 for v in poly.max(axis=0))
        x1, y1 = min(x1, w), min(y1, h)
        if x1 - x0 < 2 or y1 - y0 < 2:
            return lab, src_skin
        sub = (slice(y0, y1), slice(x0, x1))
        zone = blend.polygon_mask(
            (y1 - y0, x1 - x0), [poly - np.array([x0, y0], np.float32)], convex=False
        )
        zone[brows_band[sub] > 0] = 0  # the brows stay the source's (they cover the camera's)
        inside = zone > 0
        n = int(np.count_nonzero(inside))
        if n == 0 or np.count_nonzero(src_skin[sub][inside] < 0.55) < 0.05 * n:
            return lab, src_skin  # the source's forehead is skin (the gate takes stray hair)
        opts = self.options
        s_skin, t_skin = src_skin[sub], tgt_skin[sub]
        share = np.array([np.mean(s_skin[inside] < 0.55)], np.float32)
        full = float(blend.smoothstep(share, *opts.fringe_cover)[0])  # a fringe or cap
        both = (s_skin > 0.6) & (t_skin > 0.5) & ~inside
        if full > 0.0 and both.any():

            def forehead() -> npt.NDArray[np.float32]:  # how even, how bare
                light = target_lab[sub][..., 0]
                lit = inside & (light > 100)
                on_lit = t_skin[lit] if np.count_nonzero(lit) > 0.2 * n else t_skin[inside]
                gap = blend.median(light[inside]) - blend.median(light[both])
                return np.array([np.mean(on_lit), gap], np.float32)

            even, bare = self._measured(track, "forehead", forehead)[:, None]
            full *= 1.0 - float(blend.smoothstep(even, *opts.fringe_mottled)[0])
            full *= float(blend.smoothstep(bare, *opts.fringe_bare)[0])
        else:
            full = 0.0
        # elsewhere the camera's skin likelihood, pixel by pixel (where it is hair, the
        # alpha's skin gate leaves the camera's anyway)
        camera = t_skin if full == 0.0 else t_skin + full * (1.0 - t_skin)
        hair = (1.0 - blend.smoothstep(s_skin, 0.55, 0.95)) * camera
        soft = cv2.GaussianBlur(zone.astype(np.float32) * (1 / 255), (0, 0), 0.02 * size)
        fill = np.asarray(soft * hair, np.float32)
        cur, own = lab[sub], target_lab[sub]
        shift = blend.masked_lowpass(cur - own, both.astype(np.float32), 0.12 * size)
        filled = own + shift
        if full > 0.0:  # the fringe's darkness, smooth: a shadow, not its strands
            dark = blend.masked_lowpass(cur - filled, fill, opts.fringe_sigma * size)[..., 0]
            filled[..., 0] += full * np.clip(dark, -opts.fringe_shadow, 0.0)
        # in place: both are this frame's own arrays
        lab[sub] = cur + blend.per_channel(fill, 3) * (filled - cur)
        np.maximum(s_skin, fill, out=s_skin)
        return lab, src_skin

    def _under_glasses(
        self,
        lab: blend.FloatImage,
        target_lab: blend.FloatImage,
        frames: npt.NDArray[np.uint8],
        mx: npt.NDArray[np.float32],
        my: npt.NDArray[np.float32],
        src_skin: blend.FloatImage,
        skin: blend.FloatImage,
        size: float,
    ) -> blend.FloatImage:
        """``lab`` (the swapped face) with the camera's own face shown where the source
        photo's glasses frames were (``frames``, 255 there, warped by the maps ``mx``,
        ``my``): its brows, lids and skin, each pixel shifted by the low-pass colour change
        between the two faces' skin (``src_skin``, ``skin``: the source's and the camera's
        skin likelihoods) measured around the frames, as far as it is skin (the swapped
        skin's tone; hair stays hair), feathered in. Changed in place (this frame's own
        array)."""
        warped = cv2.remap(
            frames, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        ys, xs = np.nonzero(warped)
        if ys.size == 0:
            return lab
        h, w = lab.shape[:2]
        pad = int(0.1 * size) + 2
        y0, y1 = max(0, int(ys.min()) - pad), min(h, int(ys.max()) + pad + 1)
        x0, x1 = max(0, int(xs.min()) - pad), min(w, int(xs.max()) + pad + 1)
        sub = warped[y0:y1, x0:x1].astype(np.float32) * np.float32(1 / 255)
        soft = cv2.GaussianBlur(sub, (0, 0), max(1.0, _GLASSES_FEATHER * size))
        soft = blend.per_channel(np.clip(soft * 1.5, 0.0, 1.0), 3)
        cur, own = lab[y0:y1, x0:x1], target_lab[y0:y1, x0:x1]
        cam_skin = skin[y0:y1, x0:x1]
        around = (sub < 0.05) * cam_skin * src_skin[y0:y1, x0:x1]
        shift = blend.masked_lowpass(cur - own, around, 0.08 * size)
        lab[y0:y1, x0:x1] = cur + soft * (own + shift * blend.per_channel(cam_skin, 3) - cur)
        return lab

    def _own_eyes(
        self,
        lab: blend.FloatImage,
        target_lab: blend.FloatImage,
        lm_roi: Points,
        skin: blend.FloatImage,
        size: float,
        lid: float,
    ) -> blend.FloatImage:
        """``lab`` (the swapped face) with the camera's own eyes put back: the eye openings
        and their lids and lashes (``lid`` face sizes around the openings), each pixel
        shifted by the swapped skin's colour change around the eye as far as it is skin
        (lids take the source's tone, iris and white keep theirs), feathered in."""
        shape = lab.shape[:2]
        grow = max(1, round(lid * size))
        polys = [lm_roi[mesh.LEFT_EYE], lm_roi[mesh.RIGHT_EYE]]
        pts = np.vstack(polys)
        pad = 4 * grow + 2
        x0, y0 = (max(0, int(v) - pad) for v in pts.min(axis=0))
        x1, y1 = int(pts[:, 0].max()) + pad + 1, int(pts[:, 1].max()) + pad + 1
        x1, y1 = min(x1, shape[1]), min(y1, shape[0])
        if x1 - x0 < 2 or y1 - y0 < 2:
            return lab
        origin = np.array([x0, y0], np.float32)
        sub = (y1 - y0, x1 - x0)
        opening = blend.polygon_mask(sub, [p - origin for p in polys], convex=False)
        disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1))
        area = cv2.dilate(opening, disk)
        ring = (cv2.dilate(area, disk, iterations=2) > 0) & (area == 0)
        soft = cv2.GaussianBlur(area.astype(np.float32) * (1 / 255), (0, 0), grow / 2)
        soft = blend.per_channel(np.clip(soft * 1.5, 0.0, 1.0), 3)
        cur, own = lab[y0:y1, x0:x1], target_lab[y0:y1, x0:x1]  # lab: this frame's own array
        shift = blend.masked_lowpass(cur - own, ring.astype(np.float32), 1.5 * grow)
        own = own + shift * blend.per_channel(skin[y0:y1, x0:x1], 3)
        lab[y0:y1, x0:x1] = cur + soft * (own - cur)
        return lab


# the camera's face where the photo's glasses were fades in over a Gaussian of this share
# of the face (a narrow edge drew the lower rims' line on the swapped cheeks)
_GLASSES_FEATHER = 0.025


_ALIAS_STEP = 0.05  # the anti-alias blur's sigma in steps of this (px): a blurred patch is
# reused while a face's size holds (0.2-0.25 ms a face at 12 % of 720p)
_ALIAS_KEPT = 32  # blurred patches kept (a few faces, a few sizes each)


def _alias_sigma(level: _Level, size: float, amount: float) -> float:
    """The blur (px) of ``level``'s photo patch drawn on a face of eye-to-chin ``size`` px:
    ``amount`` x 0.5 * sqrt(shrink^2 - 1) where its own face is larger (its finer detail
    would alias in the bilinear warp), in steps of ``_ALIAS_STEP``; 0 where it is not."""
    shrink = level.face_size / max(size, 1.0)
    sigma = amount * 0.5 * float(np.sqrt(max(shrink * shrink - 1.0, 0.0)))
    return 0.0 if sigma < 0.2 else round(sigma / _ALIAS_STEP) * _ALIAS_STEP


def _ring(dist: blend.FloatImage, width: float, weight: blend.FloatImage) -> blend.FloatImage:
    """``weight`` where 0 < ``dist`` < ``width``, else 0 (float32; ``dist`` is float32):
    the mask and the product as OpenCV's thresholds and multiply, not numpy's five passes."""
    below = float(np.nextafter(np.float32(width), np.float32(0)))  # < width: <= the float before
    _, ring = cv2.threshold(dist, below, 1.0, cv2.THRESH_BINARY_INV)
    _, inside = cv2.threshold(dist, 0.0, 1.0, cv2.THRESH_BINARY)
    return np.asarray(cv2.multiply(cv2.multiply(ring, inside), weight), np.float32)


def _grey(image: Frame) -> blend.FloatImage:
    return np.asarray(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), np.float32)


def _roi_around(ext: Points, frame_shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """The frame region holding the mesh ``ext`` with ``_ROI_MARGIN`` pixels to spare (the
    mask falls to 0 inside it, so its straight edge never shows); None if empty."""
    h, w = frame_shape[:2]
    lo = np.floor(ext.min(axis=0)).astype(int) - _ROI_MARGIN
    hi = np.ceil(ext.max(axis=0)).astype(int) + _ROI_MARGIN + 1
    x0, y0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
    x1, y1 = min(int(hi[0]), w), min(int(hi[1]), h)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    return x0, y0, x1, y1


def _far_side_cut(
    lm: Points,
    shape: tuple[int, int],
    size: float,
    turn: tuple[float, float],
    soft: tuple[float, float],
) -> blend.FloatImage | None:
    """On a turned head, 1 inside the camera's jaw line (``lm`` 0-16, open upwards) and 0
    beyond it (within ``soft`` face sizes) on the far side and under the chin, fading to 1
    towards the nose and the near cheek; None on a face turned less than ``turn[0]``
    (``ClassicOptions.far_turn``)."""
    w, far_left = _turn(lm, turn)
    if w <= 0:
        return None
    span = lm[16] - lm[0]
    n2 = float(span @ span)
    up, _, _ = mesh.face_frame(lm)
    poly = np.vstack([lm[:17], lm[16] + up * size, lm[0] + up * size]).astype(np.float32)
    inside = blend.polygon_mask(shape, [poly], convex=False)
    # signed distance from the line (inside > 0); a fade wholly outside needs no inside one
    signed = -np.asarray(cv2.distanceTransform(cv2.bitwise_not(inside), cv2.DIST_L2, 3), np.float32)
    if soft[1] > 0:
        signed = signed + np.asarray(cv2.distanceTransform(inside, cv2.DIST_L2, 3), np.float32)
    cut = blend.smoothstep(signed, soft[0] * size, soft[1] * size)
    far = (-span if far_left else span) / np.sqrt(n2)  # towards the far jaw end
    side = blend.smoothstep(_along(shape, lm[30], far), 0.0, 0.25 * size)
    chin = blend.smoothstep(_along(shape, lm[57], -up), 0.0, 0.1 * size)  # under the lip
    return np.asarray(1.0 - np.float32(w) * np.maximum(side, chin) * (1.0 - cut), np.float32)


def _turn(lm: Points, turn: tuple[float, float]) -> tuple[float, bool]:
    """How far the head ``lm`` (68 landmarks) is turned, 0 (less than ``turn[0]``) to 1
    (``turn[1]`` or more; ``ClassicOptions.far_turn``), and whether its far side is that of
    landmark 0. The turn is read as the nose tip's offset from the middle of the jaw ends
    (0 frontal, 0.5 on a jaw end)."""
    span = lm[16] - lm[0]
    n2 = float(span @ span)
    if n2 < 1e-6 or turn[1] <= 0:
        return 0.0, True
    r = float((lm[30] - lm[0]) @ span) / n2
    t = min(max((abs(r - 0.5) - turn[0]) / max(turn[1] - turn[0], 1e-6), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t), r < 0.5


def _along(shape: tuple[int, int], origin: Points, direction: Points) -> blend.FloatImage:
    """Each pixel's offset from ``origin`` along the unit vector ``direction``."""
    h, w = shape
    xs = (np.arange(w, dtype=np.float32) - origin[0]) * direction[0]
    ys = (np.arange(h, dtype=np.float32) - origin[1]) * direction[1]
    return np.asarray(ys[:, None] + xs[None, :], np.float32)


def _mouth_interior(patch: Frame, pts: Points) -> npt.NDArray[np.uint8]:
    """255 where the source face shows the inside of its mouth: inside its inner lips, and
    inside its outer lips where a pixel is far less red than the lips (teeth) or far darker
    (the gap), which a 68-point landmarker often leaves outside a smile's inner lips."""
    shape = patch.shape[:2]
    outer = blend.polygon_mask(shape, [pts[48:60]], convex=False) > 0
    inner = blend.polygon_mask(shape, [pts[60:68]], convex=False) > 0
    lips = outer & ~inner
    mouth = inner.copy()
    if np.count_nonzero(lips) >= 10:
        lab = blend.to_lab(patch)
        lip_l, lip_a = (float(blend.median(lab[..., c][lips])) for c in (0, 1))
        odd = (lab[..., 1] < lip_a - 10) | (lab[..., 0] < lip_l - 45)
        mouth |= outer & odd
    opened = cv2.morphologyEx(
        mouth.astype(np.uint8) * 255, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)
    )
    return np.asarray(cv2.dilate(opened, np.ones((3, 3), np.uint8)), np.uint8)


# the upper lip's outer points (68-point indices) that follow the camera's skin-to-lip edge;
# the edge is looked for from ``_LIP_SPAN[0]`` eye distances above each point to
# ``_LIP_SPAN[1]`` below it, in ``_LIP_SAMPLES`` samples; with less redness (8-bit Lab a*)
# between the skin above and the lip than ``_LIP_CONTRAST`` it is not measured
_UPPER_LIP = np.arange(49, 54)
_LIP_SPAN = (0.12, 0.06)
_LIP_SAMPLES = 48
_LIP_ALONG = np.linspace(0.0, 1.0, _LIP_SAMPLES, dtype=np.float32)[None, :, None]
_LIP_CONTRAST = 4.0


def _upper_lip_edges(
    frame: Frame, lm: Points
) -> tuple[npt.NDArray[np.float32], Points, float] | None:
    """The camera's skin-to-lip edge over each upper-lip point (``_UPPER_LIP``): its
    height above the point in eye distances, with the face's up direction (unit, chin to
    nose bridge) and the eye distance in pixels; None where a profile shows no edge (its
    top already as red as the lip, or too little redness between them)."""
    eye = float(np.linalg.norm(lm[45] - lm[36]))
    up = lm[27] - lm[8]
    norm = float(np.linalg.norm(up))
    if eye < 1.0 or norm < 1.0:
        return None
    up = (up / norm).astype(np.float32)
    top = lm[_UPPER_LIP] + up * np.float32(_LIP_SPAN[0] * eye)
    step = -up * np.float32((_LIP_SPAN[0] + _LIP_SPAN[1]) * eye)
    pts = top[:, None, :] + _LIP_ALONG * step[None, None, :]
    samples = cv2.remap(
        frame, pts[..., 0], pts[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    red = cv2.cvtColor(np.asarray(samples, np.uint8), cv2.COLOR_BGR2LAB)[..., 1]
    red = np.asarray(cv2.GaussianBlur(red.astype(np.float32), (5, 1), 1.0), np.float32)
    quarter = _LIP_SAMPLES // 4
    skin = red[:, :quarter].mean(axis=1)
    lip = red[:, -quarter:].max(axis=1)
    if np.any(lip - skin < _LIP_CONTRAST):
        return None
    threshold = (skin + lip) / 2
    above = red > threshold[:, None]
    first = above.argmax(axis=1)
    if np.any(first == 0):
        return None
    rows = np.arange(len(first))
    before, after = red[rows, first - 1], red[rows, first]
    frac = (threshold - before) / np.maximum(after - before, 1e-6)
    where = (first - 1 + frac) / (_LIP_SAMPLES - 1)
    heights = _LIP_SPAN[0] - where * (_LIP_SPAN[0] + _LIP_SPAN[1])
    return np.asarray(heights, np.float32), up, eye


def _inner_box(lm_roi: Points, shape: tuple[int, int]) -> npt.NDArray[np.bool_]:
    """The box of the eye centres, nose tip and mouth corners grown by a quarter of its
    size on every side: brows to chin, cheek to cheek (where the live bench reads the
    sharpness ratio, ``benchmark.live_face.inner_face_box``)."""
    kps = np.vstack([lm_roi[36:42].mean(axis=0), lm_roi[42:48].mean(axis=0), lm_roi[[30, 48, 54]]])
    lo, hi = kps.min(axis=0), kps.max(axis=0)
    lo, hi = lo - 0.25 * (hi - lo), hi + 0.25 * (hi - lo)
    out = np.zeros(shape, bool)
    x0, y0 = max(0, int(lo[0])), max(0, int(lo[1]))
    x1, y1 = min(shape[1], int(np.ceil(hi[0]))), min(shape[0], int(np.ceil(hi[1])))
    out[y0:y1, x0:x1] = True
    return out


# the photo's mouth must be open this much (inner-lip gap over mouth width) for a dark line
# past its corners to be its mouth gap; past a closed mouth's corners it is a crease (Grace
# Hopper's: trimmed, `livecam check`'s clip fell from swap strength 69 to 68)
_TRIM_OPEN = 0.1
# how far past each 68-point mouth corner the mouth gap is looked for (mouth widths), how
# wide that wedge is (at the corner, and its growth per unit of reach), and how much darker
# than the cheeks' median (8-bit Lab lightness) a pixel of the gap is
_TRIM_REACH = 0.15
_TRIM_HALF_WIDTH = (0.05, 0.15)
_TRIM_DARK = 35.0


def _trim_mouth_corners(patch: Frame, pts: Points) -> Frame:
    """``patch`` (the source face crop, ``pts`` its extended landmarks) with the dark mouth
    gap that runs on past its 68-point mouth corners painted over (``cv2.inpaint``) from
    the skin around it: only what is connected to a corner, inside a narrow wedge along the
    mouth line beyond it, and far darker than the cheeks. A face whose mouth ends at its
    corners (or is closed) comes back unchanged."""
    if dlib68_measures(pts[:68]).mouth < _TRIM_OPEN:
        return patch
    shape = patch.shape[:2]
    lab = blend.to_lab(patch)
    cheeks = blend.polygon_mask(shape, mesh.skin_sample_polygons(pts[:68]), convex=False) > 0
    if np.count_nonzero(cheeks) < 10:
        return patch
    dark = lab[..., 0] < float(blend.median(lab[..., 0][cheeks])) - _TRIM_DARK
    along = pts[54] - pts[48]
    width = float(np.linalg.norm(along)) or 1.0
    along /= width
    up = np.array([along[1], -along[0]], np.float32)
    ys, xs = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float32)
    wedge = np.zeros(shape, bool)
    seeds = np.zeros(shape, np.uint8)
    for corner, out in ((pts[48], -along), (pts[54], along)):
        t = (xs - corner[0]) * out[0] + (ys - corner[1]) * out[1]
        v = np.abs((xs - corner[0]) * up[0] + (ys - corner[1]) * up[1])
        half = _TRIM_HALF_WIDTH[0] * width + _TRIM_HALF_WIDTH[1] * t
        wedge |= (t > 0) & (t <= _TRIM_REACH * width) & (v <= half)
        centre = (round(float(corner[0])), round(float(corner[1])))
        cv2.circle(seeds, centre, max(1, round(0.04 * width)), 255, -1)
    gap = dark & (wedge | (seeds > 0))
    count, labels = cv2.connectedComponents(gap.astype(np.uint8), connectivity=8)
    touching = np.unique(labels[(seeds > 0) & gap])
    past = np.isin(labels, touching[touching > 0]) & wedge
    if not past.any():
        return patch
    grown = cv2.dilate(past.astype(np.uint8) * 255, np.ones((3, 3), np.uint8))
    radius = max(2, round(0.03 * width))
    return np.asarray(cv2.inpaint(patch, grown, radius, cv2.INPAINT_TELEA), np.uint8)


def _lengthened(line: Points, by: float) -> Points:
    """The polyline ``line`` with both ends carried on ``by`` pixels along its end segments
    (a brow band that reaches past the brow's tip, so its blurred edge is not on the brow)."""
    out = line.copy()
    for end, nxt in ((0, 1), (-1, -2)):
        d = line[end] - line[nxt]
        n = float(np.linalg.norm(d))
        if n > 1e-6:
            out[end] = line[end] + d * (by / n)
    return out
