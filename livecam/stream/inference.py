"""The inference thread: takes frames from the ring, runs the stages, applies live changes.

Live: the newest frame only (older ones are dropped before they are processed, never
after); stages batch across that frame's faces. Lossless: up to ``batch_limit`` frames at
once, in order. Control commands (swap on/off, blank, freeze, new stages) are applied here,
between batches, so a stage is never swapped out while it runs.

Overlap (``overlap=True``): a second thread, the render thread, runs the stages'
``process`` while the inference thread runs the next batch's ``prepare`` (the analysis
half of a ``PreparingStage``: detection, tracking), so on a GPU the detector's stream works
while the swapper's does, and on a CPU the two share the cores. The pipeline is two
batches deep and no deeper: the inference thread takes a new frame only once the render
thread has taken the last one, so live frames are as fresh as they can be and a prepared
frame is never dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from livecam.stream.ring import RingBuffer
from livecam.stream.stage import PreparingStage, Stage
from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket, PrepareFailed, StageTiming

log = logging.getLogger(__name__)


def run_stages(
    stages: list[Stage],
    batch: list[FramePacket],
    telemetry: Telemetry,
    disabled: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Run ``stages`` (except ``disabled`` names) over ``batch`` in place, timing each;
    contain every stage failure.

    An optional stage that raises is bypassed for this batch; a required one that raises
    hands the untouched camera frames on and skips the remaining stages. Each packet gets
    its share of the stage's time (per-frame timings, not per batch).
    """
    camera_frames = [p.frame for p in batch]
    for stage in stages:
        if stage.name in disabled:
            continue
        before = [(p.frame, list(p.faces)) for p in batch]
        t0 = time.perf_counter_ns()
        try:
            result = stage.process(batch)
            if len(result) != len(batch):
                raise RuntimeError(f"returned {len(result)} packets for a batch of {len(batch)}")
        except Exception as e:
            action = "passing the camera frame through" if stage.required else "bypassed"
            telemetry.event(Event("error", f"stage {stage.name}", f"{e!r}; {action}"))
            if stage.required:
                for packet, frame in zip(batch, camera_frames):
                    packet.frame, packet.faces, packet.faces_swapped = frame, [], None
                return
            for packet, (frame, faces) in zip(batch, before):
                packet.frame, packet.faces = frame, faces
            continue
        batch[:] = result
        per_frame_ms = (time.perf_counter_ns() - t0) / 1e6 / len(batch)
        for packet in batch:
            packet.timings.append(StageTiming(stage.name, per_frame_ms))
            telemetry.stage_ms(stage.name, per_frame_ms)


def prepare_stages(plan: Plan, batch: list[FramePacket], telemetry: Telemetry) -> None:
    """Run the analysis half (``prepare``) of the plan's enabled preparing stages over
    ``batch``, timing each under its ``prepare_name``. A failure is kept on the packets, for
    the stage's ``process`` to raise (and ``run_stages`` to contain)."""
    if not plan.live:
        return
    for stage in plan.stages:
        if stage.name in plan.disabled or not isinstance(stage, PreparingStage):
            continue
        t0 = time.perf_counter_ns()
        try:
            stage.prepare(batch)
        except Exception as e:
            for packet in batch:
                packet.analysis[stage.name] = PrepareFailed(e)
            continue
        per_frame_ms = (time.perf_counter_ns() - t0) / 1e6 / len(batch)
        for packet in batch:
            packet.timings.append(StageTiming(stage.prepare_name, per_frame_ms))
        telemetry.stage_ms(stage.prepare_name, per_frame_ms)


@dataclass(frozen=True)
class Plan:
    """How one batch is processed, fixed when it is taken from the ring: the stages and
    switches as they were then. A batch is prepared and rendered by the same stages even
    when a live change swaps them in between."""

    stages: tuple[Stage, ...]
    disabled: frozenset[str]
    blank: Frame | None
    frozen: bool

    @property
    def live(self) -> bool:
        """Whether the stages run at all (neither blank nor frozen)."""
        return self.blank is None and not self.frozen


RESUME_HOLD_S = 1.0
"""After Blank or Freeze goes off, how long the output keeps showing what it showed (the
blank or the frozen picture) while the swap has no result for the face yet; after that the
frames go out as the stages made them (nobody there, or no face the detector can see)."""


