"""Configuration: a tree of frozen dataclasses, loadable from and savable to TOML.

Every field is validated where it is created: a bad value raises ConfigError naming the
field (``section.field``) and the allowed values. Nothing is silently reset.
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints

from livecam.errors import ConfigError

CameraBackend = Literal["auto", "v4l2", "dshow", "msmf", "avfoundation", "gstreamer", "ffmpeg"]
StageName = Literal["passthrough", "facebox", "swap"]
Preset = Literal["offline", "lite", "standard", "quality", "auto"]
FaceSelection = Literal["one", "all", "reference"]
ColorTransfer = Literal["lab", "rct", "none"]
BlendMode = Literal["feather", "seamless"]


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(hint))
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of ({_type_name(args[0])})"
        return f"list of {len(args)} values"
    return "none" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _coerce(path: str, hint: Any, value: Any) -> Any:
    """Return ``value`` converted to ``hint`` or raise ConfigError naming ``path``."""
    origin = get_origin(hint)
    bad = ConfigError(
        f"config field '{path}' has the invalid value {value!r}",
        f"allowed: {_type_name(hint)}",
    )
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
            raise ConfigError(
                f"config field '{self.SECTION}.{name}' has the invalid value "
                f"{getattr(self, name)!r}",
                f"allowed: {allowed}",
            )


@dataclass(frozen=True)
class SourceConfig(_Validated):
    """Where frames come from: ``camera[:N]``, ``screen[:N]``, ``screen:x,y,w,h``,
    ``synthetic``, or a video/image file path."""

    SECTION: ClassVar[str] = "source"
    spec: str = "camera:0"
    fps: float = 30.0
    size: tuple[int, int] | None = None  # (width, height) requested from the device
    unpaced: bool = False  # deliver as fast as possible (benchmarks)
    mjpg: bool = True  # ask cameras for MJPG (higher fps at 720p+ over USB 2)
    camera_backend: CameraBackend = "auto"
    face_motion: str | None = None  # synthetic: animate this portrait
    stamp: bool = False  # synthetic: write capture time into the pixels
    reopen_interval_s: float = 1.0  # retry period after a device failure

    def _check(self) -> None:
        self._require(0 < self.fps <= 1000, "fps", "a number of frames per second in (0, 1000]")
        if self.size is not None:
            w, h = self.size
            self._require(
                16 <= w <= 7680 and 16 <= h <= 4320 and w % 2 == 0 and h % 2 == 0,
                "size",
                "even width and height between 16x16 and 7680x4320, e.g. [1280, 720]",
            )
        self._require(self.reopen_interval_s > 0, "reopen_interval_s", "a positive number")


@dataclass(frozen=True)
class BufferConfig(_Validated):
    """The ring buffer between capture and inference."""

    SECTION: ClassVar[str] = "buffer"
    capacity: int = 8
    batch_limit: int = 4  # lossless: frames processed together (live: the newest frame only)
    lossless: bool = False  # block the source instead of dropping (offline rendering)

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
    sinks: tuple[str, ...] = ("auto",)
    fps: float | None = None  # None: the source's fps
    virtualcam_backend: str | None = None  # None: try every pyvirtualcam backend
    virtualcam_device: str | None = None
    overwrite: bool = False  # replace existing recordings/images (else a new timestamped name)

    def _check(self) -> None:
        self._require(len(self.sinks) >= 1, "sinks", "at least one sink")
        if self.fps is not None:
            self._require(0 < self.fps <= 1000, "fps", "a number in (0, 1000] or unset")


@dataclass(frozen=True)
class SwapConfig(_Validated):
    """Which face goes where, and how it is blended (the swap stage)."""

    SECTION: ClassVar[str] = "swap"
    face: str | None = None  # source face image
    face_index: int | None = None  # which face of the source image, when it has several
    preset: Preset = "offline"
    select: FaceSelection = "one"
    reference: str | None = None  # with select = "reference": image of the face to replace
    reference_threshold: float | None = None  # max embedding distance (None: the model's own)
    detect_every: int = 3  # run the detector every N frames, track in between
    detect_size: int = 400  # detector input, long side in px: faces from ~1/5 of it
    smoothing: float = 1.0  # landmark smoothing strength (0 = off)
    keep_mouth: bool = True  # keep the target's inner mouth
    keep_eyes: bool = False  # keep the target's eyes (when the source photo blinks)
    color: ColorTransfer = "lab"
    blend: BlendMode = "feather"

    def _check(self) -> None:
        self._require(
            self.face_index is None or self.face_index >= 0, "face_index", "an integer >= 0"
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


@dataclass(frozen=True)
class PipelineConfig(_Validated):
    """The stage list run by the inference thread, in order."""

    SECTION: ClassVar[str] = "pipeline"
    stages: tuple[StageName, ...] = ("passthrough",)
    yunet_model: str | None = None  # facebox stage: path to face_detection_yunet_2023mar.onnx


@dataclass(frozen=True)
class RunConfig(_Validated):
    """How long to run and what to report."""

    SECTION: ClassVar[str] = "run"
    frames: int | None = None  # stop after this many captured frames
    stats_json: str | None = None
    status_interval_s: float = 1.0

    def _check(self) -> None:
        self._require(self.frames is None or self.frames > 0, "frames", "a positive integer")
        self._require(self.status_interval_s > 0, "status_interval_s", "a positive number")


@dataclass(frozen=True)
class Config(_Validated):
    """The whole configuration tree."""

    source: SourceConfig = field(default_factory=SourceConfig)
    buffer: BufferConfig = field(default_factory=BufferConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    swap: SwapConfig = field(default_factory=SwapConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def with_section(self, section: str, **changes: Any) -> Config:
        """Return a copy with fields of one section changed (validated)."""
        return replace(self, **{section: replace(getattr(self, section), **changes)})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        result: Config = _from_dict(cls, data, "")
        return result

    @classmethod
    def load(cls, path: str | Path) -> Config:
        """Load a TOML file; missing fields keep their defaults."""
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {p} does not exist", "check the path") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
        return cls.from_dict(data)

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

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_toml(), encoding="utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")
