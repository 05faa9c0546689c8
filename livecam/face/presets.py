"""The preset table: which parts make each preset, and how a preset's parts are built.

One frozen ``PresetRow`` per preset names its parts. A part name is either a built-in part
(dlib, the classic swapper, the bundled YuNet, the blenders) or a model of
``models/manifest.toml``, whose entry says which part kind runs it and with which contract
(crop template, size, normalisation): code reads that metadata, never a file name.
``build_parts`` builds a row's parts for a swap config (the config can replace the swapper,
the enhancer, the masks and any model file); ``resolve_preset`` turns a config value
(``auto`` included) into a row.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from livecam.config.schema import SwapConfig
from livecam.errors import ConfigError, ModelError
from livecam.face.detect.scrfd import START_SCORE as SCRFD_START_SCORE
from livecam.face.detect.scrfd import ScrfdDetector
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.dlib_files import SHAPE_68, DlibModels
from livecam.face.enhance import FaceEnhancer
from livecam.face.identity.dlib_descriptor import DlibDescriptor
from livecam.face.identity.onnx import OnnxRecognizer
from livecam.face.landmarks.dlib_shape import Dlib68Landmarker
from livecam.face.landmarks.onnx import Landmarker106, Pfld68Landmarker
from livecam.face.masks import (
    BoxMasker,
    CombinedMasker,
    EllipseMasker,
    MouthMasker,
    RegionMasker,
)
from livecam.face.parts import (
    Blender,
    Detector,
    FaceParts,
    Masker,
    Part,
    Recognizer,
    RefitLandmarker,
)
from livecam.face.paste.blenders import AffineBlender, RoiBlender
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.swap.classic import ClassicSwapper
from livecam.face.swap.neural import HyperSwapper, InSwapper
from livecam.models.store import ModelStore
from livecam.runtime.cuda import StageStream
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions, memory_options

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
# The landmarker added for the mouth mask when a preset has none (106 points, lips included).
MOUTH_LANDMARKER = "2d106det"
# Built-in parts: no model file from the manifest (dlib's come from a PyPI wheel, YuNet
# ships with LiveCam).
BUILT_IN = frozenset({"yunet-2023mar", "dlib-shape68", "dlib-resnet128", "classic-mesh"})


@dataclass(frozen=True)
class PresetRow:
    """The parts of one preset, by name (``None``: the preset has no such part).

    ``masks``: the masks of the swapped face, combined by minimum ("insightface" is
    insightface's paste-back edge, applied by the blender). ``needs_download`` says what a
    user must download for it ("no" for none).
    """

    name: str
    detector: str
    landmarker: str | None
    recognizer: str
    swapper: str
    enhancer: str | None
    masks: tuple[str, ...]
    needs_download: str

    def parts_for(self, cfg: SwapConfig | None = None) -> dict[str, str]:
        """Role -> part name of every part the preset has under ``cfg`` (its swapper,
        enhancer and mouth-mask choices applied)."""
        roles = [f.name for f in fields(self) if f.name not in ("name", "needs_download", "masks")]
        names = {role: getattr(self, role) for role in roles}
        if cfg is not None:
            names["swapper"] = cfg.swapper or self.swapper
            if cfg.enhancer is not None:
                names["enhancer"] = None if cfg.enhancer == "none" else cfg.enhancer
            neural = names["swapper"] != "classic-mesh"
            if neural and cfg.mouth_mask > 0 and names["landmarker"] is None:
                names["landmarker"] = MOUTH_LANDMARKER
        return {role: name for role, name in names.items() if isinstance(name, str)}

    def model_names(self, cfg: SwapConfig | None = None) -> list[str]:
        """The manifest models this preset needs under ``cfg`` (model files given by path
        replace theirs); the region mask's face parser included."""
        parts = self.parts_for(cfg)
        given = _given_files(cfg)
        names = [name for role, name in parts.items() if name not in BUILT_IN and role not in given]
        if "region" in _masks(self, cfg):
            names.append(FACE_PARSER)
        return names


FACE_PARSER = "bisenet-resnet34"

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
                masks=(),  # the classic swapper makes its own feathered, skin-gated mask
                needs_download="no",
            ),
            PresetRow(
                name="lite",
                detector="yunet-2023mar",
                landmarker="slim-68",  # ~15 ms a face (PFLD: ~180 ms, a little closer)
                recognizer="mobilefacenet",
                swapper="classic-mesh",
                enhancer=None,
                masks=(),
                needs_download="a few MB (MIT weights)",
            ),
            PresetRow(
                name="standard",
                detector="scrfd-10g",
                landmarker=None,  # SCRFD's 5 keypoints align the crop
                recognizer="arcface-w600k-r50",
                swapper="inswapper-128-fp16",
                enhancer=None,
                masks=("insightface",),
                needs_download="~470 MB (non-commercial weights)",
            ),
            PresetRow(
                name="quality",
                detector="scrfd-10g",
                landmarker="2d106det",
                recognizer="arcface-w600k-r50",
                swapper="hyperswap-1a-256",
                enhancer="gfpgan-1.4",
                masks=("box",),
                needs_download="~940 MB (non-commercial weights)",
            ),
        )
    }
)
"""Every preset: ``auto`` takes the first of ``AUTO_ORDER`` whose models are present."""

