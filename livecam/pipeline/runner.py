"""The inference thread: takes frames from the ring, runs the stages, applies live changes.

Live: the newest frame only (older ones are dropped before they are processed, never
after); stages batch across that frame's faces. Lossless: up to ``batch_limit`` frames at
once, in order. Control commands (swap on/off, blank, freeze, new stages) are applied here,
between batches, so a stage is never swapped out while it runs.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from livecam.buffer import RingBuffer
from livecam.pipeline.stage import Stage
from livecam.telemetry import Telemetry
from livecam.types import Event, Frame, FramePacket, StageTiming
from livecam.worker import Worker


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


@dataclass
class LiveState:
    """What the control plane changes; read and written only on the inference thread."""

    stages: list[Stage]
    disabled: set[str] = field(default_factory=set)
    blank: Frame | None = None  # sent instead of every frame while set (privacy)
    frozen: bool = False  # repeat the last output frame instead of new ones
    last_packet: FramePacket | None = None  # the last packet handed to the output

    @property
    def last_frame(self) -> Frame | None:
        return self.last_packet.frame if self.last_packet is not None else None

    def finish(self, packet: FramePacket) -> None:
        """Apply blank/freeze to a processed packet and remember it."""
        if self.blank is not None:
            packet.frame, packet.faces = self.blank, []
        elif self.frozen and self.last_frame is not None:
            packet.frame, packet.faces = self.last_frame, []
        self.last_packet = packet


Command = Callable[[LiveState], None]


class InferenceWorker(Worker):
    """Pulls frames from the ring, runs the stage list, pushes results to the output slot.

    ``post`` queues a command (a function of the ``LiveState``) from any thread; it runs
    on this thread before the next frame is taken.
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
    ) -> None:
        super().__init__("inference", stop, telemetry)
        self.state = LiveState(list(stages))
        self.ring = ring
        self.output = output
        self.batch_limit = batch_limit if lossless else 1
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()

    @property
    def stages(self) -> list[Stage]:
        return self.state.stages

    def post(self, command: Command) -> None:
        """Run ``command(state)`` on the inference thread between batches."""
        self._commands.put(command)

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
        while not self.stop_event.is_set():
            self._apply_commands()
            batch = self.ring.get_batch(self.batch_limit, timeout=0.05)
            if not batch:
                if self.ring.closed and len(self.ring) == 0:
                    break
                continue
            state = self.state
            if state.blank is None and not state.frozen:
                run_stages(state.stages, batch, self.telemetry, state.disabled)
            for packet in batch:
                state.finish(packet)
            self.telemetry.processed(len(batch))
            for packet in batch:
                if not self.emit(packet):
                    return

    def emit(self, packet: FramePacket) -> bool:
        """Hand ``packet`` to the output; False when stopping."""
        while not self.output.put(packet, timeout=0.1):
            if self.stop_event.is_set() or self.output.closed:
                return False
        return True

    def cleanup(self) -> None:
        self.output.close()
        for stage in self.state.stages:
            try:
                stage.close()
            except Exception as e:
                self.telemetry.event(Event("warning", f"stage {stage.name}", f"close: {e!r}"))
