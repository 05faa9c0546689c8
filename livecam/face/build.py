"""Building a preset's parts in one pass, from one part-kind -> factory registry.

``build_parts`` reads the preset row (``livecam.models.presets``) and the manifest once: every
part name of the row is a manifest model, whose ``part`` field names the kind that runs it
(``KINDS``), or a kind without weights (``classic-mesh``). It then resolves every file once
(one ``ModelStore.require`` for the model folders' files, the user's files checked against
their entry's contract), opens each model's session, and calls each kind's factory with
only that part's section of the swap config, which it hands to the part whole (the part
reads its options there: ``tests/face/test_part_sections.py``). No model name is
special-cased here: a new model of a known kind is a manifest row; a new kind is one
factory and one ``KINDS`` row.

The manifest's ``[models.NAME.contract]`` holds the part's constructor keywords and
nothing else: ``contract_of`` raises on a key the part does not take (a typo in the
manifest fails the build instead of being ignored).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from livecam.config.swap import (
    ClassicSettings,
    DetectSettings,
    MaskSettings,
    NeuralSettings,
    SwapConfig,
)
from livecam.config.validation import Validated
from livecam.errors import ConfigError, ModelError
from livecam.face.detect.scrfd import START_SCORE as SCRFD_START_SCORE
from livecam.face.detect.scrfd import ScrfdDetector
from livecam.face.detect.yunet import YuNetDetector, YuNetModel
from livecam.face.enhance import FaceEnhancer
from livecam.face.identity.onnx import OnnxRecognizer
from livecam.face.landmarks.onnx import Landmarker106, Pfld68Landmarker
from livecam.face.masks import BoxMasker, CombinedMasker, EllipseMasker, MouthMasker, RegionMasker
from livecam.face.parts import Blender, Detector, FaceParts, Masker, Part, Recognizer, Swapper
from livecam.face.paste.blenders import AffineBlender, RoiBlender
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.swap.classic import ClassicSwapper
from livecam.face.swap.neural import HyperSwapper, InSwapper, NeuralSwapper
from livecam.models.manifest import ModelEntry
from livecam.models.presets import FACE_PARSER, PresetRow, given_files
from livecam.models.store import ModelStore
from livecam.runtime.cuda import StageStream
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions

# Source photos: two detector passes, long side 1024 px (small faces: a group photo's
# ~40 px faces) and 400 px (a face filling a selfie); any photo size, faces merged.
PHOTO_SIDES = (1024, 400)
# YuNet scores at or above this start a track or are a photo's face. Real faces at 5-80 %
# of the frame width score 0.83-0.95 on the test portraits (dark, blurred, noisy or tilted
# 20 deg included); the best false face seen, trees in a painting, 0.82. Between the
# threshold (0.6) and this, a detection only confirms a face already tracked.
YUNET_START_SCORE = 0.85
#: the recognizer the swap check judges identity with, whatever the preset: the bundled
#: MobileFaceNet, which ships with every install and is no swapper's training target
#: (inswapper and hyperswap were trained against ArcFace, which would favour them)
JUDGE_MODEL = "mobilefacenet"
JUDGE_NAME = "MobileFaceNet"
#: the roles built from the registry, in build order (the detector needs the landmarker's
#: box convention, the swapper the recognizer)
ROLES = ("landmarker", "detector", "recognizer", "swapper", "enhancer")


def contract_of(cls: Callable[..., Any], entry: ModelEntry) -> Mapping[str, Any]:
    """``entry``'s manifest contract, the keywords ``cls`` is built with. A contract key
    ``cls`` does not take is a ModelError naming the entry and the keys it takes (facts
    about the graph belong in ``[models.NAME.facts]``)."""
    accepted = inspect.signature(cls).parameters
    unknown = [k for k in entry.contract if k not in accepted]
    if unknown:
        takes = ", ".join(p for p in accepted if p not in ("self", "model", "model_path"))
        raise ModelError(
            f"model manifest: models.{entry.name}.contract has {', '.join(unknown)}, which "
            f"{getattr(cls, '__name__', cls)} (part {entry.part!r}) does not take",
            f"it takes {takes}; put facts about the graph in [models.{entry.name}.facts]",
        )
    return entry.contract


def with_contract(cls: Callable[..., Any], entry: ModelEntry, *args: Any, **options: Any) -> Any:
    """``cls(*args, **contract, **options)`` with ``entry``'s manifest contract
    (``contract_of``)."""
    return cls(*args, **contract_of(cls, entry), **options)


@dataclass(frozen=True)
class Weights:
    """One part's model as its factory gets it: the manifest ``entry``, its resolved file
    (``path``) and how its ONNX Runtime session is opened (``session``)."""

    entry: ModelEntry
    path: Path | None
    opener: Callable[[ModelEntry, Path, bool], OnnxModel]

    def session(self, cuda_graph: bool = False) -> OnnxModel:
        """The model's session (see ``PartsBuilder.open``)."""
        if self.path is None:
            raise ModelError(f"{self.entry.name} has no model file for ONNX Runtime")
        return self.opener(self.entry, self.path, cuda_graph)


