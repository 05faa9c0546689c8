"""Command-line options and config fields: which option sets which field, errors that
name what the user typed, and options that would be ignored (an error, never silent)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from livecam.config.inputs import input_file_problem
from livecam.config.schema import Config, SwapConfig, sink_file, source_file, split_pair
from livecam.errors import ConfigError

log = logging.getLogger("livecam")


#: config field -> (the option that sets it, its argparse dest); one row per option
FIELD_OPTIONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "source.spec": ("--source", "source"),
        "source.fps": ("--fps", "fps"),
        "source.size": ("--size", "size"),
        "source.unpaced": ("--unpaced", "unpaced"),
        "source.loop": ("--loop", "loop"),
        "source.mirror": ("--mirror", "mirror"),
        "source.camera_backend": ("--camera-backend", "camera_backend"),
        "source.mjpg": ("--no-mjpg", "mjpg"),
        "source.face_motion": ("--face-motion", "face_motion"),
        "source.stamp": ("--stamp", "stamp"),
        "output.sinks": ("--sink", "sink"),
        "output.fps": ("--output-fps", "output_fps"),
        "output.virtualcam_backend": ("--vcam-backend", "vcam_backend"),
        "output.virtualcam_device": ("--vcam-device", "vcam_device"),
        "output.overwrite": ("--overwrite", "overwrite"),
        "pipeline.stages": ("--stage", "stage"),
        "output.label": ("--label", "label"),
        "output.label_position": ("--label-position", "label_position"),
        "output.label_size": ("--label-size", "label_size"),
        "pipeline.yunet_model": ("--yunet", "yunet"),
        "pipeline.overlap": ("--overlap", "overlap"),
        "buffer.batch_limit": ("--batch", "batch"),
        "buffer.lossless": ("--lossless", "lossless"),
        "swap.face": ("--face", "face"),
        "swap.face_index": ("--face-index", "face_index"),
        "swap.preset": ("--preset", "preset"),
        "swap.select": ("--select", "select"),
        "swap.reference": ("--reference", "reference"),
        "swap.blend": ("--blend", "blend"),
        "swap.color": ("--color", "color"),
        "swap.keep_eyes": ("--keep-eyes", "keep_eyes"),
        "swap.keep_mouth": ("--no-keep-mouth", "keep_mouth"),
        "swap.detect_every": ("--detect-every", "detect_every"),
        "swap.detect_size": ("--detect-size", "detect_size"),
        "swap.provider": ("--provider", "provider"),
        "swap.gpu": ("--gpu", "gpu"),
        "swap.threads": ("--threads", "threads"),
        "swap.cudnn_conv_algo_search": ("--cudnn-algo", "cudnn_algo"),
        "swap.cuda_graph": ("--cuda-graph", "cuda_graph"),
        "swap.memory": ("--memory", "memory"),
        "swap.quality": ("--quality", "quality"),
        "swap.target_fps": ("--target-fps", "target_fps"),
        "swap.accept_licence": ("--accept-licence", "accept_licence"),
        "swap.swapper": ("--swapper", "swapper"),
        "swap.enhancer": ("--enhancer", "enhancer"),
        "swap.detector_model": ("--detector-model", "detector_model"),
        "swap.recognizer_model": ("--recognizer-model", "recognizer_model"),
        "swap.swapper_model": ("--swapper-model", "swapper_model"),
        "swap.enhancer_model": ("--enhancer-model", "enhancer_model"),
        "swap.pixel_boost": ("--pixel-boost", "pixel_boost"),
        "swap.identity_weight": ("--identity-weight", "identity_weight"),
        "swap.enhance_blend": ("--enhance-blend", "enhance_blend"),
        "swap.enhance_every": ("--enhance-every", "enhance_every"),
        "swap.reuse": ("--reuse", "reuse"),
        "swap.reuse_similarity": ("--reuse-similarity", "reuse_similarity"),
        "swap.reuse_max": ("--reuse-max", "reuse_max"),
        "swap.codeformer_fidelity": ("--codeformer-fidelity", "codeformer_fidelity"),
        "swap.masks": ("--mask", "mask"),
        "swap.mask_blur": ("--mask-blur", "mask_blur"),
        "swap.mask_padding": ("--mask-padding", "mask_padding"),
        "swap.mouth_mask": ("--mouth-mask", "mouth_mask"),
        "swap.map": ("--map", "map"),
        "swap.opacity": ("--opacity", "opacity"),
        "run.frames": ("--frames", "frames"),
        "run.stats_json": ("--stats-json", "stats_json"),
    }
)


def given_fields(args: argparse.Namespace) -> dict[str, Any]:
    """``section.field`` -> value of every option given on the command line."""
    given = {}
    for name, (_option, dest) in FIELD_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            given[name] = tuple(value) if isinstance(value, list) else value
    return given


def _option_text(value: Any) -> str:
    """A config value as it is typed on the command line."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple | list):
        return " ".join(str(v) for v in value)
    return str(value)


