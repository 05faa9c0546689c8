"""Identity embeddings and the identity metrics of a face swap: does the output look like
the source person, and does it keep the target's pose and expression? And ``psnr``, how
close two images are.

Every recognizer returns L2-normalised float32 ``Embedding`` vectors (``l2_normalize``), so
cosine similarity is a dot product and ``embedding_distance`` lies in [0, 2]. The metrics'
embedding model is whatever recognizer the analyzer carries (MobileFaceNet in the lite
preset, ArcFace in the neural ones): any object with
``analyze(frame, with_embedding=True) -> list[Face]`` returning faces with ``landmarks``
(68 points) and unit ``embedding`` fits (``face.source.analysis.FaceAnalyzer`` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from livecam.errors import LivecamError
from livecam.types import Face, Frame

OUTER_EYE_CORNERS = (36, 45)
Embedding = npt.NDArray[np.float32]


def l2_normalize(vector: npt.ArrayLike) -> Embedding:
    """``vector / ||vector||`` as float32 (a zero vector stays zero)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / np.float32(norm) if norm > 0 else v


def embedding_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Euclidean distance between the unit-normalised embeddings, in [0, 2]."""
    return float(np.linalg.norm(l2_normalize(a) - l2_normalize(b)))


class FaceNotFoundError(LivecamError):
    """An image given to the metrics has no usable face."""


class Analyzer(Protocol):
    """What the metrics need from a face analyzer."""

    def analyze(self, frame: Frame, with_embedding: bool = False) -> list[Face]: ...


@dataclass(frozen=True)
class IdentityMetrics:
    """Identity figures of one swap.

    ``cos_source``/``cos_target``: cosine similarity of the output face's embedding to the
    source's and the target's. ``landmark_error``: mean 68-landmark distance between output
    and target, divided by the target's inter-ocular distance (outer eye corners 36, 45).
    """

    cos_source: float
    cos_target: float
    landmark_error: float

    @property
    def margin(self) -> float:
        """cos(out, source) - cos(out, target); > 0 means the source identity won."""
        return self.cos_source - self.cos_target

    @property
    def retrieved(self) -> bool:
        """The output is closer to the source than to the target."""
        return self.cos_source > self.cos_target


def psnr(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Peak signal-to-noise ratio (dB, 8-bit scale) between two images of one shape;
    infinite for identical ones."""
    diff = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    mse = float(np.mean(diff**2))
    return math.inf if mse == 0 else 10.0 * math.log10(255.0**2 / mse)


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two vectors (normalised here)."""
    va = np.asarray(a, np.float64).reshape(-1)
    vb = np.asarray(b, np.float64).reshape(-1)
    den = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / den if den > 0 else 0.0


def inter_ocular(landmarks: npt.ArrayLike) -> float:
    """Distance between the outer eye corners (68-point indices 36 and 45)."""
    lm = np.asarray(landmarks, np.float64)
    i, j = OUTER_EYE_CORNERS
    return float(np.linalg.norm(lm[i] - lm[j]))


def landmark_error(landmarks: npt.ArrayLike, reference: npt.ArrayLike) -> float:
    """Mean point distance between two (68, 2) landmark sets, in units of the reference's
    inter-ocular distance."""
    a = np.asarray(landmarks, np.float64)
    b = np.asarray(reference, np.float64)
    if a.shape != (68, 2) or b.shape != (68, 2):
        raise ValueError(f"expected two (68, 2) landmark arrays, got {a.shape} and {b.shape}")
    iod = inter_ocular(b)
    if iod <= 0:
        return math.inf
    return float(np.linalg.norm(a - b, axis=1).mean() / iod)


def metrics_from_faces(source: Face, target: Face, output: Face) -> IdentityMetrics:
    """Metrics from already analysed faces (embeddings and 68 landmarks filled)."""
    se, te, oe = source.embedding, target.embedding, output.embedding
    if se is None or te is None or oe is None:
        raise FaceNotFoundError(
            "a face given to the metrics has no embedding", "analyze with with_embedding=True"
        )
    if output.landmarks is None or target.landmarks is None:
        raise FaceNotFoundError("the output or target face has no 68 landmarks")
    return IdentityMetrics(
        cos_source=cosine(oe, se),
        cos_target=cosine(oe, te),
        landmark_error=landmark_error(output.landmarks, target.landmarks),
    )


def nearest_face(faces: list[Face], ref: Face) -> Face | None:
    """The face whose box centre is nearest ``ref``'s, if it lies within ``ref``'s box size."""
    if not faces:
        return None
    cx, cy = ref.center
    best = min(faces, key=lambda f: (f.center[0] - cx) ** 2 + (f.center[1] - cy) ** 2)
    d = math.hypot(best.center[0] - cx, best.center[1] - cy)
    return best if d <= max(ref.width, ref.height) else None


def _first_face(analyzer: Analyzer, image: Frame, name: str) -> Face:
    faces = analyzer.analyze(image, with_embedding=True)
    if not faces:
        raise FaceNotFoundError(f"no face found in the {name} image")
    return faces[0]


def identity_metrics(
    source: Frame,
    target: Frame,
    output: Frame,
    analyzer: Analyzer,
    source_face: Face | None = None,
    target_face: Face | None = None,
) -> IdentityMetrics:
    """Analyse the three images and compare them.

    The source and target faces are the largest in their images unless given (already
    analysed, with embeddings). The output face is the one at the target face's place.
    Raises FaceNotFoundError when an image has no face (or none at the target's place).
    """
    s = source_face if source_face is not None else _first_face(analyzer, source, "source")
    t = target_face if target_face is not None else _first_face(analyzer, target, "target")
    o = nearest_face(analyzer.analyze(output, with_embedding=True), t)
    if o is None:
        raise FaceNotFoundError("no face found in the output image at the target face's place")
    return metrics_from_faces(s, t, o)
