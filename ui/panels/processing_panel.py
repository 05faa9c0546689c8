"""The Processing panel: preset and its parts (swapper, enhancer, blend, every-Nth),
face selection and mapping, mouth mask, masks, face opacity, compute provider (with the
provider really used and a warning on fallback), the quality level (auto: adaptive, or a
pinned level of ``livecam.control.quality_ladder``), the memory strategy and the master swap switch.

Every change goes live through the control plane while the stream runs
(``stream.change``), or into the saved config while it is stopped. Sliders apply when
released. A change whose models are missing (or whose licence is not accepted) first
opens the download dialog; the change is applied once the files are here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import Config, SwapConfig, field_choices, split_pair
from livecam.control.controls import Change, Controls
from livecam.errors import LivecamError
from livecam.models.presets import AUTO, is_neural, resolve_preset
from livecam.models.store import ModelStore
from livecam.telemetry.snapshot import Snapshot
from ui.main_window import error_line
from ui.model_download import ModelDownloadDialog, download_text, models_to_get
from ui.notice import WARNING_TEXT_STYLE
from ui.panels.remote_box import RemoteBox
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

PRESET_PART = "(preset's)"  # swapper/enhancer: the preset's own choice
VALUE_WIDTH = 44  # px of a slider's value label ("100 %")
MAPPING_HEIGHT = 90  # px of the face mapping list
COMBO_CHARS = 12  # a combo box's minimum width in characters: long names do not widen the tab
NOTE_STYLE = "color: #a8a8b4; font-style: italic;"
CLASSIC_REASON = (
    "No effect with the classic swap (the lite preset's): it makes its own feathered, "
    "skin-gated mask. Masks, mouth mask, blur and padding shape a neural swapper's paste-back "
    "(standard or quality preset, or a Swapper above)."
)
BOX_REASON = "Blur and padding shape the box mask: tick 'box' above to use them."
ENHANCER_REASON = "No enhancer runs: choose one (Enhancer above) to use the blend and every Nth."


def inactive_controls(swap: SwapConfig, store: ModelStore) -> dict[str, str]:
    """The swap settings that have no effect under ``swap`` (its preset as resolved with
    ``store``), each with the reason the panel shows: ``enhance_blend``, ``enhance_every``
    (no enhancer), ``masks``, ``mouth_mask``, ``mask_blur``, ``mask_padding`` (the classic
    swap; blur and padding also without the box mask)."""
    row = resolve_preset(swap.preset, store, swap)
    parts = row.parts_for(swap, store.manifest)
    off: dict[str, str] = {}
    if "enhancer" not in parts:
        off.update(enhance_blend=ENHANCER_REASON, enhance_every=ENHANCER_REASON)
    if not is_neural(parts["swapper"], store.manifest):
        for name in ("masks", "mouth_mask", "mask_blur", "mask_padding"):
            off[name] = CLASSIC_REASON
    elif "box" not in row.masks_for(swap, store.manifest, swapper=parts["swapper"]):
        off.update(mask_blur=BOX_REASON, mask_padding=BOX_REASON)
    return off


def _percent(value: int) -> str:
    return f"{value} %"


def provider_text(providers: Mapping[str, Mapping[str, Any]]) -> tuple[str, str | None]:
    """What the stream's stages run on (``swap: cpu``) and a warning for each fallback
    (asked for one provider, got another) with its reason, or None."""
    used = ", ".join(f"{stage}: {p.get('used', '?')}" for stage, p in providers.items())
    warnings = [
        f"{stage} runs on {p.get('used')}, not the requested {p.get('requested')}"
        + (f": {p['reason']}" if p.get("reason") else "")
        for stage, p in providers.items()
        if p.get("used") != p.get("requested")
    ]
    return used or "no model running", "; ".join(warnings) or None


class _Slider(QSlider):
    """A 0-100 slider that reports a value only when released (or moved by keys), with a
    label beside it (``value_label``, in ``row``) that follows it while it moves."""

    def __init__(
        self,
        on_value: Callable[[int], None],
        parent: QWidget | None = None,
        text: Callable[[int], str] = _percent,
    ) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setRange(0, 100)
        self._on_value = on_value
        self._text = text
        self.value_label = QLabel(text(self.value()))
        self.value_label.setMinimumWidth(VALUE_WIDTH)
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.row = QWidget()
        line = QHBoxLayout(self.row)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self, 1)
        line.addWidget(self.value_label)
        self.sliderReleased.connect(lambda: on_value(self.value()))
        self.valueChanged.connect(self._show_text)
        self.valueChanged.connect(self._changed)

    def _show_text(self, value: int) -> None:
        self.value_label.setText(self._text(value))

    def _changed(self, value: int) -> None:
        if not self.isSliderDown() and not self.signalsBlocked():
            self._on_value(value)

    def show_value(self, value: int) -> None:
        self.blockSignals(True)
        self.setValue(value)
        self.blockSignals(False)
        self._show_text(self.value())


class ProcessingPanel(QWidget):
    """See the module docstring. ``store`` finds the model files (default: this machine's)."""

    def __init__(
        self,
        stream: StreamController,
        settings: UiSettings,
        parent: QWidget | None = None,
        store: ModelStore | None = None,
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.store = store if store is not None else ModelStore()
        self.dialog: ModelDownloadDialog | None = None
        self._refreshing = False
        layout = QVBoxLayout(self)

        self.swap_on = QCheckBox("Face swap on")
        self.swap_on.toggled.connect(self._on_swap_toggled)
        layout.addWidget(self.swap_on)

        models = QGroupBox("Models")
        form = _form(models)
        self.preset = _compact(QComboBox())
        for name in field_choices("swap.preset"):
            self.preset.addItem(name, name)
        self.preset.activated.connect(lambda _: self._on_preset())
        form.addRow("Preset", self.preset)
        self.swapper = self._choices(
            (PRESET_PART, *field_choices("swap.neural.swapper")), "swapper"
        )
        form.addRow("Swapper", self.swapper)
        self.enhancer = self._choices(
            (PRESET_PART, *field_choices("swap.neural.enhancer")), "enhancer"
        )
        form.addRow("Enhancer", self.enhancer)
        self.enhance_blend = _Slider(lambda v: self.apply("enhance_blend", enhance_blend=v / 100))
        form.addRow("Enhancer blend", self.enhance_blend.row)
        self.enhance_every = QSpinBox()
        self.enhance_every.setRange(1, 30)
        self.enhance_every.editingFinished.connect(
            lambda: self.apply("enhance every", enhance_every=self.enhance_every.value())
        )
        form.addRow("Enhance every Nth frame", self.enhance_every)
        self.enhancer_note = _note()  # why the blend and every Nth are off, when they are
        form.addRow(self.enhancer_note)
        self.provider = self._choices(field_choices("swap.runtime.provider"), "provider")
        form.addRow("Provider", self.provider)
        # auto: adaptive (the ladder of livecam.control.quality_ladder); a level pins it
        self.quality = self._choices(field_choices("swap.runtime.quality"), "quality")
        form.addRow("Quality (auto: adaptive)", self.quality)
        self.memory = self._choices(field_choices("swap.runtime.memory"), "memory")
        form.addRow("Memory strategy", self.memory)
        self.provider_used = QLabel("not running")
        form.addRow("Running on", self.provider_used)
        self.provider_warning = QLabel("")
        self.provider_warning.setWordWrap(True)
        self.provider_warning.setStyleSheet(WARNING_TEXT_STYLE)  # ui.notice: contrast >= 4.5
        self.provider_warning.hide()
        form.addRow(self.provider_warning)
        layout.addWidget(models)

        faces = QGroupBox("Faces")
        form = _form(faces)
        self.select = _compact(QComboBox())
        for mode in field_choices("swap.select.select"):
            self.select.addItem(mode, mode)
        self.select.activated.connect(lambda _: self._on_select())
        form.addRow("Replace", self.select)
        self.reference = QLabel("(no reference photo)")
        pick = QPushButton("Reference photo…")
        pick.clicked.connect(self._pick_reference)
        form.addRow(pick, self.reference)
        self.mapping = QListWidget()
        self.mapping.setMaximumHeight(MAPPING_HEIGHT)  # a few pairs; more scroll
        form.addRow("Mapping (source = target)", self.mapping)
        buttons = QHBoxLayout()
        add, remove = QPushButton("Add pair…"), QPushButton("Remove")
        add.clicked.connect(self._pick_pair)
        remove.clicked.connect(self.remove_selected_mapping)
        buttons.addWidget(add)
        buttons.addWidget(remove)
        form.addRow(buttons)
        layout.addWidget(faces)

        blend = QGroupBox("Blending")
        form = _form(blend)
        self.opacity = _Slider(lambda v: self.apply("opacity", opacity=v / 100))
        form.addRow("Face opacity", self.opacity.row)
        self.mouth_mask = _Slider(
            lambda v: self.apply("mouth mask", mouth_mask=v),
            text=lambda v: f"{v} %" if v else "off",
        )
        form.addRow("Mouth mask", self.mouth_mask.row)
        self.masks: dict[str, QCheckBox] = {}
        self.masks_box = QWidget()  # two a line: the tab stays narrow
        grid = QGridLayout(self.masks_box)
        grid.setContentsMargins(0, 0, 0, 0)
        for i, kind in enumerate(field_choices("swap.masks.masks")):
            box = QCheckBox(kind)
            box.toggled.connect(lambda _on: self._on_masks())
            self.masks[kind] = box
            grid.addWidget(box, i // 2, i % 2)
        form.addRow("Masks (none: the preset's)", self.masks_box)
        self.mask_blur = _Slider(lambda v: self.apply("mask blur", mask_blur=v / 100))
        form.addRow("Mask blur", self.mask_blur.row)
        self.padding: list[QSpinBox] = []
        self.padding_box = QWidget()
        grid = QGridLayout(self.padding_box)
        grid.setContentsMargins(0, 0, 0, 0)
        for i, side in enumerate(("top", "right", "bottom", "left")):
            spin = QSpinBox()
            spin.setRange(0, 100)
            spin.setSuffix(f" % {side}")
            spin.editingFinished.connect(self._on_padding)
            self.padding.append(spin)
            grid.addWidget(spin, i // 2, i % 2)
        form.addRow("Mask padding", self.padding_box)
        self.mask_note = _note()  # why the masks are off, when they are
        form.addRow(self.mask_note)
        layout.addWidget(blend)

        self.remote_box = RemoteBox(stream, settings, self)  # swap on another machine's GPU
        layout.addWidget(self.remote_box)

        self.message = QLabel("")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        layout.addStretch(1)

        stream.config_changed.connect(lambda _cfg: self.refresh())
        stream.running_changed.connect(lambda _on: self.refresh())
        stream.live_changed.connect(lambda view: self._show_swap(view.swap))  # hotkeys too
        stream.stats.connect(self.show_stats)
        stream.applied.connect(lambda what: self.message.setText(f"Applied: {what}"))
        stream.failed.connect(self._on_failed)
        self.refresh()

    # --- building ------------------------------------------------------------------------
    def _choices(self, values: tuple[str, ...], field: str) -> QComboBox:
        box = _compact(QComboBox())
        for value in values:
            box.addItem(value, value)
        box.activated.connect(lambda _: self._on_choice(field, box.currentData()))
        return box

    # --- showing the config --------------------------------------------------------------
    def refresh(self) -> None:
        """Show the stream's effective config (signals blocked: nothing is re-applied)."""
        cfg = self.stream.config
        swap = cfg.swap
        self._refreshing = True
        try:
            for i in range(self.preset.count()):
                name = self.preset.itemData(i)
                self.preset.setItemText(i, self._preset_label(name))
            self._show(self.preset, swap.preset)
            self._show(self.swapper, swap.neural.swapper or PRESET_PART)
            self._show(self.enhancer, swap.neural.enhancer or PRESET_PART)
            self._show(self.provider, swap.runtime.provider)
            self._show(self.quality, swap.runtime.quality)
            self._show(self.memory, swap.runtime.memory)
            self._show(self.select, swap.select.select)
            self.enhance_blend.show_value(round(swap.neural.enhance_blend * 100))
            self.enhance_every.setValue(swap.neural.enhance_every)
            self.opacity.show_value(round(swap.masks.opacity * 100))
            self.mouth_mask.show_value(swap.masks.mouth_mask)
            self.mask_blur.show_value(round(swap.masks.mask_blur * 100))
            for kind, box in self.masks.items():
                box.blockSignals(True)
                box.setChecked(kind in swap.masks.masks)
                box.blockSignals(False)
            for spin, value in zip(self.padding, swap.masks.mask_padding, strict=True):
                spin.setValue(value)
            self.reference.setText(
                Path(swap.select.reference).name if swap.select.reference else "(none)"
            )
            self._show_active(swap)
            self.mapping.clear()
            self.mapping.addItems(list(swap.select.map))
            controls = self.stream.controls
            self._show_swap(self.stream.swap_on)
            if controls is not None:
                self._show_providers({k: vars(v) for k, v in controls.state.providers.items()})
            else:
                self.provider_used.setText("not running")
                self.provider_warning.hide()
        finally:
            self._refreshing = False

    def _show_swap(self, on: bool) -> None:
        self.swap_on.blockSignals(True)
        self.swap_on.setChecked(on)
        self.swap_on.blockSignals(False)

    def settings_widgets(self) -> dict[str, QWidget]:
        """The widget of each swap setting that can be without effect (``inactive_controls``)."""
        return {
            "enhance_blend": self.enhance_blend.row,
            "enhance_every": self.enhance_every,
            "masks": self.masks_box,
            "mouth_mask": self.mouth_mask.row,
            "mask_blur": self.mask_blur.row,
            "mask_padding": self.padding_box,
        }

    def _show_active(self, swap: SwapConfig) -> None:
        """Disable the settings that do nothing under ``swap``, with the reason as their
        tooltip and on the note under them; enable the others again."""
        try:
            off = inactive_controls(swap, self.store)
        except LivecamError:  # an unknown preset: its error is shown when it is used
            off = {}
        for name, widget in self.settings_widgets().items():
            reason = off.get(name)
            for w in (widget, _form_label(widget)):
                if w is not None:
                    w.setEnabled(reason is None)
                    w.setToolTip(reason or "")
        for note, names in (
            (self.enhancer_note, ("enhance_blend", "enhance_every")),
            (self.mask_note, ("masks", "mouth_mask", "mask_blur", "mask_padding")),
        ):
            reasons = list(dict.fromkeys(off[n] for n in names if n in off))
            note.setText(" ".join(reasons))
            note.setVisible(bool(reasons))

    def _preset_label(self, name: str) -> str:
        """``lite (ready)``, ``standard (download 469 MB, non-commercial)``, ``offline (=
        lite, ready)``, ``auto (best present: lite)``: what picking ``name`` gives with the
        files here and the current swap settings; sizes as the download dialog counts them."""
        swap = self.stream.config.swap
        try:
            row = resolve_preset(name, self.store, swap)
            if name == AUTO:
                return f"{name} (best present: {row.name})"
            needed = models_to_get(self.store, dataclasses.replace(swap, preset=name))
            missing = [e for e in needed if self.store.locate(e.name) is None]
        except LivecamError:  # auto with no preset's files here, or an unknown name
            return f"{name} (no preset's files are here)" if name == AUTO else name
        alias = f"= {row.name}, " if row.name != name else ""
        if not missing:
            return f"{name} ({alias}ready)"
        restricted = ", non-commercial" if any(not e.commercial for e in missing) else ""
        return f"{name} ({alias}download {download_text(missing, digits=0)}{restricted})"

    @staticmethod
    def _show(box: QComboBox, value: str) -> None:
        box.blockSignals(True)
        box.setCurrentIndex(max(0, box.findData(value)))
        box.blockSignals(False)

    def show_stats(self, snapshot: Snapshot) -> None:
        self._show_providers(snapshot.providers)

    def _show_providers(self, providers: Mapping[str, Mapping[str, Any]]) -> None:
        used, warning = provider_text(
            {
                k: {**v, "used": _name(v.get("used")), "requested": _name(v.get("requested"))}
                for k, v in providers.items()
            }
        )
        self.provider_used.setText(used)
        self.provider_warning.setText(f"⚠ Provider fallback: {warning}" if warning else "")
        self.provider_warning.setVisible(warning is not None)

    # --- changes -------------------------------------------------------------------------
    def apply(self, what: str, **fields: Any) -> None:
        """Change swap settings: live while running, else in the saved config. When the
        new settings need model files that are missing, the download dialog comes first."""
        if self._refreshing:
            return
        try:
            candidate = self.stream.config.with_section("swap", **fields)
        except LivecamError as e:
            self._error(e)
            self.refresh()
            return
        needed = models_to_get(self.store, candidate.swap)
        if needed:
            self._download_then(needed, lambda: self._commit(what, fields))
            return
        self._commit(what, fields)

    def _commit(self, what: str, fields: dict[str, Any]) -> None:
        if self.stream.running:
            self.stream.change(what, lambda c: _command(c, fields))
            return
        try:
            cfg = self.stream.config.with_section("swap", **fields)
            self._save(cfg)
        except LivecamError as e:
            self._error(e)
            self.refresh()
            return
        self.message.setText(f"Saved: {what}")

    def _save(self, cfg: Config) -> None:
        self.stream.set_config(cfg)
        self.settings.save_config(cfg)

    def _download_then(self, needed: list[Any], then: Callable[[], None]) -> None:
        """Open the download dialog for ``needed``, then run ``then`` once every file is
        here. The dialog is not modal: Stop, Blank, Freeze and Swap stay usable while it
        is open (privacy controls are never blocked). One dialog at a time: a new change
        replaces one that is not downloading; while one downloads, it is brought up."""
        if self.dialog is not None:
            if self.dialog.running:
                self.message.setText("A download is running: wait for it or cancel it first.")
                self.dialog.raise_()
                self.dialog.activateWindow()
                self.refresh()
                return
            replaced, self.dialog = self.dialog, None
            replaced.reject()
        dialog = ModelDownloadDialog(self.store, needed, self)
        dialog.setWindowModality(Qt.WindowModality.NonModal)
        self.dialog = dialog

        def finished(result: int) -> None:
            if self.dialog is not dialog:
                return  # replaced by a newer change's dialog
            self.dialog = None
            if result == ModelDownloadDialog.DialogCode.Accepted:
                then()
            else:
                self.message.setText("Not changed: the model files are not here.")
            self.refresh()

        dialog.finished.connect(finished)
        dialog.show()  # not modal, no nested event loop: the stream and its controls go on

    def _on_preset(self) -> None:
        self.apply(f"preset {self.preset.currentData()}", preset=self.preset.currentData())

    def _on_choice(self, field: str, value: str) -> None:
        self.apply(f"{field} {value}", **{field: None if value == PRESET_PART else value})

    def _on_select(self) -> None:
        self.set_selection(self.select.currentData())

    def set_selection(self, mode: str, reference: str | None = None) -> None:
        fields: dict[str, Any] = {"select": mode}
        if reference is not None:
            fields["reference"] = reference
        if mode == "reference" and (reference or self.stream.config.swap.select.reference) is None:
            self.message.setText("Choose the reference photo: the person whose face is replaced.")
            return
        self.apply(f"select {mode}", **fields)

    def _pick_reference(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Reference photo", "", "Images (*.*)")
        if path:
            self.set_selection("reference", path)

    def _pick_pair(self) -> None:
        source, _ = QFileDialog.getOpenFileName(self, "Source face (the face put in)")
        if not source:
            return
        target, _ = QFileDialog.getOpenFileName(self, "Target person (whose face is replaced)")
        if target:
            self.add_mapping(source, target)

    def add_mapping(self, source: str, target: str) -> None:
        """Put the face of photo ``source`` onto the person of photo ``target``."""
        pair = f"{source}={target}"
        if split_pair(pair) is None:
            self.message.setText("A mapping needs two photos: source and target.")
            return
        current = tuple(self.stream.config.swap.select.map)
        if pair not in current:
            self.apply("mapping", map=(*current, pair))

    def remove_selected_mapping(self) -> None:
        rows = {i.row() for i in self.mapping.selectedIndexes()}
        kept = tuple(m for i, m in enumerate(self.stream.config.swap.select.map) if i not in rows)
        if rows:
            self.apply("mapping", map=kept)

    def _on_masks(self) -> None:
        masks = tuple(k for k, box in self.masks.items() if box.isChecked())
        self.apply(f"masks {', '.join(masks) or 'of the preset'}", masks=masks)

    def _on_padding(self) -> None:
        padding = tuple(s.value() for s in self.padding)
        if padding != self.stream.config.swap.masks.mask_padding:
            self.apply("mask padding", mask_padding=padding)

    def _on_swap_toggled(self, on: bool) -> None:
        self.stream.set_swap(on)
        if not self.stream.running:
            self.settings.save_config(self.stream.config)
            self.message.setText(f"Saved: swap {'on' if on else 'off'}")

    def _on_failed(self, what: str, error: LivecamError) -> None:
        self._error(error, what)
        self.refresh()

    def _error(self, error: LivecamError, what: str = "") -> None:
        lead = f"{what}: " if what else ""
        self.message.setText(f"{lead}{error_line(error)}")


def _form(group: QGroupBox) -> QFormLayout:
    """A form whose long rows put the field under its label (a narrow tab never scrolls
    sideways)."""
    form = QFormLayout(group)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def _compact(box: QComboBox) -> QComboBox:
    """``box`` no wider than it must be: a long item name does not widen the tab."""
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(COMBO_CHARS)
    return box


def _note() -> QLabel:
    note = QLabel("")
    note.setWordWrap(True)
    note.setStyleSheet(NOTE_STYLE)
    note.hide()
    return note


def _form_label(field: QWidget) -> QWidget | None:
    """The label of ``field``'s form row, if it is in one."""
    parent = field.parentWidget()
    form = parent.layout() if parent is not None else None
    return form.labelForField(field) if isinstance(form, QFormLayout) else None


def _name(value: Any) -> str:
    """A provider value as the stats give it (the control state holds the chain as a tuple)."""
    if isinstance(value, tuple | list):
        return ",".join(map(str, value)) or "?"
    return str(value)


def _command(controls: Controls, fields: dict[str, Any]) -> Change:
    """The control-plane command for ``fields``: a preset or selection change by its own
    command, anything else through ``update_swap``."""
    if set(fields) == {"preset"}:
        return controls.set_preset(fields["preset"])
    if set(fields) == {"quality"}:
        return controls.set_quality(fields["quality"])
    if set(fields) <= {"select", "reference"}:
        return controls.set_selection(fields["select"], fields.get("reference"))
    return controls.update_swap(**fields)