@dataclass
class LiveState:
    """What the control plane changes; written only on the inference thread (the render
    thread reads the switches and keeps the last packets).

    Privacy: no camera face leaves while a switch is off again before the swap has caught
    up. Blank off or Freeze off starts a *hold* (``set_blank``, ``set_frozen``): the frames
    keep showing the blank or the frozen picture until a packet comes out that the swap
    changed (``faces_swapped`` > 0), or that no face stage worked on (``None``: the swap is
    off or failed), or until ``RESUME_HOLD_S`` of the stream's time has passed. Freeze
    repeats the last picture the stages made (never a blank frame).
    """

    stages: list[Stage]
    disabled: set[str] = field(default_factory=set)
    blank: Frame | None = None  # sent instead of every frame while set (privacy)
    frozen: bool = False  # repeat the last picture the stages made instead of new ones
    last_packet: FramePacket | None = None  # the last packet handed to the output
    last_live: FramePacket | None = None  # the last packet the stages made (freeze shows it)
    holding: bool = False  # blank or freeze went off and the swap has not caught up yet
    held: Frame | None = None  # shown meanwhile (None: black)
    holds_released: int = 0  # holds that ended with a swapped frame (or no face stage)
    holds_expired: int = 0  # holds that ended after RESUME_HOLD_S without one
    _hold_until_ns: int | None = None
    _finishing: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def last_frame(self) -> Frame | None:
        return self.last_packet.frame if self.last_packet is not None else None

    @property
    def live(self) -> bool:
        return self.blank is None and not self.frozen

    def plan(self) -> Plan:
        """The stages and switches as they are now."""
        return Plan(tuple(self.stages), frozenset(self.disabled), self.blank, self.frozen)

    def set_blank(self, frame: Frame | None) -> None:
        """Blank on (``frame``: what is sent instead) or off (None: the blank stays until
        the swap has a result again)."""
        with self._finishing:
            if frame is None and self.blank is not None and not self.frozen:
                self._hold(self.blank)
            self.blank = frame

    def set_frozen(self, on: bool) -> None:
        """Freeze on, or off (the frozen picture stays until the swap has a result again)."""
        with self._finishing:
            if not on and self.frozen and self.blank is None:
                self._hold(self._frozen_frame())
            self.frozen = on

    def _hold(self, frame: Frame | None) -> None:
        self.holding, self.held, self._hold_until_ns = True, frame, None

    def _frozen_frame(self) -> Frame | None:
        return self.last_live.frame if self.last_live is not None else None

    def finish(self, packet: FramePacket, plan: Plan | None = None) -> None:
        """Apply blank/freeze/hold to a processed packet and remember it. Blank or freeze
        as they are now or as they were in the batch's ``plan``: a batch planned while
        blank was on was not processed, and never goes out as the camera showed it."""
        with self._finishing:
            blank = self.blank if self.blank is not None else plan.blank if plan else None
            frozen = self.frozen or (plan is not None and plan.frozen)
            if blank is not None:  # not the swap's frame: no faces, no swap count
                _show(packet, blank)
            elif frozen:  # nothing made yet: black, never the unprocessed camera frame
                still = self._frozen_frame()
                _show(packet, still if still is not None else np.zeros_like(packet.frame))
            elif self.holding and not self._releases(packet):
                _show(packet, self.held if self.held is not None else np.zeros_like(packet.frame))
            else:
                self.last_live = packet
            self.last_packet = packet

    def _releases(self, packet: FramePacket) -> bool:
        """Whether ``packet`` ends the hold: the swap changed it, no face stage worked on
        it, or the hold has lasted ``RESUME_HOLD_S`` (of the stream's clock)."""
        t_ns = packet.t_capture_ns if packet.t_media_ns is None else packet.t_media_ns
        if self._hold_until_ns is None:
            self._hold_until_ns = t_ns + round(RESUME_HOLD_S * 1e9)
        if packet.faces_swapped != 0:
            self.holds_released += 1
        elif t_ns >= self._hold_until_ns:
            self.holds_expired += 1
            log.info(
                "no face swapped within %.1f s of going live: the frames go out", RESUME_HOLD_S
            )
        else:
            return False
        self.holding, self.held, self._hold_until_ns = False, None, None
        return True


def _show(packet: FramePacket, frame: Frame) -> None:
    """Send ``frame`` in ``packet``'s place: not the swap's frame (no faces, no swap count)."""
    packet.frame, packet.faces, packet.faces_swapped = frame, [], None
    packet.faces_reused, packet.stand_in = 0, True


Command = Callable[[LiveState], None]
Handoff = tuple[Plan, list[FramePacket]]


