"""The control plane: change a running stream (CLI, hotkeys, the panel and tests use it).

Every command is checked when it is given: an invalid one raises a LivecamError and
changes nothing. A valid one returns a ``Change`` at once; it is applied on the inference
thread between batches. Commands that need slow work (a new source face, another preset
or quality setting) are built and warmed on the loader thread first; the new stages then
replace the old ones atomically and the old ones are closed on the loader thread. Each
applied or failed command is an event, and ``Change.wait`` gives the new effective config.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import numpy as np

from livecam.config.inputs import input_file_problem
from livecam.config.schema import Config, FaceSelection, Preset, field_choices
from livecam.config.swap import setting_sections
from livecam.control.loader import LoaderWorker
from livecam.errors import (
    ConfigError,
    ControlError,
    FaceSourceError,
    LivecamError,
    as_livecam_error,
)
from livecam.runtime.providers import Providers
from livecam.stream.inference import InferenceWorker, LiveState
from livecam.stream.stage import Stage, report_stages
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket, SeenFace, SwapReading
from livecam.userfiles.images import fit_frame, load_image_bgr

log = logging.getLogger(__name__)

SWAP = "swap"
Switch = Literal["swap", "blank", "freeze"]
"""The on/off switches a toggle flips (``Controls.toggle``)."""
SWITCHES: tuple[Switch, ...] = get_args(Switch)
#: swap settings a running stream may change (everything but the source face itself, and
#: the quality setting: ``set_quality``)
TUNABLE_SWAP_FIELDS = tuple(
    name for name in setting_sections() if name not in ("face", "face_index", "quality")
)

StageBuilder = Callable[[Config], list[Stage]]
"""Builds and warms the whole stage list for a config (runs on the loader thread)."""


class QualityControl(Protocol):
    """What pins a quality level (``livecam.control.quality_controller.QualityController``)."""

    def set_quality(self, setting: str) -> Change: ...


class MirrorControl(Protocol):
    """What flips the captured frames (``livecam.stream.capture.CaptureWorker``)."""

    def set_mirror(self, on: bool) -> None: ...


@dataclass(frozen=True)
class ControlState:
    """The live switches, as last applied on the inference thread."""

    stages: tuple[str, ...]
    disabled: tuple[str, ...] = ()
    blank: bool = False
    frozen: bool = False
    #: per model-running stage: the compute provider asked for, the one used, and why
    providers: Mapping[str, Providers] = field(default_factory=dict)
    #: the swap check's newest reading (swap strength 0-100, cosines), live when read
    #: through ``Controls.state``
    swap_check: SwapReading | None = None
    #: the track id of the person picked to be swapped (``set_target``; None: auto, the
    #: main face), live when read through ``Controls.state``: None again once they leave
    swap_target: int | None = None
    #: the swap stage's tracked faces of its newest frame (what a click can pick), live when
    #: read through ``Controls.state``
    faces_seen: tuple[SeenFace, ...] = ()

    @property
    def target_text(self) -> str:
        """The swap target as the panel shows it: ``auto`` or ``face #3``."""
        return "auto" if self.swap_target is None else f"face #{self.swap_target}"

    @property
    def swap(self) -> bool:
        """True when a swap stage runs (present and not switched off)."""
        return SWAP in self.stages and SWAP not in self.disabled

    @staticmethod
    def of(state: LiveState) -> ControlState:
        return ControlState(
            stages=tuple(s.name for s in state.stages),
            disabled=tuple(sorted(state.disabled)),
            blank=state.blank is not None,
            frozen=state.frozen,
            providers={s.name: s.providers for s in state.stages if s.providers is not None},
        )


@dataclass(frozen=True)
class Applied:
    """The outcome of one command: what it did and the effective config and switches."""

    command: str
    config: Config
    state: ControlState


class Change(Future[Applied]):
    """A command on its way: a ``Future`` of its ``Applied`` result (or its LivecamError).

    It is running from the start (``cancel`` does nothing: a given command is applied or
    fails); ``wait`` is ``result`` with a TimeoutError that names the command.
    """

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command
        self.set_running_or_notify_cancel()

    def wait(self, timeout: float | None = None) -> Applied:
        """Block until applied; raise the command's LivecamError, or TimeoutError."""
        try:
            return self.result(timeout)
        except FutureTimeout:
            raise TimeoutError(f"'{self.command}' was not applied within {timeout} s") from None


