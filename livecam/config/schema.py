"""Configuration: a tree of frozen dataclasses, loadable from and savable to TOML.

Each field is defined once, here: its type, default and ``setting(...)`` metadata (its
``livecam run`` option, help, range and choices; see ``livecam.config.setting``). Every
field is validated where it is created (``livecam.config.validation``): a bad value raises
ConfigError naming the field (``section.field``) and the allowed values. Nothing is
silently reset. TOML I/O is ``livecam.config.tomlfile``; source and sink specs are parsed
by ``livecam.config.specs``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, get_type_hints

from livecam.config.setting import literal_choices, setting, setting_of
from livecam.config.specs import sink_file, source_file
from livecam.config.tomlfile import read_toml, split_pair, to_toml, with_paths_from, write_toml
from livecam.config.validation import Validated, from_dict
from livecam.control.keycombo import ALLOWED as KEYCOMBO_ALLOWED
from livecam.control.keycombo import canonical, find_conflict
from livecam.errors import ConfigError

__all__ = [
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
    "OutputConfig",
    "PipelineConfig",
    "Preset",
    "Provider",
    "QualityLevel",
    "RunConfig",
    "SourceConfig",
    "StageName",
    "SwapConfig",
    "SwapperModel",
    "field_choices",
    "sink_file",
    "source_file",
    "split_pair",
]

CameraBackend = Literal["auto", "v4l2", "dshow", "msmf", "avfoundation", "gstreamer", "ffmpeg"]
StageName = Literal["passthrough", "facebox", "swap"]
FaceSelection = Literal["one", "all", "reference"]
ColorTransfer = Literal["lab", "rct", "none"]
BlendMode = Literal["feather", "seamless"]
Provider = Literal["auto", "tensorrt", "cuda", "directml", "coreml", "cpu"]
MaskKind = Literal["box", "insightface", "ellipse", "region"]
LabelPosition = Literal["top-left", "top-right", "bottom-left", "bottom-right"]
ConvAlgoSearch = Literal["EXHAUSTIVE", "HEURISTIC", "DEFAULT"]
MemoryStrategy = Literal["low", "balanced", "high"]  # see livecam.runtime.onnx_model.MEMORY
# adaptive quality (livecam.control.quality_ladder): "auto" adapts; a level of the ladder pins it
QualityLevel = Literal[
    "auto", "full", "small-batch", "enhance-half", "no-enhancer", "small-detector", "cpu"
]
# names from their tables (checked against them: field_choices): the preset table
# (livecam.face.presets) and the model manifest (models/manifest.toml)
Preset = str
SwapperModel = str
EnhancerModel = str
ENHANCER_OFF = "none"

MIN_FPS, MAX_FPS = 1, 240  # capture and output rates (frames per second)
FPS_RANGE = (MIN_FPS, MAX_FPS)
FPS_WORDS = "a number of frames per second from {min} to {max}"
MAX_FRAMES = 10**9  # run.frames: about a year at 30 fps
MAX_FACE_INDEX = 999  # swap.face_index: faces in one group photo
NEURAL = "neural presets (lite, standard, quality)"


@functools.cache
def preset_names() -> tuple[str, ...]:
    """Every name ``swap.preset`` accepts: ``auto`` and the rows of the preset table."""
    from livecam.face.presets import preset_names as table_names  # the table imports config

    return tuple(table_names())


@functools.cache
def _models(task: str) -> tuple[str, ...]:
    from livecam.models.manifest import load_manifest  # read once, when first asked

    return tuple(name for name, entry in load_manifest().items() if entry.task == task)


def swapper_names() -> tuple[str, ...]:
    """The swappers of the model manifest (``swap.swapper``)."""
    return _models("swapper")


def enhancer_names() -> tuple[str, ...]:
    """``none`` (off) and the enhancers of the model manifest (``swap.enhancer``)."""
    return (ENHANCER_OFF, *_models("enhancer"))


def _size(text: str) -> tuple[int, int]:
    import argparse

    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1280x720, got {text!r}") from None
    return w, h


def _percent4(text: str) -> tuple[int, ...]:
    import argparse

    try:
        values = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"expected 4 percentages like 0,10,0,10, got {text!r}")
    return values


SOURCE_HELP = (
    "camera[:N] or N (webcam N, default 0) | /dev/videoN | a stream URL (rtsp://..., "
    "http://...) | screen[:N] (monitor N) | screen:x,y,w,h (a region) | synthetic (test "
    "pattern; see --help-debug) | PATH to a video (played once; see --loop) or an image"
)
SINK_HELP = (
    "virtualcam (OBS/Zoom/Meet camera) | window (preview) | auto (virtual camera, else a window) | "
    "null | FILE.mp4/.avi (record) | FILE.png/.jpg (last frame); repeat for several"
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
    )
    mirror: bool = setting(
        False, option="--mirror", help="flip every captured frame left-right (a selfie view)"
    )
    # ask cameras for MJPG (higher fps at 720p+ over USB 2)
    mjpg: bool = setting(True, option="--no-mjpg", help="do not ask the camera for MJPG")
    camera_backend: CameraBackend = setting(
        "auto",
        option="--camera-backend",
        help="OpenCV capture backend (default {default}: the right one for this OS)",
    )
    face_motion: str | None = setting(
        None,
        path=True,
        option="--face-motion",
        metavar="IMG",
        help="synthetic source: animate this portrait with smooth head motion",
        debug=True,
    )
    stamp: bool = setting(
        False,
        option="--stamp",
        debug=True,
        help="synthetic source: write the capture time into the pixels (latency measurements)",
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
        None, option="--vcam-backend", help="pyvirtualcam backend (default: try each)"
    )
    virtualcam_device: str | None = setting(
        None, option="--vcam-device", help="virtual camera device, e.g. /dev/video10"
    )
    overwrite: bool = setting(
        False,
        option="--overwrite",
        help="replace an existing recording or image file (default: keep it and write to "
        "a new name with a timestamp)",
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
class SwapConfig(Validated):
    """Which face goes where, and how it is blended (the swap stage)."""

    SECTION: ClassVar[str] = "swap"
    face: str | None = setting(
        None, path=True, option="--face", metavar="IMG", help="source face image to swap in"
    )
    face_index: int | None = setting(
        None,
        option="--face-index",
        metavar="N",
        range=(0, MAX_FACE_INDEX),
        help="which face of --face when it holds several (0 = largest)",
    )
    preset: Preset = setting(
        "offline",
        option="--preset",
        choices=preset_names,
        help="model set (default {default}: no download; lite: a few MB; standard, quality: "
        "neural swappers; auto: the best whose models are present)",
    )
    select: FaceSelection = setting(
        "one", option="--select", help="faces to replace: one (largest), all, or reference"
    )
    # with select = "reference": the reference photo
    reference: str | None = setting(
        None,
        path=True,
        option="--reference",
        metavar="IMG",
        help="with --select reference: whose face",
    )
    reference_threshold: float | None = None  # max embedding distance (None: the model's own)
    detect_every: int = setting(
        3,
        option="--detect-every",
        metavar="N",
        range=(1, 60),
        help="run the face detector every N frames, track between (default {default})",
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
    smoothing: float = setting(1.0, range=(0, 10))  # landmark smoothing strength (0 = off)
    keep_mouth: bool = setting(
        True,
        option="--no-keep-mouth",
        help="paste the source's mouth too instead of keeping the target's",
    )
    keep_eyes: bool = setting(
        False, option="--keep-eyes", help="keep the target's eyes (when the source photo blinks)"
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
    cuda_graph: bool = setting(
        False,
        option="--cuda-graph",
        debug=True,
        help="CUDA: replay the swapper as one captured CUDA graph (fixed shapes: one face per "
        "call)",
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
    # a model file of your own for a part (checked against the part's contract first)
    detector_model: str | None = setting(
        None,
        path=True,
        option="--detector-model",
        metavar="PATH",
        group=NEURAL,
        help="your own detector ONNX file (checked against the detector's contract first)",
    )
    recognizer_model: str | None = setting(
        None,
        path=True,
        option="--recognizer-model",
        metavar="PATH",
        group=NEURAL,
        help="your own recognizer ONNX file (checked against the recognizer's contract first)",
    )
    swapper_model: str | None = setting(
        None,
        path=True,
        option="--swapper-model",
        metavar="PATH",
        group=NEURAL,
        help="your own swapper ONNX file (checked against the swapper's contract first)",
    )
    enhancer_model: str | None = setting(
        None,
        path=True,
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
    # neural swappers: a tracked face whose aligned crop barely changed gets its last
    # swapped face again (re-pasted where the face is now) instead of a swapper run
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
        self._require(self.pixel_boost in (1, 2, 4), "pixel_boost", "1, 2 or 4")
        self._require(
            all(split_pair(m) is not None for m in self.map),
            "map",
            "SOURCE=TARGET photo pairs, e.g. me.jpg=alice.jpg",
        )


@dataclass(frozen=True)
class PipelineConfig(Validated):
    """The stage list run by the inference thread, in order."""

    SECTION: ClassVar[str] = "pipeline"
    stages: tuple[StageName, ...] = setting(
        ("passthrough",),
        option="--stage",
        debug=True,
        help="stage to run, in order; repeat for several (default: swap when --face is "
        "given, else passthrough; facebox draws the detected faces)",
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
    )
    # facebox stage: path to face_detection_yunet_2023mar.onnx
    yunet_model: str | None = setting(
        None,
        path=True,
        option="--yunet",
        metavar="ONNX",
        debug=True,
        help="another YuNet 2023mar model for the facebox stage (default: the bundled one)",
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

    def with_section(self, section: str, **changes: Any) -> Config:
        """Return a copy with fields of one section changed (validated)."""
        return replace(self, **{section: replace(getattr(self, section), **changes)})

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


def field_choices(name: str) -> tuple[Any, ...]:
    """The values config field ``name`` (``section.field``) accepts: its Literal's, or the
    names of its table (presets, models); for the panel's lists and the parser."""
    section, _, key = name.partition(".")
    section_cls = get_type_hints(Config)[section]
    f = next(f for f in fields(section_cls) if f.name == key)
    info = setting_of(f)
    if info.choices is not None:
        return info.choices()
    found = literal_choices(get_type_hints(section_cls)[key])
    if found is None:
        raise KeyError(f"config field {name} has no choices")
    return found
