"""The preset table: which parts make each preset.

One frozen ``PresetRow`` per preset names its parts by role. A name is a model of
``models/manifest.toml`` (whose entry says which part kind runs it, with which contract,
and where its weights come from: downloaded or bundled with LiveCam)
or, for a part without weights, its part kind (``classic-mesh``). ``resolve_preset`` turns
a config value (``auto`` included) into a row; ``PresetRow.parts_for`` and
``PresetRow.model_names`` say which parts and which model files a row needs under a swap
config. Building the parts is ``livecam.face.build``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Protocol

from livecam.errors import ConfigError
from livecam.models.manifest import ModelEntry, default_manifest
from livecam.models.store import ModelStore

log = logging.getLogger(__name__)

AUTO = "auto"
# The landmarker added for the mouth mask when a preset has none (106 points, lips included).
MOUTH_LANDMARKER = "2d106det"
# The face parser of the region mask.
FACE_PARSER = "bisenet-resnet34"
Manifest = Mapping[str, ModelEntry]


class NeuralChoices(Protocol):
    """The neural section's choices of models (``config.swap.NeuralSettings``)."""

    @property
    def swapper(self) -> str | None: ...
    @property
    def enhancer(self) -> str | None: ...
    @property
    def recognizer_model(self) -> str | None: ...
    @property
    def swapper_model(self) -> str | None: ...
    @property
    def enhancer_model(self) -> str | None: ...


class MaskChoices(Protocol):
    """The masks section's choices (``config.swap.MaskSettings``)."""

    @property
    def mouth_mask(self) -> int: ...
    @property
    def masks(self) -> tuple[str, ...]: ...


class DetectChoices(Protocol):
    """The detect section's model choice (``config.swap.DetectSettings``)."""

    @property
    def detector_model(self) -> str | None: ...


class SwapChoices(Protocol):
    """The swap settings that change which parts a preset is made of (``SwapConfig`` has
    them; the table reads them without importing the config, which imports the table for
    its preset names)."""

    @property
    def neural(self) -> NeuralChoices: ...
    @property
    def masks(self) -> MaskChoices: ...
    @property
    def detect(self) -> DetectChoices: ...


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

    def parts_for(
        self, cfg: SwapChoices | None = None, manifest: Manifest | None = None
    ) -> dict[str, str]:
        """Role -> part name of every part the preset has under ``cfg`` (its swapper,
        enhancer and mouth-mask choices applied)."""
        roles = [f.name for f in fields(self) if f.name not in ("name", "needs_download", "masks")]
        names = {role: getattr(self, role) for role in roles}
        if cfg is not None:
            names["swapper"] = cfg.neural.swapper or self.swapper
            if cfg.neural.enhancer is not None:
                names["enhancer"] = None if cfg.neural.enhancer == "none" else cfg.neural.enhancer
            neural = is_neural(names["swapper"], manifest)
            if neural and cfg.masks.mouth_mask > 0 and names["landmarker"] is None:
                names["landmarker"] = MOUTH_LANDMARKER
        return {role: name for role, name in names.items() if isinstance(name, str)}

    def masks_for(
        self,
        cfg: SwapChoices | None,
        manifest: Manifest | None = None,
        *,
        swapper: str | None = None,
    ) -> tuple[str, ...]:
        """The masks of the swapped face: the config's, else the row's, else (a neural
        swapper chosen for a classic preset) insightface's paste-back edge. ``swapper``:
        the swapper under ``cfg`` when the caller already has it (``parts_for``)."""
        if cfg is not None and cfg.masks.masks:
            return cfg.masks.masks
        chosen = swapper if swapper is not None else self.parts_for(cfg, manifest)["swapper"]
        if self.masks or not is_neural(chosen, manifest):
            return self.masks
        return ("insightface",)

    def model_names(
        self, cfg: SwapChoices | None = None, manifest: Manifest | None = None
    ) -> list[str]:
        """The manifest models this preset needs downloaded under ``cfg`` (model files
        given by path replace theirs; bundled files need none); a neural swap's
        region mask's face parser included."""
        entries = default_manifest() if manifest is None else manifest
        given = given_files(cfg)
        parts = self.parts_for(cfg, entries)
        names = [
            name
            for role, name in parts.items()
            if role not in given and name in entries and entries[name].downloaded
        ]
        swapper = parts["swapper"]
        if is_neural(swapper, entries) and "region" in self.masks_for(
            cfg, entries, swapper=swapper
        ):
            names.append(FACE_PARSER)
        return names


