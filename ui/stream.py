"""``StreamController``: the panel's one handle on the stream (start, stop, live changes,
its frames, stats and events), on the GUI thread.

Everything the panel changes goes through here: while stopped, ``set_config`` replaces the
config the next ``start`` uses; while running, ``change`` calls the app's control plane and
waits for the result on a short worker thread, so the GUI never blocks on a build (a face
or preset change is built on the app's loader thread). Results, events, stats and frames
reach the GUI thread as Qt signals (queued), never as calls from a pipeline thread.

The output frames come from a ``PanelSink`` added to the configured sinks: the output
thread only stores the newest frame, and a QTimer takes it (``frame`` signal).
"""

from __future__ import annotations

import ctypes
import logging
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from livecam.app import App, Resources
from livecam.config.schema import Config
from livecam.control.controls import Applied, Change, Controls
from livecam.errors import LivecamError, as_livecam_error
from livecam.sinks.base import Sink
from livecam.sinks.preview import FrameHandoff
from livecam.telemetry.hub import Subscription
from livecam.types import Event, Frame

log = logging.getLogger(__name__)

FRAME_POLL_MS = 15  # how often the newest output frame is taken (~66 Hz)
STATS_MS = 500  # how often the stats are read
#: how often a running stream gives the heap memory freed meanwhile back (glibc's
#: malloc_trim): live changes rebuild stages, and what the old ones freed stayed in
#: malloc's arenas (RSS crept 6 MB a minute with a change every 30 s: bench_session_rss)
TRIM_MS = 30_000
STOP_TIMEOUT_S = 1.5  # the app joins its threads within this
#: the same when the window closes: the process leaves right after (its threads are
#: daemons; while recording, ``STOP_TIMEOUT_S`` and the finish grace still apply), so
#: Ctrl+Q ends it within 1 s even while a live change is being built
CLOSE_TIMEOUT_S = 0.4
PANEL_SINKS_IGNORED = ("window", "auto")  # the panel's own preview replaces these
MALLOC_ARENAS = 4  # glibc's default, 8 per core, kept ~110 MB per Stop/Start (see below)
M_ARENA_MAX = -8  # mallopt's parameter number for it (malloc.h)


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (Linux), else None (musl, macOS, Windows)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads started from now on (the panel calls it
    first thing); True when set.

    Each start runs new threads (capture, inference, output, loader, ONNX Runtime's
    pools), and glibc gives new threads new arenas, up to 8 per core; what a stopped
    stream freed stays in them, scattered, so RSS grew by about the stream's working set
    per Stop/Start until every arena existed (414 MB to 1.58 GB after ten restarts on an
    8-core machine). With a few arenas, the next start reuses the memory the last freed.
    """
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(M_ARENA_MAX, arenas))


def trim_malloc() -> None:
    """Give the heap memory freed meanwhile back to the system (glibc's malloc_trim):
    after a stop, and every ``TRIM_MS`` while a stream runs; nothing elsewhere."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@dataclass(frozen=True)
class LiveView:
    """What the panel shows of the stream's live switches, read from the control state
    (``Controls.state``), whoever changed them: hotkeys, ``--commands``, the panel, the API.

    ``recordings``: the video files being recorded now, by their real names (a new one with
    a timestamp when the chosen file existed); ``recording_since``: when the panel first
    saw them (``time.monotonic``), None when nothing is recorded.
    """

    running: bool
    swap: bool
    blank: bool = False
    frozen: bool = False
    target: str = "auto"
    recordings: tuple[Path, ...] = ()
    recording_since: float | None = None
    on_air: bool = False  # OBS streams or records (livecam.obs), when linked

    @property
    def badges(self) -> tuple[str, ...]:
        """The preview's and the status bar's warnings: ``BLANK``, ``FROZEN``, ``SWAP OFF``
        (while running; the output is not what a swap would send), ``ON AIR: SWAP OFF``
        while OBS streams or records it."""
        if not self.running:
            return ()
        swap_off = "ON AIR: SWAP OFF" if self.on_air else "SWAP OFF"
        flags = (("BLANK", self.blank), ("FROZEN", self.frozen), (swap_off, not self.swap))
        return tuple(name for name, on in flags if on)

    def recording_text(self, now: float | None = None) -> str:
        """``REC 01:23 name.mp4 (no sound)`` while recording (elapsed mm:ss, or h:mm:ss),
        else "". The panel's run is always live (``as_camera``): its recordings hold the
        picture only (``NO_SOUND``)."""
        if not self.recordings or self.recording_since is None:
            return ""
        seconds = int(max(0.0, (time.monotonic() if now is None else now) - self.recording_since))
        minutes = f"{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        clock = f"{seconds // 3600}:{minutes}" if seconds >= 3600 else minutes
        return f"REC {clock} " + ", ".join(p.name for p in self.recordings) + " (no sound)"


#: why a panel recording has no sound (the REC line's tooltip)
NO_SOUND = (
    "no sound: the panel records the picture only (a live run records no sound, and an .avi "
    "never has any; `livecam run` converting a video file keeps its sound in .mp4/.mov/.mkv)"
)


def as_camera(config: Config) -> Config:
    """``config`` as the panel runs it: a video file is a camera too, played in real time
    at its own rate whatever the outputs (``source.unpaced`` False; never a conversion),
    and looped when ``source.loop`` (the Input tab's Loop)."""
    return config.with_section("source", unpaced=False)


def with_swap(config: Config, on: bool) -> Config:
    """``config`` with the swap stage on (last; ``passthrough`` dropped) or off (removed;
    ``passthrough`` when no stage is left)."""
    kept = tuple(s for s in config.pipeline.stages if s not in ("swap", "passthrough"))
    return config.with_section(
        "pipeline", stages=(*kept, "swap") if on else kept or ("passthrough",)
    )


class PanelSink(Sink):
    """Hands the newest output frame to the panel (never waits on the GUI)."""

    name = "panel"
    wants_repeats = False

    def __init__(self, handoff: FrameHandoff) -> None:
        self.handoff = handoff

    def open(self, width: int, height: int, fps: float) -> None:
        pass

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        self.handoff.put(frame)

    def close(self) -> None:
        pass


class StreamController(QObject):
    """Starts, stops and changes the stream for the panel; see the module docstring.

    Signals: ``running_changed(bool)``; ``config_changed(Config)`` after ``set_config`` or
    an applied live change; ``applied(str)`` (the command applied) and ``failed(str,
    LivecamError)`` (what was tried, why not) for every ``change``; ``event_received(Event)``
    for the app's events; ``stats(Snapshot)`` every ``STATS_MS``; ``frame(np.ndarray)`` for
    each new output frame (uint8 BGR); ``stopped(str)`` when the stream ended by itself
    (the reason, "" for a normal end).
    """

    running_changed = Signal(bool)
    config_changed = Signal(object)
    applied = Signal(str)
    failed = Signal(str, object)
    event_received = Signal(object)
    stats = Signal(object)
    frame = Signal(object)
    stopped = Signal(str)
    start_failed = Signal(object)
    live_changed = Signal(object)  # LiveView: a switch changed (polled every frame poll)
    _result = Signal(object, object, object)  # (description, Applied | None, error | None)
    _started = Signal(object, object)  # (App, error | None) from the start thread

    def __init__(self, config: Config, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._config = config
        self._app: App | None = None
        self.resources = Resources()  # face cache, models, model store: of every run here
        self._subscription: Subscription | None = None
        self._handoff = FrameHandoff()
        self._shown = 0
        self._frames = QTimer(self)
        self._frames.setInterval(FRAME_POLL_MS)
        self._frames.timeout.connect(self._poll_frame)
        self._stats = QTimer(self)
        self._stats.setInterval(STATS_MS)
        self._trim = QTimer(self)  # the heap's freed memory back to the system, while running
        self._trim.setObjectName("heap-trim")
        self._trim.setInterval(TRIM_MS)
        self._trim.timeout.connect(trim_malloc)
        self._stats.timeout.connect(self._poll_stats)
        self._result.connect(self._on_result)
        self._started.connect(self._on_started)
        self._starting = False
        self._abandon = threading.Event()  # stop() while a start is still under way
        self._events: list[Event] = []
        self._events_lock = threading.Lock()
        #: why the last stream ended by itself without a failure, for the window
        #: ("The video clip.mp4 ended ..."), "" otherwise
        self.end_text = ""
        self._live_seen: LiveView | None = None  # the last LiveView sent (live_changed)
        self._config_seen: Config | None = None  # controls.config when last sent
        self._recording_since: float | None = None
        #: sinks the next starts leave out (lower case), e.g. the window's preview-only
        #: start when no virtual camera works; the config keeps them
        self.skip_sinks: frozenset[str] = frozenset()

    # --- state --------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        """The effective config: the running stream's (with its live changes; the outputs
        as the panel chose them, also those the run leaves out), else the one the next
        start uses."""
        if self._app is None:
            return self._config
        return self._app.config.with_section("output", sinks=self._config.output.sinks)

    @property
    def running(self) -> bool:
        return self._app is not None

    @property
    def starting(self) -> bool:
        """True while ``start_async`` is opening the source, loading models and sinks."""
        return self._starting

    @property
    def app(self) -> App | None:
        """The running app (None when stopped)."""
        return self._app

    @property
    def controls(self) -> Controls | None:
        """The running stream's control plane (None when stopped)."""
        return self._app.controls if self._app is not None else None

    @property
    def swap_on(self) -> bool:
        """The master swap switch: the live state while running, else the config's stages."""
        controls = self.controls
        return (
            controls.state.swap if controls is not None else "swap" in self.config.pipeline.stages
        )

    @property
    def live(self) -> LiveView:
        """The live switches now: the control state while running, else the config's swap."""
        controls = self.controls
        if controls is None:
            return LiveView(running=False, swap="swap" in self._config.pipeline.stages)
        state = controls.state
        app = self._app
        recordings = tuple(s.recording for s in app.sinks if s.recording) if app else ()
        if not recordings:
            self._recording_since = None
        elif self._recording_since is None:
            self._recording_since = time.monotonic()
        return LiveView(
            running=True,
            swap=state.swap,
            blank=state.blank,
            frozen=state.frozen,
            target=state.target_text,
            recordings=recordings,
            recording_since=self._recording_since,
            on_air=app is not None and app.obs is not None and app.obs.state.on_air,
        )

    def set_swap(self, on: bool) -> None:
        """Turn the swap on or off: live (``change``) while running, else in the config."""
        if self.running:
            self.change(f"swap {'on' if on else 'off'}", lambda c: c.set_swap(on))
        else:
            self.set_config(with_swap(self._config, on))

    @property
    def target_text(self) -> str:
        """Who is swapped: ``auto`` or ``face #3`` (the person picked), live while running."""
        controls = self.controls
        return controls.state.target_text if controls is not None else "auto"

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Swap the person at ``point`` (normalised frame x, y) until they leave, or the
        main face again (None); live only (``change``; stopped: ``failed`` says so)."""
        what = "target auto" if point is None else "target a face"
        self.change(what, lambda c: c.set_target(point))

    def set_config(self, config: Config) -> None:
        """The config of the next start (while running, only kept for after the stop)."""
        self._config = config
        self.config_changed.emit(config)
        self._poll_live()  # stopped: the swap switch follows the config

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the stream with ``config`` (raises StartupError with every cause: the
        caller shows it). The configured virtual camera and files get the frames, and so
        does the panel's preview."""
        if self._app is not None or self._starting:
            return
        app = self._make_app()
        try:
            app.start()
        except BaseException:
            self._drop_subscription()
            raise
        self._run(app)

    def start_async(self) -> None:
        """``start`` on a worker thread, so opening a camera, loading (or verifying) models
        and opening a virtual camera never freeze the window; it ends in
        ``running_changed(True)``, or ``start_failed(LivecamError)`` with every cause."""
        if self._app is not None or self._starting:
            return
        try:
            app = self._make_app()
        except Exception as e:  # any cause, reported: Start stays usable
            self.start_failed.emit(as_livecam_error(e, "start"))
            return
        self._starting = True
        self._abandon.clear()

        def work() -> None:
            try:
                app.start()
            except Exception as e:  # StartupError, or any cause: reported, never raised
                self._started.emit(app, as_livecam_error(e, "start"))
                return
            if self._abandon.is_set():  # the window closed meanwhile
                app.stop(STOP_TIMEOUT_S)
                return
            self._started.emit(app, None)

        threading.Thread(target=work, name="panel-start", daemon=True).start()

    def _make_app(self) -> App:
        """The app of the next start: the configured outputs (built and signed by the app,
        bar those the preview replaces or that ``skip_sinks`` leaves out) and the preview."""
        cfg = as_camera(self._config)
        self.end_text = ""
        left_out = (*PANEL_SINKS_IGNORED, *self.skip_sinks)
        specs = tuple(s for s in cfg.output.sinks if s.strip().lower() not in left_out)
        self._handoff = FrameHandoff()
        self._shown = 0
        app = App(
            cfg.with_section("output", sinks=specs or ("null",)),
            extra_sinks=[PanelSink(self._handoff)],
            resources=self.resources,
        )
        self._subscription = app.telemetry.subscribe(on_event=self._queue_event)
        return app

    def _on_started(self, app: App, error: LivecamError | None) -> None:
        self._starting = False
        if error is not None:
            self._drop_subscription()
            self.start_failed.emit(error)
            return
        if self._abandon.is_set():
            app.stop(STOP_TIMEOUT_S)
            self._drop_subscription()
            return
        self._run(app)

    def _run(self, app: App) -> None:
        self._app = app
        self._config_seen = None
        self._recording_since = None  # REC counts from this run's recordings
        self._frames.start()
        self._stats.start()
        self._trim.start()
        self.running_changed.emit(True)
        self._poll_live()

    def _drop_subscription(self) -> None:
        if self._subscription is not None:
            self._subscription.unsubscribe()
            self._subscription = None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
        """Stop the stream (threads joined within ``timeout_s``); its effective config
        (live changes included) becomes the config of the next start. Returns the names of
        threads that did not stop in time."""
        app = self._app
        if app is None:
            if self._starting:  # the start thread stops what it opened
                self._abandon.set()
                self._starting = False
                self.running_changed.emit(False)  # the start ends here: not running
            return []
        self._frames.stop()
        self._stats.stop()
        self._trim.stop()
        self._config = self.config.with_section(  # the panel's own timing kept
            "source", unpaced=self._config.source.unpaced
        )
        if any(sink.records_video for sink in app.sinks):  # a quick close never cuts a file
            timeout_s = max(timeout_s, STOP_TIMEOUT_S)
        stuck = app.stop(timeout_s)
        self._drop_subscription()
        self._app = None
        self.running_changed.emit(False)
        self._poll_live()
        QTimer.singleShot(0, trim_malloc)  # once this frame (and its ``app``) let go
        return stuck

    # --- live changes -------------------------------------------------------------------
    def change(self, what: str, call: Callable[[Controls], Change]) -> None:
        """Apply a live change, e.g. ``change("swap off", lambda c: c.set_swap(False))``.

        Stopped: ``call`` is not made (the caller updates the config with ``set_config``
        instead) and ``failed`` says so. A call that raises at once (a bad value) and one
        whose build fails both end in ``failed``; an applied one in ``applied`` and
        ``config_changed``. Never blocks the GUI thread.
        """
        controls = self.controls
        if controls is None:
            self.failed.emit(what, LivecamError("the stream is not running", "start it first"))
            return
        try:
            pending = call(controls)
        except LivecamError as e:
            self.failed.emit(what, e)
            return

        def wait() -> None:
            try:
                self._result.emit(what, pending.wait(), None)
            except Exception as e:  # the build failed: its error, whatever its type
                self._result.emit(what, None, as_livecam_error(e, what))

        threading.Thread(target=wait, name="panel-change", daemon=True).start()

    def _on_result(self, what: str, applied: Applied | None, error: Any) -> None:
        if applied is not None:
            self.applied.emit(what)
            self.config_changed.emit(applied.config)
        else:
            self.failed.emit(what, error)

    # --- polling (GUI thread) -----------------------------------------------------------
    def _queue_event(self, event: Event) -> None:  # a pipeline thread: queue only
        with self._events_lock:
            self._events.append(event)

    def _poll_frame(self) -> None:
        newest = self._handoff.newest(self._shown)
        if newest is not None:
            self._shown, image = newest
            self.frame.emit(image)
        self._poll_live()

    def _poll_live(self) -> None:
        """Send ``live_changed`` when a switch changed and ``config_changed`` when a live
        change was installed, by whomever (a hotkey, ``--commands``, the API): the panel
        follows the stream within a frame poll, not only its own clicks."""
        controls = self.controls
        if controls is not None and controls.config is not self._config_seen:
            first = self._config_seen is None
            self._config_seen = controls.config
            if not first:
                self.config_changed.emit(self.config)
        live = self.live
        if live != self._live_seen:
            self._live_seen = live
            self.live_changed.emit(live)

    def _poll_stats(self) -> None:
        app = self._app
        if app is None:
            return
        with self._events_lock:
            events, self._events = self._events, []
        for event in events:
            self.event_received.emit(event)
        self.stats.emit(app.snapshot(recent=True))
        if not app.running:  # ended by itself: end of a file, every output failed, ...
            reason = app.failure or ""
            self.end_text = "" if reason else _end_text(app)
            self.stop()
            self.stopped.emit(reason)


def _end_text(app: App) -> str:
    """What the window says when ``app`` ended by itself without a failure."""
    source = app.source
    if source is not None and source.media_path is not None and source.finite:
        return (
            f"The video {source.media_path.name} ended. Turn Loop on in the Input tab to "
            "play it again and again, like a camera."
        )
    return "The stream ended (its frame limit was reached)."
