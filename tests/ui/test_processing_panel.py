"""The Processing panel on a real stream (synthetic source, offscreen Qt): a slider change
reaches the running stream on release, a change while stopped is saved to config.toml, a
provider fallback is shown with its reason, and a preset whose models are missing opens
the download dialog (licence acceptance, download from a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
from http_files import FileServer
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.models.manifest import load_manifest
from livecam.models.store import ModelStore
from ui.model_download import ModelDownloadDialog
from ui.panels.processing_panel import ProcessingPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
GRACE = ASSETS / "grace_hopper.jpg"


def release_at(slider: object, value: int) -> None:
    """Drag the slider to ``value`` and let go (as a mouse does)."""
    slider.setSliderDown(True)  # type: ignore[attr-defined]
    slider.setValue(value)  # type: ignore[attr-defined]
    slider.setSliderDown(False)  # type: ignore[attr-defined]


def test_slider_change_reaches_the_running_stream_on_release(
    qtbot: QtBot, settings: UiSettings
) -> None:
    stream = StreamController(small_config(GRACE))
    panel = ProcessingPanel(stream, settings)
    qtbot.addWidget(panel)
    stream.start()
    try:
        panel.mouth_mask.setSliderDown(True)
        panel.mouth_mask.setValue(30)  # dragging: nothing applied yet
        assert stream.config.swap.masks.mouth_mask == 0
        with qtbot.waitSignal(stream.applied, timeout=30000):
            panel.mouth_mask.setValue(60)
            panel.mouth_mask.setSliderDown(False)
        assert stream.running and stream.config.swap.masks.mouth_mask == 60
        with qtbot.waitSignal(stream.applied, timeout=30000):
            release_at(panel.opacity, 40)
        assert stream.config.swap.masks.opacity == 0.4
        with qtbot.waitSignal(stream.applied, timeout=5000):
            panel.swap_on.setChecked(False)  # the master switch
        assert stream.controls is not None and not stream.controls.state.swap
    finally:
        stream.stop()
    assert stream.config.swap.masks.mouth_mask == 60  # kept for the next start


def test_a_change_while_stopped_is_saved_to_config_toml(qtbot: QtBot, settings: UiSettings) -> None:
    stream = StreamController(small_config(GRACE))
    panel = ProcessingPanel(stream, settings)
    qtbot.addWidget(panel)
    release_at(panel.mouth_mask, 60)
    panel.add_mapping(str(ASSETS / "grace_hopper.jpg"), str(ASSETS / "astronaut.png"))
    panel.swap_on.setChecked(False)
    saved = tomllib.loads(settings.config_path.read_text(encoding="utf-8"))
    assert saved["swap"]["masks"]["mouth_mask"] == 60
    assert saved["swap"]["select"]["map"] == [
        f"{ASSETS / 'grace_hopper.jpg'}={ASSETS / 'astronaut.png'}"
    ]
    assert saved["pipeline"]["stages"] == ["passthrough"]
    assert UiSettings().config.swap.masks.mouth_mask == 60  # loads back
    assert panel.mapping.count() == 1
    panel.mapping.setCurrentRow(0)
    panel.remove_selected_mapping()
    assert UiSettings().config.swap.select.map == ()


def test_provider_fallback_is_shown_with_its_reason(
    qtbot: QtBot, settings: UiSettings, testdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))
    lite_on_cuda = {"preset": "lite", "provider": "cuda"}  # no GPU here
    stream = StreamController(small_config(GRACE, swap=lite_on_cuda))
    panel = ProcessingPanel(stream, settings)
    qtbot.addWidget(panel)
    labels = [panel.preset.itemText(i) for i in range(panel.preset.count())]
    assert {"auto (best present: lite)", "lite (ready)", "offline (= lite, ready)"} <= set(labels)
    stream.start()
    try:
        qtbot.waitUntil(lambda: panel.provider_warning.text() != "", timeout=10000)
        text = panel.provider_warning.text()
        assert not panel.provider_warning.isHidden()
        assert "cpu" in panel.provider_used.text().lower()
    finally:
        stream.stop()
    assert "cuda" in text.lower() and "runs on cpu" in text.lower()
    assert ": " in text.split("requested", 1)[1]  # the reason follows


def local_store(
    tmp_path: Path, testdata: Path, server: FileServer, bad: bool = False
) -> ModelStore:
    """The lite preset's models as downloads (they ship inside LiveCam: here under other file
    names, so the bundled copies are not found) served by the local server; mobilefacenet
    given a non-commercial licence so it must be accepted."""
    manifest = dict(load_manifest())
    for name in ("slim-68", "mobilefacenet"):
        entry = manifest[name]
        data = (testdata / "models" / entry.file).read_bytes()
        file = f"served_{entry.file}"
        url = server.add(f"/{file}", data) if not bad else server.url("/missing.onnx")
        manifest[name] = dataclasses.replace(entry, file=file, urls=(url,), source="download")
    manifest["mobilefacenet"] = dataclasses.replace(
        manifest["mobilefacenet"], commercial=False, licence="test non-commercial licence"
    )
    return ModelStore(manifest, models_dir=tmp_path / "models", data_dir=tmp_path / "data")


def test_the_preset_list_names_what_each_gives_and_counts_unknown_sizes_as_unknown(
    qtbot: QtBot, settings: UiSettings, testdata: Path, server: FileServer, tmp_path: Path
) -> None:
    store = local_store(tmp_path, testdata, server)
    manifest = dict(store.manifest)  # a download whose size the manifest does not know
    manifest["mobilefacenet"] = dataclasses.replace(manifest["mobilefacenet"], size=0)
    store = ModelStore(manifest, models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    stream = StreamController(small_config(GRACE, swap={"preset": "auto"}))
    panel = ProcessingPanel(stream, settings, store=store)
    qtbot.addWidget(panel)
    labels = {panel.preset.itemData(i): panel.preset.itemText(i) for i in range(5)}
    slim_mb = round(store.entry("slim-68").size / 1e6)
    lite = f"download {slim_mb} MB + 1 file of unknown size, non-commercial"
    assert labels["lite"] == f"lite ({lite})"
    assert labels["offline"] == f"offline (= lite, {lite})"  # offline is lite, not auto
    assert labels["auto"] == "auto (no preset's files are here)"

    panel.preset.setCurrentIndex(panel.preset.findData("lite"))
    panel.preset.activated.emit(panel.preset.currentIndex())
    dialog = panel.dialog
    assert dialog is not None
    slim = store.entry("slim-68").size / 1e6
    assert dialog.total_label.text() == f"Download: {slim:.1f} MB + 1 file of unknown size"
    cells = [[dialog.table.item(i, j) for j in (0, 2)] for i in range(2)]
    sizes = {name.text(): size.text() for name, size in cells if name and size}
    assert sizes == {"slim-68": f"{slim:.1f} MB", "mobilefacenet": "unknown"}
    dialog.reject()


def test_missing_models_open_the_download_dialog_then_the_preset_applies(
    qtbot: QtBot, settings: UiSettings, testdata: Path, server: FileServer, tmp_path: Path
) -> None:
    store = local_store(tmp_path, testdata, server)
    stream = StreamController(small_config(GRACE, swap={"preset": "auto"}))
    panel = ProcessingPanel(stream, settings, store=store)
    qtbot.addWidget(panel)
    panel.preset.setCurrentIndex(panel.preset.findData("lite"))
    panel.preset.activated.emit(panel.preset.currentIndex())
    dialog = panel.dialog
    assert isinstance(dialog, ModelDownloadDialog)
    items = [dialog.table.item(i, 0) for i in range(dialog.table.rowCount())]
    listed = {item.text() for item in items if item is not None}
    assert len(listed) == len(items)
    assert listed == {"slim-68", "mobilefacenet"}
    assert "test non-commercial licence" in dialog.accept_list.text()  # wrapped, below the box
    assert not dialog.download_button.isEnabled()  # the licence must be accepted first
    assert stream.config.swap.preset == "auto"
    dialog.accept_box.setChecked(True)
    with qtbot.waitSignal(dialog.accepted, timeout=30000):
        dialog.download_button.click()
    assert dialog.progress.value() == 1000
    assert store.licence_accepted(store.entry("mobilefacenet"))  # recorded by the store
    assert (tmp_path / "models" / store.entry("slim-68").file).is_file()
    assert stream.config.swap.preset == "lite"  # applied once the files were here
    assert UiSettings().config.swap.preset == "lite"
    assert "lite (ready)" in panel.preset.itemText(panel.preset.findData("lite"))


def test_a_failed_download_says_why_and_changes_nothing(
    qtbot: QtBot, settings: UiSettings, testdata: Path, server: FileServer, tmp_path: Path
) -> None:
    store = local_store(tmp_path, testdata, server, bad=True)
    stream = StreamController(small_config(GRACE, swap={"preset": "auto"}))
    panel = ProcessingPanel(stream, settings, store=store)
    qtbot.addWidget(panel)
    panel.preset.setCurrentIndex(panel.preset.findData("lite"))
    panel.preset.activated.emit(panel.preset.currentIndex())
    dialog = panel.dialog
    assert dialog is not None
    dialog.accept_box.setChecked(True)
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.error is not None, timeout=30000)
    text = dialog.status.text()
    assert "404" in text and "\n" not in text
    # how to get every missing file by hand, and the folder LiveCam reads them from
    files = [store.entry(n) for n in ("slim-68", "mobilefacenet")]
    assert all(f"{e.file} (from {e.urls[0]})" in text for e in files), text
    assert f"by hand into {tmp_path / 'models'}, then try again" in text
    assert dialog.isVisible() and dialog.download_button.text() == "Retry"
    with qtbot.waitSignal(dialog.rejected, timeout=5000):
        dialog.cancel_button.click()
    assert stream.config.swap.preset == "auto"
    assert panel.preset.currentData() == "auto"
