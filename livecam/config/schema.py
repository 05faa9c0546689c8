"""Configuration: a tree of frozen dataclasses, loadable from and savable to TOML.

Each field is defined once, here (the swap section in ``livecam.config.swap``): its type,
default and ``setting(...)`` metadata (its ``livecam run`` option, help, range and
choices; see ``livecam.config.setting``). Every
field is validated where it is created (``livecam.config.validation``): a bad value raises
ConfigError naming the field (``section.field``) and the allowed values. Nothing is
silently reset. TOML I/O is ``livecam.config.tomlfile``; source and sink specs are parsed
by ``livecam.config.specs``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, get_type_hints

from livecam.config.keycombo import ALLOWED as KEYCOMBO_ALLOWED
from livecam.config.keycombo import canonical, find_conflict
from livecam.config.obs import ObsConfig
from livecam.config.remote import RemoteConfig
from livecam.config.setting import (
    FPS_RANGE,
    FPS_WORDS,
    MAX_FPS,
    MIN_FPS,
    is_section,
    leaf_fields,
    literal_choices,
    setting,
    setting_of,
)
from livecam.config.specs import sink_file, source_file
from livecam.config.swap import (
    NEURAL,
    BlendMode,
    ColorTransfer,
    ConvAlgoSearch,
    EnhancerModel,
    FaceSelection,
    MaskKind,
    MemoryStrategy,
    Preset,
    Provider,
    QualityLevel,
    SwapConfig,
    SwapperModel,
    enhancer_names,
    preset_names,
    swapper_names,
)
from livecam.config.tomlfile import (
    check_output_paths,
    read_toml,
    split_pair,
    to_toml,
    with_paths_from,
    write_toml,
)
from livecam.config.validation import Validated, from_dict
from livecam.errors import ConfigError

__all__ = [
    "MAX_FPS",
    "MIN_FPS",
    "NEURAL",
    "BlendMode",
    "BufferConfig",
    "CameraBackend",
    "ColorTransfer",
    "Config",
    "ConvAlgoSearch",
    "EnhancerModel",
    "FaceSelection",
    "HotkeysConfig",
    "LabelPosition",
    "MaskKind",
    "MemoryStrategy",
    "ObsConfig",
    "OutputConfig",
    "PipelineConfig",
    "Preset",
    "Provider",
    "QualityLevel",
    "RemoteConfig",
    "RunConfig",
    "SourceConfig",
    "StageName",
    "SwapConfig",
    "SwapperModel",
    "enhancer_names",
    "field_choices",
    "preset_names",
    "sink_file",
    "source_file",
    "split_pair",
    "swapper_names",
]

CameraBackend = Literal["auto", "v4l2", "dshow", "msmf", "avfoundation", "gstreamer", "ffmpeg"]
StageName = Literal["passthrough", "facebox", "swap"]
LabelPosition = Literal["top-left", "top-right", "bottom-left", "bottom-right"]

MAX_FRAMES = 10**9  # run.frames: about a year at 30 fps


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1280x720, got {text!r}") from None
    return w, h


SOURCE_HELP = (
    "camera[:N] or N (webcam N, default 0) | /dev/videoN | a stream URL (rtsp://..., "
    "http://...) | screen[:N] (monitor N) | screen:x,y,w,h (a region) | synthetic (test "
    "pattern; see --help-debug) | PATH to a video (played once; see --loop) or an image "
    "(default {default})"
)
SINK_HELP = (
    "virtualcam (OBS/Zoom/Meet camera) | window (preview) | auto (virtual camera, else a window) | "
    "null | FILE.mp4/.mov/.mkv/.avi (record; .avi has no sound) | FILE.png/.jpg (last frame); "
    "repeat for several (default "
    "{default})"
)


@dataclass(frozen=True)
class SourceConfig(Validated):
    """Where frames come from: ``camera[:N]``, ``screen[:N]``, ``screen:x,y,w,h``,
    ``synthetic``, or a video/image file path."""

    SECTION: ClassVar[str] = "source"
    spec: str = setting(
        "camera:0", path=source_file, option="--source", metavar="SPEC", help=SOURCE_HELP
    )
    fps: float = setting(
        30.0,
        option="--fps",
        range=FPS_RANGE,
        allowed=FPS_WORDS,
        help="requested capture rate (default {default})",
    )
    # (width, height) requested from the device
    size: tuple[int, int] | None = setting(
        None, option="--size", parse=_size, metavar="WxH", help="frame size, e.g. 1280x720"
    )
    # True: as fast as possible (benchmarks, file conversions); False: at the source's own
    # rate (real time); None: unpaced for a video file whose sinks are all files or null
    # (a conversion), real time otherwise (see livecam.stream.playback)
    unpaced: bool | None = setting(
        None,
        option="--unpaced",
        help="deliver frames as fast as possible, no repeats (benchmarks; the default for a "
        "video file whose sinks are all files: a conversion keeps every frame and the file's "
        "timing)",
        off="--realtime",
        off_help="play a video file at its own speed, like a camera (the newest frame wins); "
        "the default when a sink is a virtual camera or a window",
    )
    loop: bool = setting(
        False,
        option="--loop",
        help="video file: start again at its end (default: play it once, then stop)",
        applies_with="video file",
    )
    mirror: bool = setting(
        False, option="--mirror", help="flip every captured frame left-right (a selfie view)"
    )
    # ask cameras for MJPG (higher fps at 720p+ over USB 2)
    mjpg: bool = setting(
        True, option="--no-mjpg", help="do not ask the camera for MJPG", applies_with="camera"
    )
    camera_backend: CameraBackend = setting(
        "auto",
        option="--camera-backend",
        help="OpenCV capture backend (default {default}: the right one for this OS)",
        applies_with="camera",
    )
    face_motion: str | None = setting(
        None,
        path=True,
        input=(
            "the --face-motion portrait",
            "give a portrait photo (JPEG, PNG, ...)",
        ),
        option="--face-motion",
        metavar="IMG",
        help="synthetic source: animate this portrait with smooth head motion",
        debug=True,
        applies_with="synthetic",
    )
    stamp: bool = setting(
        False,
        option="--stamp",
        debug=True,
        help="synthetic source: write the capture time into the pixels (latency measurements)",
        applies_with="synthetic",
    )
    # retry period after a device failure
    reopen_interval_s: float = setting(
        1.0, range=(0.05, 60), allowed="a number of seconds from {min} to {max}"
    )

    def _check(self) -> None:
        if self.size is not None:
            w, h = self.size
            self._require(
                16 <= w <= 7680 and 16 <= h <= 4320 and w % 2 == 0 and h % 2 == 0,
                "size",
                "even width and height from 16x16 to 7680x4320, e.g. 1280x720",
            )


@dataclass(frozen=True)
class BufferConfig(Validated):
    """The ring buffer between capture and inference."""

    SECTION: ClassVar[str] = "buffer"
    capacity: int = setting(8, range=(1, 64))
    batch_limit: int = setting(
        4,
        option="--batch",
        metavar="N",
        help="lossless runs: frames processed together (default {default}); live runs always "
        "take the newest frame and batch its faces",
        applies_with="lossless",
    )
    # block the source instead of dropping (offline rendering); None: lossless when the
    # source is unpaced and finite (a video file conversion)
    lossless: bool | None = setting(
        None,
        option="--lossless",
        help="never drop frames: slow the source down instead (offline rendering; the "
        "default for a video file converted to files)",
    )

    def _check(self) -> None:
        self._require(
            1 <= self.batch_limit <= self.capacity,
            "batch_limit",
            f"an integer from 1 to capacity ({self.capacity})",
        )


@dataclass(frozen=True)
class OutputConfig(Validated):
    """Where finished frames go: ``virtualcam``, ``window``, ``auto``, ``null`` or a file
    path (``.mp4``/``.avi`` records, ``.png``/``.jpg`` keeps the last frame)."""

    SECTION: ClassVar[str] = "output"
    sinks: tuple[str, ...] = setting(
        ("auto",), path=sink_file, option="--sink", metavar="SPEC", help=SINK_HELP
    )
    fps: float | None = setting(
        None,
        option="--output-fps",
        range=FPS_RANGE,
        allowed=FPS_WORDS + ", or unset for the source's rate",
        help="output rate (default: the source's)",
    )
    virtualcam_backend: str | None = setting(
        None,
        option="--vcam-backend",
        help="pyvirtualcam backend (default: try each)",
        applies_with="virtualcam",
    )
    virtualcam_device: str | None = setting(
        None,
        option="--vcam-device",
        help="virtual camera device, e.g. /dev/video10",
        applies_with="virtualcam",
    )
    overwrite: bool = setting(
        False,
        option="--overwrite",
        help="replace an existing recording or image file (default: keep it and write to "
        "a new name with a timestamp)",
        applies_with="file output",
    )
    # responsible use: text drawn on every output frame (e.g. "AI-modified"), None: none
    label: str | None = setting(
        None,
        option="--label",
        metavar="TEXT",
        help='draw TEXT (e.g. "AI-modified") on every output frame: the virtual camera and '
        "the recording both carry it",
    )
    label_position: LabelPosition = setting(
        "bottom-right", option="--label-position", help="corner of the --label (default {default})"
    )
    label_size: float = setting(
        0.05,
        option="--label-size",
        metavar="F",
        range=(0.02, 0.25),
        allowed="a fraction of the frame height from {min} to {max}",
        help="--label text height as a fraction of the frame height (default {default})",
    )
    # responsible use (EU AI Act Art. 50(2)): the invisible mark on every swapped frame;
    # config file only (no option, no hotkey), with a warning at start when off
    watermark: bool = setting(
        True,
        help="mark every frame the swap changed with the invisible watermark (EU AI Act "
        "Art. 50(2)); false: those frames go out unmarked (recordings are still signed)",
    )

    def _check(self) -> None:
        self._require(len(self.sinks) >= 1, "sinks", "at least one sink")
        self._require(
            self.label is None or (0 < len(self.label.strip()) <= 80 and _plain_text(self.label)),
            "label",
            "1 to 80 printable ASCII characters (the font has no others), e.g. AI-modified",
        )


def _plain_text(text: str) -> bool:
    """Printable ASCII only (what OpenCV's Hershey font can draw)."""
    return text.isascii() and text.isprintable()


@dataclass(frozen=True)
class PipelineConfig(Validated):
    """The stage list run by the inference thread, in order."""

    SECTION: ClassVar[str] = "pipeline"
    stages: tuple[StageName, ...] = setting(
        ("passthrough",),
        option="--stage",
        debug=True,
        help="stage to run, in order; repeat for several (default: swap when --face is "
        "given, else {default}; facebox draws the detected faces)",
    )
    # find and track the faces of the next frame while this one is swapped (a render
    # thread); None: when a model of the stages runs on a GPU (on a CPU the two halves
    # only share the cores)
    overlap: bool | None = setting(
        None,
        option="--overlap",
        negatable=True,
        help="find and track the faces of the next frame while this one is swapped, on a "
        "second thread (default: when a model runs on a GPU)",
        applies_with="swap",
    )
    # how many threads OpenCV's own operations may use; None: 1 where every model runs on
    # the CPU (the capture, the stages and the output already share the cores: OpenCV's
    # pool split each small face step and waited on the busy other core), else OpenCV's
    # default
    opencv_threads: int | None = setting(
        None,
        option="--opencv-threads",
        metavar="N",
        range=(1, 256),
        help="threads OpenCV's own operations may use (default: 1 when every model runs on "
        "the CPU, else OpenCV's default)",
    )
    # facebox stage: path to face_detection_yunet_2023mar.onnx
    yunet_model: str | None = setting(
        None,
        path=True,
        input=(
            "the YuNet model",
            "give the path of face_detection_yunet_2023mar.onnx (OpenCV model zoo)",
        ),
        option="--yunet",
        metavar="ONNX",
        debug=True,
        help="another YuNet 2023mar model for the facebox stage (default: the bundled one)",
        applies_with="facebox",
    )


@dataclass(frozen=True)
class RunConfig(Validated):
    """How long to run and what to report."""

    SECTION: ClassVar[str] = "run"
    frames: int | None = setting(
        None,
        option="--frames",
        metavar="N",
        range=(1, MAX_FRAMES),
        help="stop after N captured frames",
    )
    stats_json: str | None = setting(
        None,
        path=True,
        option="--stats-json",
        metavar="PATH",
        help="write a JSON summary at the end",
    )
    status_interval_s: float = setting(
        1.0, range=(0.1, 3600), allowed="a number of seconds from {min} to {max}"
    )


@dataclass(frozen=True)
class HotkeysConfig(Validated):
    """Global hotkeys (``livecam run --hotkeys``, the panel): one key combination per action,
    written like ``Ctrl+Alt+S`` (see ``livecam.config.keycombo``); empty: no hotkey."""

    SECTION: ClassVar[str] = "hotkeys"
    # Ctrl+Alt+Shift+letter: no desktop, OS or overlay uses these by default (Ctrl+Alt+arrows
    # switch workspaces; see livecam.control.desktop_shortcuts)
    swap: str = "Ctrl+Alt+Shift+S"  # face swap on/off
    blank: str = "Ctrl+Alt+Shift+B"  # privacy: black frames on/off
    freeze: str = "Ctrl+Alt+Shift+F"  # repeat the current frame on/off
    enhancer: str = "Ctrl+Alt+Shift+E"  # face enhancer off / back on
    next_face: str = "Ctrl+Alt+Shift+N"  # the next source face of the cycle
    previous_face: str = "Ctrl+Alt+Shift+P"
    quality_up: str = "Ctrl+Alt+Shift+U"  # the next better preset whose models are present
    quality_down: str = "Ctrl+Alt+Shift+D"
    # more source faces for next/previous face (after swap.face), as photo paths
    faces: tuple[str, ...] = setting((), path=True)

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
class Config(Validated):
    """The whole configuration tree."""

    source: SourceConfig = field(default_factory=SourceConfig)
    buffer: BufferConfig = field(default_factory=BufferConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    swap: SwapConfig = field(default_factory=SwapConfig)
    run: RunConfig = field(default_factory=RunConfig)
    hotkeys: HotkeysConfig = field(default_factory=HotkeysConfig)
    obs: ObsConfig = field(default_factory=ObsConfig)
    remote: RemoteConfig = field(default_factory=RemoteConfig)

    def with_section(self, section: str, **changes: Any) -> Config:
        """Return a copy with fields of one section changed (validated); the swap
        section's settings by name, whichever of its sections holds them."""
        part: Validated = getattr(self, section)
        new: Config = replace(self, **{section: part.changed(**changes)})  # type: ignore[arg-type]
        return new

    def with_fields(self, changes: Mapping[str, Any]) -> Config:
        """Return a copy with fields changed by their paths (``source.fps``,
        ``swap.detect.detect_size``), validated."""
        tree: dict[str, Any] = {}
        for path, value in changes.items():
            *sections, name = path.split(".")
            node = tree
            for section in sections:
                node = node.setdefault(section, {})
            node[name] = value
        new: Config = _changed(self, tree)
        return new

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        result: Config = from_dict(cls, data, "")
        return result

    @classmethod
    def load(cls, path: str | Path) -> Config:
        """Load a TOML file; missing fields keep their defaults, and relative paths in it
        are taken from the file's folder. Every problem is a ConfigError naming the file."""
        p = Path(path)
        data = read_toml(p)
        try:
            cfg = cls.from_dict(data)
        except ConfigError as e:
            raise ConfigError(
                f"{p}: {e.message}", e.hint, field=e.field, value=e.value, allowed=e.allowed
            ) from None
        check_output_paths(cfg, p)  # a relative output path stays in the file's folder
        return cfg.with_paths_from(p.absolute().parent)

    def with_paths_from(self, base: Path) -> Config:
        """A copy whose relative paths (``path`` settings) are taken from ``base``."""
        return with_paths_from(self, base)

    def to_toml(self) -> str:
        """Serialise to TOML (unset optional fields are left out)."""
        return to_toml(self)

    def save(self, path: str | Path, overwrite: bool = False) -> None:
        """Write the settings to ``path`` as TOML, with absolute paths so the file loads
        back from anywhere. An existing file is kept unless ``overwrite``; the file is
        written to a temporary name and renamed, so a failure leaves nothing behind."""
        write_toml(path, self.with_paths_from(Path.cwd()).to_toml(), overwrite)


def _changed(part: Validated, tree: Mapping[str, Any]) -> Any:
    """``part`` with the values of ``tree``: a section's name -> its own tree, a field's
    -> its value (through ``changed``: the swap section finds its settings by name)."""
    hints = get_type_hints(type(part))
    sections = {
        k: _changed(getattr(part, k), v)
        for k, v in tree.items()
        if k in hints and is_section(hints[k]) and isinstance(v, dict)
    }
    values = {k: v for k, v in tree.items() if k not in sections}
    changed = part.changed(**values)
    return replace(changed, **sections) if sections else changed  # type: ignore[type-var]


def field_choices(name: str) -> tuple[Any, ...]:
    """The values config field ``name`` (``section.field``, ``swap.runtime.provider``)
    accepts: its Literal's, or the names of its table (presets, models); for the panel's
    lists and the parser."""
    found_field = next(((f, h) for path, f, h in leaf_fields(Config) if path == name), None)
    if found_field is None:
        raise KeyError(f"no config field {name}")
    f, hint = found_field
    info = setting_of(f)
    if info.choices is not None:
        return info.choices()
    found = literal_choices(hint)
    if found is None:
        raise KeyError(f"config field {name} has no choices")
    return found
