"""The swap section of the config (``[swap]``): which face goes where, with which models
and how it is blended. Preset names come from the preset table, swapper and enhancer
names from the model manifest, checked when a config is made (``field_choices``).

``[swap]`` holds the source face and the preset; every other setting is in the section of
the part that reads it (``[swap.detect]``, ``[swap.select]``, ``[swap.classic]``,
``[swap.neural]``, ``[swap.masks]``, ``[swap.runtime]``, ``[swap.reuse]``), and each part's
factory gets only its section. A setting's name is unique across the sections: a change by
name (``SwapConfig.changed(detect_size=800)``, ``--detect-size``, the panel, the console)
finds its section, and a config file that still has the name in ``[swap]`` (the flat
layout before the sections) loads with a one-line warning naming the new place."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Self

from livecam.config.setting import FPS_RANGE, FPS_WORDS, setting
from livecam.config.tomlfile import split_pair
from livecam.config.validation import Validated
from livecam.errors import ConfigError

log = logging.getLogger(__name__)

FaceSelection = Literal["one", "all", "reference"]
ColorTransfer = Literal["lab", "rct", "none"]
BlendMode = Literal["feather", "seamless"]
EyeSource = Literal["own", "source"]  # the classic swap's eyes: the camera's or the photo's
Provider = Literal["auto", "tensorrt", "cuda", "directml", "coreml", "cpu"]
MaskKind = Literal["box", "insightface", "ellipse", "region"]
ConvAlgoSearch = Literal["EXHAUSTIVE", "HEURISTIC", "DEFAULT"]
MemoryStrategy = Literal["low", "balanced", "high"]  # see livecam.runtime.onnx_model.MEMORY
# adaptive quality (livecam.control.quality_ladder): "auto" adapts; a level of the ladder pins it
QualityLevel = Literal[
    "auto", "full", "small-batch", "enhance-half", "no-enhancer", "small-detector", "cpu"
]
# names from their tables (checked against them: field_choices): the preset table
# (livecam.models.presets) and the model manifest (models/manifest.toml)
Preset = str
SwapperModel = str
EnhancerModel = str
ENHANCER_OFF = "none"

MAX_FACE_INDEX = 999  # swap.face_index: faces in one group photo
#: the help heading of the model choices (any preset) and the neural swap's paste-back
NEURAL = "models (any preset) and the neural swap (standard, quality, or a --swapper)"


def model_input(part: str) -> tuple[str, str]:
    """How a model file given for ``part`` is named when it cannot be used, and the fix."""
    return (
        f"the {part} model",
        f"give the path of an ONNX {part} file (`livecam models list` shows the models "
        "LiveCam knows)",
    )


@functools.cache
def preset_names() -> tuple[str, ...]:
    """Every name ``swap.preset`` accepts: ``auto``, the rows of the preset table and their
    aliases."""
    from livecam.models.presets import preset_names as table_names  # loaded when first asked

    return table_names()


def swapper_names() -> tuple[str, ...]:
    """The swappers of the model manifest (``swap.neural.swapper``)."""
    from livecam.models.manifest import names_for  # read once, when first asked

    return names_for("swapper")


def enhancer_names() -> tuple[str, ...]:
    """``none`` (off) and the enhancers of the model manifest (``swap.neural.enhancer``)."""
    from livecam.models.manifest import names_for

    return (ENHANCER_OFF, *names_for("enhancer"))


def _percent4(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"expected 4 percentages like 0,10,0,10, got {text!r}")
    return values


@dataclass(frozen=True)
class DetectSettings(Validated):
    """Finding and following the faces (the detector, the tracker between detections)."""

    SECTION: ClassVar[str] = "swap.detect"
    detect_every: int = setting(
        3,
        option="--detect-every",
        metavar="N",
        range=(1, 60),
        help="run the face detector every N processed frames (dropped camera frames do not "
        "count), track between (default {default})",
    )
    # detector input, long side at most (px): faces from ~1/16 of it
    detect_size: int = setting(
        400,
        option="--detect-size",
        metavar="PX",
        range=(160, 4096),
        allowed="an integer from {min} to {max} (px)",
        help="the detector works on the frame shrunk by a whole factor to at most this long "
        "side (default {default}: faces from ~6%% of the frame width at any resolution; 800 "
        "finds ~3%%, at ~4x the detector's CPU time)",
    )
    # landmark smoothing strength (0 = off; 0.5: One-Euro min cutoff 2 Hz, beta 10; tuned on
    # the talking-head clips with bench/bench_live_face.py: less swim and lag than 1.0 at
    # the same flicker)
    smoothing: float = setting(0.5, range=(0, 10))
    # a camera frame within this many grey levels of the last one (bar stray pixels) repeats
    # it: the same faces, nothing moves (0: exact repeats only)
    repeat_tolerance: float = setting(4.0, range=(0, 64))
    # a model file of your own for a part (checked against the part's contract first)
    detector_model: str | None = setting(
        None,
        path=True,
        input=model_input("detector"),
        option="--detector-model",
        metavar="PATH",
        group=NEURAL,
        help="your own detector ONNX file (checked against the detector's contract first)",
    )


@dataclass(frozen=True)
class SelectSettings(Validated):
    """Which faces are swapped, and with several sources which gets which."""

    SECTION: ClassVar[str] = "swap.select"
    select: FaceSelection = setting(
        "one",
        option="--select",
        help="faces to replace: one (the main face, then that person until they leave), "
        "all, or reference (the person of --reference) (default {default})",
    )
    # with select = "reference": the reference photo
    reference: str | None = setting(
        None,
        path=True,
        input=(
            "the reference photo",
            "give a photo (JPEG, PNG, ...) of the person whose face is replaced",
        ),
        option="--reference",
        metavar="IMG",
        help="with --select reference: whose face",
        applies_with="reference",
    )
    # max embedding distance (None: the model's own)
    reference_threshold: float | None = setting(None, applies_with="reference")
    # several sources: "SOURCE=TARGET" photo pairs; each target person gets its source face
    map: tuple[str, ...] = setting(
        (),
        path=True,
        pairs=True,
        option="--map",
        metavar="SOURCE=TARGET",
        group=NEURAL,
        help="several sources: put the face of photo SOURCE onto the person of photo TARGET "
        "(repeat per person)",
    )

    def _check(self) -> None:
        self._require(
            self.reference_threshold is None or 0 < self.reference_threshold <= 2,
            "reference_threshold",
            "a distance in (0, 2], or unset for the model's default",
        )
        self._require(
            all(split_pair(m) is not None for m in self.map),
            "map",
            "SOURCE=TARGET photo pairs, e.g. me.jpg=alice.jpg",
        )


@dataclass(frozen=True)
class ClassicSettings(Validated):
    """The classic (mesh warp) swap of the lite preset."""

    SECTION: ClassVar[str] = "swap.classic"
    keep_mouth: bool = setting(
        True,
        option="--no-keep-mouth",
        help="paste the source's mouth too instead of keeping the target's",
    )
    eyes: EyeSource = setting(
        "own",
        option="--eyes",
        help="classic swap's eyes: own (the camera's eyes, blinks and gaze in the source's "
        "skin tone) or source (the photo's eyes) (default {default})",
    )
    color: ColorTransfer = setting(
        "lab",
        option="--color",
        help="colour matching: lab (with local light), rct, none (default {default})",
    )
    blend: BlendMode = setting(
        "feather",
        option="--blend",
        help="feather or seamless (Poisson cloning, slower) (default {default})",
    )
    keep_glasses: bool = setting(
        True,
        option="--keep-glasses",
        negatable=True,
        help="keep your own glasses' frames over the swapped face (classic swap; default "
        "on: --no-keep-glasses paints skin over them, and the output then looks a little "
        "more like the photo to a face recogniser)",
    )
    drop_photo_glasses: bool = setting(
        False,
        option="--drop-photo-glasses",
        help="paint the source photo's own glasses out (classic swap: your brows, lids and "
        "skin show where its frames and lenses were, in the photo's skin tone; the output "
        "then looks far less like the photo to a face recogniser)",
    )


@dataclass(frozen=True)
class NeuralSettings(Validated):
    """The neural swappers and enhancers: which models, and how they run them."""

    SECTION: ClassVar[str] = "swap.neural"
    swapper: SwapperModel | None = setting(
        None,
        option="--swapper",
        group=NEURAL,
        choices=swapper_names,
        help="swapper model (default: the preset's)",
    )
    enhancer: EnhancerModel | None = setting(
        None,
        option="--enhancer",
        group=NEURAL,
        choices=enhancer_names,
        help="face enhancer (none: off; default: the preset's)",
    )
    recognizer_model: str | None = setting(
        None,
        path=True,
        input=model_input("recognizer"),
        option="--recognizer-model",
        metavar="PATH",
        group=NEURAL,
        help="your own recognizer ONNX file (checked against the recognizer's contract first)",
    )
    swapper_model: str | None = setting(
        None,
        path=True,
        input=model_input("swapper"),
        option="--swapper-model",
        metavar="PATH",
        group=NEURAL,
        help="your own swapper ONNX file (checked against the swapper's contract first)",
    )
    enhancer_model: str | None = setting(
        None,
        path=True,
        input=model_input("enhancer"),
        option="--enhancer-model",
        metavar="PATH",
        group=NEURAL,
        help="your own enhancer ONNX file (checked against the enhancer's contract first)",
    )
    pixel_boost: int = setting(
        1,
        option="--pixel-boost",
        metavar="K",
        group=NEURAL,
        help="swap at K x the swapper's resolution in K*K tiles (1, 2 or 4; default {default})",
    )
    identity_weight: float = setting(
        0.5,
        option="--identity-weight",
        metavar="W",
        group=NEURAL,
        range=(0, 1),
        help="source identity strength from 0 to 1 (default {default}: as the model gives it)",
    )
    cuda_graph: bool = setting(
        False,
        option="--cuda-graph",
        debug=True,
        help="CUDA: replay the swapper as one captured CUDA graph (fixed shapes: one face per "
        "call)",
    )
    enhance_blend: float = setting(
        0.8,
        option="--enhance-blend",
        metavar="B",
        group=NEURAL,
        range=(0, 1),
        help="enhanced face share 0-1 (default {default})",
    )
    enhance_every: int = setting(
        1,
        option="--enhance-every",
        metavar="N",
        group=NEURAL,
        range=(1, 30),
        help="run the enhancer every N frames and re-paste its last face between (default "
        "{default})",
    )
    codeformer_fidelity: float = setting(
        0.5,
        option="--codeformer-fidelity",
        metavar="F",
        group=NEURAL,
        range=(0, 1),
        help="CodeFormer: 0 sharper, 1 closer to the input (default {default})",
    )

    def _check(self) -> None:
        self._require(self.pixel_boost in (1, 2, 4), "pixel_boost", "1, 2 or 4")


@dataclass(frozen=True)
class MaskSettings(Validated):
    """How the swapped face is laid over the camera's: its masks and opacity."""

    SECTION: ClassVar[str] = "swap.masks"
    masks: tuple[MaskKind, ...] = setting(
        (),
        option="--mask",
        group=NEURAL,
        help="mask of the swapped face (repeat to combine by minimum; default: the preset's)",
    )
    mask_blur: float = setting(
        0.3,
        option="--mask-blur",
        metavar="B",
        group=NEURAL,
        range=(0, 1),
        help="box mask border blur 0-1 (default {default})",
    )
    mask_padding: tuple[int, int, int, int] = setting(
        (0, 0, 0, 0),
        option="--mask-padding",
        parse=_percent4,
        metavar="T,R,B,L",
        group=NEURAL,
        range=(0, 100),
        allowed="four percentages from {min} to {max} (top, right, bottom, left)",
        help="box mask padding in %% of the crop (default {default})",
    )
    mouth_mask: int = setting(
        0,
        option="--mouth-mask",
        metavar="0-100",
        group=NEURAL,
        range=(0, 100),
        help="keep this much of your real mouth (0 = off, 100 = fully yours; default {default})",
    )
    opacity: float = setting(
        1.0,
        option="--opacity",
        metavar="0-1",
        range=(0, 1),
        help="how much of the swapped face shows over yours (default {default}: all of it)",
    )


