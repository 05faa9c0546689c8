"""``FaceAnalyzer``: detector + landmarker (+ identity encoder) run together on a frame.

Each analyzer owns its models (loaded once in ``__init__``). dlib objects are not
guaranteed thread-safe: use one analyzer per thread.
"""

from __future__ import annotations

import dataclasses

from livecam.pipeline.detect import DlibHogDetector, FaceDetector, to_gray
from livecam.pipeline.identity import DlibDescriptor, IdentityEncoder
from livecam.pipeline.landmarks import Dlib68Landmarker, Landmarker
from livecam.types import Face, Frame, validate_frame


class FaceAnalyzer:
    """Detect faces, fit landmarks to each, optionally embed them."""

    def __init__(
        self,
        detector: FaceDetector,
        landmarker: Landmarker,
        encoder: IdentityEncoder | None = None,
    ) -> None:
        self.detector = detector
        self.landmarker = landmarker
        self.encoder = encoder

    def analyze(self, frame: Frame, with_embedding: bool = False) -> list[Face]:
        """Faces with landmarks (and embeddings when asked), largest area first."""
        validate_frame(frame, "FaceAnalyzer.analyze")
        if with_embedding and self.encoder is None:
            raise ValueError("with_embedding=True needs a FaceAnalyzer built with an encoder")
        if isinstance(self.detector, DlibHogDetector) and isinstance(
            self.landmarker, Dlib68Landmarker
        ):
            gray = to_gray(frame)
            faces = [self.landmarker.fit_gray(gray, f) for f in self.detector.detect_gray(gray)]
        else:
            faces = [self.landmarker.fit(frame, f) for f in self.detector.detect(frame)]
        if with_embedding and self.encoder is not None:
            encoder = self.encoder
            faces = [dataclasses.replace(f, embedding=encoder.embed(frame, f)) for f in faces]
        faces.sort(key=lambda f: f.area, reverse=True)
        return faces


def offline_analyzer(
    max_side: int = 400,
    upsample: int = 0,
    min_score: float = 0.0,
    with_encoder: bool = True,
) -> FaceAnalyzer:
    """The offline preset's analyzer: dlib HOG + 68-point predictor (+ 128-d descriptor),
    all weights from PyPI wheels. Raises ModelError when the weights package is missing.

    Live frames: the defaults (640x480 finds faces of ~130 px and up). Source photos:
    e.g. ``max_side=1024, upsample=1``.
    """
    return FaceAnalyzer(
        detector=DlibHogDetector(max_side=max_side, upsample=upsample, min_score=min_score),
        landmarker=Dlib68Landmarker(),
        encoder=DlibDescriptor() if with_encoder else None,
    )
