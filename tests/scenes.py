"""Test and bench support: webcam-like frames composed from real portraits, with the face
at a chosen share of the frame width, position and tilt, and its true landmarks.

A portrait's face width is the distance between the outer jaw points of its 68 landmarks
(points 0 and 16, ear to ear at eye level),
fitted once on the full-resolution photo. ``compose`` scales the photo (area filter, as a
camera would see it), tilts it about the face centre and lays it on a textured background;
the landmarks go through the same transform and are the scene's ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from livecam.face.source.analysis import FaceAnalyzer
from livecam.types import Face
from livecam.userfiles.images import load_image_bgr

Points = npt.NDArray[np.float32]

#: single-face portraits of the test data (the two-people, group, cut-off and RGBA copies
#: are left out)
PORTRAITS = (
    "obama_official_portrait_2012.jpg",
    "obama_speech_2009.jpg",
    "obama_small_320x240.jpg",
    "biden_official_portrait.jpg",
    "biden_standing_2010.jpg",
    "astronaut_eileen_collins.png",
    "grace_hopper_navy_portrait.jpg",
    "codait_bryan.png",
)


@dataclass(frozen=True)
class Portrait:
    """A photo and the 68 landmarks of its one face, in photo pixels."""

    name: str
    image: npt.NDArray[np.uint8]
    landmarks: Points

    @property
    def face_width(self) -> float:
        return jaw_width(self.landmarks)


@dataclass(frozen=True)
class Scene:
    """A composed frame and its face's true 68 landmarks (frame pixels)."""

    frame: npt.NDArray[np.uint8]
    landmarks: Points
    portrait: str

    @property
    def face_width(self) -> float:
        return jaw_width(self.landmarks)

    @property
    def centre(self) -> npt.NDArray[np.float32]:
        return self.landmarks.mean(axis=0)


def jaw_width(landmarks: Points) -> float:
    """Ear-to-ear face width: distance of the outer jaw points 0 and 16."""
    return float(np.linalg.norm(landmarks[16] - landmarks[0]))


def load_portraits(folder: Path, analyzer: FaceAnalyzer) -> list[Portrait]:
    """The ``PORTRAITS`` found in ``folder``, each with its face's landmarks."""
    out = []
    for name in PORTRAITS:
        path = folder / name
        if not path.is_file():
            continue
        image = load_image_bgr(path)
        faces = analyzer.analyze(image)
        if len(faces) != 1 or faces[0].landmarks is None:
            raise ValueError(f"{name}: expected one face with landmarks, got {len(faces)}")
        out.append(Portrait(name, image, faces[0].landmarks))
    return out


def background(width: int, height: int, seed: int = 0) -> npt.NDArray[np.uint8]:
    """A room-like backdrop: a soft colour gradient with blurred blotches and fine noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.dstack(
        [
            90 + 50 * xx / width,
            100 + 40 * yy / height,
            110 - 30 * xx / width + 20 * yy / height,
        ]
    )
    coarse = rng.normal(0, 40, (max(height // 32, 2), max(width // 32, 2), 3))
    blotches = cv2.resize(coarse.astype(np.float32), (width, height), interpolation=cv2.INTER_CUBIC)
    noise = rng.normal(0, 4, (height, width, 3))
    return np.clip(base + blotches + noise, 0, 255).astype(np.uint8)


def compose(
    portrait: Portrait,
    backdrop: npt.NDArray[np.uint8],
    width_frac: float,
    centre: tuple[float, float] = (0.5, 0.45),
    angle: float = 0.0,
) -> Scene:
    """A frame of ``backdrop``'s size with the portrait's face ``width_frac`` of the frame
    width wide, its centre at ``centre`` (fractions of the frame; moved inwards so the face
    stays inside) and tilted by ``angle`` degrees (counter-clockwise). ``backdrop`` is not
    changed."""
    h, w = backdrop.shape[:2]
    s = width_frac * w / portrait.face_width
    small = cv2.resize(
        portrait.image,
        None,
        fx=s,
        fy=s,
        interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_CUBIC,
    )
    lm = portrait.landmarks * np.float32(s)
    face_c = lm.mean(axis=0)
    half = 0.8 * width_frac * w  # keep a face box of ~1.6 face widths inside the frame
    tx = float(np.clip(centre[0] * w, half, w - half))
    ty = float(np.clip(centre[1] * h, half, h - half))
    m = cv2.getRotationMatrix2D((float(face_c[0]), float(face_c[1])), angle, 1.0)
    m[:, 2] += np.array([tx, ty]) - face_c
    frame = backdrop.copy()
    cv2.warpAffine(
        small, m, (w, h), dst=frame, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_TRANSPARENT
    )
    moved = (lm @ m[:, :2].T + m[:, 2]).astype(np.float32)
    return Scene(np.ascontiguousarray(frame), moved, portrait.name)


def match(scene: Scene, faces: list[Face]) -> Face | None:
    """The face of ``faces`` on the scene's face (centre within 0.3 face widths), if any."""
    for face in faces:
        points = face.landmarks if face.landmarks is not None else face.kps
        if np.linalg.norm(points.mean(axis=0) - scene.centre) < 0.3 * scene.face_width:
            return face
    return None


def swapped_share(scene: Scene, output: npt.NDArray[np.uint8]) -> float:
    """Share of the pixels of the scene's inner face (brows, eyes, nose, mouth: the hull of
    landmarks 17-67) that ``output`` changed."""
    mask = np.zeros(scene.frame.shape[:2], np.uint8)
    hull = cv2.convexHull(np.round(scene.landmarks[17:]).astype(np.int32))
    cv2.fillConvexPoly(mask, hull, 1)
    changed = np.any(output != scene.frame, axis=2)
    return float(changed[mask > 0].mean())


def landmark_error(scene: Scene, landmarks: Points) -> float:
    """Mean distance of 68 landmarks to the scene's true ones / the inter-ocular distance."""
    truth = scene.landmarks
    iod = float(np.linalg.norm(truth[36:42].mean(axis=0) - truth[42:48].mean(axis=0)))
    return float(np.linalg.norm(landmarks - truth, axis=1).mean()) / iod