AUTO_ORDER = ("quality", "standard", "lite", "offline")


def preset_names() -> tuple[str, ...]:
    """Every name ``swap.preset`` accepts: ``auto`` and the rows, in table order."""
    return (AUTO, *PRESETS)


def preset_model_names(preset: str) -> list[str]:
    """The manifest models ``preset`` needs with the default settings (``livecam models
    fetch PRESET``); a KeyError for a name that is not a row."""
    return PRESETS[preset].model_names()


def models_present(row: PresetRow, store: ModelStore, cfg: SwapConfig | None = None) -> bool:
    """Whether every model file ``row`` needs is on this machine (no download)."""
    return all(store.locate(name) is not None for name in row.model_names(cfg))


def resolve_preset(
    name: str, store: ModelStore | None = None, cfg: SwapConfig | None = None
) -> PresetRow:
    """The row for ``name``. ``auto``: the best preset of ``AUTO_ORDER`` whose models are
    all present in ``store`` (offline when there is no store). An unknown name is a
    ConfigError naming the allowed ones."""
    if name == AUTO:
        for candidate in AUTO_ORDER:
            best = PRESETS[candidate]
            present = store is not None and models_present(best, store, cfg)
            if not best.model_names(cfg) or present:
                log.info("preset auto: %s (its models are present)", candidate)
                return best
    row = PRESETS.get(name)
    if row is None:
        raise ConfigError(f"unknown preset {name!r}", f"use one of {', '.join(preset_names())}")
    return row


def _given_files(cfg: SwapConfig | None) -> dict[str, str]:
    """Role -> model file the user gave by path."""
    if cfg is None:
        return {}
    given = {
        "detector": cfg.detector_model,
        "recognizer": cfg.recognizer_model,
        "swapper": cfg.swapper_model,
        "enhancer": cfg.enhancer_model,
    }
    return {role: path for role, path in given.items() if path is not None}


def _masks(row: PresetRow, cfg: SwapConfig | None) -> tuple[str, ...]:
    """The masks of the swapped face: the config's, else the row's, else (a neural swapper
    chosen for a classic preset) insightface's paste-back edge."""
    if cfg is not None and cfg.masks:
        return cfg.masks
    if row.masks or row.parts_for(cfg)["swapper"] == "classic-mesh":
        return row.masks
    return ("insightface",)


# ---------------------------------------------------------------- part factories


@dataclass(frozen=True)
class Loaded:
    """A part's model: its ONNX Runtime session and the manifest contract it follows."""

    model: OnnxModel
    contract: Mapping[str, Any]
    part: str


def _with_contract(cls: Callable[..., Any], loaded: Loaded, **options: Any) -> Any:
    """``cls(model, **contract, **options)``, passing only the contract keys the part
    takes (the manifest also holds decoder facts the part reads from the model)."""
    accepted = inspect.signature(cls).parameters
    contract = {k: v for k, v in loaded.contract.items() if k in accepted}
    return cls(loaded.model, **contract, **options)


