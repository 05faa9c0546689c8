"""Adaptive quality and the VRAM watchdog: step the quality ladder (``quality_ladder``) down
under pressure and back up when there is room, through the control plane.

Once a tick (about a second, on its own thread) the controller reads free VRAM and the
pipeline's pace, and takes at most one step:

* down at once, to the next level that changes something, on an out-of-memory failure of
  a stage (the runner's error event: "out of memory" / "Failed to allocate memory"); and,
  while a model runs on the GPU, when free VRAM is below ``low_free_mb``;
* down, only with ``swap.runtime.quality = "auto"``, when the frames the pipeline can make per
  second (from the stage times of the sent frames) and the output rate both stay below
  the target (``swap.runtime.target_fps``, else the output rate) for ``slow_window_s``;
* up one level, not above the pinned level (``full`` with ``auto``), when free VRAM (if
  known) stays above ``room_free_mb`` and, with ``auto``, the pipeline can make
  ``up_headroom`` times the target, for ``up_window_s``; that window doubles (up to
  ``max_up_window_s``) each time a step down follows a step up within it.

A pinned level (any level name in ``swap.runtime.quality``) turns the fps steps off; the memory
watchdog may still go below it and comes back to it. Each step is a change of swap
settings built on the loader thread (the stream never stalls), a warning (down) or info
(up) event from origin ``quality``, and an entry of ``steps``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from livecam.config.schema import Config, SwapConfig
from livecam.control import quality_ladder as quality
from livecam.control.controls import Change, Controls
from livecam.errors import LivecamError
from livecam.stream.worker import Worker
from livecam.telemetry.gpu import NvmlReader
from livecam.telemetry.hub import Telemetry
from livecam.telemetry.snapshot import FrameReport
from livecam.types import Event

log = logging.getLogger(__name__)

ORIGIN = "quality"
#: what ONNX Runtime and CUDA say when memory runs out (lower case)
OOM_MARKERS = ("out of memory", "failed to allocate memory", "cudaerrormemoryallocation")
MIN_FRAMES = 5  # frames measured since the last step before the pace counts


def is_out_of_memory(text: str) -> bool:
    """Whether an error message says that (GPU) memory ran out."""
    low = text.lower()
    return any(marker in low for marker in OOM_MARKERS)


class NvmlFreeMemory:
    """Free VRAM in MB of one GPU through NVML (None without an NVIDIA GPU)."""

    def __init__(self, index: int = 0) -> None:
        self._reader = NvmlReader(index)

    def __call__(self) -> float | None:
        snap = self._reader.snapshot()
        return None if snap is None else snap.vram_total_mb - snap.vram_used_mb

    def close(self) -> None:
        self._reader.close()


@dataclass(frozen=True)
class QualityOptions:
    """Thresholds and inputs of the controller. ``clock``: seconds (monotonic);
    ``free_vram_mb``: free VRAM in MB or None when unknown (None here: NVML's reading of
    ``swap.runtime.gpu``)."""

    interval_s: float = 1.0
    low_free_mb: float = 512.0
    room_free_mb: float = 1536.0
    slow_window_s: float = 3.0
    up_window_s: float = 10.0
    max_up_window_s: float = 160.0
    up_headroom: float = 1.25
    cooldown_s: float = 2.0  # after a step is in place, before the next step down
    clock: Callable[[], float] = time.monotonic
    free_vram_mb: Callable[[], float | None] | None = None


@dataclass(frozen=True)
class Step:
    """One step of the ladder: when (seconds since the start), from and to which level,
    and why."""

    t_s: float
    before: str
    after: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "t_s": round(self.t_s, 3),
            "from": self.before,
            "to": self.after,
            "why": self.reason,
        }


class QualityController:
    """Steps the ladder for one running stream (see the module docstring). ``tick`` runs
    one check (``QualityWorker`` calls it); ``set_quality`` pins a level or ``auto`` (the
    control plane's ``set_quality``). ``base``: the user's swap settings when the stream
    started at a pinned level (``quality.pinned_config``). Thread-safe."""

    def __init__(
        self,
        controls: Controls,
        telemetry: Telemetry,
        output_fps: float,
        options: QualityOptions | None = None,
        base: SwapConfig | None = None,
    ) -> None:
        self.options = opts = options or QualityOptions()
        self._controls = controls
        self._telemetry = telemetry
        self._output_fps = output_fps
        self._clock = opts.clock
        self._own_reader: NvmlFreeMemory | None = None
        if opts.free_vram_mb is None:
            self._own_reader = NvmlFreeMemory(controls.config.swap.runtime.gpu)
        self._free = opts.free_vram_mb or self._own_reader
        self._lock = threading.Lock()
        cfg = controls.config.swap
        self._base = base or cfg  # the user's settings, without the ladder's
        self._level = (
            0 if cfg.runtime.quality == quality.AUTO else quality.index_of(cfg.runtime.quality)
        )
        self._started = self._clock()
        self._pending: Change | None = None
        self._pending_level = self._level
        self._oom: str | None = None  # the last out-of-memory message not yet acted on
        self._costs: deque[float] = deque(maxlen=30)  # stage ms of the last sent frames
        self._costs_lock = threading.Lock()
        self._below_since: float | None = None
        self._room_since: float | None = None
        self._last_step = -float("inf")
        self._last_up = -float("inf")
        self._up_window = opts.up_window_s
        self.steps: list[Step] = []
        self._sub = telemetry.subscribe(on_event=self._on_event, on_frame=self._on_frame)

    # --- reading -------------------------------------------------------------------------
    @property
    def level(self) -> str:
        """The level in force (or being put in place)."""
        return quality.NAMES[self._level if self._pending is None else self._pending_level]

    @property
    def pinned(self) -> bool:
        return self._controls.config.swap.runtime.quality != quality.AUTO

    def user_config(self, cfg: Config) -> Config:
        """``cfg`` (the stream's effective config) with the user's own settings where the
        ladder's are in force: what to save and start with next time (a pinned level is
        applied again at the start, ``auto`` starts at ``full``)."""
        with self._lock:
            self._settle()
            level = self._level
            pending = self._pending_level
            if self._pending is not None and _fields(self._base, pending) == _ladder(cfg.swap):
                level = pending  # installed, not yet settled
            return replace(cfg, swap=quality.rebase(self._base, cfg.swap, level))

    def summary(self) -> dict[str, Any]:
        """For the stats JSON: the level, whether it is pinned, and every step."""
        with self._lock:
            return {
                "level": self.level,
                "setting": self._controls.config.swap.runtime.quality,
                "steps": [s.as_dict() for s in self.steps],
            }

    # --- feeds (pipeline threads: short, no locks held long) -----------------------------
    def _on_event(self, event: Event) -> None:
        if event.level == "error" and event.origin != ORIGIN and is_out_of_memory(event.message):
            self._oom = event.message

    def _on_frame(self, report: FrameReport) -> None:
        if report.stages_ms:
            with self._costs_lock:
                self._costs.append(sum(report.stages_ms.values()))

    # --- commands ------------------------------------------------------------------------
    def set_quality(self, setting: str) -> Change:
        """Pin level ``setting`` (its settings applied over the user's) or go back to
        ``auto`` (adapting from the level in force). A bad name is a ConfigError."""
        target = None if setting == quality.AUTO else quality.index_of(setting)
        with self._lock:
            self._settle()
            current = self._controls.config.swap
            base = quality.rebase(self._base, current, self._level)
            level = self._level if target is None else target
            change = self._controls.apply_quality(
                setting, quality.NAMES[level], _fields(base, level)
            )
            self._base = base
            self._track(change, level)
            return change

    def tick(self) -> None:
        """One check: at most one step (see the module docstring)."""
        with self._lock:
            if not self._settle() or "swap" not in self._controls.config.pipeline.stages:
                return
            now = self._clock()
            cfg = self._controls.config.swap
            free = self._read_free()
            down = self._down_reason(cfg, free, now)
            if down is not None:
                self._step(quality.step_down(self._base, self._level), down, now, cfg)
                return
            if self._can_go_up(cfg, free, now):
                ceiling = (
                    0
                    if cfg.runtime.quality == quality.AUTO
                    else quality.index_of(cfg.runtime.quality)
                )
                target = quality.step_up(self._base, self._level, ceiling)
                self._step(target, self._up_reason(cfg, free), now, cfg)

    def close(self) -> None:
        self._sub.unsubscribe()
        if self._own_reader is not None:
            self._own_reader.close()

    # --- machinery (under the lock) ------------------------------------------------------
    def _settle(self) -> bool:
        """Follow the pending change; True when none is pending any more."""
        change = self._pending
        if change is None:
            return True
        if not change.done():
            return False
        self._pending = None
        try:
            change.wait(0)
            self._level = self._pending_level
            self._oom = None  # failures until now came from the settings replaced
        except LivecamError as e:  # the controls reported it; a build out of memory counts
            if is_out_of_memory(e.message):
                self._oom = e.message
        self._reset()
        return True

    def _reset(self) -> None:
        """Start measuring afresh (the stages changed)."""
        with self._costs_lock:
            self._costs.clear()
        self._below_since = self._room_since = None
        self._last_step = self._clock()

    def _track(self, change: Change, level: int) -> None:
        self._pending, self._pending_level = change, level
        self._oom = None  # failures until now came from the settings being replaced

    def _read_free(self) -> float | None:
        reader = self._free
        if reader is None:
            return None
        try:
            return reader()
        except Exception as e:  # a reading must never stop the watchdog
            log.debug("free VRAM reading failed: %r", e)
            return None

    def _pace(self) -> float | None:
        """Frames a second the stages can make (from the last sent frames), or None."""
        with self._costs_lock:
            costs = list(self._costs)
        if len(costs) < MIN_FRAMES or sum(costs) <= 0:
            return None
        return 1000.0 * len(costs) / sum(costs)

    def _target(self, cfg: SwapConfig) -> float:
        return cfg.runtime.target_fps or self._output_fps

    def _down_reason(self, cfg: SwapConfig, free: float | None, now: float) -> str | None:
        if now - self._last_step < self.options.cooldown_s:
            return None
        if self._oom is not None:
            return f"out of memory ({self._oom[:120]})"
        low = self.options.low_free_mb
        if free is not None and free < low and cfg.runtime.provider != "cpu":
            return f"free VRAM {free:.0f} MB is below {low:.0f} MB"
        if cfg.runtime.quality != quality.AUTO:
            return None
        pace, target = self._pace(), self._target(cfg)
        if pace is None:
            return None
        fps_out = self._telemetry.snapshot(recent=True).fps_out
        if pace >= target or fps_out >= 0.9 * target:
            self._below_since = None
            return None
        if self._below_since is None:
            self._below_since = now
        if now - self._below_since < self.options.slow_window_s:
            return None
        return (
            f"output {fps_out:.1f} fps, the stages manage {pace:.1f}, below the target {target:g}"
        )

    def _can_go_up(self, cfg: SwapConfig, free: float | None, now: float) -> bool:
        roomy = free is None or free >= self.options.room_free_mb
        if cfg.runtime.quality == quality.AUTO:
            pace = self._pace()
            roomy = (
                roomy and pace is not None and pace >= self.options.up_headroom * self._target(cfg)
            )
        if not roomy or self._oom is not None:
            self._room_since = None
            return False
        if self._room_since is None:
            self._room_since = now
        return now - self._room_since >= self._up_window

    def _up_reason(self, cfg: SwapConfig, free: float | None) -> str:
        why = [f"free VRAM {free:.0f} MB" if free is not None else "no memory failure"]
        pace = self._pace()
        if cfg.runtime.quality == quality.AUTO and pace is not None:
            why.append(f"the stages manage {pace:.1f} fps for a target of {self._target(cfg):g}")
        return f"{' and '.join(why)} for {self._up_window:g} s"

    def _step(self, target: int | None, reason: str, now: float, cfg: SwapConfig) -> None:
        before = self._level
        if target is None or target == before:
            if target is None and self._oom is not None:
                self._telemetry.event(
                    Event("error", ORIGIN, f"at the lowest level ({self.level}): {reason}")
                )
            self._oom = None
            self._reset()
            return
        down = target > before
        if down and now - self._last_up < self._up_window:
            self._up_window = min(self._up_window * 2, self.options.max_up_window_s)
        if not down:
            self._last_up = now
        base = quality.rebase(self._base, cfg, before)
        self._base = base
        step = Step(now - self._started, quality.NAMES[before], quality.NAMES[target], reason)
        self.steps.append(step)
        what = quality.LADDER[target].what
        self._telemetry.event(
            Event(
                "warning" if down else "info",
                ORIGIN,
                f"step {'down' if down else 'up'} to '{step.after}' ({what}): {reason}",
                "pin a level with --quality LEVEL"
                if down and cfg.runtime.quality == "auto"
                else "",
            )
        )
        fields = _fields(base, target)
        if fields != _ladder(cfg):
            self._track(
                self._controls.apply_quality(cfg.runtime.quality, step.after, fields), target
            )
        else:
            self._level = target
            self._reset()


def _fields(base: SwapConfig, level: int) -> dict[str, Any]:
    """Every ladder field at ``level`` for the user's ``base`` (all of them, so a change
    queued behind another still lands on exactly this level)."""
    return _ladder(quality.level_config(base, level))


def _ladder(cfg: SwapConfig) -> dict[str, Any]:
    """The ladder fields of ``cfg``."""
    return {k: cfg.value(k) for k in quality.FIELDS}


class QualityWorker(Worker):
    """Runs ``controller.tick`` every ``interval_s`` until the stream stops."""

    def __init__(
        self, controller: QualityController, stop: threading.Event, telemetry: Telemetry
    ) -> None:
        super().__init__("quality", stop, telemetry)
        self.controller = controller

    def loop(self) -> None:
        while not self.stop_event.wait(self.controller.options.interval_s):
            self.controller.tick()

    def cleanup(self) -> None:
        self.controller.close()
