"""The preset table: rows, the models each needs, how ``auto`` resolves, and parts built
from real model files (or one clear error naming every missing file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from face_parts_data import load_face_image

from livecam.config import schema
from livecam.config.schema import SwapConfig
from livecam.errors import ConfigError, ModelError
from livecam.face.build import (
    KINDS,
    PHOTO_SIDES,
    YUNET_START_SCORE,
    PartsBuilder,
    build_parts,
    photo_analyzer,
)
from livecam.face.detect.yunet import YuNetDetector
from livecam.face.identity.metrics import identity_metrics
from livecam.face.identity.onnx import OnnxRecognizer
from livecam.face.landmarks.onnx import Pfld68Landmarker
from livecam.face.paste.blenders import RoiBlender
from livecam.face.swap.classic import ClassicSwapper
from livecam.models.manifest import load_manifest
from livecam.models.presets import (
    AUTO_ORDER,
    PRESETS,
    preset_model_names,
    preset_names,
    resolve_preset,
)
from livecam.models.store import ModelStore
from livecam.types import FaceWork, FrameContext


def test_every_config_preset_is_in_the_table() -> None:
    assert schema.preset_names() == preset_names()  # the config's choices are the table's
    assert preset_names()[0] == "auto" and set(AUTO_ORDER) == set(PRESETS)
    assert preset_names()[1:] == ("lite", "standard", "quality", "offline")  # offline: alias
    assert SwapConfig().preset == "lite"  # the default needs no download
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["lite"].swapper = "other"  # type: ignore[misc]


def test_lite_needs_no_model_file_offline_is_lite_and_auto_falls_back_to_it(
    tmp_path: Path,
) -> None:
    empty = ModelStore(models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    assert resolve_preset("offline") is resolve_preset("lite") is PRESETS["lite"]
    assert resolve_preset("auto", empty) is resolve_preset("auto") is PRESETS["lite"]
    assert PRESETS["lite"].needs_download == "no" and PRESETS["lite"].model_names() == []
    assert preset_model_names("lite") == preset_model_names("offline") == []
    assert PRESETS["lite"].parts_for() == {
        "detector": "yunet-2023mar",
        "landmarker": "slim-68",
        "recognizer": "mobilefacenet",
        "swapper": "classic-mesh",
    }


def test_the_lite_preset_is_served_by_the_testdata_models(testdata: Path, tmp_path: Path) -> None:
    store = ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data")
    assert resolve_preset("auto", store) is PRESETS["lite"]  # standard/quality are missing
    parts = build_parts(PRESETS["lite"], SwapConfig.of(provider="cpu"), store)
    try:
        assert isinstance(parts.detector, YuNetDetector)
        assert isinstance(parts.landmarker, Pfld68Landmarker)
        assert isinstance(parts.recognizer, OnnxRecognizer) and parts.recognizer.dim == 128
        assert isinstance(parts.swapper, ClassicSwapper)
        assert isinstance(parts.blender, RoiBlender)
        assert parts.providers().used == ("cpu",)
        # the recognizer's id names the file's sha256: the source-face cache keys on it
        assert "f055d9c9a4d8" in parts.recognizer.model_id
    finally:
        parts.close()


@pytest.mark.parametrize("name", ["standard", "quality"])
def test_missing_models_are_one_error_naming_each_file_url_and_folder(
    name: str, tmp_path: Path
) -> None:
    # every mirror is a closed port on this machine: the download fails at once
    manifest = {
        key: dataclasses.replace(entry, urls=("http://127.0.0.1:9/" + entry.file,))
        for key, entry in load_manifest().items()
    }
    store = ModelStore(manifest, models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    row = PRESETS[name]
    with pytest.raises(ModelError) as info:
        build_parts(row, SwapConfig.of(accept_licence=True), store)
    text = info.value.message + " " + (info.value.hint or "")
    for model in row.model_names():
        entry = manifest[model]
        assert entry.file in text and entry.urls[0] in text
    assert str(tmp_path / "models") in text


def test_unaccepted_licences_stop_the_build_before_any_download(tmp_path: Path) -> None:
    store = ModelStore(models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    with pytest.raises(ModelError, match="--accept-licence"):
        build_parts(PRESETS["standard"], SwapConfig(), store)
    assert not list(tmp_path.rglob("*.onnx*"))


def test_config_choices_change_the_models_a_preset_needs() -> None:
    standard = PRESETS["standard"]
    assert standard.model_names() == ["scrfd-10g", "arcface-w600k-r50", "inswapper-128-fp16"]
    mouth = SwapConfig.of(mouth_mask=60, enhancer="codeformer", swapper="hyperswap-1b-256")
    assert standard.model_names(mouth) == [
        "scrfd-10g",
        "2d106det",  # the mouth mask needs lip landmarks
        "arcface-w600k-r50",
        "hyperswap-1b-256",
        "codeformer",
    ]
    own = SwapConfig.of(swapper_model="my_swapper.onnx", masks=("box", "region"))
    assert standard.model_names(own) == ["scrfd-10g", "arcface-w600k-r50", "bisenet-resnet34"]
    assert PRESETS["quality"].model_names(SwapConfig.of(enhancer="none")) == [
        "scrfd-10g",
        "2d106det",
        "arcface-w600k-r50",
        "hyperswap-1a-256",
    ]


def test_unknown_preset_names_the_choices() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_preset("ultra")
    assert "'ultra'" in info.value.message
    assert all(name in info.value.hint for name in preset_names())


def test_lite_parts_and_the_photo_analyzer_made_of_them() -> None:
    parts = build_parts(PRESETS["lite"], SwapConfig.of(detect_size=480, blend="seamless"))
    live, photo = parts.detector, parts.photo_detector
    assert isinstance(live, YuNetDetector) and isinstance(photo, YuNetDetector)
    assert (live.max_sides, photo.max_sides) == ((480,), PHOTO_SIDES)
    assert live.start_score == photo.start_score == YUNET_START_SCORE > live.score_threshold
    assert isinstance(parts.landmarker, Pfld68Landmarker)
    assert f"box={parts.landmarker.box_for_kps.__qualname__}" in live.model_id
    assert isinstance(parts.swapper, ClassicSwapper)
    assert isinstance(parts.blender, RoiBlender) and parts.blender.mode == "seamless"
    assert parts.enhancer is None and parts.masker is None
    assert len(parts.all()) == 6  # detector, photo detector, landmarker, recognizer, ...
    analyzer = photo_analyzer(parts)
    assert analyzer.detector is parts.photo_detector
    assert analyzer.landmarker is parts.landmarker and analyzer.recognizer is parts.recognizer
    assert analyzer.model_id == "+".join(
        [parts.photo_detector.model_id, parts.landmarker.model_id, parts.recognizer.model_id]
    )


def test_every_manifest_model_has_a_part_kind_of_its_task() -> None:
    # the registry reads the manifest's `part` field: no model is special-cased in code
    for entry in load_manifest().values():
        kind = KINDS[entry.part]
        assert kind.role == entry.task and kind.weights, entry.name
    assert not KINDS["classic-mesh"].weights  # the one part without weights


def test_the_built_in_parts_are_manifest_rows(tmp_path: Path) -> None:
    # lite needs no download, yet each of its parts but the classic swapper is a manifest
    # row: YuNet, slim-160 and MobileFaceNet bundled with LiveCam (found by the store)
    empty = ModelStore(models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    builder = PartsBuilder(PRESETS["lite"], SwapConfig(), empty)
    sources = {
        role: p.entry.source if p.entry is not None else None for role, p in builder.plan.items()
    }
    assert sources == {
        "detector": "bundled",
        "landmarker": "bundled",
        "recognizer": "bundled",
        "swapper": None,
    }
    builder.resolve_files()
    assert sorted(builder.files) == ["mobilefacenet", "slim-68", "yunet-2023mar"]
    assert {path.parent.name for path in builder.files.values()} == {"assets"}
    assert not list(tmp_path.rglob("*.onnx"))  # nothing downloaded


def test_a_contract_key_the_part_does_not_take_fails_the_build(
    testdata: Path, tmp_path: Path
) -> None:
    manifest = dict(load_manifest())
    entry = manifest["mobilefacenet"]
    manifest["mobilefacenet"] = dataclasses.replace(
        entry,
        contract={**entry.contract, "input_sise": 112},  # a typo in the manifest
    )
    store = ModelStore(manifest, models_dir=testdata / "models", data_dir=tmp_path / "data")
    with pytest.raises(ModelError) as info:
        build_parts(PRESETS["lite"], SwapConfig.of(provider="cpu"), store)
    assert "models.mobilefacenet.contract has input_sise" in info.value.message
    assert "OnnxRecognizer" in info.value.message and "input_size" in (info.value.hint or "")
    # the real manifest's contracts are all taken: the same build succeeds
    build_parts(
        PRESETS["lite"],
        SwapConfig.of(provider="cpu"),
        ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data"),
    ).close()


def test_a_part_name_of_the_wrong_role_or_unknown_is_an_error(tmp_path: Path) -> None:
    store = ModelStore(models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    wrong = dataclasses.replace(PRESETS["lite"], swapper="mobilefacenet")
    with pytest.raises(ModelError, match="mobilefacenet is not a swapper"):
        PartsBuilder(wrong, SwapConfig(), store)
    unknown = dataclasses.replace(PRESETS["lite"], landmarker="slim-86")
    with pytest.raises(ModelError, match="slim-86 \\(landmarker\\) has no model or part"):
        PartsBuilder(unknown, SwapConfig(), store)


@pytest.mark.parametrize("models_dir", ["unset", "empty"])
def test_the_lite_preset_swaps_with_no_models_folder(
    models_dir: str, testdata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bundled files alone: no LIVECAM_MODELS_DIR, or one pointing to an empty folder
    if models_dir == "unset":
        monkeypatch.delenv("LIVECAM_MODELS_DIR", raising=False)
    else:
        (tmp_path / "empty").mkdir()
        monkeypatch.setenv("LIVECAM_MODELS_DIR", str(tmp_path / "empty"))
    store = ModelStore(data_dir=tmp_path / "data")
    parts = build_parts(resolve_preset("auto", store), SwapConfig(), store)
    try:
        assert parts.preset == "lite" and parts.providers().used == ("cpu",)
        analyzer = photo_analyzer(parts)
        source_image = load_face_image(testdata, "astronaut_eileen_collins.png")
        target_image = load_face_image(testdata, "obama_official_portrait_2012.jpg")
        (source,) = analyzer.analyze(source_image, with_embedding=True)
        (target,) = analyzer.analyze(target_image, with_embedding=True)
        assert source.landmarks is not None and source.landmarks.shape == (68, 2)
        assert target.landmarks is not None and isinstance(parts.swapper, ClassicSwapper)
        model = parts.swapper.prepare_landmarks(source_image, source.landmarks)
        out = parts.render([FrameContext(target_image)], [FaceWork(0, 0, target)], [model])[0]
        metrics = identity_metrics(source_image, target_image, out, analyzer, source, target)
        # the output reads as the source; the margin is smaller than with the source's eyes
        # (0.08 here) since the default own-eyes mode keeps the camera's eyes
        assert metrics.retrieved and metrics.margin > 0.05
    finally:
        parts.close()
    assert not list(tmp_path.rglob("*.onnx*"))  # nothing downloaded
