"""The `livecam` command line: run, demo, doctor."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn, get_args

from livecam import __version__
from livecam.config import (
    BlendMode,
    CameraBackend,
    ColorTransfer,
    Config,
    FaceSelection,
    StageName,
    SwapConfig,
    sink_file,
    source_file,
)
from livecam.errors import ConfigError, LivecamError, format_error, one_line
from livecam.inputs import input_file_problem
from livecam.playback import expected_frames
from livecam.progress import Progress, frames_done
from livecam.signals import StopSignal, exit_code, stop_signals
from livecam.sources.cv_capture import quiet_ffmpeg_logs
from livecam.types import Event
from livecam.userfiles import check_output_path, write_new_file

log = logging.getLogger("livecam")

PROGRESS_INTERVAL_S = 0.25  # how often a progress bar is redrawn

SOURCE_HELP = (
    "camera[:N] or N (webcam N, default 0) | /dev/videoN | a stream URL (rtsp://..., "
    "http://...) | screen[:N] (monitor N) | screen:x,y,w,h (a region) | synthetic (test "
    "pattern; see --face-motion, --stamp) | PATH to a video (played once; see --loop) or an "
    "image"
)
SINK_HELP = (
    "virtualcam (OBS/Zoom/Meet camera) | window (preview) | auto (virtual camera, else a window) | "
    "null | FILE.mp4/.avi (record) | FILE.png/.jpg (last frame); repeat for several"
)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1280x720, got {text!r}") from None
    return w, h


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line like every other LiveCam error: one
    ``error:`` line and a ``fix:`` line (no usage dump), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}\n  fix: see `{self.prog} --help`", file=sys.stderr)
        raise SystemExit(2)


def offered_presets() -> list[str]:
    """The presets this version can build (``auto`` included), for ``--preset``."""
    from livecam.pipeline.presets import buildable, preset_names

    return [name for name in preset_names() if buildable(name)]


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of `livecam run` (also used by `livecam demo`). Unset options keep the config."""
    src = p.add_argument_group("source")
    src.add_argument("--source", metavar="SPEC", help=SOURCE_HELP)
    src.add_argument("--fps", type=float, help="requested capture rate (default 30)")
    src.add_argument("--size", type=_size, metavar="WxH", help="frame size, e.g. 1280x720")
    pace = src.add_mutually_exclusive_group()
    pace.add_argument(
        "--unpaced",
        action="store_true",
        default=None,
        help="deliver frames as fast as possible, no repeats (benchmarks; the default for a "
        "video file whose sinks are all files: a conversion keeps every frame and the file's "
        "timing)",
    )
    pace.add_argument(
        "--realtime",
        dest="unpaced",
        action="store_const",
        const=False,
        help="play a video file at its own speed, like a camera (the newest frame wins); the "
        "default when a sink is a virtual camera or a window",
    )
    src.add_argument(
        "--loop",
        action="store_true",
        default=None,
        help="video file: start again at its end (default: play it once, then stop)",
    )
    src.add_argument(
        "--camera-backend",
        choices=get_args(CameraBackend),
        help="OpenCV capture backend (default: the right one for this OS)",
    )
    src.add_argument(
        "--no-mjpg",
        dest="mjpg",
        action="store_false",
        default=None,
        help="do not ask the camera for MJPG",
    )
    src.add_argument(
        "--face-motion",
        metavar="IMG",
        help="synthetic source: animate this portrait with smooth head motion",
    )
    src.add_argument(
        "--stamp",
        action="store_true",
        default=None,
        help="synthetic source: write the capture time into the pixels",
    )
    out = p.add_argument_group("output")
    out.add_argument("--sink", action="append", metavar="SPEC", help=SINK_HELP)
    out.add_argument("--output-fps", type=float, help="output rate (default: the source's)")
    out.add_argument("--vcam-backend", help="pyvirtualcam backend (default: try each)")
    out.add_argument("--vcam-device", help="virtual camera device, e.g. /dev/video10")
    out.add_argument(
        "--overwrite",
        action="store_true",
        default=None,
        help="replace an existing recording or image file (default: keep it and write to "
        "a new name with a timestamp)",
    )
    pipe = p.add_argument_group("pipeline")
    pipe.add_argument(
        "--stage",
        action="append",
        choices=get_args(StageName),
        help="stage to run, in order; repeat for several (default: swap when "
        "--face is given, else passthrough)",
    )
    pipe.add_argument("--yunet", metavar="ONNX", help="YuNet model for the facebox stage")
    pipe.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="lossless runs: frames processed together (default 4); live runs always take "
        "the newest frame and batch its faces",
    )
    pipe.add_argument(
        "--lossless",
        action="store_true",
        default=None,
        help="never drop frames: slow the source down instead (offline rendering; the "
        "default for a video file converted to files)",
    )
    swap = p.add_argument_group("face swap")
    swap.add_argument("--face", metavar="IMG", help="source face image to swap in")
    swap.add_argument(
        "--face-index",
        type=int,
        metavar="N",
        help="which face of --face when it holds several (0 = largest)",
    )
    swap.add_argument(
        "--preset",
        choices=offered_presets(),
        help="model set (default offline); the neural presets come in a later version",
    )
    swap.add_argument(
        "--select",
        choices=get_args(FaceSelection),
        help="faces to replace: one (largest), all, or reference",
    )
    swap.add_argument("--reference", metavar="IMG", help="with --select reference: whose face")
    swap.add_argument(
        "--blend",
        choices=get_args(BlendMode),
        help="feather (default) or seamless (Poisson cloning, slower)",
    )
    swap.add_argument(
        "--color",
        choices=get_args(ColorTransfer),
        help="colour matching: lab (with local light, default), rct, none",
    )
    swap.add_argument(
        "--keep-eyes",
        action="store_true",
        default=None,
        help="keep the target's eyes (when the source photo blinks)",
    )
    swap.add_argument(
        "--no-keep-mouth",
        dest="keep_mouth",
        action="store_false",
        default=None,
        help="paste the source's mouth too instead of keeping the target's",
    )
    swap.add_argument(
        "--detect-every",
        type=int,
        metavar="N",
        help="run the face detector every N frames, track between (default 3)",
    )
    swap.add_argument(
        "--detect-size",
        type=int,
        metavar="PX",
        help="the detector works on the frame shrunk by a whole factor to at most this long "
        "side (default 400: faces from ~6%% of the frame width at any resolution; 800 finds "
        "~3%%, at ~4x the detector's CPU time)",
    )
    run = p.add_argument_group("run")
    run.add_argument("--frames", type=int, metavar="N", help="stop after N captured frames")
    run.add_argument("--stats-json", metavar="PATH", help="write a JSON summary at the end")
    run.add_argument("--config", metavar="FILE.toml", help="load settings; options override it")
    run.add_argument(
        "--save-config",
        metavar="FILE.toml",
        help="write the effective settings to a TOML file and exit",
    )
    run.add_argument(
        "--commands",
        action="store_true",
        help="read live commands from standard input, one per line (swap on|off, blank on|off, "
        "freeze on|off, face IMG, select MODE, preset NAME, set FIELD VALUE; `help` lists them)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no live status line")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")