Built = Mapping[str, Any]  # role -> the part built so far


@dataclass(frozen=True)
class PartKind:
    """One kind of part: its ``role`` (the manifest task), the factory ``make(weights,
    section, built)`` (weights None for a kind without any), which gets the part's
    ``section`` of the swap config whole (only that section: ``SwapConfig.detect``, ...;
    None for a part without options) and the parts built before it, whether it runs on
    ONNX Runtime (``onnx``: then a model file of the user's may replace its model) and
    whether it has weights. A factory reads no setting of the section: it hands the
    section to the part (``ClassicSwapper(classic)``, ``InSwapper.from_section``, ...),
    so a new option is its field and the part's use of it
    (tests/face/test_part_sections.py holds this)."""

    role: str
    make: Callable[[Any, Any, Built], Any]
    section: Callable[[SwapConfig], Validated | None] = lambda cfg: None
    onnx: bool = True
    weights: bool = True


# ---------------------------------------------------------------- factories


def _detector(
    cls: type[YuNetDetector | ScrfdDetector], start_score: float, yunet: bool = False
) -> Callable[[Weights, DetectSettings, Built], tuple[Detector, Detector]]:
    """The factory of a detector: the live one (its ``[swap.detect]`` section) and the one
    for source photos (two passes, ``PHOTO_SIDES``), sharing one model's bytes."""

    def make(w: Weights, detect: DetectSettings, built: Built) -> tuple[Detector, Detector]:
        model: Any = YuNetModel.read(w.path) if yunet and w.path is not None else w.session()
        landmarker = built.get("landmarker")
        keywords = {
            "start_score": start_score,
            "box_for_kps": landmarker.box_for_kps if landmarker is not None else None,
            **contract_of(cls, w.entry),
        }
        live: Detector = cls.from_section(model, detect, **keywords)
        photo: Detector = cls(model, max_sides=PHOTO_SIDES, **keywords)
        return live, photo

    return make


def _onnx_part(cls: Callable[..., Any]) -> Callable[[Weights, None, Built], Any]:
    """The factory of a part without options whose model is its first argument."""

    def make(w: Weights, section: None, built: Built) -> Any:
        return with_contract(cls, w.entry, w.session())

    return make


def _neural_swapper(cls: type[NeuralSwapper]) -> Callable[[Weights, NeuralSettings, Built], Any]:
    def make(w: Weights, neural: NeuralSettings, built: Built) -> NeuralSwapper:
        contract = contract_of(cls, w.entry)
        return cls.from_section(w.session, neural, built["recognizer"], **contract)

    return make


def _classic(w: None, classic: ClassicSettings, built: Built) -> ClassicSwapper:
    return ClassicSwapper(classic)


def _enhancer(w: Weights, neural: NeuralSettings, built: Built) -> FaceEnhancer:
    contract = contract_of(FaceEnhancer, w.entry)
    return FaceEnhancer.from_section(w.session(), neural, **contract)


def _detect(cfg: SwapConfig) -> DetectSettings:
    return cfg.detect


def _neural(cfg: SwapConfig) -> NeuralSettings:
    return cfg.neural


def _classic_section(cfg: SwapConfig) -> ClassicSettings:
    return cfg.classic


_ENHANCER = PartKind("enhancer", _enhancer, _neural)

KINDS: Mapping[str, PartKind] = MappingProxyType(
    {
        "yunet": PartKind(
            "detector", _detector(YuNetDetector, YUNET_START_SCORE, yunet=True), _detect, onnx=False
        ),
        "scrfd": PartKind("detector", _detector(ScrfdDetector, SCRFD_START_SCORE), _detect),
        "landmarks68": PartKind("landmarker", _onnx_part(Pfld68Landmarker)),
        "landmarks106": PartKind("landmarker", _onnx_part(Landmarker106)),
        "arcface": PartKind("recognizer", _onnx_part(OnnxRecognizer)),
        "inswapper": PartKind("swapper", _neural_swapper(InSwapper), _neural),
        "hyperswap": PartKind("swapper", _neural_swapper(HyperSwapper), _neural),
        "classic-mesh": PartKind("swapper", _classic, _classic_section, onnx=False, weights=False),
        "gfpgan": _ENHANCER,
        "codeformer": _ENHANCER,
        "gpen": _ENHANCER,
        "bisenet": PartKind("masker", _onnx_part(RegionMasker)),
    }
)
"""Part kind (the manifest's ``part`` field; for a part without weights, its name in the
preset table) -> how it is built."""