class Controls:
    """Typed, thread-safe commands on a running ``App`` (``app.controls``)."""

    def __init__(
        self,
        config: Config,
        frame_size: tuple[int, int],
        inference: InferenceWorker,
        loader: LoaderWorker,
        telemetry: Telemetry,
        build: StageBuilder,
    ) -> None:
        self._config = config
        self._built = config  # config of the newest stage list built (loader thread)
        self._frame_size = frame_size
        self._inference = inference
        self._loader = loader
        self._telemetry = telemetry
        self._build = build
        self._state = ControlState.of(inference.state)
        #: per switch, the last value asked for and its command (``requested``)
        self._asked: dict[Switch, tuple[bool, Change]] = {}
        self._asking = threading.RLock()  # a toggle reads and gives in one step
        #: the quality controller of the stream (``set_quality``), set by the app
        self.quality: QualityControl | None = None
        #: the capture of the stream (``set_mirror``), set by the app
        self.capture: MirrorControl | None = None

    # --- reading ---------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        """The effective config (changes once a rebuild is installed)."""
        return self._config

    @property
    def state(self) -> ControlState:
        """The live switches as last applied, with the swap check's newest reading."""
        return dataclasses.replace(
            self._state,
            swap_check=self._telemetry.swap_reading(),
            swap_target=self._target(),
            faces_seen=self._faces_seen(),
        )

    def requested(self, switch: Switch) -> bool:
        """The switch as last asked for (by anyone: hotkeys, commands, the panel), even
        when the inference thread has not applied it yet; once that command is done (or
        when it failed), the applied state."""
        with self._asking:
            asked = self._asked.get(switch)
            if asked is not None and not asked[1].done():
                return asked[0]
            state = self._state
            return {"swap": state.swap, "blank": state.blank, "freeze": state.frozen}[switch]

    def toggle(self, switch: Switch) -> Change:
        """Flip ``switch`` from its requested state (``requested``), so quick toggles
        alternate: three in a row give off, on, off, whatever was applied meanwhile."""
        with self._asking:
            on = not self.requested(switch)
            if switch == "swap":
                return self.set_swap(on)
            if switch == "blank":
                return self.set_blank(on)
            return self.set_freeze(on)

    def _ask(self, switch: Switch, on: bool, change: Change) -> Change:
        with self._asking:
            self._asked[switch] = (on, change)
        return change

    def _target(self) -> int | None:
        stage = self._swap_stage()
        return None if stage is None else stage.target

    def _faces_seen(self) -> tuple[SeenFace, ...]:
        stage = self._swap_stage()
        return () if stage is None else stage.faces_seen

    def _swap_stage(self) -> Stage | None:
        """The running swap stage (its attributes are read here, off its thread)."""
        return next((s for s in self._inference.state.stages if s.name == SWAP), None)

    # --- instant switches (applied between two batches) ---------------------------------
    def set_swap(self, on: bool) -> Change:
        """Turn the face swap on or off (off: the camera frames pass through)."""
        return self.set_stage_enabled(SWAP, on)

    def set_stage_enabled(self, name: str, on: bool) -> Change:
        """Run or skip one stage of the pipeline by name (e.g. an enhancer)."""
        self._require_stage(name)

        def apply(state: LiveState) -> None:
            if on:
                state.disabled.discard(name)
            else:
                state.disabled.add(name)

        with self._asking:
            change = self._live(f"{name} {'on' if on else 'off'}", apply)
            return self._ask("swap", on, change) if name == SWAP else change

    def set_target(self, point: tuple[float, float] | None) -> Change:
        """Swap the person at ``point`` (normalised frame x, y in 0..1: their face box, else
        the nearest face within half its size of it; nobody when far from every face) from
        the next frame on, until they leave; None: back to auto (the main face). ``select
        one`` only; ``state.swap_target`` says who is swapped."""
        self._require_stage(SWAP)
        stage = self._swap_stage()
        if stage is None or not stage.can_target:
            raise ControlError(
                "only 'select one' swaps a person picked in the frame",
                "switch to select one (`select one`)",
            )
        if point is not None:
            x, y = float(point[0]), float(point[1])
            if not (0 <= x <= 1 and 0 <= y <= 1):
                raise ConfigError(
                    f"target point {x:g}, {y:g} is outside the frame",
                    "give x and y between 0 and 1 (0 0: top left), or auto",
                )
            point = (x, y)

        def apply(state: LiveState) -> None:
            for stage in state.stages:
                if stage.name == SWAP:
                    stage.set_target(point)

        what = "target auto" if point is None else f"target {point[0]:.3f} {point[1]:.3f}"
        return self._live(what, apply)

    def set_blank(self, on: bool, image: str | Path | None = None) -> Change:
        """Send a black frame (or ``image``, fitted to the frame) instead of the camera:
        privacy. Takes effect at once, even when the source delivers nothing. Off: the
        blank stays until the swap has a result for the face again (``LiveState``)."""
        frame = self._blank_frame(image) if on else None

        def apply(state: LiveState) -> None:
            state.set_blank(frame)
            last = state.last_packet
            if frame is not None and last is not None:  # show it now, not at the next frame
                packet = FramePacket(frame=frame, seq=last.seq, t_capture_ns=last.t_capture_ns)
                state.finish(packet)
                self._inference.emit(packet)

        what = "blank on" + (f" ({Path(image).name})" if image else "") if on else "blank off"
        with self._asking:
            return self._ask("blank", on, self._live(what, apply))

    def set_freeze(self, on: bool) -> Change:
        """Repeat the last picture the stages made (on) or go live again (off: once the swap
        has a result for the face again, ``LiveState``)."""

        def apply(state: LiveState) -> None:
            state.set_frozen(on)

        with self._asking:
            return self._ask("freeze", on, self._live(f"freeze {'on' if on else 'off'}", apply))

    def set_mirror(self, on: bool) -> Change:
        """Flip the camera frames left-right (a selfie view) or not: the capture thread
        flips from its next frame on; ``source.mirror`` of the effective config follows
        (saved and used at the next start)."""
        if self.capture is None:
            raise ControlError("this stream has no capture to mirror", "start it with the app")
        self.capture.set_mirror(on)

        def apply(_state: LiveState) -> None:  # a rebuild keeps it (``_install``)
            self._config = self._config.with_section("source", mirror=on)

        return self._live(f"mirror {'on' if on else 'off'}", apply)

    # --- changes that rebuild the face pipeline (loader thread, then an atomic swap) --------
    def set_face(self, path: str | Path, face_index: int | None = None) -> Change:
        """Swap in another source face (photo ``path``; ``face_index`` for group photos)."""
        p = Path(path).expanduser()
        problem = input_file_problem(str(p))
        if problem is not None:
            raise FaceSourceError(f"the source face photo {p} {problem}", "choose a photo file")
        if face_index is not None and face_index < 0:
            raise ConfigError(f"face index {face_index} is negative", "use 0 or more")
        return self._rebuild(f"face {p.name}", {"face": str(p), "face_index": face_index})

    def set_selection(self, mode: FaceSelection, reference: str | Path | None = None) -> Change:
        """Which faces to replace: ``one`` (main face), ``all``, or ``reference`` (the person
        in the ``reference`` photo)."""
        if mode not in get_args(FaceSelection):
            raise ConfigError(
                f"face selection {mode!r} is not supported",
                f"use one of {', '.join(get_args(FaceSelection))}",
            )
        changes: dict[str, Any] = {"select": mode}
        if reference is not None:
            ref = Path(reference).expanduser()
            problem = input_file_problem(str(ref))
            if problem is not None:
                raise FaceSourceError(f"the reference photo {ref} {problem}", "choose a photo file")
            changes["reference"] = str(ref)
        return self._rebuild(f"select {mode}", changes)

    def set_preset(self, preset: Preset) -> Change:
        """Switch the model set (``offline``, ``auto``, ...)."""
        if preset not in field_choices("swap.preset"):
            raise ConfigError(
                f"preset {preset!r} does not exist",
                f"use one of {', '.join(field_choices('swap.preset'))}",
            )
        return self._rebuild(f"preset {preset}", {"preset": preset})

    def update_swap(self, **fields: Any) -> Change:
        """Change quality settings of the swap (``detect_size``, ``blend``, ``color``, ...)."""
        unknown = sorted(set(fields) - set(TUNABLE_SWAP_FIELDS))
        if unknown or not fields:
            raise ConfigError(
                f"cannot change swap setting(s) {', '.join(unknown) or '(none given)'} live",
                f"change one of: {', '.join(TUNABLE_SWAP_FIELDS)}",
            )
        text = ", ".join(f"{k}={v}" for k, v in fields.items())
        return self._rebuild(f"swap {text}", fields)

    def set_quality(self, setting: str) -> Change:
        """Pin a level of the quality ladder (``quality_ladder.NAMES``: its settings over the
        configured ones) or go back to ``auto`` (adaptive)."""
        if self.quality is None:
            raise ControlError(
                "this stream has no quality control", "start it with the app (App.start)"
            )
        return self.quality.set_quality(setting)

    def apply_quality(self, setting: str, level: str, swap_changes: Mapping[str, Any]) -> Change:
        """Set ``swap.runtime.quality`` to ``setting`` with the swap settings of ladder level
        ``level`` (the quality controller's own command: rebuilt like ``update_swap``)."""
        command = f"quality {setting}" + (f" (at {level})" if setting != level else "")
        return self._rebuild(command, {**swap_changes, "quality": setting})

    # --- machinery -------------------------------------------------------------------------
    def _require_stage(self, name: str) -> None:
        stages = self._state.stages
        if name not in stages:
            if name == SWAP:
                raise ControlError(
                    "this stream runs no face swap", "choose a source face first (--face IMG)"
                )
            raise ControlError(
                f"no stage named {name!r} in this stream",
                f"stages running: {', '.join(stages) or 'none'}",
            )

    def _blank_frame(self, image: str | Path | None) -> Frame:
        w, h = self._frame_size
        if image is None:
            return np.zeros((h, w, 3), np.uint8)
        return fit_frame(load_image_bgr(image), (w, h), "contain")

    def _live(self, command: str, apply: Callable[[LiveState], None]) -> Change:
        change = Change(command)

        def run(state: LiveState) -> None:
            try:
                apply(state)
            except Exception as e:
                self._failed(change, as_livecam_error(e))
                return
            self._applied(change, state)

        self._inference.post(run)
        return change

    def _rebuild(self, command: str, swap_changes: dict[str, Any]) -> Change:
        _candidate(self._built, swap_changes)  # invalid values raise here: nothing changes
        change = Change(command)

        def build() -> None:
            try:
                config = _candidate(self._built, swap_changes)
                stages = self._build(config)
            except Exception as e:
                self._failed(change, as_livecam_error(e))
                return
            if self._inference.stop_event.is_set():  # stopped while building: nothing to show
                _closer(stages)()
                cancel()
                return
            self._built = config
            self._inference.post(lambda state: self._install(change, state, stages, config))

        def cancel() -> None:
            change.set_exception(ControlError(f"'{command}' was dropped: the stream stopped"))

        self._loader.submit(command, build, on_cancel=cancel)
        return change

    def _install(
        self, change: Change, state: LiveState, stages: list[Stage], config: Config
    ) -> None:
        old, state.stages = state.stages, stages
        names = {s.name for s in stages}
        state.disabled &= names
        # a rebuild changes the swap: live switches set while it was built (the mirror) stay
        self._config = config.with_section("source", mirror=self._config.source.mirror)
        report_stages(stages, self._telemetry)
        # the render thread may still be running a batch through them (overlap)
        self._inference.after_inflight(
            lambda: self._loader.submit(
                f"closing the replaced stages of '{change.command}'", _closer(old)
            )
        )
        self._applied(change, state)

    def _applied(self, change: Change, state: LiveState) -> None:
        self._state = ControlState.of(state)
        self._telemetry.event(Event("info", "controls", change.command))
        change.set_result(Applied(change.command, self._config, self._state))

    def _failed(self, change: Change, error: LivecamError) -> None:
        log.debug("control '%s' failed: %s", change.command, error)
        self._telemetry.event(
            Event("error", "controls", f"{change.command}: {error.message}", error.hint)
        )
        change.set_exception(error)


def _candidate(config: Config, swap_changes: dict[str, Any]) -> Config:
    """``config`` with the swap changes applied and a swap stage in the pipeline."""
    new = config.with_section("swap", **swap_changes)
    if SWAP not in new.pipeline.stages:
        kept = [s for s in new.pipeline.stages if s != "passthrough"]
        new = new.with_section("pipeline", stages=(*kept, SWAP))
    return new


def _closer(stages: list[Stage]) -> Callable[[], None]:
    """A job closing ``stages``; every one is closed even when another raises."""

    def close() -> None:
        errors = []
        for stage in stages:
            try:
                stage.close()
            except Exception as e:
                errors.append(f"{stage.name}: {e!r}")
        if errors:
            raise RuntimeError("; ".join(errors))

    return close