def _field_of(error: ConfigError) -> str | None:
    """The ``section.field`` a ConfigError is about (``pipeline.stages[1]`` -> its list)."""
    return error.field.partition("[")[0] if error.field else None


def as_option_error(error: ConfigError, given: Mapping[str, Any]) -> ConfigError:
    """``error`` about a field set by an option, reworded to name the option."""
    name = _field_of(error)
    if name is None or name not in given or name not in FIELD_OPTIONS:
        return error
    option = FIELD_OPTIONS[name][0]
    return ConfigError(
        f"{option} {_option_text(error.value)} is invalid",
        f"allowed: {error.allowed}" if error.allowed else error.hint,
        field=error.field,
        value=error.value,
        allowed=error.allowed,
    )


def config_from_args(args: argparse.Namespace, base: Config | None = None) -> Config:
    """Apply the options that were given on top of ``--config`` (or the defaults).

    A bad value is a ConfigError naming the option (``--fps 0``) when it came from the
    command line, the config field (``source.fps``) when it came from the file.
    """
    cfg = base or (Config.load(args.config) if args.config else Config())
    given = given_fields(args)
    sections: dict[str, dict[str, Any]] = {}
    for name, value in given.items():
        section, _, key = name.partition(".")
        sections.setdefault(section, {})[key] = value
    try:
        for section, values in sections.items():
            cfg = cfg.with_section(section, **values)
    except ConfigError as e:
        raise as_option_error(e, given) from None
    if (args.face or getattr(args, "map", None)) and not args.stage:
        cfg = cfg.with_section("pipeline", stages=("swap",))
    return cfg


@dataclass(frozen=True)
class Scope:
    """Fields that only apply when ``applies(config)``: ``option_needs`` says when in
    options (``--source synthetic``), ``field_needs`` in config fields."""

    fields: tuple[str, ...]
    applies: Callable[[Config], bool]
    option_needs: str
    field_needs: str


def _is_camera(spec: str) -> bool:
    text = spec.strip()
    return text.partition(":")[0] == "camera" or text.isdigit() or text.startswith("/dev/video")


SWAP_FIELDS = tuple(f"swap.{f.name}" for f in dataclasses.fields(SwapConfig))
SCOPES = (
    Scope(
        ("source.face_motion", "source.stamp"),
        lambda c: c.source.spec.strip() == "synthetic",
        "--source synthetic",
        "source.spec = 'synthetic'",
    ),
    Scope(
        ("source.camera_backend", "source.mjpg"),
        lambda c: _is_camera(c.source.spec),
        "a camera source (--source camera:N)",
        "a camera in source.spec",
    ),
    Scope(
        ("output.virtualcam_backend", "output.virtualcam_device"),
        lambda c: any(s.strip().lower() in ("virtualcam", "auto") for s in c.output.sinks),
        "--sink virtualcam (or auto)",
        "'virtualcam' or 'auto' in output.sinks",
    ),
    Scope(
        ("output.overwrite",),
        lambda c: c.run.stats_json is not None or any(sink_file(s) for s in c.output.sinks),
        "a file sink (--sink out.mp4) or --stats-json",
        "a file in output.sinks or run.stats_json",
    ),
    Scope(
        ("pipeline.yunet_model",),
        lambda c: "facebox" in c.pipeline.stages,
        "--stage facebox",
        "'facebox' in pipeline.stages",
    ),
    Scope(
        (*SWAP_FIELDS, "pipeline.overlap"),  # overlap: the swap stage's tracking and swap
        lambda c: "swap" in c.pipeline.stages,
        "the swap stage (--face PHOTO, or --stage swap)",
        "'swap' in pipeline.stages",
    ),
    Scope(
        ("swap.reference", "swap.reference_threshold"),
        lambda c: c.swap.select == "reference",
        "--select reference",
        "swap.select = 'reference'",
    ),
    Scope(
        ("source.loop",),
        lambda c: source_file(c.source.spec) is not None,
        "a video file (--source clip.mp4)",
        "a video file in source.spec",
    ),
    Scope(
        ("buffer.batch_limit",),
        lambda c: c.buffer.lossless or source_file(c.source.spec) is not None,
        "--lossless (or a video file --source)",
        "buffer.lossless = true (or a video file in source.spec)",
    ),
)

