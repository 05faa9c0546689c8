"""``FaceAnalyzer``: a detector, a landmarker and a recognizer run together on one image
(source photos, reference photos, the identity metrics).

The analyzer owns no models of its own: it composes parts (``build.build_parts`` gives a
preset's photo analyzer). Its parts are used by one thread at a time: so is the analyzer.
"""

from __future__ import annotations

from livecam.face.parts import Detector, Landmarker, Recognizer
from livecam.types import Face, FaceWork, Frame, FrameContext, validate_frame


class FaceAnalyzer:
    """Detect faces (those scoring at least the detector's ``start_score``), fit landmarks
    to each (when it has a landmarker; else faces keep the detector's keypoints),
    optionally embed them.

    ``model_id`` joins the parts' ids: results of two analyzers with the same id are
    interchangeable (the source-face cache keys on it).
    """

    def __init__(
        self,
        detector: Detector,
        landmarker: Landmarker | None,
        recognizer: Recognizer | None = None,
    ) -> None:
        self.detector = detector
        self.landmarker = landmarker
        self.recognizer = recognizer
        parts = [detector, landmarker, recognizer]
        self.model_id = "+".join(p.model_id for p in parts if p is not None)

    @property
    def embeds(self) -> bool:
        """Whether it can fill embeddings (it has a recognizer)."""
        return self.recognizer is not None

    def analyze(self, frame: Frame, with_embedding: bool = False) -> list[Face]:
        """Faces with landmarks (and embeddings when asked), largest area first."""
        validate_frame(frame, "FaceAnalyzer.analyze")
        if with_embedding and self.recognizer is None:
            raise ValueError("with_embedding=True needs a FaceAnalyzer built with a recognizer")
        frames = [FrameContext(frame)]
        found = self.detector.detect(frames)[0]
        works = [FaceWork(0, 0, f) for f in found if f.score >= self.detector.start_score]
        if works and self.landmarker is not None:
            works = self.landmarker.fit(frames, works)
        if works and with_embedding and self.recognizer is not None:
            works = self.recognizer.embed(frames, works)
        faces = [w.face for w in works]
        faces.sort(key=lambda f: f.area, reverse=True)
        return faces