class InferenceWorker(Worker):
    """Pulls frames from the ring, runs the stage list, pushes results to the output slot.

    ``post`` queues a command (a function of the ``LiveState``) from any thread; it runs
    on this thread before the next frame is taken. ``overlap``: render on a second thread
    (module docstring); ``after_inflight`` then runs a job once the batches already taken
    are rendered (closing stages a live change replaced).
    """

    def __init__(
        self,
        stages: list[Stage],
        ring: RingBuffer[FramePacket],
        output: RingBuffer[FramePacket],
        stop: threading.Event,
        telemetry: Telemetry,
        batch_limit: int = 4,
        lossless: bool = False,
        overlap: bool = False,
    ) -> None:
        super().__init__("inference", stop, telemetry)
        self.state = LiveState(list(stages))
        self.ring = ring
        self.output = output
        self.batch_limit = batch_limit if lossless else 1
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._render: RenderWorker | None = None
        if overlap:
            self._render = RenderWorker(self.render, stop, telemetry)

    @property
    def stages(self) -> list[Stage]:
        return self.state.stages

    @property
    def overlap(self) -> bool:
        return self._render is not None

    def post(self, command: Command) -> None:
        """Run ``command(state)`` on the inference thread between batches."""
        self._commands.put(command)

    def after_inflight(self, job: Callable[[], None]) -> None:
        """Run ``job`` once every batch taken so far has gone to the output: now without
        overlap, else on the render thread after its current batch (or when it ends)."""
        if self._render is None:
            job()
        else:
            self._render.after_current(job)

    def _apply_commands(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                command(self.state)
            except Exception as e:  # a bad command must not end the stream
                self.telemetry.event(Event("error", "controls", f"command failed: {e!r}"))

    def loop(self) -> None:
        render = self._render
        if render is not None:
            render.start()
        while not self.stop_event.is_set():
            self._apply_commands()
            if render is not None and not render.wait_idle(0.05):
                if render.finished.is_set():
                    return  # it crashed: this thread ends the stream with it
                continue
            batch = self.ring.get_batch(self.batch_limit, timeout=0.05)
            if not batch:
                if self.ring.closed and len(self.ring) == 0:
                    break
                continue
            self._apply_commands()  # those posted while waiting count for this batch
            plan = self.state.plan()
            prepare_stages(plan, batch, self.telemetry)
            if render is not None:
                render.hand((plan, batch))
            elif not self.render(plan, batch):
                return

    def render(self, plan: Plan, batch: list[FramePacket]) -> bool:
        """Run the stages of ``plan`` over a prepared batch and hand it to the output;
        False when stopping."""
        state = self.state
        if plan.live and state.live:
            run_stages(list(plan.stages), batch, self.telemetry, plan.disabled)
        for packet in batch:
            state.finish(packet, plan)
        self.telemetry.processed(len(batch))
        return all(self.emit(packet) for packet in batch)

    def emit(self, packet: FramePacket) -> bool:
        """Hand ``packet`` to the output; False when stopping."""
        while not self.output.put(packet, timeout=0.1):
            if self.stop_event.is_set() or self.output.closed:
                return False
        return True

    def cleanup(self) -> None:
        render = self._render
        if render is not None:
            render.finish_and_join(self.stop_event)
            if self.crash is None and render.crash is not None:
                self.crash = render.crash
        self.output.close()
        for stage in self.state.stages:
            try:
                stage.close()
            except Exception as e:
                self.telemetry.event(Event("warning", f"stage {stage.name}", f"close: {e!r}"))


class RenderWorker(Worker):
    """The render thread of an overlapped pipeline: takes one prepared batch at a time
    from the inference thread and runs ``render`` on it (stages, blank/freeze, output)."""

    def __init__(
        self,
        render: Callable[[Plan, list[FramePacket]], bool],
        stop: threading.Event,
        telemetry: Telemetry,
    ) -> None:
        super().__init__("render", stop, telemetry)
        self._render = render
        self._cond = threading.Condition()
        self._next: Handoff | None = None
        self._busy = False  # rendering the batch taken last
        self._ending = False
        self._jobs: list[Callable[[], None]] = []  # after the batch being rendered

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no batch waits for this thread (it may be rendering one); False on
        timeout or once it has ended."""
        with self._cond:
            idle = self._cond.wait_for(
                lambda: self._next is None or self.finished.is_set(), timeout
            )
            return idle and not self.finished.is_set()

    def hand(self, item: Handoff) -> None:
        """Give the next batch (call only after ``wait_idle`` said yes)."""
        with self._cond:
            self._next = item
            self._cond.notify_all()

    def after_current(self, job: Callable[[], None]) -> None:
        """Run ``job`` once the batches handed so far are rendered."""
        with self._cond:
            if self._busy or self._next is not None:
                self._jobs.append(job)
                return
        job()

    def finish_and_join(self, stop: threading.Event) -> None:
        """Let the last handed batch be rendered (unless stopping), end, and join."""
        with self._cond:
            self._ending = True
            self._cond.notify_all()
        while self.is_alive():
            self.join(0.1)
            if stop.is_set():
                self.join(2.0)
                break
        self._run_jobs(self._take_jobs())

    def loop(self) -> None:
        while not self.stop_event.is_set():
            with self._cond:
                self._cond.wait_for(lambda: self._next is not None or self._ending, 0.05)
                item, self._next = self._next, None
                if item is None:
                    if self._ending:
                        return
                    continue
                self._busy = True
                self._cond.notify_all()
            try:
                if not self._render(*item):
                    return
            finally:
                with self._cond:
                    self._busy = False
                self._run_jobs(self._take_jobs())

    def _take_jobs(self) -> list[Callable[[], None]]:
        with self._cond:
            jobs, self._jobs = self._jobs, []
            return jobs

    def _run_jobs(self, jobs: list[Callable[[], None]]) -> None:
        for job in jobs:
            try:
                job()
            except Exception as e:
                self.telemetry.event(Event("error", self.name, f"after a batch: {e!r}"))
