"""Configuration: a tree of frozen dataclasses, loadable from and savable to TOML.

Every field is validated where it is created: a bad value raises ConfigError naming the
field (``section.field``) and the allowed values. Nothing is silently reset.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import stat
import tomllib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints

from livecam.control.keycombo import ALLOWED as KEYCOMBO_ALLOWED
from livecam.control.keycombo import canonical, find_conflict
from livecam.errors import ConfigError

CameraBackend = Literal["auto", "v4l2", "dshow", "msmf", "avfoundation", "gstreamer", "ffmpeg"]
StageName = Literal["passthrough", "facebox", "swap"]
Preset = Literal["offline", "lite", "standard", "quality", "auto"]
FaceSelection = Literal["one", "all", "reference"]
ColorTransfer = Literal["lab", "rct", "none"]
BlendMode = Literal["feather", "seamless"]
Provider = Literal["auto", "tensorrt", "cuda", "directml", "coreml", "cpu"]
SwapperModel = Literal[
    "inswapper-128",
    "inswapper-128-fp16",
    "hyperswap-1a-256",
    "hyperswap-1b-256",
    "hyperswap-1c-256",
]
EnhancerModel = Literal["none", "gfpgan-1.4", "codeformer", "gpen-bfr-256", "gpen-bfr-512"]
MaskKind = Literal["box", "insightface", "ellipse", "region"]
LabelPosition = Literal["top-left", "top-right", "bottom-left", "bottom-right"]
ConvAlgoSearch = Literal["EXHAUSTIVE", "HEURISTIC", "DEFAULT"]
MemoryStrategy = Literal["low", "balanced", "high"]  # see livecam.runtime.onnx_model.MEMORY
# adaptive quality (livecam.control.quality_ladder): "auto" adapts; a level of the ladder pins it
QualityLevel = Literal[
    "auto", "full", "small-batch", "enhance-half", "no-enhancer", "small-detector", "cpu"
]

MIN_FPS, MAX_FPS = 1, 240  # capture and output rates (frames per second)
MAX_FRAMES = 10**9  # run.frames: about a year at 30 fps
MAX_FACE_INDEX = 999  # swap.face_index: faces in one group photo
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few hundred bytes
SINK_NAMES = ("virtualcam", "window", "auto", "null")  # every other sink spec is a file


def source_file(spec: str) -> str | None:
    """The file a source spec names, or None for a camera, a screen, a device, a stream
    URL or the synthetic source."""
    text = spec.strip()
    kind = text.partition(":")[0]
    special = kind in ("camera", "screen") or text == "synthetic" or text.isdigit()
    return None if special or "://" in text or text.startswith("/dev/") else text


def sink_file(spec: str) -> str | None:
    """The file a sink spec names (a recording or an image), or None for a named sink."""
    return None if spec.strip().lower() in SINK_NAMES else spec


def _any_file(value: str) -> str | None:
    return value


def path_field(default: Any, which: Callable[[str], str | None] = _any_file) -> Any:
    """A config field holding a path (or, for specs, maybe a path: ``which`` says which
    values are files). Such paths are relative to the config file they were loaded from."""
    return field(default=default, metadata={"path": which})


def pair_paths_field(default: Any) -> Any:
    """A config field of ``A=B`` path pairs (both relative to the config file)."""
    return field(default=default, metadata={"path": _any_file, "pairs": True})


def split_pair(value: str) -> tuple[str, str] | None:
    """``"a.jpg=b.jpg"`` -> ``("a.jpg", "b.jpg")``; None when it is not two non-blank paths."""
    left, sep, right = value.partition("=")
    return (left.strip(), right.strip()) if sep and left.strip() and right.strip() else None


def _rebase(value: str, base: Path) -> str:
    """``value`` as an absolute path, a relative one taken from ``base`` (a blank value is
    left as it is: it names no file)."""
    if not value.strip():
        return value
    expanded = os.path.expanduser(value)
    return expanded if os.path.isabs(expanded) else os.path.join(base, expanded)


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(hint))
    if origin in (typing.Union, types.UnionType):
        named = [_type_name(a) for a in get_args(hint) if a is not type(None)]
        optional = len(named) < len(get_args(hint))  # TOML has no none: leave the field out
        return " or ".join(named) + (" (or leave the field out)" if optional else "")
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of ({_type_name(args[0])})"
        return f"list of {len(args)} values"
    if hint is bool:
        return "true or false"
    return "none" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _coerce(path: str, hint: Any, value: Any) -> Any:
    """Return ``value`` converted to ``hint`` or raise ConfigError naming ``path``."""
    origin = get_origin(hint)
    bad = ConfigError.bad_value(path, value, _type_name(hint))
    if origin in (typing.Union, types.UnionType):
        for arg in get_args(hint):
            try:
                return _coerce(path, arg, value)
            except ConfigError:
                continue
        raise bad
    if hint is type(None):
        if value is None:
            return None
        raise bad
    if origin is Literal:
        if value in get_args(hint):
            return value
        raise bad
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise bad
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(f"{path}[{i}]", args[0], v) for i, v in enumerate(value))
        if len(value) != len(args):
            raise bad
        return tuple(_coerce(f"{path}[{i}]", a, v) for i, (a, v) in enumerate(zip(args, value)))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise bad
    if hint is str:
        if isinstance(value, str):
            return value
        raise bad
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, hint):
            return value
        if isinstance(value, dict):
            return _from_dict(hint, value, path)
        raise bad
    raise TypeError(f"unsupported config type {hint!r} at {path}")


def _from_dict(cls: type[Any], data: dict[str, Any], path: str) -> Any:
    hints = get_type_hints(cls)
    names = [f.name for f in fields(cls) if f.init]
    unknown = sorted(set(data) - set(names))
    if unknown:
        where = f"[{path}]" if path else "the top level"
        raise ConfigError(
            f"unknown config field(s) {', '.join(map(repr, unknown))} in {where}",
            f"allowed fields: {', '.join(names)}",
        )
    kwargs = {k: _coerce(f"{path}.{k}" if path else k, hints[k], v) for k, v in data.items()}
    return cls(**kwargs)


class _Validated:
    """Mixin: type-checks every field on construction and runs ``_check`` for ranges."""

    SECTION: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            path = f"{self.SECTION}.{f.name}" if self.SECTION else f.name
            value = _coerce(path, hints[f.name], getattr(self, f.name))
            object.__setattr__(self, f.name, value)
        self._check()

    def _check(self) -> None:
        """Range checks beyond the type; raise ConfigError naming the field."""

    def _require(self, ok: bool, name: str, allowed: str) -> None:
        if not ok:
            raise ConfigError.bad_value(f"{self.SECTION}.{name}", getattr(self, name), allowed)


@dataclass(frozen=True)
class SourceConfig(_Validated):
    """Where frames come from: ``camera[:N]``, ``screen[:N]``, ``screen:x,y,w,h``,
    ``synthetic``, or a video/image file path."""

    SECTION: ClassVar[str] = "source"
    spec: str = path_field("camera:0", source_file)
    fps: float = 30.0
    size: tuple[int, int] | None = None  # (width, height) requested from the device
    # True: as fast as possible (benchmarks, file conversions); False: at the source's own
    # rate (real time); None: unpaced for a video file whose sinks are all files or null
    # (a conversion), real time otherwise (see livecam.stream.playback)
    unpaced: bool | None = None
    loop: bool = False  # a video file starts again at its end (default: play once, then end)
    mirror: bool = False  # flip every captured frame left-right (as a selfie view)
    mjpg: bool = True  # ask cameras for MJPG (higher fps at 720p+ over USB 2)
    camera_backend: CameraBackend = "auto"
    face_motion: str | None = path_field(None)  # synthetic: animate this portrait
    stamp: bool = False  # synthetic: write capture time into the pixels
    reopen_interval_s: float = 1.0  # retry period after a device failure

    def _check(self) -> None:
        self._require(
            MIN_FPS <= self.fps <= MAX_FPS,
            "fps",
            f"a number of frames per second from {MIN_FPS} to {MAX_FPS}",
        )
        if self.size is not None:
            w, h = self.size
            self._require(
                16 <= w <= 7680 and 16 <= h <= 4320 and w % 2 == 0 and h % 2 == 0,
                "size",
                "even width and height from 16x16 to 7680x4320, e.g. 1280x720",
            )
        self._require(
            0.05 <= self.reopen_interval_s <= 60,
            "reopen_interval_s",
            "a number of seconds from 0.05 to 60",
        )


@dataclass(frozen=True)
class BufferConfig(_Validated):
    """The ring buffer between capture and inference."""

    SECTION: ClassVar[str] = "buffer"
    capacity: int = 8
    batch_limit: int = 4  # lossless: frames processed together (live: the newest frame only)
    # block the source instead of dropping (offline rendering); None: lossless when the
    # source is unpaced and finite (a video file conversion)
    lossless: bool | None = None

    def _check(self) -> None:
        self._require(1 <= self.capacity <= 64, "capacity", "an integer from 1 to 64")
        self._require(
            1 <= self.batch_limit <= self.capacity,
            "batch_limit",
            f"an integer from 1 to capacity ({self.capacity})",
        )


@dataclass(frozen=True)
class OutputConfig(_Validated):
    """Where finished frames go: ``virtualcam``, ``window``, ``auto``, ``null`` or a file
    path (``.mp4``/``.avi`` records, ``.png``/``.jpg`` keeps the last frame)."""

    SECTION: ClassVar[str] = "output"
    sinks: tuple[str, ...] = path_field(("auto",), sink_file)
    fps: float | None = None  # None: the source's fps
    virtualcam_backend: str | None = None  # None: try every pyvirtualcam backend
    virtualcam_device: str | None = None
    overwrite: bool = False  # replace existing recordings/images (else a new timestamped name)
    # responsible use: text drawn on every output frame (e.g. "AI-modified"), None: none
    label: str | None = None
    label_position: LabelPosition = "bottom-right"
    label_size: float = 0.05  # text height as a fraction of the frame height

    def _check(self) -> None:
        self._require(len(self.sinks) >= 1, "sinks", "at least one sink")
        self._require(
            self.label is None or (0 < len(self.label.strip()) <= 80 and _plain_text(self.label)),
            "label",
            "1 to 80 printable ASCII characters (the font has no others), e.g. AI-modified",
        )
        self._require(
            0.02 <= self.label_size <= 0.25,
            "label_size",
            "a fraction of the frame height from 0.02 to 0.25",
        )
        if self.fps is not None:
            self._require(
                MIN_FPS <= self.fps <= MAX_FPS,
                "fps",
                f"a number of frames per second from {MIN_FPS} to {MAX_FPS}, or unset for "
                "the source's rate",
            )


def _plain_text(text: str) -> bool:
    """Printable ASCII only (what OpenCV's Hershey font can draw)."""
    return text.isascii() and text.isprintable()


@dataclass(frozen=True)
class SwapConfig(_Validated):
    """Which face goes where, and how it is blended (the swap stage)."""

    SECTION: ClassVar[str] = "swap"
    face: str | None = path_field(None)  # source face image
    face_index: int | None = None  # which face of the source image, when it has several
    preset: Preset = "offline"
    select: FaceSelection = "one"
    reference: str | None = path_field(None)  # with select = "reference": the reference photo
    reference_threshold: float | None = None  # max embedding distance (None: the model's own)
    detect_every: int = 3  # run the detector every N frames, track in between
    detect_size: int = 400  # detector input, long side at most (px): faces from ~1/16 of it
    smoothing: float = 1.0  # landmark smoothing strength (0 = off)
    keep_mouth: bool = True  # keep the target's inner mouth
    keep_eyes: bool = False  # keep the target's eyes (when the source photo blinks)
    color: ColorTransfer = "lab"
    blend: BlendMode = "feather"
    # ONNX presets (lite, standard, quality)
    provider: Provider = "auto"  # compute provider of every ONNX model
    gpu: int = 0  # which GPU (CUDA, TensorRT, DirectML device id)
    threads: int = 0  # CPU threads of each ONNX model (0: ONNX Runtime's default)
    spin_wait: bool = False  # CPU: ONNX Runtime's threads busy-wait between ops (faster alone)
    cudnn_conv_algo_search: ConvAlgoSearch = "EXHAUSTIVE"  # CUDA: cuDNN's algorithm search
    cuda_graph: bool = False  # CUDA: replay the swapper as one CUDA graph (fixed batch of 1)
    memory: MemoryStrategy = "balanced"  # ORT memory arenas and batch limit (low, balanced, high)
    face_batch: int = 0  # faces (and tiles) per model call; 0: the memory strategy's limit
    # "auto": step the quality ladder down when the fps stays below target (and back up);
    # a level pins it (the VRAM watchdog still steps below it when memory runs out)
    quality: QualityLevel = "full"
    target_fps: float | None = None  # adaptive quality's target (None: the output rate)
    accept_licence: bool = False  # accept the licences of models downloaded for this run
    swapper: SwapperModel | None = None  # None: the preset's swapper
    enhancer: EnhancerModel | None = None  # None: the preset's enhancer; "none": off
    # a model file of your own for a part (checked against the part's contract first)
    detector_model: str | None = path_field(None)
    recognizer_model: str | None = path_field(None)
    swapper_model: str | None = path_field(None)
    enhancer_model: str | None = path_field(None)
    pixel_boost: int = 1  # swap at k x the swapper's size in k*k tiles (1, 2 or 4)
    identity_weight: float = 0.5  # source identity strength (0.5: as the model gives it)
    enhance_blend: float = 0.8  # share of the enhanced face in the result
    enhance_every: int = 1  # run the enhancer every N frames, re-paste its last face between
    codeformer_fidelity: float = 0.5  # CodeFormer: 0 sharper, 1 closer to the input
    masks: tuple[MaskKind, ...] = ()  # () = the preset's; several are combined by minimum
    mask_blur: float = 0.3  # box mask: share of the crop blurred at its border
    mask_padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # box mask: top right bottom left %
    mouth_mask: int = 0  # 0-100: how much of the user's real mouth is kept
    opacity: float = 1.0  # 0-1: how much of the swapped face shows over the camera's
    # neural swappers: a tracked face whose aligned crop barely changed gets its last
    # swapped face again (re-pasted where the face is now) instead of a swapper run
    reuse: bool = True
    reuse_similarity: float = 32.0  # least PSNR (dB) of the 32x32 grey crops for a reuse
    reuse_max: int = 3  # reuses in a row before the swapper must run again
    # several sources: "SOURCE=TARGET" photo pairs; each target person gets its source face
    map: tuple[str, ...] = pair_paths_field(())

    def _check(self) -> None:
        self._require(
            self.face_index is None or 0 <= self.face_index <= MAX_FACE_INDEX,
            "face_index",
            f"an integer from 0 to {MAX_FACE_INDEX}",
        )
        self._require(
            self.reference_threshold is None or 0 < self.reference_threshold <= 2,
            "reference_threshold",
            "a distance in (0, 2], or unset for the model's default",
        )
        self._require(1 <= self.detect_every <= 60, "detect_every", "an integer from 1 to 60")
        self._require(
            160 <= self.detect_size <= 4096, "detect_size", "an integer from 160 to 4096 (px)"
        )
        self._require(0 <= self.smoothing <= 10, "smoothing", "a number from 0 to 10")
        self._require(0 <= self.gpu <= 64, "gpu", "a GPU index from 0 to 64")
        self._require(0 <= self.threads <= 256, "threads", "0 (automatic) to 256")
        self._require(0 <= self.face_batch <= 64, "face_batch", "0 (the memory strategy's) to 64")
        self._require(
            self.target_fps is None or MIN_FPS <= self.target_fps <= MAX_FPS,
            "target_fps",
            f"a number of frames per second from {MIN_FPS} to {MAX_FPS}, or unset for the "
            "output rate",
        )
        self._require(self.pixel_boost in (1, 2, 4), "pixel_boost", "1, 2 or 4")
        self._require(0 <= self.identity_weight <= 1, "identity_weight", "a number from 0 to 1")
        self._require(0 <= self.enhance_blend <= 1, "enhance_blend", "a number from 0 to 1")
        self._require(1 <= self.enhance_every <= 30, "enhance_every", "an integer from 1 to 30")
        self._require(
            0 <= self.codeformer_fidelity <= 1, "codeformer_fidelity", "a number from 0 to 1"
        )
        self._require(0 <= self.mask_blur <= 1, "mask_blur", "a number from 0 to 1")
        self._require(
            all(0 <= p <= 100 for p in self.mask_padding),
            "mask_padding",
            "four percentages from 0 to 100 (top, right, bottom, left)",
        )
        self._require(0 <= self.mouth_mask <= 100, "mouth_mask", "an integer from 0 to 100")
        self._require(0 <= self.opacity <= 1, "opacity", "a number from 0 to 1")
        self._require(
            10 <= self.reuse_similarity <= 99, "reuse_similarity", "a PSNR from 10 to 99 (dB)"
        )
        self._require(0 <= self.reuse_max <= 30, "reuse_max", "an integer from 0 to 30")
        self._require(
            all(split_pair(m) is not None for m in self.map),
            "map",
            "SOURCE=TARGET photo pairs, e.g. me.jpg=alice.jpg",
        )


@dataclass(frozen=True)
class PipelineConfig(_Validated):
    """The stage list run by the inference thread, in order."""

    SECTION: ClassVar[str] = "pipeline"
    stages: tuple[StageName, ...] = ("passthrough",)
    # find and track the faces of the next frame while this one is swapped (a render
    # thread); None: when a model of the stages runs on a GPU (on a CPU the two halves
    # only share the cores)
    overlap: bool | None = None
    # facebox stage: path to face_detection_yunet_2023mar.onnx
    yunet_model: str | None = path_field(None)


@dataclass(frozen=True)
class RunConfig(_Validated):
    """How long to run and what to report."""

    SECTION: ClassVar[str] = "run"
    frames: int | None = None  # stop after this many captured frames
    stats_json: str | None = path_field(None)
    status_interval_s: float = 1.0

    def _check(self) -> None:
        self._require(
            self.frames is None or 1 <= self.frames <= MAX_FRAMES,
            "frames",
            f"an integer from 1 to {MAX_FRAMES}",
        )
        self._require(
            0.1 <= self.status_interval_s <= 3600,
            "status_interval_s",
            "a number of seconds from 0.1 to 3600",
        )


@dataclass(frozen=True)
class HotkeysConfig(_Validated):
    """Global hotkeys (``livecam run --hotkeys``, the panel): one key combination per action,
    written like ``Ctrl+Alt+S`` (see ``livecam.control.keycombo``); empty: no hotkey."""

    SECTION: ClassVar[str] = "hotkeys"
    swap: str = "Ctrl+Alt+S"  # face swap on/off
    blank: str = "Ctrl+Alt+B"  # privacy: black frames on/off
    freeze: str = "Ctrl+Alt+F"  # repeat the current frame on/off
    enhancer: str = "Ctrl+Alt+E"  # face enhancer off / back on
    next_face: str = "Ctrl+Alt+Right"  # the next source face of the cycle
    previous_face: str = "Ctrl+Alt+Left"
    quality_up: str = "Ctrl+Alt+Up"  # the next better preset whose models are present
    quality_down: str = "Ctrl+Alt+Down"
    # more source faces for next/previous face (after swap.face), as photo paths
    faces: tuple[str, ...] = path_field(())

    def bindings(self) -> dict[str, str]:
        """Action -> key combination of every action (faces excluded)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "faces"}

    def _check(self) -> None:
        for action, text in self.bindings().items():
            try:
                object.__setattr__(self, action, canonical(text))
            except ValueError as e:
                raise ConfigError(
                    f"config field 'hotkeys.{action}' is invalid: {e}",
                    f"allowed: {KEYCOMBO_ALLOWED}",
                    field=f"hotkeys.{action}",
                    value=text,
                    allowed=KEYCOMBO_ALLOWED,
                ) from None
        clash = find_conflict(self.bindings())
        if clash is not None:
            first, second, combo = clash
            raise ConfigError(
                f"hotkeys.{first} and hotkeys.{second} both use {combo}",
                "give each action its own key combination (or leave one empty)",
                field=f"hotkeys.{second}",
                value=combo,
            )


@dataclass(frozen=True)
class Config(_Validated):
    """The whole configuration tree."""

    source: SourceConfig = field(default_factory=SourceConfig)
    buffer: BufferConfig = field(default_factory=BufferConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    swap: SwapConfig = field(default_factory=SwapConfig)
    run: RunConfig = field(default_factory=RunConfig)
    hotkeys: HotkeysConfig = field(default_factory=HotkeysConfig)

    def with_section(self, section: str, **changes: Any) -> Config:
        """Return a copy with fields of one section changed (validated)."""
        return replace(self, **{section: replace(getattr(self, section), **changes)})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        result: Config = _from_dict(cls, data, "")
        return result

    @classmethod
    def load(cls, path: str | Path) -> Config:
        """Load a TOML file; missing fields keep their defaults, and relative paths in it
        are taken from the file's folder. Every problem is a ConfigError naming the file."""
        p = Path(path)
        data = _read_toml(p)
        try:
            cfg = cls.from_dict(data)
        except ConfigError as e:
            raise ConfigError(
                f"{p}: {e.message}", e.hint, field=e.field, value=e.value, allowed=e.allowed
            ) from None
        return cfg.with_paths_from(p.absolute().parent)

    def with_paths_from(self, base: Path) -> Config:
        """A copy whose relative paths (``path_field`` fields) are taken from ``base``."""
        changes: dict[str, Any] = {}
        for section in fields(self):
            part = getattr(self, section.name)
            rebased = {}
            for f in fields(part):
                which = f.metadata.get("path")
                value = getattr(part, f.name)
                if which is None or value is None:
                    continue
                values = value if isinstance(value, tuple) else (value,)
                if f.metadata.get("pairs"):
                    pairs = [split_pair(v) for v in values]
                    new = tuple(
                        f"{_rebase(p[0], base)}={_rebase(p[1], base)}" if p else v
                        for v, p in zip(values, pairs, strict=True)
                    )
                else:
                    new = tuple(_rebase(v, base) if which(v) is not None else v for v in values)
                if new != values:
                    rebased[f.name] = new if isinstance(value, tuple) else new[0]
            if rebased:
                changes[section.name] = replace(part, **rebased)
        return replace(self, **changes) if changes else self

    def to_toml(self) -> str:
        """Serialise to TOML (unset optional fields are left out)."""
        lines: list[str] = []
        for section in fields(self):
            lines.append(f"[{section.name}]")
            for f in fields(getattr(self, section.name)):
                value = getattr(getattr(self, section.name), f.name)
                if value is not None:
                    lines.append(f"{f.name} = {_toml_value(value)}")
            lines.append("")
        return "\n".join(lines)

    def save(self, path: str | Path, overwrite: bool = False) -> None:
        """Write the settings to ``path`` as TOML, with absolute paths so the file loads
        back from anywhere. An existing file is kept unless ``overwrite``; the file is
        written to a temporary name and renamed, so a failure leaves nothing behind."""
        p = Path(path)
        text = self.with_paths_from(Path.cwd()).to_toml()
        folder = p.absolute().parent
        if not folder.is_dir():
            raise ConfigError(
                f"cannot write the config file {p}: the folder {folder} does not exist",
                "create the folder first, or choose another path",
            )
        if p.is_dir():
            raise ConfigError(f"cannot write the config file {p}: it is a folder")
        if p.exists() and not overwrite:
            raise ConfigError(
                f"config file {p} already exists and is kept",
                "add --overwrite to replace it, or choose another name",
            )
        tmp = folder / f".{p.name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the user's umask
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, p)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise ConfigError(f"cannot write the config file {p}: {e.strerror or e}") from None