@dataclass(frozen=True)
class RuntimeSettings(Validated):
    """Where and how the ONNX models run, and the quality ladder that keeps the frame rate."""

    SECTION: ClassVar[str] = "swap.runtime"
    # ONNX presets (lite, standard, quality)
    provider: Provider = setting(
        "auto",
        option="--provider",
        group=NEURAL,
        help="compute provider of the ONNX models (default {default}: the best this machine "
        "has; the one really used is shown)",
    )
    gpu: int = setting(
        0,
        option="--gpu",
        metavar="N",
        group=NEURAL,
        range=(0, 64),
        allowed="a GPU index from {min} to {max}",
        help="which GPU (default {default})",
    )
    threads: int = setting(
        0,
        option="--threads",
        metavar="N",
        group=NEURAL,
        range=(0, 256),
        allowed="0 (automatic) to {max}",
        help="CPU threads of each ONNX model (default {default}: ONNX Runtime's choice)",
    )
    # CPU: ONNX Runtime's threads busy-wait between ops (faster alone)
    spin_wait: bool = False
    cudnn_conv_algo_search: ConvAlgoSearch = setting(
        "EXHAUSTIVE",
        option="--cudnn-algo",
        debug=True,
        help="CUDA: cuDNN convolution algorithm search (default {default}: slow first frame, "
        "fastest after)",
    )
    memory: MemoryStrategy = setting(
        "balanced",
        option="--memory",
        group=NEURAL,
        help="memory strategy: low (exact-size CUDA arena capped per model, one face per "
        "call), balanced (4 faces per call), high (8) (default {default})",
    )
    face_batch: int = setting(  # faces (and tiles) per model call; 0: the memory strategy's
        0, range=(0, 64), allowed="0 (the memory strategy's) to {max}"
    )
    # "auto": step the quality ladder down when the fps stays below target (and back up);
    # a level pins it (the VRAM watchdog still steps below it when memory runs out)
    quality: QualityLevel = setting(
        "full",
        option="--quality",
        group=NEURAL,
        help="auto: step down the quality ladder when the fps stays below --target-fps (and "
        "back up); a level pins it (default {default}; the VRAM watchdog still steps below it "
        "when GPU memory runs out)",
    )
    target_fps: float | None = setting(
        None,
        option="--target-fps",
        metavar="FPS",
        group=NEURAL,
        range=FPS_RANGE,
        allowed=FPS_WORDS + ", or unset for the output rate",
        help="--quality auto: the frame rate to keep (default: the output rate)",
    )
    accept_licence: bool = setting(
        False,
        option="--accept-licence",
        group=NEURAL,
        help="accept the licences of the models this run downloads (else asked once per model)",
    )


