"""Quick toggles alternate: ``swap toggle`` lines, the swap, blank and freeze hotkeys and
``Controls.toggle`` flip the state last *asked for* (by anyone), not the one the inference
thread applied last. Real Controls on a running stream of a real clip (testdata)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from synthetic_stream import small_config

from livecam.app import App
from livecam.cli.console import execute
from livecam.control.controls import SWITCHES, Change
from livecam.control.hotkeys import HotkeyActions

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FACE = ASSETS / "grace_hopper.jpg"
WAIT_S = 30.0


@pytest.fixture
def app(testdata: Path) -> Iterator[App]:
    """The lite swap of Grace Hopper onto a real talking-head clip, looping at 30 fps."""
    clip = testdata / "video" / "liveportrait_d6.mp4"
    running = App(small_config(FACE, source={"spec": str(clip), "fps": 30, "loop": True}))
    running.start()
    yield running
    assert running.stop() == []


def outcomes(changes: list[Change | str | None], switch: str) -> list[bool]:
    """The applied value of ``switch`` after each command, in order."""
    field = {"swap": "swap", "blank": "blank", "freeze": "frozen"}[switch]
    values = []
    for change in changes:
        assert isinstance(change, Change)
        values.append(getattr(change.wait(WAIT_S).state, field))
    return values


def test_three_swap_toggle_lines_give_off_on_off(app: App) -> None:
    assert app.controls.state.swap
    changes = [execute(app.controls, "swap toggle") for _ in range(3)]
    assert outcomes(changes, "swap") == [False, True, False]
    assert not app.controls.state.swap and not app.controls.requested("swap")


@pytest.mark.parametrize("switch", SWITCHES)
def test_back_to_back_toggles_of_every_switch_alternate(app: App, switch: str) -> None:
    start = app.controls.requested(switch)  # type: ignore[arg-type]
    changes: list[Change | str | None] = [
        execute(app.controls, f"{switch} toggle") for _ in range(4)
    ]
    assert outcomes(changes, switch) == [not start, start, not start, start]


def test_hotkeys_console_and_panel_share_the_requested_state(app: App) -> None:
    """A double press of the privacy blank blanks and unblanks; a console toggle right
    after a hotkey steps on from the hotkey's request; set_* counts as a request too."""
    actions = HotkeyActions(app.controls, report=lambda e: None)
    changes: list[Change | str | None] = [
        actions.run("blank"),  # on
        actions.run("blank"),  # off
        execute(app.controls, "blank toggle"),  # on
        app.controls.set_blank(False),  # off (the panel's button)
        actions.run("blank"),  # on
    ]
    assert outcomes(changes, "blank") == [True, False, True, False, True]
    swaps: list[Change | str | None] = [
        actions.run("swap"),
        execute(app.controls, "swap toggle"),
        actions.run("swap"),
    ]
    assert outcomes(swaps, "swap") == [False, True, False]
    assert app.controls.state.blank and not app.controls.state.swap


def test_a_failed_request_leaves_the_applied_state(app: App, tmp_path: Path) -> None:
    """A blank with an unreadable image fails at once: the next toggle starts from what
    runs (not blanked), so it blanks."""
    bad = tmp_path / "not_an_image.png"
    bad.write_bytes(b"no png here")
    with pytest.raises(Exception, match="not_an_image"):
        app.controls.set_blank(True, bad)
    assert not app.controls.requested("blank")
    assert outcomes([app.controls.toggle("blank")], "blank") == [True]
