"""The one place the stream is wired: source -> ring -> inference (the stages) -> output
slot -> output -> sinks, built from a Config (``App._start`` reads in that order).

Threads: capture (source -> ring), inference (ring -> stages -> slot; with overlap, a
render thread runs the swap while the inference thread tracks the next frame), output
(slot -> sinks, paced to the fps), and for the control plane the loader (builds live
changes), the quality tuner and, with ``obs.enabled``, the OBS link (``livecam.obs``);
the caller's main thread (the terminal run or the Qt panel) starts, changes and stops the
stream. The App owns everything long-lived:
``Resources`` (the source-face cache and the model store shared by every build; the panel
keeps one for all its runs), the threads and the control plane (``app.controls``). Start-up
collects every cause of failure and closes whatever it had opened; once running, failures
are events and the stream goes on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import cv2
import platformdirs

from livecam.config.schema import Config, OutputConfig
from livecam.config.specs import SourceSpec
from livecam.control.controls import Controls
from livecam.control.loader import LoaderWorker
from livecam.control.quality_controller import QualityController, QualityOptions, QualityWorker
from livecam.control.quality_ladder import pinned_config
from livecam.errors import (
    ControlError,
    LivecamError,
    SourceError,
    StartupError,
    as_livecam_error,
)
from livecam.face.build import PHOTO_SIDES, YUNET_START_SCORE
from livecam.face.debug_stages import FaceBoxStage, PassThroughStage
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.source.photo import SourceFaceCache
from livecam.face.track.feedback import NoFaceWatch
from livecam.models.presets import FACE_PARSER, given_files, resolve_preset
from livecam.models.store import ModelStore
from livecam.obs.link import ObsLink
from livecam.sinks import make_sinks
from livecam.sinks.base import Sink
from livecam.sinks.recording.audio import has_audio
from livecam.sinks.recording.provenance import IPTC, ModelRef, Provenance, SwapDetails
from livecam.sources import make_source
from livecam.sources.base import Source
from livecam.stream.capture import CaptureWorker
from livecam.stream.inference import InferenceWorker
from livecam.stream.label import Label
from livecam.stream.output import WATERMARK_OFF, OutputWorker
from livecam.stream.playback import Playback, plan_playback
from livecam.stream.ring import RingBuffer
from livecam.stream.stage import Stage, report_stages, uses_accelerator
from livecam.stream.watermark import Payload, Watermarker, new_session_payload
from livecam.stream.worker import Worker
from livecam.telemetry.gpu import NvmlReader
from livecam.telemetry.hub import Subscription, Telemetry
from livecam.telemetry.snapshot import Snapshot
from livecam.types import Face, Frame, FramePacket

log = logging.getLogger(__name__)

FIRST_FRAME_TIMEOUT_S = 10.0
#: how often the start's ``checkpoint`` is called while the first frame is awaited
CHECKPOINT_S = 0.05
OUTPUT_SLOT = 4  # frames waiting for the output thread (it skips all but the newest two)
T = TypeVar("T")


def default_cache_dir() -> Path:
    """Where analysed source faces are kept: ``$LIVECAM_CACHE_DIR`` or the user cache dir."""
    env = os.environ.get("LIVECAM_CACHE_DIR")
    return Path(env) if env else Path(platformdirs.user_cache_dir("livecam")) / "faces"


def source_type_of(spec: str) -> str | None:
    """The IPTC digital source type of the frames of source ``spec`` (None: a file)."""
    kind = SourceSpec.parse(spec).kind
    return {
        "camera": IPTC + "digitalCapture",
        "screen": IPTC + "screenCapture",
        "synthetic": IPTC + "algorithmicMedia",
    }.get(kind)


def swap_details(config: Config, store: ModelStore) -> SwapDetails:
    """The preset and parts the swap of ``config`` runs (names and hashes from the model
    manifest, the store's recorded hashes, or the files the user gave: never the photo)."""
    source_type = source_type_of(config.source.spec)
    if "swap" not in config.pipeline.stages:
        return SwapDetails(None, (), source_type)
    swap = config.swap
    row = resolve_preset(swap.preset, store, swap)
    manifest = store.manifest
    parts = dict(row.parts_for(swap, manifest))
    if FACE_PARSER in row.model_names(swap, manifest) and FACE_PARSER not in parts.values():
        parts["masker"] = FACE_PARSER
    given = given_files(swap)
    models: list[ModelRef] = []
    for role, name in parts.items():
        if role in given:
            path = Path(given[role]).expanduser()
            try:
                digest = store.hashes.sha256(path)
            except OSError:
                digest = ""
            models.append(ModelRef(role, path.name, path.name, digest))
        elif name in manifest:
            entry = manifest[name]
            digest = entry.sha256 or store.recorded_hash(name)
            models.append(ModelRef(role, name, entry.file, digest))
        else:
            models.append(ModelRef(role, name))
    return SwapDetails(row.name, tuple(models), source_type)


def watch_no_face(telemetry: Telemetry, watch: NoFaceWatch) -> Subscription:
    """Follow the sent frames the swap stage worked on with ``watch``: its warning (no face
    swapped for a while, with the likely cause) becomes a telemetry event. A watch that
    raises is unsubscribed and reported once; the output thread goes on."""

    def follow(packet: FramePacket) -> None:
        if packet.faces_swapped is None:  # swap off, blank or frozen: nothing searched
            return
        event = watch.observe(packet.t_capture_ns, packet.frame, packet.faces, packet.faces_swapped)
        if event is not None:
            telemetry.event(event)

    return telemetry.subscribe(on_packet=follow)


def label_of(output: OutputConfig) -> Label | None:
    """The on-output label ``output`` asks for, or None."""
    if output.label is None:
        return None
    return Label(output.label, output.label_position, output.label_size)


def build_stages(
    config: Config, faces: SourceFaceCache, store: ModelStore | None = None
) -> list[Stage]:
    """Create the configured stages in order (each may raise), with the app's shared
    source-face cache and model store."""
    stages: list[Stage] = []
    for name in config.pipeline.stages:
        if name == "passthrough":
            stages.append(PassThroughStage())
        elif name == "facebox":
            stages.append(FaceBoxStage(config.pipeline.yunet_model))
        elif name == "swap":
            from livecam.face.swap_stage import build_swap_stage

            if config.remote.url is None:
                stages.append(build_swap_stage(config.swap, faces, store))
            else:
                from livecam.remote.wraps import RemoteWraps

                wraps = RemoteWraps(config.remote)
                stages.append(
                    build_swap_stage(config.swap, faces, store, wraps.swapper, wraps.enhancer)
                )
    return stages


class Resources:
    """What outlives one run and is shared by every build: the source-face cache (each
    photo analysed once per analyser, kept on disk) and the model store; ``find_faces``
    numbers a photo's faces for the panel through that cache. Thread-safe."""

    def __init__(self, faces: SourceFaceCache | None = None) -> None:
        if faces is None:  # group photos get a numbered sheet of their faces beside them
            faces = SourceFaceCache(default_cache_dir(), face_sheets=True)
        self.faces = faces
        self.store = ModelStore()  # model files: found, verified, downloaded
        self._lock = threading.Lock()
        self._finder: FaceAnalyzer | None = None

    def find_faces(self, path: str | Path) -> tuple[Path, Frame, list[Face]]:
        """(path, image, faces largest first) of a photo, as ``swap.face_index`` of the lite
        preset counts them (its photo detector: bundled YuNet, two passes, the same start
        score), analysed through the face cache. FaceSourceError when it cannot be read."""
        with self._lock:
            if self._finder is None:  # made on first use (a few ms)
                detector = YuNetDetector(
                    bundled_yunet(), max_sides=PHOTO_SIDES, start_score=YUNET_START_SCORE
                )
                self._finder = FaceAnalyzer(detector, None)
        photo = Path(path).expanduser()
        _, image, faces = self.faces.analyze_file(photo, self._finder)
        return photo, image, faces


class App:
    """The running pipeline: ``start`` (raises StartupError listing every cause), ``wait``,
    ``stop`` (joins every thread within about two seconds), ``controls`` to change the
    running stream, ``snapshot`` for telemetry.

    The sinks are those of ``config.output.sinks`` (``make_sinks``: files signed with
    ``provenance``), then ``extra_sinks`` (the panel's preview); ``sinks`` replaces the
    configured ones (tests and benchmarks give their own)."""

    def __init__(
        self,
        config: Config,
        *,
        telemetry: Telemetry | None = None,
        stages: list[Stage] | None = None,
        sinks: list[Sink] | None = None,
        faces: SourceFaceCache | None = None,
        quality: QualityOptions | None = None,
        resources: Resources | None = None,
        no_face: NoFaceWatch | None = None,
        extra_sinks: Sequence[Sink] = (),
    ) -> None:
        self._config = config
        self._gpu = NvmlReader() if telemetry is None else None  # closed by stop/_abort
        self.telemetry = telemetry or Telemetry(gpu_reader=self._gpu)
        #: warns when the sent frames show no swapped face for a while (``no_face``)
        self._no_face = watch_no_face(self.telemetry, no_face or NoFaceWatch())
        #: the face cache (``faces`` when given) and model store of every build
        self.resources = resources if resources is not None else Resources(faces)
        self.faces = self.resources.faces
        self.store = self.resources.store
        self._stages = stages
        self._sinks = sinks
        self._extra_sinks = list(extra_sinks)
        self._quality_options = quality
        #: steps the quality ladder (adaptive quality, VRAM watchdog), once started
        self.quality: QualityController | None = None
        self._stop = threading.Event()
        self._checkpoint: Callable[[], None] = lambda: None  # see ``start``
        self._workers: list[Worker] = []
        self._output: OutputWorker | None = None
        self._controls: Controls | None = None
        self.sinks: list[Sink] = []  # the opened sinks, once started
        self.source: Source | None = None  # the source, once started
        self.playback: Playback | None = None  # real time or a conversion, once started
        self.frame_size: tuple[int, int] | None = None
        #: whether tracking runs beside the swap (``pipeline.overlap``), once started
        self.overlap = False
        #: the threads OpenCV's own operations may use (``pipeline.opencv_threads``), once
        #: started; restored to what it was (``_opencv_before``) when stopped
        self.opencv_threads = cv2.getNumThreads()
        self._opencv_before: int | None = None
        #: the invisible mark's payload of this run (a new session id at each start)
        self.payload: Payload | None = None
        #: the link to OBS Studio (``obs.enabled``), once started: its ``state``
        self.obs: ObsLink | None = None
        #: signs this run's recordings and stills (their manifests name the swap's models)
        self.provenance = Provenance(lambda: swap_details(self.config, self.store))

    @property
    def config(self) -> Config:
        """The start config plus every applied live change (with the user's own settings
        where a quality level's are in force: ``controls.config`` has those)."""
        if self._controls is None:
            return self._config
        if self.quality is None:
            return self._controls.config
        return self.quality.user_config(self._controls.config)

    @property
    def controls(self) -> Controls:
        """The control plane of the running stream (after ``start``)."""
        if self._controls is None:
            raise ControlError("the stream is not running", "call start() first")
        return self._controls

    def build_warm(self, config: Config) -> list[Stage]:
        """Build the stage list for ``config`` and warm it up at the running frame size
        (the loader thread calls this for live changes); closes what it built on failure."""
        if self.frame_size is None:
            raise ControlError("the stream is not running", "call start() first")
        if config.swap.neural.cuda_graph:  # captured in warm-up: the running stages' CUDA calls
            log.warning(  # on other threads would break the capture (and them)
                "a CUDA graph is captured only at start: the swap rebuilt while the stream "
                "runs goes without one until the next start"
            )
            config = config.with_section("swap", cuda_graph=False)
        stages = build_stages(config, self.faces, self.store)
        try:
            for stage in stages:
                stage.warmup(*self.frame_size)
        except Exception:
            for stage in stages:
                _close_quietly(stage)
            raise
        return stages

    def start(self, checkpoint: Callable[[], None] = lambda: None) -> None:
        """Open everything and start the threads; on any problem, clean up and raise.

        A KeyboardInterrupt meanwhile (Ctrl-C, or the CLI's ``StopSignal`` on SIGINT or
        SIGTERM) also closes whatever was built or opened so far, then propagates.
        ``checkpoint`` is called after each phase of the start (and often while the first
        frame is awaited): the CLI's raises its ``StopSignal`` there once a signal came (its
        handler only records it: raised from a handler, it could land anywhere).
        """
        self._checkpoint = checkpoint
        undo = contextlib.ExitStack()  # run only when interrupted
        try:
            self._start(undo)
        except KeyboardInterrupt:
            self._stop.set()
            undo.close()
            if self._gpu is not None:
                self._gpu.close()
            raise

    def _start(self, undo: contextlib.ExitStack) -> None:
        """The graph, wired in the order a frame takes; a step that fails closes what the
        steps before it opened and raises StartupError with every cause."""
        cfg = pinned_config(self._config)  # a pinned quality level's settings applied
        self.payload = new_session_payload()
        self.provenance.mark_session = self.payload.session_id if cfg.output.watermark else None
        if not cfg.output.watermark:
            log.warning(WATERMARK_OFF)
        source, stages, sinks = self._make_parts(cfg)
        undo.callback(self._close_all, stages, sinks)
        self._checkpoint()
        play = self._plan(cfg, source, sinks)
        ring: RingBuffer[FramePacket] = RingBuffer(cfg.buffer.capacity, play.lossless)
        slot: RingBuffer[FramePacket] = RingBuffer(OUTPUT_SLOT, play.lossless)
        self.telemetry.count_drops_from(lambda: ring.dropped + slot.dropped)
        capture = self._capture(cfg, play, source, ring, undo)  # source -> ring
        size = self._first_frame(cfg, capture, stages, sinks)
        self._checkpoint()
        fps = cfg.output.fps or source.fps
        self.sinks = self._open(capture, stages, sinks, size, fps)
        self._checkpoint()
        inference = self._inference(cfg, play, stages, ring, slot)  # ring -> stages -> slot
        self._output = self._output_thread(cfg, play, slot, fps)  # slot -> sinks
        self._checkpoint()
        self._go(cfg, capture, inference, size, fps)

    def _make_parts(self, cfg: Config) -> tuple[Source, list[Stage], list[Sink]]:
        """The source, the stages and the sinks, made (not opened): StartupError with the
        cause of every one that could not be made."""
        causes: list[LivecamError] = []
        source = _collect(causes, "source", lambda: make_source(cfg.source))
        stages = self._stages
        if stages is None:
            stages = _collect(causes, "pipeline", lambda: build_stages(cfg, self.faces, self.store))
        sinks = self._sinks
        if sinks is None:
            sinks = _collect(causes, "output", lambda: self.make_sinks(cfg))
        if sinks is not None:
            sinks = [*sinks, *self._extra_sinks]
        if causes or source is None or stages is None or sinks is None:
            causes += _other_causes(source, sinks or [])  # every cause, not only the first
            self._close_all(stages or [], [])
            raise StartupError(causes)
        return source, stages, sinks

    def make_sinks(self, cfg: Config) -> list[Sink]:
        """The sinks of ``cfg.output.sinks``, the files signed with this run's provenance:
        the one way a run's sinks are built (``livecam run`` and the panel alike)."""
        return make_sinks(cfg.output.sinks, cfg.output, self.provenance)

    def _plan(self, cfg: Config, source: Source, sinks: list[Sink]) -> Playback:
        """Real time or a conversion (whose recordings get the file's sound)."""
        self.source, self.playback = source, plan_playback(cfg, source, sinks)
        if self.playback.conversion and source.media_path is not None:
            for sink in sinks:
                sink.take_audio_from(source.media_path)
        elif self._records_without_sound(source, sinks):
            log.warning(
                "the sound of %s is not recorded: it is copied only when a file is "
                "converted (no window or virtual camera among the sinks, or --unpaced)",
                source.media_path,
            )
        return self.playback

    def _capture(
        self,
        cfg: Config,
        play: Playback,
        source: Source,
        ring: RingBuffer[FramePacket],
        undo: contextlib.ExitStack,
    ) -> CaptureWorker:
        """The capture thread (source -> ring), started: it reads the first frame, then
        waits for ``go``."""
        capture = CaptureWorker(
            source,
            ring,
            self._stop,
            self.telemetry,
            paced=play.paced,
            size=cfg.source.size,
            mirror=cfg.source.mirror,
            max_frames=play.frames,
            reopen_interval_s=cfg.source.reopen_interval_s,
            wait_for_go=True,
        )
        capture.start()
        undo.callback(capture.join, 1.0)
        return capture

    def _first_frame(
        self, cfg: Config, capture: CaptureWorker, stages: list[Stage], sinks: list[Sink]
    ) -> tuple[int, int]:
        """The frame size, once the source delivered its first frame (else StartupError,
        with what the sinks would fail on too)."""
        causes: list[LivecamError] = []
        deadline = time.monotonic() + FIRST_FRAME_TIMEOUT_S
        while not capture.ready.wait(CHECKPOINT_S) and time.monotonic() < deadline:
            self._checkpoint()
        if not capture.ready.is_set():
            causes.append(
                SourceError(
                    f"source '{cfg.source.spec}' delivered no frame within "
                    f"{FIRST_FRAME_TIMEOUT_S:.0f} s",
                    "check that the device works in another app, or run `livecam doctor`",
                )
            )
        elif capture.startup_error is not None:
            causes.append(capture.startup_error)
        if causes or capture.size is None:
            causes += _other_causes(None, sinks)
            self._abort(capture, stages, [])
            raise StartupError(causes)
        self.frame_size = capture.size
        return capture.size

    def _open(
        self,
        capture: CaptureWorker,
        stages: list[Stage],
        sinks: list[Sink],
        size: tuple[int, int],
        fps: float,
    ) -> list[Sink]:
        """Open the sinks and warm the stages up at the frame size: the opened sinks, or
        StartupError with every cause."""
        causes: list[LivecamError] = []
        opened: list[Sink] = []
        for sink in sinks:
            try:
                sink.open(*size, fps)
                opened.append(sink)
            except Exception as e:
                causes.append(as_livecam_error(e, f"output {sink.name}"))
        for stage in stages:
            try:
                stage.warmup(*size)
            except Exception as e:
                causes.append(as_livecam_error(e, f"stage {stage.name}"))
        if causes:
            self._abort(capture, stages, opened)
            raise StartupError(causes)
        report_stages(stages, self.telemetry)
        return opened

    def _inference(
        self,
        cfg: Config,
        play: Playback,
        stages: list[Stage],
        ring: RingBuffer[FramePacket],
        slot: RingBuffer[FramePacket],
    ) -> InferenceWorker:
        """The inference thread (ring -> stages -> slot); with overlap, its render thread."""
        overlap = cfg.pipeline.overlap
        return InferenceWorker(
            stages,
            ring,
            slot,
            self._stop,
            self.telemetry,
            cfg.buffer.batch_limit,
            lossless=play.lossless,
            overlap=uses_accelerator(stages) if overlap is None else overlap,
        )

    def _output_thread(
        self, cfg: Config, play: Playback, slot: RingBuffer[FramePacket], fps: float
    ) -> OutputWorker:
        """The output thread (slot -> the opened sinks), paced to ``fps``."""
        return OutputWorker(
            self.sinks,
            slot,
            self._stop,
            self.telemetry,
            fps,
            repeat=play.paced,
            lossless=play.lossless,
            label=label_of(cfg.output),
            watermark=Watermarker(self.payload) if cfg.output.watermark and self.payload else None,
        )

    def _go(
        self,
        cfg: Config,
        capture: CaptureWorker,
        inference: InferenceWorker,
        size: tuple[int, int],
        fps: float,
    ) -> None:
        """The control plane (controls, loader, quality ladder), then every thread started,
        the capture's frames last."""
        assert self._output is not None
        loader = LoaderWorker(self._stop, self.telemetry)
        self._controls = Controls(cfg, size, inference, loader, self.telemetry, self.build_warm)
        self.quality = QualityController(
            self._controls, self.telemetry, fps, self._quality_options, base=self._config.swap
        )
        self._controls.quality = self.quality
        self._controls.capture = capture  # mirror: live on the capture thread
        tuner = QualityWorker(self.quality, self._stop, self.telemetry)
        self._workers = [tuner, loader, capture, inference, self._output]
        if cfg.obs.enabled:  # its own thread: no frame waits for OBS; stopped last
            controls = self._controls
            blanked = lambda: controls.state.blank  # noqa: E731 - read on the link's thread
            self.obs = ObsLink(cfg.obs, self.telemetry, self._stop, fps, blanked=blanked)
            self._workers.insert(0, self.obs)
        self._opencv_before = cv2.getNumThreads()
        self.opencv_threads = cfg.pipeline.opencv_threads or (
            self._opencv_before if uses_accelerator(inference.stages) else 1
        )
        cv2.setNumThreads(self.opencv_threads)
        for worker in self._workers:
            if worker is not capture:
                worker.start()
        capture.go.set()
        self.overlap = inference.overlap
        log.info(
            "running %dx%d at %.1f fps: %s%s",
            *size,
            fps,
            self.describe(),
            " (tracking beside the swap: overlap)" if self.overlap else "",
        )

    def describe(self) -> str:
        cfg = self.config
        return (
            f"source={cfg.source.spec} stages={','.join(cfg.pipeline.stages)} "
            f"sinks={','.join(cfg.output.sinks)}"
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stream ends by itself (``--frames``) or ``stop``; True if it ended."""
        if self._output is None:
            return True
        return self._output.finished.wait(timeout)

    @property
    def failure(self) -> str | None:
        """Why the run failed, in one line (the source file is gone, every output failed,
        or a file could not be written), or None. Final once the stream has ended."""
        failures = [w.failure for w in self._workers if isinstance(w, CaptureWorker)]
        failures.append(self._output.failure if self._output is not None else None)
        return "; ".join(f for f in failures if f) or None

    @property
    def running(self) -> bool:
        return self._output is not None and not self._output.finished.is_set()

    def stop(self, timeout_s: float = 2.0) -> list[str]:
        """Stop and join every thread (output first) within ``timeout_s``; a thread still
        finishing files (a recording) gets its ``finish_grace_s`` more. Returns the names
        of threads that hung."""
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        hung = []
        for worker in reversed(self._workers):
            worker.join(max(0.05, deadline - time.monotonic()))
            if worker.is_alive() and worker.cleaning_up.is_set() and worker.finish_grace_s:
                log.info("%s: finishing the output files...", worker.name)
                worker.join(worker.finish_grace_s)
            if worker.is_alive():
                hung.append(worker.name)
                log.warning("%s did not stop within %.1f s", worker.name, timeout_s)
        if self._gpu is not None:
            self._gpu.close()
        self._no_face.unsubscribe()
        if self._opencv_before is not None:  # the process's OpenCV as it was
            cv2.setNumThreads(self._opencv_before)
            self._opencv_before = None
        return hung

    @property
    def crashes(self) -> list[str]:
        """One line per pipeline thread that died of an unexpected error."""
        return [w.crash for w in self._workers if w.crash is not None]

    def snapshot(self, recent: bool = False) -> Snapshot:
        return self.telemetry.snapshot(recent)

    @staticmethod
    def _records_without_sound(source: Source, sinks: list[Sink]) -> bool:
        """A real-time run of a video file with sound into a recording (sound is only
        copied in a conversion)."""
        media = source.media_path
        return media is not None and any(s.records_video for s in sinks) and has_audio(media)

    def _abort(self, capture: CaptureWorker, stages: list[Stage], sinks: list[Sink]) -> None:
        self._stop.set()
        capture.join(2.0)
        self._close_all(stages, sinks)

    def _close_all(self, stages: list[Stage], sinks: list[Sink]) -> None:
        """Close what start-up opened or built (never raises)."""
        if self._gpu is not None:
            self._gpu.close()
        for sink in sinks:
            _close_quietly(sink)
        for stage in stages:
            _close_quietly(stage)


def _close_quietly(part: Sink | Stage) -> None:
    try:
        part.close()
    except Exception as e:
        log.warning("closing %s failed: %r", part.name, e)


def _other_causes(source: Source | None, sinks: Sequence[Sink]) -> list[LivecamError]:
    """Once one part failed at start-up, what the others would fail on: ``source`` opened
    and closed again, each sink checked (``Sink.check``: nothing written or shown), so the
    error lists every cause (no camera, no virtual camera, no face), not only the first."""
    causes: list[LivecamError] = []
    if source is not None:

        def open_source() -> None:
            try:
                source.open()
            finally:
                source.close()

        _collect(causes, "source", open_source)
    for sink in sinks:
        _collect(causes, f"output {sink.name}", sink.check)
    return causes


def _collect(causes: list[LivecamError], where: str, action: Callable[[], T]) -> T | None:
    """Run ``action``; on any error, append it to ``causes`` and return None."""
    try:
        return action()
    except Exception as e:
        causes.append(as_livecam_error(e, where))
        return None
