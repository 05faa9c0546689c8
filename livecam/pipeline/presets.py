"""The preset table: which parts make each preset, and how a preset's parts are built.

One frozen ``PresetRow`` per preset names its parts; ``build_parts`` builds a row's parts
from the factories below. A row whose parts all have a factory can be built; the others
are data for now (the neural presets fill in their factories). ``resolve_preset`` turns a
config value (``auto`` included) into a row, with a clear error for a row that cannot be
built yet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from livecam.config import SwapConfig
from livecam.errors import ConfigError, ModelError
from livecam.pipeline.analysis import FaceAnalyzer
from livecam.pipeline.classic import ClassicSwapper
from livecam.pipeline.detect import YuNetDetector, bundled_yunet
from livecam.pipeline.dlib_files import SHAPE_68, DlibModels
from livecam.pipeline.identity import DlibDescriptor
from livecam.pipeline.landmarks import Dlib68Landmarker
from livecam.pipeline.parts import (
    Blender,
    Detector,
    Enhancer,
    FaceParts,
    Masker,
    Recognizer,
    RefitLandmarker,
    Swapper,
)
from livecam.pipeline.paste import RoiBlender

log = logging.getLogger(__name__)

AUTO = "auto"
# Source photos: two detector passes, long side 1024 px (small faces: a group photo's
# ~40 px faces) and 400 px (a face filling a selfie); any photo size, faces merged.
PHOTO_SIDES = (1024, 400)
# YuNet scores at or above this start a track or are a photo's face. Real faces at 5-80 %
# of the frame width score 0.83-0.95 on the test portraits (dark, blurred, noisy or tilted
# 20 deg included); the best false face seen, trees in a painting, 0.82. Between the
# threshold (0.6) and this, a detection only confirms a face already tracked.
YUNET_START_SCORE = 0.85


@dataclass(frozen=True)
class PresetRow:
    """The parts of one preset, by name (``None``: the preset has no such part).

    ``needs_download`` says what a user must download for it ("no" for none).
    """

    name: str
    detector: str
    landmarker: str | None
    recognizer: str
    swapper: str
    enhancer: str | None
    masker: str | None
    blender: str
    needs_download: str

    def part_names(self) -> dict[str, str]:
        """Role -> part name of every part the preset has."""
        roles = [f.name for f in fields(self) if f.name not in ("name", "needs_download")]
        return {role: name for role in roles if isinstance(name := getattr(self, role), str)}


PRESETS: Mapping[str, PresetRow] = MappingProxyType(
    {
        row.name: row
        for row in (
            PresetRow(
                name="offline",
                detector="yunet-2023mar",
                landmarker="dlib-shape68",
                recognizer="dlib-resnet128",
                swapper="classic-mesh",
                enhancer=None,
                masker=None,  # the classic swapper makes its own feathered, skin-gated mask
                blender="roi",
                needs_download="no",
            ),
            PresetRow(
                name="lite",
                detector="yunet-2023mar",
                landmarker="onnx-68",
                recognizer="mobilefacenet",
                swapper="classic-mesh",
                enhancer=None,
                masker=None,
                blender="roi",
                needs_download="a few MB",
            ),
            PresetRow(
                name="standard",
                detector="scrfd-10g",
                landmarker="onnx-106",
                recognizer="arcface-w600k-r50",
                swapper="inswapper-128-fp16",
                enhancer=None,
                masker="insightface-paste",
                blender="affine",
                needs_download="~450 MB",
            ),
            PresetRow(
                name="quality",
                detector="scrfd-10g",
                landmarker="onnx-106",
                recognizer="arcface-w600k-r50",
                swapper="hyperswap-1a-256",
                enhancer="gfpgan-1.4",
                masker="insightface-paste",
                blender="affine",
                needs_download="~900 MB",
            ),
        )
    }
)
"""Every preset, best last: ``auto`` takes the first buildable one of ``AUTO_ORDER``."""

AUTO_ORDER = ("quality", "standard", "lite", "offline")


# Part factories by role and name. Model-holding parts take their loaded models from the
# app's DlibModels (each loaded once per app). A detector factory gives the live detector
# and the one for source photos (finer settings); it gets the preset's landmarker, whose
# box convention a keypoint detector's boxes follow.
DetectorFactory = Callable[[SwapConfig, RefitLandmarker | None], tuple[Detector, Detector]]


def _yunet(cfg: SwapConfig, landmarker: RefitLandmarker | None) -> tuple[Detector, Detector]:
    """YuNet 2023mar from the package: live on the frame shrunk to ``detect_size`` (faces
    from ~5 % of the frame width at any resolution, ~4 ms), photos in two passes."""
    model = bundled_yunet()
    box = landmarker.box_for_kps if landmarker is not None else None
    live = YuNetDetector(
        model, max_sides=(cfg.detect_size,), start_score=YUNET_START_SCORE, box_for_kps=box
    )
    photo = YuNetDetector(
        model, max_sides=PHOTO_SIDES, start_score=YUNET_START_SCORE, box_for_kps=box
    )
    return live, photo


DETECTORS: Mapping[str, DetectorFactory] = MappingProxyType({"yunet-2023mar": _yunet})
LANDMARKERS: Mapping[str, Callable[[DlibModels], RefitLandmarker]] = MappingProxyType(
    {"dlib-shape68": lambda models: Dlib68Landmarker(model=models.shape_predictor(SHAPE_68))}
)
RECOGNIZERS: Mapping[str, Callable[[DlibModels], Recognizer]] = MappingProxyType(
    {"dlib-resnet128": lambda models: DlibDescriptor(model=models.resnet())}
)
SWAPPERS: Mapping[str, Callable[[SwapConfig], Swapper[Any]]] = MappingProxyType(
    {"classic-mesh": ClassicSwapper}
)
ENHANCERS: Mapping[str, Callable[[SwapConfig], Enhancer]] = MappingProxyType({})
MASKERS: Mapping[str, Callable[[SwapConfig], Masker]] = MappingProxyType({})
BLENDERS: Mapping[str, Callable[[SwapConfig], Blender]] = MappingProxyType(
    {"roi": lambda cfg: RoiBlender(cfg.blend)}
)
_FACTORIES: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        "detector": DETECTORS,
        "landmarker": LANDMARKERS,
        "recognizer": RECOGNIZERS,
        "swapper": SWAPPERS,
        "enhancer": ENHANCERS,
        "masker": MASKERS,
        "blender": BLENDERS,
    }
)


def preset_names() -> tuple[str, ...]:
    """Every name ``swap.preset`` accepts: ``auto`` and the rows, in table order."""
    return (AUTO, *PRESETS)


def missing_parts(row: PresetRow) -> list[str]:
    """Names of the row's parts this version cannot build."""
    return [name for role, name in row.part_names().items() if name not in _FACTORIES[role]]