# the parts every neural swap pastes with: masks without weights, by mask name
_PLAIN_MASKS: Mapping[str, Callable[[MaskSettings], Masker]] = MappingProxyType(
    {"box": BoxMasker.from_section, "ellipse": EllipseMasker.from_section}
)


# ---------------------------------------------------------------- the build


@dataclass(frozen=True)
class Planned:
    """One part of the plan: its name, its kind and its manifest entry (None: a kind
    without weights)."""

    name: str
    kind: PartKind
    entry: ModelEntry | None


class PartsBuilder:
    """One build of one preset row for one swap config: the plan (each role's name, kind
    and entry, read once), the files (resolved once), the sessions it opened."""

    def __init__(self, row: PresetRow, cfg: SwapConfig, store: ModelStore):
        self.row = row
        self.cfg = cfg
        self.store = store
        manifest = store.manifest
        names = row.parts_for(cfg, manifest)
        self.plan = {role: self._planned(role, name) for role, name in names.items()}
        self.only: str | None = None  # build_only: the one role built
        self.masks = row.masks_for(cfg, manifest, swapper=names["swapper"])
        self.neural = self.plan["swapper"].kind.weights
        if self.neural and "region" in self.masks:
            self.plan["masker"] = self._planned("masker", FACE_PARSER)
        self.runtime = RuntimeOptions.from_section(cfg.runtime)
        self.files: dict[str, Path] = {}
        self.opened: list[OnnxModel] = []

    def _planned(self, role: str, name: str) -> Planned:
        entry = self.store.manifest.get(name)
        kind = KINDS.get(entry.part if entry is not None else name)
        if kind is None or (entry is None) == kind.weights:
            what = f"its part kind {entry.part!r}" if entry is not None else "no model or part"
            raise ModelError(
                f"{name} ({role}) has {what} LiveCam can build",
                f"part kinds: {', '.join(KINDS)}; models: see models/manifest.toml",
            )
        if kind.role != role:
            raise ModelError(f"{name} is not a {role} LiveCam can run ({kind.role})")
        return Planned(name, kind, entry)

    def resolve_files(self) -> None:
        """Every model file once: the model folders' files verified (downloaded when
        missing, licences accepted by config), the user's files checked against their
        entry's contract. One ModelError lists every missing or bad file."""
        given = {r: f for r, f in given_files(self.cfg).items() if self.only in (None, r)}
        for role in given:
            planned = self.plan.get(role)
            if planned is None or not planned.kind.onnx:
                name = planned.name if planned is not None else f"no {role}"
                raise ConfigError(
                    f"--{role}-model applies to a preset whose {role} is an ONNX model; "
                    f"preset '{self.row.name}' uses {name}",
                    "use --preset standard or quality, or leave the option out",
                )
        needed = [
            p.name for role, p in self.plan.items() if p.entry is not None and role not in given
        ] + [JUDGE_MODEL]
        if needed:
            self.files.update(
                self.store.require(
                    needed,
                    download=True,
                    accept_licence=self.cfg.runtime.accept_licence,
                    replace_bad=False,  # a corrupt file is said, not downloaded over
                )
            )
        for role, path in given.items():
            entry = self.plan[role].entry
            assert entry is not None
            self.files[entry.name] = self.store.user_file(path, entry)

    def open(self, entry: ModelEntry, path: Path, cuda_graph: bool) -> OnnxModel:
        """The session of ``entry``'s file. Batch-first: a fixed batch axis is rewritten
        to a dynamic one when the rewrite gives the same outputs (checked once per file,
        cached), else the part loops; ``cuda_graph`` keeps the fixed shapes a CUDA graph
        needs."""
        options = replace(self.runtime, cuda_graph=cuda_graph)
        # each model-running part on its own CUDA stream (inactive without CUDA): its torch
        # pre/post-processing and its ONNX Runtime runs are ordered on the stream, with no
        # device-wide synchronisation between parts
        stream = StageStream(
            f"cuda:{self.cfg.runtime.gpu}", enabled=self.cfg.runtime.provider != "cpu"
        )
        model = OnnxModel(
            path,
            options,
            model_id=f"{entry.name}:{self.store.hashes.identity(path)}",
            dynamic_batch=not cuda_graph,
            compute_stream=stream if stream.active else None,
            sha256=self.store.hashes.sha256(path),  # hashed once per file by the store
        )
        self.opened.append(model)
        return model

    def part(self, role: str, built: Built) -> Any:
        """The part of ``role`` (None when the preset has none), with its own options."""
        planned = self.plan.get(role)
        if planned is None:
            return None
        weights = None
        if planned.entry is not None:
            path = self.files.get(planned.name)
            weights = Weights(planned.entry, path, self.open)
        return planned.kind.make(weights, planned.kind.section(self.cfg), built)

    def judge(self, built: Built) -> Recognizer:
        """The swap check's recognizer (``JUDGE_MODEL``): the preset's own when that is it
        (and not a file of the user's), else one of its own on the CPU with one thread (it
        runs about once a second, off the inference thread)."""
        planned = self.plan.get("recognizer")
        own = built.get("recognizer")
        if (
            planned is not None
            and planned.name == JUDGE_MODEL
            and self.cfg.neural.recognizer_model is None
        ):
            assert own is not None
            judge: Recognizer = own
            return judge
        entry = self.store.manifest.get(JUDGE_MODEL)
        assert entry is not None
        model = OnnxModel(self.files[JUDGE_MODEL], RuntimeOptions(provider="cpu", threads=1))
        self.opened.append(model)
        judge = with_contract(OnnxRecognizer, entry, model)
        return judge

    def masker(self, built: Built) -> Masker | None:
        if not self.neural:
            return None
        maskers: list[Masker] = []
        for kind in self.masks:
            if kind in _PLAIN_MASKS:
                maskers.append(_PLAIN_MASKS[kind](self.cfg.masks))
            elif kind == "region":
                maskers.append(self.part("masker", built))
        mouth = MouthMasker.from_section(self.cfg.masks)
        if mouth is not None:
            maskers.append(mouth)
        if not maskers:
            return None
        return maskers[0] if len(maskers) == 1 else CombinedMasker(maskers)

    def blender(self) -> Blender:
        if not self.neural:
            return RoiBlender.from_section(self.cfg.classic)
        return AffineBlender("insightface" if "insightface" in self.masks else "mask")

    def close_opened(self) -> None:
        for model in self.opened:
            model.close()