class PartBuilder:
    """Builds one preset's parts for one swap config: finds (or downloads) its model
    files, opens their sessions on the configured provider, and makes the parts."""

    def __init__(self, row: PresetRow, cfg: SwapConfig, models: DlibModels, store: ModelStore):
        self.row = row
        self.cfg = cfg
        self.models = models
        self.store = store
        self.names = row.parts_for(cfg)
        self.options = RuntimeOptions(
            provider=cfg.provider,
            device_id=cfg.gpu,
            threads=cfg.threads,
            spin_wait=cfg.spin_wait,
            cudnn_conv_algo_search=cfg.cudnn_conv_algo_search,
            **memory_options(cfg.memory, cfg.face_batch),  # arenas, batch limit
        )
        self._files: dict[str, Path] = {}
        self._opened: list[OnnxModel] = []

    def fetch_files(self) -> None:
        """Every model file the parts need: manifest files verified (downloaded when
        missing, licences accepted by config), the user's files checked against their
        role's contract. One ModelError lists every problem."""
        needed = self.row.model_names(self.cfg)
        if needed:
            self._files.update(
                self.store.require(needed, download=True, accept_licence=self.cfg.accept_licence)
            )
        for role, path in _given_files(self.cfg).items():
            name = self.names.get(role)
            if name is None or name in BUILT_IN:
                raise ConfigError(
                    f"--{role}-model applies to a preset whose {role} is an ONNX model; "
                    f"preset '{self.row.name}' uses {name or f'no {role}'}",
                    "use --preset standard or quality, or leave the option out",
                )
            self._files[name] = self.store.user_file(path, self.store.entry(name))

    def load(self, name: str, cuda_graph: bool = False) -> Loaded:
        """The session of manifest model ``name`` (from ``fetch_files``). Batch-first: a
        fixed batch axis is rewritten to a dynamic one when the rewrite gives the same
        outputs (checked once per file, cached), else the part loops; ``cuda_graph`` keeps
        the fixed shapes a CUDA graph needs."""
        entry = self.store.entry(name)
        path = self._files[name]
        options = replace(self.options, cuda_graph=cuda_graph)
        # each model-running part on its own CUDA stream (inactive without CUDA): its torch
        # pre/post-processing and its ONNX Runtime runs are ordered on the stream, with no
        # device-wide synchronisation between parts
        stream = StageStream(f"cuda:{self.cfg.gpu}", enabled=self.cfg.provider != "cpu")
        model = OnnxModel(
            path,
            options,
            model_id=f"{name}:{self.store.hashes.identity(path)}",
            dynamic_batch=not cuda_graph,
            compute_stream=stream if stream.active else None,
            sha256=self.store.hashes.sha256(path),  # hashed once per file by the store
        )
        self._opened.append(model)
        return Loaded(model, entry.contract, entry.part)

    def close_opened(self) -> None:
        for model in self._opened:
            model.close()

    def landmarker(self) -> RefitLandmarker | None:
        name = self.names.get("landmarker")
        if name is None:
            return None
        if name == "dlib-shape68":
            return Dlib68Landmarker(model=self.models.shape_predictor(SHAPE_68))
        loaded = self.load(name)
        cls = {"landmarks68": Pfld68Landmarker, "landmarks106": Landmarker106}.get(loaded.part)
        if cls is None:
            raise ModelError(f"{name} is not a landmarker ({loaded.part})")
        part: RefitLandmarker = _with_contract(cls, loaded)
        return part

    def detectors(self, landmarker: RefitLandmarker | None) -> tuple[Detector, Detector]:
        """The live detector (on the frame shrunk to ``detect_size``) and the one for
        source photos (two passes), sharing one model."""
        name = self.names["detector"]
        box = landmarker.box_for_kps if landmarker is not None else None
        if name == "yunet-2023mar" and "detector" not in _given_files(self.cfg):
            model = bundled_yunet()
            return (
                YuNetDetector(
                    model,
                    max_sides=(self.cfg.detect_size,),
                    start_score=YUNET_START_SCORE,
                    box_for_kps=box,
                ),
                YuNetDetector(
                    model, max_sides=PHOTO_SIDES, start_score=YUNET_START_SCORE, box_for_kps=box
                ),
            )
        loaded = self.load(name)
        if loaded.part != "scrfd":
            raise ModelError(f"{name} is not a detector LiveCam can run ({loaded.part})")
        live = _with_contract(
            ScrfdDetector,
            loaded,
            max_sides=(self.cfg.detect_size,),
            start_score=SCRFD_START_SCORE,
            box_for_kps=box,
        )
        photo = _with_contract(
            ScrfdDetector,
            loaded,
            max_sides=PHOTO_SIDES,
            start_score=SCRFD_START_SCORE,
            box_for_kps=box,
        )
        return live, photo

    def recognizer(self) -> Recognizer:
        name = self.names["recognizer"]
        if name == "dlib-resnet128":
            return DlibDescriptor(model=self.models.resnet())
        loaded = self.load(name)
        part: Recognizer = _with_contract(OnnxRecognizer, loaded)
        return part

    def swapper(self, recognizer: Recognizer) -> Any:
        name = self.names["swapper"]
        if name == "classic-mesh":
            return ClassicSwapper(self.cfg)
        loaded = self.load(name, cuda_graph=self.cfg.cuda_graph)
        cls = {"inswapper": InSwapper, "hyperswap": HyperSwapper}.get(loaded.part)
        if cls is None:
            raise ModelError(f"{name} is not a swapper LiveCam can run ({loaded.part})")
        weighted = self.cfg.identity_weight != 0.5 and getattr(recognizer, "dim", 0) == 512
        return _with_contract(
            cls,
            loaded,
            pixel_boost=self.cfg.pixel_boost,
            identity_weight=self.cfg.identity_weight if weighted else 0.5,
            recognizer=recognizer if weighted else None,
        )

    def enhancer(self) -> FaceEnhancer | None:
        name = self.names.get("enhancer")
        if name is None:
            return None
        loaded = self.load(name)
        return _with_contract(
            FaceEnhancer,
            loaded,
            blend=self.cfg.enhance_blend,
            every=self.cfg.enhance_every,
            fidelity=self.cfg.codeformer_fidelity,
        )

    def masker(self, neural: bool) -> Masker | None:
        if not neural:
            return None
        maskers: list[Masker] = []
        for kind in _masks(self.row, self.cfg):
            if kind == "box":
                maskers.append(BoxMasker(self.cfg.mask_blur, self.cfg.mask_padding))
            elif kind == "ellipse":
                maskers.append(EllipseMasker())
            elif kind == "region":
                maskers.append(_with_contract(RegionMasker, self.load(FACE_PARSER)))
        if self.cfg.mouth_mask > 0:
            maskers.append(MouthMasker(self.cfg.mouth_mask))
        if not maskers:
            return None
        return maskers[0] if len(maskers) == 1 else CombinedMasker(maskers)

    def blender(self, neural: bool) -> Blender:
        if not neural:
            return RoiBlender(self.cfg.blend)
        insightface = "insightface" in _masks(self.row, self.cfg)
        return AffineBlender("insightface" if insightface else "mask")