def buildable(name: str) -> bool:
    """Whether ``name`` (``auto`` included) can be built by this version."""
    if name == AUTO:
        return True
    row = PRESETS.get(name)
    return row is not None and not missing_parts(row)


def resolve_preset(name: str) -> PresetRow:
    """The row for ``name``: ``auto`` is the best buildable preset of ``AUTO_ORDER``.

    An unknown name is a ConfigError naming the allowed ones; a row this version cannot
    build is a ModelError naming its missing parts, with ``--preset offline`` as the fix.
    """
    if name == AUTO:
        for candidate in AUTO_ORDER:
            if buildable(candidate):
                return PRESETS[candidate]
    row = PRESETS.get(name)
    if row is None:
        raise ConfigError(f"unknown preset {name!r}", f"use one of {', '.join(preset_names())}")
    missing = missing_parts(row)
    if missing:
        raise ModelError(
            f"preset '{name}' needs ONNX models that are not available in this version "
            f"({', '.join(missing)})",
            "use --preset offline (no download needed)",
        )
    return row


def build_parts(row: PresetRow, cfg: SwapConfig, models: DlibModels) -> FaceParts:
    """Build every part of a buildable row (models come from ``models``, loaded once per
    app); a missing model is a ModelError."""
    missing = missing_parts(row)
    if missing:
        raise ModelError(
            f"preset '{row.name}' cannot be built: no {', '.join(missing)} in this version",
            "use --preset offline (no download needed)",
        )
    landmarker = LANDMARKERS[row.landmarker](models) if row.landmarker is not None else None
    detector, photo_detector = DETECTORS[row.detector](cfg, landmarker)
    return FaceParts(
        preset=row.name,
        detector=detector,
        photo_detector=photo_detector,
        landmarker=landmarker,
        recognizer=RECOGNIZERS[row.recognizer](models),
        swapper=SWAPPERS[row.swapper](cfg),
        enhancer=ENHANCERS[row.enhancer](cfg) if row.enhancer is not None else None,
        masker=MASKERS[row.masker](cfg) if row.masker is not None else None,
        blender=BLENDERS[row.blender](cfg),
    )


def photo_analyzer(parts: FaceParts, identity: bool = True) -> FaceAnalyzer:
    """The analyzer for source and reference photos made of the preset's own parts (its
    photo detector, landmarker and, with ``identity``, recognizer; no models of its own)."""
    return FaceAnalyzer(
        parts.photo_detector, parts.landmarker, parts.recognizer if identity else None
    )