def _read_toml(p: Path) -> dict[str, Any]:
    """The table in TOML file ``p`` (UTF-8, a BOM allowed); ConfigError naming the file."""
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(
                f"config file {p} is a folder",
                "give the path of a TOML file (write one with --save-config FILE.toml)",
            )
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"config file {p} is not a regular file", "give a TOML file")
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {p} is {st.st_size} bytes, too large for a config file",
                "give a TOML file (write one with --save-config FILE.toml)",
            )
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist", "check the path") from None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"cannot read the config file {p}: {why}") from None
    if b"\0" in raw:
        raise ConfigError(
            f"config file {p} is a binary file, not TOML text", "give a TOML text file"
        )
    try:
        text = raw.decode("utf-8-sig")  # Windows editors may start UTF-8 with a BOM
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {p} is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            "save the file as UTF-8",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"config file {p} nests too deeply to be a config file") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_toml_char(c) for c in value) + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def _toml_char(c: str) -> str:
    """One character of a TOML basic string, escaped where TOML needs it."""
    if c in ('"', "\\"):
        return "\\" + c
    if 0xD800 <= ord(c) <= 0xDFFF:  # a byte of a non-UTF-8 file name (surrogate escape)
        raise ConfigError(
            "a path holds bytes that are not UTF-8 and cannot be saved in a TOML file",
            "rename the file to a UTF-8 name",
        )
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return f"\\u{ord(c):04x}"
    return c
