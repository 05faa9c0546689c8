"""The Processing tab's sliders show their value beside them, its settings that do nothing
with the current preset are disabled with the reason (and enabled again when the preset
changes). (The splitter's memory is measured on a real screen: test_layout_fit.)"""

from __future__ import annotations

from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import Config
from livecam.models.store import ModelStore
from ui.panels.processing_panel import (
    BOX_REASON,
    CLASSIC_REASON,
    ENHANCER_REASON,
    ProcessingPanel,
    _Slider,
)
from ui.settings import UiSettings
from ui.stream import StreamController

MASKS = ("masks", "mouth_mask", "mask_blur", "mask_padding")
ENHANCER = ("enhance_blend", "enhance_every")


def open_panel(qtbot: QtBot, settings: UiSettings, config: Config) -> ProcessingPanel:
    panel = ProcessingPanel(StreamController(config), settings, store=ModelStore())
    qtbot.addWidget(panel)
    panel.show()
    return panel


def test_every_slider_shows_its_value_beside_it_while_it_moves(
    qtbot: QtBot, settings: UiSettings
) -> None:
    panel = open_panel(qtbot, settings, small_config(swap={"preset": "quality"}))
    sliders = panel.findChildren(_Slider)
    assert len(sliders) == 4  # enhancer blend, opacity, mouth mask, mask blur
    for slider in sliders:
        label = slider.value_label
        assert label.isVisible() and label.parentWidget() is slider.parentWidget()
        assert label.geometry().left() >= slider.geometry().right()  # beside it, right
        before = label.text()
        slider.setSliderDown(True)  # dragged: shown at once, applied on release
        slider.setValue(37 if slider.value() != 37 else 63)
        assert label.text() != before and str(slider.value()) in label.text()
        slider.setSliderDown(False)
    panel.opacity.show_value(55)  # shown from the config (no signal): the label follows
    assert panel.opacity.value_label.text() == "55 %"
    panel.mouth_mask.show_value(0)
    assert panel.mouth_mask.value_label.text() == "off"


def test_settings_without_effect_are_disabled_with_the_reason(
    qtbot: QtBot, settings: UiSettings
) -> None:
    stream_config = small_config(swap={"preset": "lite"})
    panel = open_panel(qtbot, settings, stream_config)
    widgets = panel.settings_widgets()

    def state() -> dict[str, tuple[bool, str]]:
        return {name: (w.isEnabled(), w.toolTip()) for name, w in widgets.items()}

    # lite: the classic swap makes its own mask, and there is no enhancer
    lite = state()
    assert all(lite[n] == (False, CLASSIC_REASON) for n in MASKS), lite
    assert all(lite[n] == (False, ENHANCER_REASON) for n in ENHANCER), lite
    assert panel.mask_note.isVisible() and CLASSIC_REASON in panel.mask_note.text()
    assert panel.enhancer_note.isVisible() and ENHANCER_REASON in panel.enhancer_note.text()
    assert not panel.masks["box"].isEnabled()  # the checkboxes inside follow their row
    assert panel.opacity.isEnabled()  # works with every swap

    # standard: a neural swap with insightface's mask: masks on, the box's blur and padding
    # still without effect; no enhancer yet
    panel.stream.set_config(stream_config.with_section("swap", preset="standard"))
    standard = state()
    assert standard["masks"] == (True, "") and standard["mouth_mask"] == (True, "")
    assert standard["mask_blur"] == (False, BOX_REASON) == standard["mask_padding"]
    assert standard["enhance_blend"] == (False, ENHANCER_REASON)
    assert panel.masks["box"].isEnabled()

    # an enhancer chosen, and the box mask ticked: everything applies
    panel.stream.set_config(
        stream_config.with_section("swap", preset="standard", enhancer="gfpgan-1.4", masks=("box",))
    )
    assert all(enabled and not tip for enabled, tip in state().values()), state()
    assert not panel.mask_note.isVisible() and not panel.enhancer_note.isVisible()

    # back to lite: disabled again
    panel.stream.set_config(stream_config)
    assert state() == lite