def is_neural(swapper: str, manifest: Manifest | None = None) -> bool:
    """Whether ``swapper`` is a model of the manifest (a neural swapper, pasted back
    through masks and the affine blender); a part without weights (the classic mesh
    swapper) makes its own mask."""
    return swapper in (default_manifest() if manifest is None else manifest)


PRESETS: Mapping[str, PresetRow] = MappingProxyType(
    {
        row.name: row
        for row in (
            PresetRow(
                name="lite",
                detector="yunet-2023mar",
                landmarker="slim-68",  # ~15 ms a face (PFLD: ~180 ms, a little closer)
                recognizer="mobilefacenet",
                swapper="classic-mesh",
                enhancer=None,
                masks=(),  # the classic swapper makes its own feathered, skin-gated mask
                needs_download="no",  # the three ONNX files ship in livecam/assets
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

AUTO_ORDER = ("quality", "standard", "lite")
#: the default preset: bundled with LiveCam, nothing to download
DEFAULT_PRESET = "lite"
#: other names of a row (``offline``, the bundled CPU preset's name before it was lite)
ALIASES: Mapping[str, str] = MappingProxyType({"offline": DEFAULT_PRESET})


def preset_names() -> tuple[str, ...]:
    """Every name ``swap.preset`` accepts: ``auto``, the rows in table order, the aliases."""
    return (AUTO, *PRESETS, *ALIASES)


def preset_row(name: str) -> PresetRow | None:
    """The row of ``name`` (a row's name or an alias), None for ``auto`` or an unknown name."""
    return PRESETS.get(ALIASES.get(name, name))


def preset_model_names(preset: str) -> list[str]:
    """The manifest models ``preset`` needs with the default settings (``livecam models
    fetch PRESET``); a KeyError for a name that is not a row or an alias."""
    return PRESETS[ALIASES.get(preset, preset)].model_names()


def models_present(row: PresetRow, store: ModelStore, cfg: SwapChoices | None = None) -> bool:
    """Whether every model file ``row`` needs is on this machine (no download)."""
    return all(store.locate(name) is not None for name in row.model_names(cfg, store.manifest))


def resolve_preset(
    name: str, store: ModelStore | None = None, cfg: SwapChoices | None = None
) -> PresetRow:
    """The row for ``name``. ``auto``: the best preset of ``AUTO_ORDER`` whose models are
    all present in ``store`` (lite when there is no store); an alias gives its row. An
    unknown name is a ConfigError naming the allowed ones."""
    if name == AUTO:
        manifest = store.manifest if store is not None else None
        for candidate in AUTO_ORDER:
            best = PRESETS[candidate]
            present = store is not None and models_present(best, store, cfg)
            if not best.model_names(cfg, manifest) or present:
                log.info("preset auto: %s (its models are present)", candidate)
                return best
    row = preset_row(name)
    if row is None:
        raise ConfigError(f"unknown preset {name!r}", f"use one of {', '.join(preset_names())}")
    return row


def given_files(cfg: SwapChoices | None) -> dict[str, str]:
    """Role -> model file the user gave by path."""
    if cfg is None:
        return {}
    given = {
        "detector": cfg.detect.detector_model,
        "recognizer": cfg.neural.recognizer_model,
        "swapper": cfg.neural.swapper_model,
        "enhancer": cfg.neural.enhancer_model,
    }
    return {role: path for role, path in given.items() if path is not None}
