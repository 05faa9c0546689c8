"""The live swap check in a running App (lite preset, real models, the animated astronaut
into the null sink): its reading reaches the control state and the status line; turning
the opacity to 0 live gives one not-taking warning that names the opacity, and the
reading shows the swap taking again once the opacity is back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from synthetic_stream import SYNTHETIC
from waiting import poll

from livecam.app import App
from livecam.config.schema import Config
from livecam.telemetry.hub import Telemetry
from livecam.types import Event

ASSETS = Path(__file__).resolve().parents[2] / "assets"
WAIT_S = 90.0  # a bound for a loaded machine, not a timing assertion


@pytest.fixture
def running(testdata: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[App, list[Event]]]:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))  # lite, until bundled
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    cfg = Config.from_dict(
        {
            "source": {**SYNTHETIC, "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "preset": "lite"},
        }
    )
    app = App(cfg, telemetry=telemetry)
    app.start()
    try:
        yield app, events
    finally:
        assert app.stop() == []


def test_the_swap_check_in_the_control_state_and_the_status_line(
    running: tuple[App, list[Event]],
) -> None:
    app, events = running
    assert poll(lambda: app.controls.state.swap_check is not None, WAIT_S)
    reading = app.controls.state.swap_check
    assert reading is not None and reading.strength is not None
    assert reading.strength >= 50 and reading.taking and not reading.warning
    assert poll(lambda: "/100" in app.snapshot(recent=True).status_line(), WAIT_S)
    line = app.snapshot(recent=True).status_line()
    assert "swap " in line and "NOT TAKING" not in line

    app.controls.update_swap(opacity=0.0).wait(WAIT_S)
    assert poll(lambda: any(e.origin == "swap check" for e in events), WAIT_S), "no warning"
    warnings = [e for e in events if e.origin == "swap check"]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert warnings[0].hint.startswith("likely causes: the opacity is 0")
    hidden = app.controls.state.swap_check
    assert hidden is not None and hidden.taking is False and hidden.warning
    assert "NOT TAKING" in app.snapshot(recent=True).status_line()

    app.controls.update_swap(opacity=1.0).wait(WAIT_S)

    def taking() -> bool:
        r = app.controls.state.swap_check
        return r is not None and bool(r.taking) and not r.warning

    assert poll(taking, WAIT_S)
    assert len([e for e in events if e.origin == "swap check"]) == 1  # still one warning