def build_parts(row: PresetRow, cfg: SwapConfig, store: ModelStore | None = None) -> FaceParts:
    """Build every part of ``row`` for ``cfg``, model files from ``store`` (bundled ones
    checked, others downloaded when missing; licences accepted by ``cfg.accept_licence`` or
    earlier). A missing or bad model is one ModelError naming every file, its URL and the
    folder to put it in."""
    builder = PartsBuilder(row, cfg, store if store is not None else ModelStore())
    builder.resolve_files()
    built: dict[str, Any] = {}
    try:
        for role in ROLES:
            built[role] = builder.part(role, built)
        detector, photo_detector = built["detector"]
        recognizer: Recognizer = built["recognizer"]
        return FaceParts(
            preset=row.name,
            detector=detector,
            photo_detector=photo_detector,
            landmarker=built["landmarker"],
            recognizer=recognizer,
            judge=builder.judge(built),
            swapper=built["swapper"],
            enhancer=built["enhancer"],
            masker=builder.masker(built),
            blender=builder.blender(),
        )
    except BaseException:
        for part in _parts(built):
            part.close()
        builder.close_opened()
        raise


def build_swapper(row: PresetRow, cfg: SwapConfig, store: ModelStore | None = None) -> Swapper[Any]:
    """Only the swapper of ``row`` for ``cfg`` (a swap server needs no detector or
    recognizer): its file resolved like ``build_parts`` does."""
    swapper: Swapper[Any] = build_only("swapper", row, cfg, store)
    return swapper


def build_enhancer(row: PresetRow, cfg: SwapConfig, store: ModelStore | None = None) -> Any:
    """Only the enhancer of ``row`` for ``cfg`` (None: it has none), as ``build_swapper``."""
    return build_only("enhancer", row, cfg, store)


def build_only(role: str, row: PresetRow, cfg: SwapConfig, store: ModelStore | None) -> Any:
    """The part of ``role`` alone (None: the row has none under ``cfg``), its file resolved
    like ``build_parts`` does."""
    builder = PartsBuilder(row, cfg, store if store is not None else ModelStore())
    if role not in builder.plan:
        return None
    builder.plan = {role: builder.plan[role]}
    builder.only = role
    builder.resolve_files()
    try:
        return builder.part(role, {"recognizer": None})
    except BaseException:
        builder.close_opened()
        raise


def _parts(built: Built) -> list[Part]:
    out: list[Part] = []
    for value in built.values():
        for part in value if isinstance(value, tuple) else (value,):
            if part is not None:
                out.append(part)
    return out


def photo_analyzer(parts: FaceParts, identity: bool = True) -> FaceAnalyzer:
    """The analyzer for source and reference photos made of the preset's own parts (its
    photo detector, landmarker and, with ``identity``, recognizer; no models of its own)."""
    return FaceAnalyzer(
        parts.photo_detector, parts.landmarker, parts.recognizer if identity else None
    )
