"""The `livecam` command line: its parser (every command registers itself with an
``add_*_command``) and the run, demo, doctor and panel commands."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from livecam import __version__
from livecam.cli.options import (
    GROUPS,
    add_config_options,
    check_options,
    config_from_args,
    given_fields,
)
from livecam.cli.signals import exit_code, pending_stop, stop_behind, stop_signals
from livecam.cli.terminal_run import exit_status, print_summary, run_pipeline
from livecam.errors import ConfigError, LivecamError, cut, format_error, one_line
from livecam.runtime.providers import quiet_onnxruntime_logs
from livecam.sources.cv_capture import quiet_ffmpeg_logs
from livecam.userfiles import check_stats_path

log = logging.getLogger("livecam")


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line like every other LiveCam error: one
    ``error:`` line and a ``fix:`` line (no usage dump), exit status 2."""

    def error(self, message: str, prog: str | None = None) -> NoReturn:
        text = cut(one_line(message), 300)  # argparse echoes the bad value whole
        print(f"error: {text}\n  fix: see `{prog or self.prog} --help`", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse, but words left over point to the help of the command typed."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            prog = f"{self.prog} {command}" if command else None
            self.error(f"unrecognized arguments: {' '.join(extras)}", prog)
        return parsed


class _DebugHelp(argparse.Action):
    """``--help-debug``: the help with the test and bench knobs shown, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        shown = argparse.ArgumentParser(prog=parser.prog, description=parser.description)
        add_run_options(shown, debug_shown=True)
        shown.print_help()
        parser.exit()


def add_run_options(p: argparse.ArgumentParser, debug_shown: bool = False) -> None:
    """Options of `livecam run`: one per config field (generated from the fields'
    Settings, see ``livecam.cli.options``) and those of the run itself. Unset options keep
    the config."""
    run = add_config_options(p, debug_shown)[GROUPS["run"]]
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
    run.add_argument(
        "--hotkeys",
        action="store_true",
        help="global hotkeys while the stream runs, even when another app has the focus "
        "(defaults: Ctrl+Alt+Shift with S swap, B blank, F freeze, E enhancer, N/P next/previous "
        "face, U/D quality up/down; [hotkeys] in --config changes them, a desktop's own "
        "shortcut is warned about; X11, Windows and macOS, not Wayland)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no live status line")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    if not debug_shown:
        run.add_argument(
            "--help-debug",
            action=_DebugHelp,
            help="show the help with the test and bench knobs too (synthetic source, debug "
            "stages, CUDA tuning), and exit",
        )


def cmd_run(args: argparse.Namespace) -> int:
    if args.save_config is not None and not args.save_config.strip():
        raise ConfigError(
            "--save-config was given an empty path", "give the path of the TOML file to write"
        )
    cfg = config_from_args(args)
    given = given_fields(args)
    if args.save_config is not None:
        given.pop("output.overwrite", None)  # it is for the config file itself
    check_options(cfg, given)
    if args.save_config is not None:
        # --overwrite is for the saved file itself; a config file never carries it
        cfg = cfg.with_section("output", overwrite=False)
        cfg.save(args.save_config, overwrite=bool(args.overwrite))
        print(f"wrote {args.save_config}")
        return 0
    if cfg.run.stats_json is not None:  # checked now, not found out after the run
        where = "--stats-json" if "run.stats_json" in given else "config field 'run.stats_json'"
        check_stats_path(cfg.run.stats_json, where, cfg.output.overwrite)
    if args.hotkeys:  # checked now, not found out after the stream started
        from livecam.control.hotkeys import HINT, HotkeyError, hotkeys_available

        ok, why = hotkeys_available()
        if not ok:
            raise HotkeyError(f"--hotkeys: global hotkeys are not available here: {why}", HINT)
    summary = run_pipeline(cfg, args.quiet, args.commands, args.hotkeys)
    print_summary(summary)
    return exit_status(summary)


def cmd_doctor(args: argparse.Namespace) -> int:
    from livecam.telemetry.doctor import format_checks, run_doctor

    if args.remote:  # only the swap server
        from livecam.remote.probe import run_probe

        return run_probe(args)
    checks = run_doctor(args.vcam_backend, args.vcam_device)
    ascii_only = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
    print(format_checks(checks, ascii_only=ascii_only))
    return 0 if all(c.ok is not False for c in checks) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from livecam.cli.demo import run_demo

    return run_demo(args)


def cmd_panel(args: argparse.Namespace) -> int:
    """The desktop panel (Qt, imported here: the rest of livecam never imports it)."""
    from livecam.errors import SinkError
    from livecam.sinks.preview import window_problem

    why = window_problem()
    if why is not None:  # Qt would abort the process without a usable display
        raise SinkError(
            f"cannot open the LiveCam panel: {why}",
            "run `livecam` in a desktop session (or under `xvfb-run`), or use "
            "`livecam run --face PHOTO` on a terminal",
        )
    from ui.panel_app import run_panel

    return run_panel()


def add_run_command(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run the live pipeline",
        description="Capture frames, process them and send them to one or more sinks. "
        "Ctrl-C stops cleanly.",
    )
    add_run_options(run)
    run.set_defaults(func=cmd_run)


def add_demo_command(sub: Any) -> None:
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
        "--overwrite",
        action="store_true",
        help="replace an existing --output file (default: keep it, write a new timestamped name)",
    )
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


def add_doctor_command(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor", help="check this machine: packages, GPU, cameras, virtual camera, display"
    )
    doctor.add_argument("--vcam-backend", help="check this pyvirtualcam backend only")
    doctor.add_argument("--vcam-device", help="check this virtual camera device")
    doctor.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    from livecam.remote.probe import add_remote_probe_options

    add_remote_probe_options(doctor)
    doctor.set_defaults(func=cmd_doctor)


def add_panel_command(sub: Any) -> None:
    panel = sub.add_parser(
        "panel",
        help="the desktop panel (the default when livecam runs with no arguments)",
        description=(
            "The LiveCam desktop panel: a live preview, Start/Stop, the Swap, Blank and Freeze "
            "switches, and tabs for the source face, the input, the outputs (virtual camera, "
            "recording), processing, hotkeys and stats. Its settings are kept in the user "
            "config folder, in the TOML that `livecam run --config` reads. Needs a display."
        ),
    )
    panel.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    panel.set_defaults(func=cmd_panel)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: each registers itself on the subparsers with its own
    ``add_*_command`` (the run, demo, doctor and panel ones here, the others in their
    modules, imported when the parser is built)."""
    from livecam.benchmark.command import add_bench_command
    from livecam.cli.check import add_check_command
    from livecam.cli.models import add_models_command
    from livecam.cli.verify import add_verify_command
    from livecam.obs.command import add_obs_command
    from livecam.remote.command import add_serve_command

    parser = Parser(prog="livecam", description="Real-time face swap to a virtual camera.")
    parser.add_argument("--version", action="version", version=f"livecam {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_command in (
        add_run_command,
        add_demo_command,
        add_doctor_command,
        add_panel_command,
        add_models_command,
        add_verify_command,
        add_obs_command,
        add_bench_command,
        add_check_command,
        add_serve_command,
    ):
        add_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``livecam`` command; returns the exit status: 0 done, 1 a failed check, a file
    that could not be written or an unexpected error (a bug), 2 a bad command line, config
    or start-up problem, 130 / 143 after Ctrl-C / SIGTERM. The user never sees a traceback
    (``-v`` logs an unexpected error's)."""
    with stop_signals():
        try:
            return _main(argv)
        except BaseException as e:  # a signal, or what an import made of one (ImportError)
            stop = stop_behind(e) if not isinstance(e, SystemExit) else None
            if stop is None and not isinstance(e, KeyboardInterrupt):
                raise
            interrupt = stop or e
            assert isinstance(interrupt, KeyboardInterrupt)
            print(
                f"stopped ({'Ctrl-C' if exit_code(interrupt) == 130 else interrupt})",
                file=sys.stderr,
            )
            return exit_code(interrupt)


def _main(argv: list[str] | None) -> int:
    if not (sys.argv[1:] if argv is None else argv):
        argv = ["panel"]  # no arguments: the desktop panel
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
        quiet_onnxruntime_logs()
    try:
        result: int = args.func(args)
    except Exception as e:
        stop = stop_behind(e)  # an error a signal caused (an import, a model load) is a stop
        if stop is not None:
            raise stop from None
        if isinstance(e, LivecamError):
            print(format_error(e), file=sys.stderr)
            return e.exit_status
        log.debug("unexpected error", exc_info=True)
        print(
            f"error: unexpected {type(e).__name__}: {one_line(str(e))}\n"
            "  fix: this is a bug in LiveCam; please report it with the output of the same "
            "command run with -v",
            file=sys.stderr,
        )
        return 1
    stop = pending_stop()
    if stop is not None and result != stop.exit_code:  # a signal something swallowed
        raise stop
    return result