#: config field -> (the option that sets it, its argparse dest); one row per option
FIELD_OPTIONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "source.spec": ("--source", "source"),
        "source.fps": ("--fps", "fps"),
        "source.size": ("--size", "size"),
        "source.unpaced": ("--unpaced", "unpaced"),
        "source.loop": ("--loop", "loop"),
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
        "pipeline.yunet_model": ("--yunet", "yunet"),
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
    if args.face and not args.stage:
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
        SWAP_FIELDS,
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
        from livecam.pipeline.swap import check_swap_config

        check_swap_config(cfg.swap)  # the preset, and the photos it needs
    for name, (what, fix) in INPUT_FILES.items():
        path = _value_of(cfg, name)
        ignored = any(name in s.fields and not s.applies(cfg) for s in SCOPES)
        problem = None if path is None or ignored else input_file_problem(path)
        if problem is not None:
            raise ConfigError(f"{where(name)}: {what} {path} {problem}", fix)


class StatusPrinter:
    """Prints the live status line (rate-limited) and every event, to stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.progress: Progress | None = None  # a progress bar shown instead of the status
        self._lock = threading.Lock()
        self._ticks = 0

    def event(self, event: Event) -> None:
        self.message(str(event))

    def message(self, text: str) -> None:
        """A line for the user (a command's error or help), printed at once."""
        with self._lock:
            if self.progress is not None:
                self.progress.write(text)
                return
            prefix = "\n" if self.tty and not self.quiet else ""
            print(f"{prefix}{text}", file=sys.stderr, flush=True)

    def show_progress(self, total: int | None, label: str) -> Progress | None:
        """Show a progress bar with ETA for ``total`` frames instead of the status line
        (on a terminal, not quiet, length known); the bar, or None when not shown."""
        if total is None or self.quiet or not self.tty:
            return None
        self.progress = Progress(total, label, sys.stderr)
        return self.progress

    def end_progress(self, done: int) -> None:
        progress, self.progress = self.progress, None
        if progress is not None:
            progress.update(done)
            progress.close()

    def status(self, line: str) -> None:
        if self.quiet:
            return
        self._ticks += 1
        with self._lock:
            if self.tty:
                print("\r" + line[:200].ljust(120), end="", file=sys.stderr, flush=True)
            elif self._ticks % 5 == 1:
                print(line, file=sys.stderr, flush=True)


def run_pipeline(cfg: Config, quiet: bool = False, commands: bool = False) -> dict[str, Any]:
    """Run until the stream ends, Ctrl-C or SIGTERM; return the JSON summary (its
    ``signal`` is the name of the signal that stopped the run, or None).

    When a sink is a preview window (``window``, or ``auto`` that fell back to one), the
    main thread runs the Qt window until it is closed, the stream ends or a stop is asked.
    ``commands``: read live commands from standard input (see ``livecam.console``).
    A signal during start-up (loading photos and models, opening the source) raises
    ``StopSignal`` once everything opened so far is closed.
    """
    from livecam.app import App
    from livecam.console import CommandReader
    from livecam.sinks.preview import window_sinks

    app = App(cfg)
    printer = StatusPrinter(quiet)
    app.telemetry.add_listener(printer.event)
    stop_requested = threading.Event()
    received: list[int] = []
    starting = True

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal starting
        received.append(signum)
        stop_requested.set()
        if starting:  # App.start closes what it opened and re-raises
            starting = False
            raise StopSignal(signum)

    def print_status() -> None:
        printer.status(app.snapshot(recent=True).status_line())

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        log.info("starting: %s", app.describe())
        app.start()
        starting = False
        if commands:
            CommandReader(app.controls, sys.stdin, printer.message).start()
        windows = window_sinks(app.sinks)
        source = app.source
        if source is not None and not windows:
            label = source.media_path.name if source.media_path is not None else source.name
            bar = printer.show_progress(expected_frames(cfg, source), label)
            while bar is not None and not stop_requested.is_set():
                bar.update(frames_done(app.snapshot(recent=True)))
                if app.wait(PROGRESS_INTERVAL_S):
                    break
            printer.end_progress(frames_done(app.snapshot(recent=True)))
        if windows:
            from ui.preview_window import run_preview

            run_preview(
                windows,
                lambda: stop_requested.is_set() or app.wait(0),
                tick=print_status,
                tick_s=cfg.run.status_interval_s,
                stats=lambda: app.snapshot(recent=True),
            )
        while not stop_requested.is_set() and not app.wait(cfg.run.status_interval_s):
            print_status()
    finally:
        starting = False
        printer.end_progress(0)
        hung = app.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if printer.tty and not quiet:
        print(file=sys.stderr)
    if hung:
        log.warning("threads that did not stop in time: %s", ", ".join(hung))
    summary = app.snapshot().to_summary()
    summary["files"] = [str(s.written) for s in app.sinks if s.written is not None]
    summary["signal"] = signal.Signals(received[0]).name if received else None
    summary["errors"] = ([app.failure] if app.failure else []) + app.crashes
    if cfg.run.stats_json:
        try:
            data = json.dumps(summary, indent=2).encode("utf-8")
            stats = write_new_file(cfg.run.stats_json, data, overwrite=cfg.output.overwrite)
            summary["files"].append(str(stats))
        except OSError as e:
            summary["errors"].append(
                f"the stats file {cfg.run.stats_json} (--stats-json) was not written: "
                f"{e.strerror or e}"
            )
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    lat = summary["latency_ms"]
    lat_text = f"{lat['p50']:.1f}/{lat['p99']:.1f} ms" if lat["p50"] is not None else "n/a"
    print(
        f"frames in {summary['frames_in']}, out {summary['frames_out']}, "
        f"dropped {summary['dropped']}, {summary['fps_out']:.1f} fps out, "
        f"latency p50/p99 {lat_text}"
    )
    for name, p in summary["stages_ms"].items():
        print(f"  stage {name}: p50 {p['p50']:.2f} ms, p99 {p['p99']:.2f} ms")
    for path in summary.get("files", []):
        print(f"wrote {path}")
    for error in summary.get("errors", []):
        print(f"error: {one_line(error)}", file=sys.stderr)


def exit_status(summary: dict[str, Any]) -> int:
    """0 for a run that ended by itself; 128 + the signal's number after Ctrl-C (130) or
    SIGTERM (143), the shell convention; 1 when an output failed or a pipeline thread died
    (``errors``: every sink failed, a file could not be written, a thread crashed)."""
    name = summary.get("signal")
    if name:
        return 128 + signal.Signals[name]
    return 1 if summary.get("errors") else 0


def cmd_run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    given = given_fields(args)
    if args.save_config:
        given.pop("output.overwrite", None)  # it is for the config file itself
    check_options(cfg, given)
    if args.save_config:
        cfg.save(args.save_config, overwrite=bool(args.overwrite))
        print(f"wrote {args.save_config}")
        return 0
    if cfg.run.stats_json is not None:  # checked now, not found out after the run
        where = "--stats-json" if "run.stats_json" in given else "config field 'run.stats_json'"
        check_output_path(cfg.run.stats_json, where)
    summary = run_pipeline(cfg, args.quiet, args.commands)
    print_summary(summary)
    return exit_status(summary)


def cmd_doctor(args: argparse.Namespace) -> int:
    from livecam.doctor import format_checks, run_doctor

    checks = run_doctor(args.vcam_backend, args.vcam_device)
    ascii_only = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
    print(format_checks(checks, ascii_only=ascii_only))
    return 0 if all(c.ok is not False for c in checks) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from livecam.demo import run_demo

    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="livecam", description="Real-time face swap to a virtual camera.")
    parser.add_argument("--version", action="version", version=f"livecam {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run the live pipeline",
        description="Capture frames, process them and send them to one or more sinks. "
        "Ctrl-C stops cleanly.",
    )
    add_run_options(run)
    run.set_defaults(func=cmd_run)
    demo = sub.add_parser(
        "demo",
        help="put the face of one bundled portrait onto another, offline (no downloads)",
        description="Put the face from grace_hopper.jpg (the source face) onto astronaut.png "
        "(the target, animated like a head on a webcam): the astronaut's face is replaced. "
        "Both portraits ship with LiveCam (assets/). Shows a window when a display exists, "
        "else writes demo.mp4.",
    )
    demo.add_argument("--output", default="demo.mp4", help="video written when headless")
    demo.add_argument(
        "--frames",
        type=int,
        help="frames to render (default: 90 to a file, until the window is closed on screen)",
    )
    demo.add_argument(
        "--window",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force or forbid the preview window (default: when a display exists)",
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    demo.set_defaults(func=cmd_demo)
    doctor = sub.add_parser(
        "doctor", help="check this machine: packages, GPU, cameras, virtual camera, display"
    )
    doctor.add_argument("--vcam-backend", help="check this pyvirtualcam backend only")
    doctor.add_argument("--vcam-device", help="check this virtual camera device")
    doctor.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    doctor.set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``livecam`` command; returns the exit status: 0 done, 1 a failed check or an
    unexpected error (a bug), 2 a bad command line, config or start-up problem, 130 / 143
    after Ctrl-C / SIGTERM. The user never sees a traceback (``-v`` logs an unexpected
    error's)."""
    with stop_signals():
        try:
            return _main(argv)
        except KeyboardInterrupt as e:
            print(f"stopped ({'Ctrl-C' if exit_code(e) == 130 else e})", file=sys.stderr)
            return exit_code(e)


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad command line (already printed)
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "verbose", False):
        quiet_ffmpeg_logs()
    try:
        result: int = args.func(args)
        return result
    except LivecamError as e:
        print(format_error(e), file=sys.stderr)
        return 2
    except Exception as e:
        log.debug("unexpected error", exc_info=True)
        print(
            f"error: unexpected {type(e).__name__}: {one_line(str(e))}\n"
            "  fix: this is a bug in LiveCam; please report it with the output of the same "
            "command run with -v",
            file=sys.stderr,
        )
        return 1
