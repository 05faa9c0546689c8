"""The inference thread: takes every waiting frame (up to the batch limit), runs the stages."""

from __future__ import annotations

import threading
import time

from livecam.buffer import RingBuffer
from livecam.pipeline.stage import Stage
from livecam.telemetry import Telemetry
from livecam.types import Event, FramePacket, StageTiming
from livecam.worker import Worker


def run_stages(stages: list[Stage], batch: list[FramePacket], telemetry: Telemetry) -> None:
    """Run ``stages`` over ``batch`` in place, timing each; contain every stage failure.

    An optional stage that raises is bypassed for this batch; a required one that raises
    hands the untouched camera frames on and skips the remaining stages.
    """
    camera_frames = [p.frame for p in batch]
    for stage in stages:
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
                    packet.frame, packet.faces = frame, []
                return
            for packet, (frame, faces) in zip(batch, before):
                packet.frame, packet.faces = frame, faces
            continue
        batch[:] = result
        ms = (time.perf_counter_ns() - t0) / 1e6
        telemetry.stage_ms(stage.name, ms)
        for packet in batch:
            packet.timings.append(StageTiming(stage.name, ms))


class InferenceWorker(Worker):
    """Pulls batches from the ring, runs the stage list, pushes results to the output slot."""

    def __init__(
        self,
        stages: list[Stage],
        ring: RingBuffer[FramePacket],
        output: RingBuffer[FramePacket],
        stop: threading.Event,
        telemetry: Telemetry,
        batch_limit: int = 4,
    ) -> None:
        super().__init__("inference", stop, telemetry)
        self.stages = stages
        self.ring = ring
        self.output = output
        self.batch_limit = batch_limit

    def loop(self) -> None:
        while not self.stop_event.is_set():
            batch = self.ring.get_batch(self.batch_limit, timeout=0.1)
            if not batch:
                if self.ring.closed and len(self.ring) == 0:
                    break
                continue
            run_stages(self.stages, batch, self.telemetry)
            for packet in batch:
                while not self.output.put(packet, timeout=0.1):
                    if self.stop_event.is_set() or self.output.closed:
                        return

    def cleanup(self) -> None:
        self.output.close()
        for stage in self.stages:
            try:
                stage.close()
            except Exception as e:
                self.telemetry.event(Event("warning", f"stage {stage.name}", f"close: {e!r}"))
