"""The Stage protocol: one step of the per-batch processing run by the inference thread."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from livecam.runtime.providers import Providers
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, FramePacket, SeenFace


@runtime_checkable
class Stage(Protocol):
    """A processing step. ``process`` gets every packet of one batch, in order, and returns
    them (same length, same order). A stage never writes into an incoming ``packet.frame``
    array: it sets ``packet.frame`` to a new array (copy first, then draw on the copy), so
    the runner can hand the untouched camera frame on when a required stage fails.

    What the app asks of every stage besides: its ``providers`` (the compute providers of
    the models it runs, requested and really used; None: it runs none), its ``warnings``
    (texts about its inputs, e.g. a small or blurry source face), ``report_to`` (where it
    sends readings while it runs, e.g. the swap check's), and targeting: ``can_target``
    (the user may pick the face it works on), ``target`` (the picked track, None: auto),
    ``faces_seen`` (the faces it could pick in its newest frame) and ``set_target``.
    ``types.PlainStage`` has the answers of a stage that has none of these.

    ``required``: when a required stage raises, the batch's camera frames pass through
    untouched (later stages are skipped); an optional stage that raises is bypassed.
    """

    name: str
    required: bool

    @property
    def providers(self) -> Providers | None:
        """The compute providers of the models it runs (None: it runs no model)."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """Texts about its inputs; the app reports each as a warning event."""

    @property
    def can_target(self) -> bool:
        """Whether the user may pick the face it works on (``set_target``)."""

    @property
    def target(self) -> int | None:
        """The track id of the face picked with ``set_target`` (None: auto)."""

    @property
    def faces_seen(self) -> tuple[SeenFace, ...]:
        """The tracked faces of its newest frame (what ``set_target`` can pick; empty: none,
        or it picks no face)."""

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Work on the face at ``point`` (normalised frame x, y) from the next frame on, or
        pick by itself again (None). Only called when ``can_target``."""

    def report_to(self, telemetry: Telemetry) -> None:
        """Send what it measures while it runs to ``telemetry`` from now on."""

    def warmup(self, width: int, height: int) -> None:
        """Load models and run once on a dummy frame of this size (first-frame latency)."""

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        """Process one batch of packets and return them in the same order."""

    def close(self) -> None:
        """Release models and buffers."""


@runtime_checkable
class PreparingStage(Stage, Protocol):
    """A stage whose ``process`` starts with work that only reads the camera frames
    (finding and tracking faces). ``prepare`` does that part and keeps what it found on the
    packets (``packet.analysis[name]``); ``process`` does the rest (and the whole when the
    batch was not prepared). The runner calls ``prepare`` before ``process``, with overlap
    on another thread while ``process`` runs on the previous batch: the two halves must not
    share state that one of them changes.
    """

    prepare_name: str  # its time's name in the stats (e.g. "track")

    def prepare(self, batch: list[FramePacket]) -> None:
        """Analyse the batch's camera frames and keep the findings on its packets."""


def report_stages(stages: list[Stage], telemetry: Telemetry) -> None:
    """Tell telemetry about newly built stages: which compute provider each model-running
    stage asked for and really uses, and what it warns about, as warning events; each
    stage reports to it from now on (the swap stage's swap check)."""
    for stage in stages:
        providers = stage.providers
        if providers is not None:
            telemetry.set_provider(
                stage.name,
                ",".join(providers.requested),
                ",".join(providers.used),
                providers.reason,
            )
        for text in stage.warnings:
            telemetry.event(Event("warning", f"stage {stage.name}", text))
        stage.report_to(telemetry)


def uses_accelerator(stages: list[Stage]) -> bool:
    """Whether a model of ``stages`` really runs on something other than the CPU."""
    return any(
        name != "cpu"
        for stage in stages
        if stage.providers is not None
        for name in stage.providers.used
    )
