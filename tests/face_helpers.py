"""The lite preset's bundled face parts for tests and bench scripts: ``lite_parts`` (built
once per detector size per process, never downloaded: YuNet, slim-160 and MobileFaceNet
ship inside LiveCam) and ``lite_analyzer``, a ``FaceAnalyzer`` made of them, independent of
the model folders (the presets' own photo analyzer is ``build.photo_analyzer``); and
``least_cpu`` for the tests that a fast path costs less CPU.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from livecam.config.schema import SwapConfig
from livecam.face.build import build_parts
from livecam.face.parts import Detector, FaceParts, RefitLandmarker
from livecam.face.source.analysis import FaceAnalyzer
from livecam.models.presets import PRESETS

DETECT_SIDE = SwapConfig().detect.detect_size  # the live detector's default size


@functools.cache
def lite_parts(max_side: int = DETECT_SIDE) -> FaceParts:
    """The lite preset's parts, its live detector on the frame shrunk to ``max_side``
    (the photo detector: two passes, 1024 and 400 px)."""
    return build_parts(PRESETS["lite"], SwapConfig.of(detect_size=max_side, provider="cpu"))


def lite_detector(max_side: int = DETECT_SIDE) -> Detector:
    """The lite preset's live detector (YuNet) at ``max_side``."""
    return lite_parts(max_side).detector


def lite_landmarker() -> RefitLandmarker:
    """The lite preset's 68-point landmarker (slim-160)."""
    landmarker = lite_parts().landmarker
    assert isinstance(landmarker, RefitLandmarker)
    return landmarker


def lite_analyzer(max_side: int | None = None, with_encoder: bool = True) -> FaceAnalyzer:
    """YuNet + slim-160 68 points (+ MobileFaceNet 128-d embeddings). ``max_side`` None:
    the photo detector (source photos, small faces of large images); else the live detector
    on the image shrunk to ``max_side``."""
    parts = lite_parts(max_side or DETECT_SIDE)
    detector = parts.photo_detector if max_side is None else parts.detector
    return FaceAnalyzer(detector, parts.landmarker, parts.recognizer if with_encoder else None)


def least_cpu(calls: tuple[Callable[[], object], ...], runs: int = 15) -> list[float]:
    """Each call's least CPU time over ``runs`` interleaved runs (a shared machine)."""
    best = [float("inf")] * len(calls)
    for _ in range(runs):
        for i, call in enumerate(calls):
            t0 = time.process_time()
            call()
            best[i] = min(best[i], time.process_time() - t0)
    return best