#: path fields checked before start: field -> (what it is called, the fix)
INPUT_FILES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "swap.face": (
            "the source face photo",
            "give a photo (JPEG, PNG, ...) of the face to swap in",
        ),
        "swap.reference": (
            "the reference photo",
            "give a photo (JPEG, PNG, ...) of the person whose face is replaced",
        ),
        "source.face_motion": (
            "the --face-motion portrait",
            "give a portrait photo (JPEG, PNG, ...)",
        ),
        "pipeline.yunet_model": (
            "the YuNet model",
            "give the path of face_detection_yunet_2023mar.onnx (OpenCV model zoo)",
        ),
        **{
            f"swap.{part}_model": (
                f"the {part} model",
                f"give the path of an ONNX {part} file (`livecam models list` shows the models "
                "LiveCam knows)",
            )
            for part in ("detector", "recognizer", "swapper", "enhancer")
        },
    }
)


def _default_of(name: str) -> Any:
    section, _, key = name.partition(".")
    return getattr(getattr(Config(), section), key)


def _value_of(cfg: Config, name: str) -> Any:
    section, _, key = name.partition(".")
    return getattr(getattr(cfg, section), key)


def check_options(cfg: Config, given: Mapping[str, Any]) -> None:
    """Errors for options that would be ignored (``--stamp`` on a camera), missing
    companions (``--select reference`` without the reference photo) and input files that
    cannot be used; a config-file field that would be ignored is a warning.

    ``given``: the fields set on the command line (``given_fields``); their errors name
    the option, the others the config field."""

    def where(name: str) -> str:
        return FIELD_OPTIONS[name][0] if name in given else f"config field '{name}'"

    for scope in SCOPES:
        if scope.applies(cfg):
            continue
        for name in scope.fields:
            if name in given:
                option = FIELD_OPTIONS[name][0]
                raise ConfigError(
                    f"{option} applies only with {scope.option_needs}",
                    f"add {scope.option_needs}, or leave out {option}",
                )
            if _value_of(cfg, name) != _default_of(name):
                log.warning(
                    "config field '%s' is ignored: it applies only with %s",
                    name,
                    scope.field_needs,
                )
    if "swap" in cfg.pipeline.stages:
        from livecam.face.swap_stage import check_swap_config

        check_swap_config(cfg.swap)  # the preset, and the photos it needs
    for name, (what, fix) in INPUT_FILES.items():
        path = _value_of(cfg, name)
        ignored = any(name in s.fields and not s.applies(cfg) for s in SCOPES)
        problem = None if path is None or ignored else input_file_problem(path)
        if problem is not None:
            raise ConfigError(f"{where(name)}: {what} {path} {problem}", fix)
    if "swap" in cfg.pipeline.stages:
        for pair in cfg.swap.map:
            for photo, what in zip(split_pair(pair) or (), ("source photo", "target photo")):
                problem = input_file_problem(photo)
                if problem is not None:
                    raise ConfigError(
                        f"{where('swap.map')} {pair}: the {what} {photo} {problem}",
                        "give SOURCE=TARGET pairs of photos (JPEG, PNG, ...), each with a face",
                    )
