"""One stream run from the terminal: the status line or progress bar, live commands,
the preview window on the main thread, Ctrl-C/SIGTERM, and the summary and exit status."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from livecam.cli.progress import Progress, frames_done
from livecam.cli.signals import StopSignal, deferred, pending_stop
from livecam.config.schema import Config
from livecam.errors import one_line
from livecam.stream.playback import expected_frames
from livecam.types import Event
from livecam.userfiles import write_output

if TYPE_CHECKING:
    from livecam.app import App
    from livecam.control.hotkeys import HotkeyListener

log = logging.getLogger("livecam")

PROGRESS_INTERVAL_S = 0.25  # how often a progress bar is redrawn


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

    def live_event(self, event: Event) -> None:
        """``event`` for a run with ``--commands`` (fixes worded as live commands)."""
        from livecam.cli.console import live_event

        self.event(live_event(event))

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

    def final(self, line: str) -> None:
        """The run's last status line, once the stream has stopped: off a terminal only
        every 5th tick is printed, and a short run can end before one carries the swap
        check's reading."""
        if self.quiet:
            return
        with self._lock:
            if self.tty:
                print("\r" + line[:200].ljust(120), end="", file=sys.stderr, flush=True)
            else:
                print(line, file=sys.stderr, flush=True)


def run_pipeline(
    cfg: Config, quiet: bool = False, commands: bool = False, hotkeys: bool = False
) -> dict[str, Any]:
    """Run until the stream ends, Ctrl-C or SIGTERM; return the JSON summary (its
    ``signal`` is the name of the signal that stopped the run, or None).

    When a sink is a preview window (``window``, or ``auto`` that fell back to one), the
    main thread runs the Qt window until it is closed, the stream ends or a stop is asked.
    ``commands``: read live commands from standard input (see ``livecam.cli.console``).
    ``hotkeys``: listen to the global hotkeys of ``cfg.hotkeys`` while the stream runs
    (see ``livecam.control.hotkeys``; their bindings are printed at the start).
    A signal during start-up (loading photos and models, opening the source) raises
    ``StopSignal`` once everything opened so far is closed.
    """
    with deferred():  # a signal during the imports is raised after them
        from livecam.app import App
        from livecam.cli.console import CommandReader
        from livecam.sinks.preview import window_sinks

    app = App(cfg)
    printer = StatusPrinter(quiet)
    listener: HotkeyListener | None = None
    app.telemetry.add_listener(printer.live_event if commands else printer.event)
    stop_requested = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        """Record the signal and wake the main thread, nothing more: raised from here it
        could land anywhere (inside importlib's weakref callback Python discards it, and
        the run went on). The start acts on it at its next checkpoint, the run at once."""
        received.append(signum)
        stop_requested.set()

    def checkpoint() -> None:
        """Between the start's phases: stop (App.start closes what it opened) once a
        signal came."""
        if received:
            raise StopSignal(received[0])

    def status_line(recent: bool) -> str:
        line = app.snapshot(recent=recent).status_line()
        if app.obs is not None:  # first: the line is cut at the terminal's width
            line = f"{app.obs.state.status_text()} | {line}"
        return line

    def print_status() -> None:
        printer.status(status_line(recent=True))

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        swallowed = pending_stop()  # a signal before this handler, lost where it was raised
        if swallowed is not None:
            received.append(swallowed.signum)
            raise swallowed
        log.info("starting: %s", app.describe())
        app.start(checkpoint)
        lost = pending_stop()
        if lost is not None and not received:  # raised inside the start, and lost there
            received.append(lost.signum)
            stop_requested.set()
        if commands:
            CommandReader(app.controls, sys.stdin, printer.message, stop_requested.set).start()
        if hotkeys:
            listener = start_hotkeys(app, printer.message)
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
        if listener is not None:
            listener.stop()
        printer.end_progress(0)
        hung = app.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    printer.final(status_line(recent=False))  # the whole run's figures
    if printer.tty and not quiet:
        print(file=sys.stderr)
    if hung:
        log.warning("threads that did not stop in time: %s", ", ".join(hung))
    summary = app.snapshot().to_summary()
    # files on disk now (a still whose folder went is not claimed)
    summary["files"] = [str(s.written) for s in app.sinks if s.written and s.written.exists()]
    summary["signal"] = signal.Signals(received[0]).name if received else None
    summary["errors"] = ([app.failure] if app.failure else []) + app.crashes
    summary["overlap"] = app.overlap  # tracking beside the swap (pipeline.overlap)
    summary["opencv_threads"] = app.opencv_threads  # pipeline.opencv_threads, as applied
    if app.quality is not None:  # the quality level and every step of the ladder
        summary["quality"] = app.quality.summary()
    if cfg.run.stats_json:
        try:
            data = json.dumps(summary, indent=2).encode("utf-8")
            stats = write_output(cfg.run.stats_json, data, overwrite=cfg.output.overwrite)
            if stats != "-":  # "-": the stats went to standard output
                summary["files"].append(stats)
        except OSError as e:
            summary["errors"].append(
                f"the stats file {cfg.run.stats_json} (--stats-json) was not written: "
                f"{e.strerror or e}"
            )
    return summary


def start_hotkeys(app: App, say: Callable[[str], None]) -> HotkeyListener:
    """Listen to ``app``'s hotkeys (its config's ``[hotkeys]``), say the bindings."""
    from livecam.control.hotkeys import HotkeyActions, HotkeyListener, describe_bindings

    cfg = app.config
    actions = HotkeyActions(app.controls, cfg.hotkeys.faces, app.store, app.telemetry.event)
    listener = HotkeyListener(cfg.hotkeys.bindings(), actions.handlers())
    listener.start()
    say(describe_bindings(listener.bindings))
    return listener


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
    check = summary.get("swap_check")
    if check:  # the last reading of the swap check (face.identity.swap_check)
        strength = "n/a" if check["strength"] is None else f"{check['strength']:.0f}/100"
        print(
            f"swap check: strength {strength}, cos to source {check['cos_source']:.2f}, "
            f"to camera {check['cos_camera']:.2f}"
            + (" (NOT TAKING)" if check["taking"] is False else "")
        )
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