@dataclass(frozen=True)
class ReuseSettings(Validated):
    """Crop reuse (neural swappers): a tracked face whose aligned crop barely changed gets
    its last swapped face again (re-pasted where the face is now) instead of a swapper run."""

    SECTION: ClassVar[str] = "swap.reuse"
    reuse: bool = setting(
        True,
        option="--reuse",
        negatable=True,
        group=NEURAL,
        help="give a tracked face its last swapped face again while it barely changes, "
        "re-pasted where the face is now (neural swappers; default on)",
    )
    reuse_similarity: float = setting(
        32.0,
        option="--reuse-similarity",
        metavar="DB",
        group=NEURAL,
        range=(10, 99),
        allowed="a PSNR from {min} to {max} (dB)",
        help="least PSNR of the face's 32x32 aligned crop against the one last swapped for a "
        "reuse (10-99 dB, default {default}; higher reuses less)",
    )
    reuse_max: int = setting(
        3,
        option="--reuse-max",
        metavar="K",
        group=NEURAL,
        range=(0, 30),
        help="reuses in a row before the swapper runs again (0-30, default {default})",
    )


@dataclass(frozen=True)
class SwapConfig(Validated):
    """Which face goes where, and how it is blended (the swap stage): the source face and
    the preset, and one section per part (see the module's text)."""

    SECTION: ClassVar[str] = "swap"
    face: str | None = setting(
        None,
        path=True,
        input=("the source face photo", "give a photo (JPEG, PNG, ...) of the face to swap in"),
        option="--face",
        metavar="IMG",
        help="source face image to swap in",
    )
    face_index: int | None = setting(
        None,
        option="--face-index",
        metavar="N",
        range=(0, MAX_FACE_INDEX),
        help="which face of --face when it holds several (0 = largest)",
    )
    preset: Preset = setting(
        "lite",
        option="--preset",
        choices=preset_names,
        help="model set (default {default}: bundled, no download; offline is another name for "
        "it; standard, quality: neural swappers; auto: the best whose models are present)",
    )
    detect: DetectSettings = field(default_factory=DetectSettings)
    select: SelectSettings = field(default_factory=SelectSettings)
    classic: ClassicSettings = field(default_factory=ClassicSettings)
    neural: NeuralSettings = field(default_factory=NeuralSettings)
    masks: MaskSettings = field(default_factory=MaskSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    reuse: ReuseSettings = field(default_factory=ReuseSettings)

    def changed(self, **changes: Any) -> Self:
        """A copy with settings changed by name (``detect_size=800``: each name is found in
        its section). Validated like any config; an unknown name is a ConfigError listing
        the settings."""
        where = setting_sections()
        unknown = sorted(k for k in changes if k not in where)
        if unknown:
            raise ConfigError(
                f"unknown swap setting(s) {', '.join(map(repr, unknown))}",
                f"settings: {', '.join(where)}",
            )
        own: dict[str, Any] = {k: v for k, v in changes.items() if where[k] is None}
        by_section: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            section = where[name]
            if section is not None:
                by_section.setdefault(section, {})[name] = value
        for section, values in by_section.items():
            own[section] = replace(own.get(section, getattr(self, section)), **values)
        return replace(self, **own)

    @classmethod
    def of(cls, **settings: Any) -> SwapConfig:
        """The defaults with ``settings`` changed by name (see ``changed``)."""
        return cls().changed(**settings)

    def value(self, name: str) -> Any:
        """The setting ``name`` (``detect_size``), from whichever section holds it."""
        section = setting_sections()[name]
        return getattr(self if section is None else getattr(self, section), name)

    @classmethod
    def _from_table(cls, data: dict[str, Any], path: str) -> dict[str, Any]:
        """A ``[swap]`` table of the flat layout (every setting in ``[swap]``) with each
        setting moved into its section, said in one warning line."""
        where = setting_sections()
        moved = [
            k
            for k, v in data.items()
            if where.get(k) is not None and not (k in SECTIONS and isinstance(v, dict))
        ]
        if not moved:
            return data
        table = {k: v for k, v in data.items() if k not in moved}
        for name in moved:
            section = where[name]
            assert section is not None
            inner = table.get(section, {})
            if isinstance(inner, dict):  # else: a bad section value, said by its check
                table[section] = {name: data[name], **inner}  # the section's own one wins
        log.warning(
            "config: [%s] settings moved into sections: %s; the old places still load "
            "(--save-config writes the new ones)",
            path,
            ", ".join(f"{path}.{k} is now {path}.{where[k]}.{k}" for k in moved),
        )
        return table


#: the sections of ``SwapConfig``, by name
SECTIONS: Mapping[str, type[Any]] = MappingProxyType(
    {
        "detect": DetectSettings,
        "select": SelectSettings,
        "classic": ClassicSettings,
        "neural": NeuralSettings,
        "masks": MaskSettings,
        "runtime": RuntimeSettings,
        "reuse": ReuseSettings,
    }
)


@functools.cache
def setting_sections() -> Mapping[str, str | None]:
    """Setting name -> the ``SwapConfig`` section holding it (None: ``[swap]`` itself),
    from the dataclass fields; every name is unique across the sections."""
    found: dict[str, str | None] = {}
    for f in dataclasses.fields(SwapConfig):
        if f.name in SECTIONS:
            for inner in dataclasses.fields(SECTIONS[f.name]):
                assert inner.name not in found, f"swap setting {inner.name} twice"
                found[inner.name] = f.name
        else:
            found[f.name] = None
    return MappingProxyType(found)
