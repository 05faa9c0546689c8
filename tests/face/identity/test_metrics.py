"""Identity metrics with the real lite-preset analyzer (MobileFaceNet) on real faces."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import lite_analyzer

from livecam.face.identity.metrics import (
    FaceNotFoundError,
    IdentityMetrics,
    identity_metrics,
    inter_ocular,
    landmark_error,
)
from livecam.face.source.analysis import FaceAnalyzer
from livecam.userfiles.images import load_image_bgr


def _load(testdata: Path, name: str) -> np.ndarray:
    img = load_image_bgr(testdata / "faces" / name)
    s = 640 / max(img.shape[:2])
    return np.ascontiguousarray(cv2.resize(img, None, fx=s, fy=s, interpolation=cv2.INTER_AREA))


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return lite_analyzer()


def test_image_against_itself(testdata, analyzer) -> None:
    img = _load(testdata, "obama_official_portrait_2012.jpg")
    m = identity_metrics(img, img, img, analyzer)
    assert m.landmark_error < 1e-6
    assert m.cos_source == pytest.approx(1.0, abs=1e-5)
    assert m.cos_target == pytest.approx(1.0, abs=1e-5)


def test_different_people_have_lower_cosine(testdata, analyzer) -> None:
    obama = _load(testdata, "obama_official_portrait_2012.jpg")
    obama2 = _load(testdata, "obama_speech_2009.jpg")
    biden = _load(testdata, "biden_official_portrait.jpg")
    # "output" = another photo of Obama: source Obama (other photo), target Biden
    m = identity_metrics(obama, biden, obama2, analyzer)
    assert isinstance(m, IdentityMetrics)
    assert m.cos_source > m.cos_target and m.retrieved and m.margin > 0
    # output = Biden's own photo: closer to the target than to the source
    m2 = identity_metrics(obama, biden, biden, analyzer)
    assert m2.cos_target == pytest.approx(1.0, abs=1e-5)
    assert m2.cos_source < 0.95 and not m2.retrieved


def test_landmark_error_is_normalised_by_inter_ocular_distance(testdata, analyzer) -> None:
    lm = analyzer.analyze(_load(testdata, "biden_official_portrait.jpg"))[0].landmarks
    assert lm is not None
    iod = inter_ocular(lm)
    assert iod == pytest.approx(float(np.linalg.norm(lm[36] - lm[45])))
    shifted = lm + np.array([3.0, 4.0], np.float32)  # every point moved by 5 px
    assert landmark_error(shifted, lm) == pytest.approx(5.0 / iod, rel=1e-5)
    with pytest.raises(ValueError):
        landmark_error(lm[:5], lm)


def test_no_face_is_a_typed_error(testdata, analyzer) -> None:
    img = _load(testdata, "obama_official_portrait_2012.jpg")
    blank = np.full((240, 320, 3), 128, np.uint8)
    with pytest.raises(FaceNotFoundError, match="output"):
        identity_metrics(img, img, blank, analyzer)