def build_parts(
    row: PresetRow, cfg: SwapConfig, models: DlibModels, store: ModelStore | None = None
) -> FaceParts:
    """Build every part of ``row`` for ``cfg``: dlib models come from ``models`` (loaded
    once per app), model files from ``store`` (downloaded when missing; licences accepted
    by ``cfg.accept_licence`` or earlier). A missing or bad model is one ModelError naming
    every file, its URL and the folder to put it in."""
    builder = PartBuilder(row, cfg, models, store if store is not None else ModelStore())
    builder.fetch_files()
    built: list[Part] = []
    try:
        landmarker = builder.landmarker()
        detector, photo_detector = builder.detectors(landmarker)
        recognizer = builder.recognizer()
        swapper = builder.swapper(recognizer)
        built += [p for p in (landmarker, detector, photo_detector, recognizer, swapper) if p]
        neural = builder.names["swapper"] != "classic-mesh"
        return FaceParts(
            preset=row.name,
            detector=detector,
            photo_detector=photo_detector,
            landmarker=landmarker,
            recognizer=recognizer,
            swapper=swapper,
            enhancer=builder.enhancer(),
            masker=builder.masker(neural),
            blender=builder.blender(neural),
        )
    except BaseException:
        for part in built:
            part.close()
        builder.close_opened()
        raise


def photo_analyzer(parts: FaceParts, identity: bool = True) -> FaceAnalyzer:
    """The analyzer for source and reference photos made of the preset's own parts (its
    photo detector, landmarker and, with ``identity``, recognizer; no models of its own)."""
    return FaceAnalyzer(
        parts.photo_detector, parts.landmarker, parts.recognizer if identity else None
    )
