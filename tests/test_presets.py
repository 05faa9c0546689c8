"""The preset table: rows, how ``auto`` resolves, clear errors for rows not buildable yet."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

from livecam.config import Preset, SwapConfig
from livecam.errors import ConfigError, ModelError
from livecam.pipeline.classic import ClassicSwapper
from livecam.pipeline.detect import YuNetDetector
from livecam.pipeline.dlib_files import DlibModels
from livecam.pipeline.landmarks import Dlib68Landmarker
from livecam.pipeline.paste import RoiBlender
from livecam.pipeline.presets import (
    AUTO_ORDER,
    PHOTO_SIDES,
    PRESETS,
    YUNET_START_SCORE,
    build_parts,
    buildable,
    missing_parts,
    photo_analyzer,
    preset_names,
    resolve_preset,
)


def test_every_config_preset_is_in_the_table() -> None:
    assert set(preset_names()) == set(get_args(Preset))
    assert preset_names()[0] == "auto" and set(AUTO_ORDER) == set(PRESETS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["offline"].swapper = "other"  # type: ignore[misc]


def test_offline_is_buildable_and_auto_resolves_to_it() -> None:
    assert resolve_preset("offline") is PRESETS["offline"]
    assert resolve_preset("auto") is PRESETS["offline"]
    assert [n for n in preset_names() if buildable(n)] == ["auto", "offline"]
    assert PRESETS["offline"].needs_download == "no" and missing_parts(PRESETS["offline"]) == []
    assert PRESETS["offline"].part_names() == {
        "detector": "yunet-2023mar",
        "landmarker": "dlib-shape68",
        "recognizer": "dlib-resnet128",
        "swapper": "classic-mesh",
        "blender": "roi",
    }


@pytest.mark.parametrize("name", ["lite", "standard", "quality"])
def test_neural_presets_are_data_with_a_clear_error(name: str) -> None:
    row = PRESETS[name]
    assert not buildable(name) and missing_parts(row)
    with pytest.raises(ModelError) as info:
        resolve_preset(name)
    err = info.value
    assert f"preset '{name}'" in err.message and "ONNX models" in err.message
    assert "not available in this version" in err.message
    assert all(part in err.message for part in missing_parts(row))
    assert err.hint == "use --preset offline (no download needed)"
    with pytest.raises(ModelError, match="--preset offline"):
        build_parts(row, SwapConfig(), DlibModels())


def test_unknown_preset_names_the_choices() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_preset("ultra")
    assert "'ultra'" in info.value.message
    assert all(name in info.value.hint for name in preset_names())


def test_offline_parts_and_the_photo_analyzer_made_of_them() -> None:
    parts = build_parts(
        PRESETS["offline"], SwapConfig(detect_size=480, blend="seamless"), DlibModels()
    )
    live, photo = parts.detector, parts.photo_detector
    assert isinstance(live, YuNetDetector) and isinstance(photo, YuNetDetector)
    assert (live.max_sides, photo.max_sides) == ((480,), PHOTO_SIDES)
    assert live.start_score == photo.start_score == YUNET_START_SCORE > live.score_threshold
    assert "box=Dlib68Landmarker.box_for_kps" in live.model_id
    assert isinstance(parts.landmarker, Dlib68Landmarker)
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
