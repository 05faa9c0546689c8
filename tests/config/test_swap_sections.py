"""The swap section's own sections (detect, select, classic, neural, masks, runtime, reuse):
a config file of the flat layout (every setting in ``[swap]``) loads with one warning line
naming the new places and gives the same settings; the command line's flags set the same
fields as before; a setting's name finds its section."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from livecam.cli.main import build_parser
from livecam.cli.options import config_from_args
from livecam.config.schema import Config, SwapConfig
from livecam.config.swap import SECTIONS, setting_sections
from livecam.errors import ConfigError

# one setting of every section, with the three whose name is also a section's
FLAT = """
[swap]
face = "me.jpg"
preset = "standard"
detect_size = 800
select = "reference"
reference = "them.jpg"
map = ["a.jpg=b.jpg"]
eyes = "source"
keep_glasses = false
identity_weight = 0.7
masks = ["box", "region"]
mask_blur = 0.5
provider = "cpu"
reuse = false
reuse_max = 5
"""

SECTIONED = """
[swap]
face = "me.jpg"
preset = "standard"
[swap.detect]
detect_size = 800
[swap.select]
select = "reference"
reference = "them.jpg"
map = ["a.jpg=b.jpg"]
[swap.classic]
eyes = "source"
keep_glasses = false
[swap.neural]
identity_weight = 0.7
[swap.masks]
masks = ["box", "region"]
mask_blur = 0.5
[swap.runtime]
provider = "cpu"
[swap.reuse]
reuse = false
reuse_max = 5
"""


def test_a_flat_swap_table_loads_with_one_warning_line_and_the_same_settings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "flat.toml").write_text(FLAT)
    (tmp_path / "sections.toml").write_text(SECTIONED)
    with caplog.at_level(logging.WARNING):
        new = Config.load(tmp_path / "sections.toml")
    assert not caplog.records, "the new layout loads without a warning"
    with caplog.at_level(logging.WARNING):
        old = Config.load(tmp_path / "flat.toml")
    assert old == new
    assert old.swap.detect.detect_size == 800 and old.swap.select.select == "reference"
    assert old.swap.masks.masks == ("box", "region") and old.swap.reuse.reuse is False
    assert old.swap.classic.keep_glasses is False
    assert old.swap.select.reference == str(tmp_path / "them.jpg")  # paths from its folder
    [record] = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    for name in ("detect_size", "select", "masks", "mask_blur", "provider", "reuse_max"):
        assert f"swap.{name} is now swap.{setting_sections()[name]}.{name}" in line, name
    assert "swap.face " not in line and "swap.preset " not in line  # they did not move


def test_a_saved_config_has_the_sections_and_loads_back_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "flat.toml").write_text(FLAT)
    with caplog.at_level(logging.WARNING):
        old = Config.load(tmp_path / "flat.toml")
    caplog.clear()
    old.save(tmp_path / "saved.toml")
    text = (tmp_path / "saved.toml").read_text()
    assert "[swap.detect]" in text and "[swap.reuse]" in text
    assert "keep_glasses = false" in text.split("[swap.classic]")[1].split("[")[0]
    with caplog.at_level(logging.WARNING):
        assert Config.load(tmp_path / "saved.toml") == old
    assert not caplog.records


def test_a_bad_flat_value_names_its_new_place(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("[swap]\nmask_blur = 2.0\n")
    with pytest.raises(ConfigError) as e:
        Config.load(tmp_path / "bad.toml")
    assert e.value.field == "swap.masks.mask_blur" and "from 0 to 1" in (e.value.allowed or "")


def test_the_command_line_flags_set_the_sections_fields() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--face",
            "me.jpg",
            "--detect-size",
            "800",
            "--select",
            "all",
            "--eyes",
            "source",
            "--no-keep-glasses",
            "--mask-blur",
            "0.5",
            "--mask",
            "box",
            "--provider",
            "cpu",
            "--no-reuse",
            "--pixel-boost",
            "2",
        ]
    )
    swap = config_from_args(args).swap
    assert swap == SwapConfig.of(
        face="me.jpg",
        detect_size=800,
        select="all",
        eyes="source",
        keep_glasses=False,
        mask_blur=0.5,
        masks=("box",),
        provider="cpu",
        reuse=False,
        pixel_boost=2,
    )
    assert swap.detect.detect_size == 800 and swap.neural.pixel_boost == 2
    assert swap.runtime.provider == "cpu" and swap.reuse.reuse is False
    assert swap.classic.keep_glasses is False
    default = config_from_args(build_parser().parse_args(["run", "--face", "me.jpg"])).swap
    assert default.classic.keep_glasses is True


def test_every_setting_name_is_unique_and_finds_its_section() -> None:
    where = setting_sections()
    per_section = {name: len(dataclasses.fields(cls)) for name, cls in SECTIONS.items()}
    top = [f.name for f in dataclasses.fields(SwapConfig) if f.name not in SECTIONS]
    assert top == ["face", "face_index", "preset"]
    assert len(where) == sum(per_section.values()) + len(top) == 47
    changed = SwapConfig().changed(detect_size=640, opacity=0.5, reuse_max=1)
    assert (changed.detect.detect_size, changed.masks.opacity, changed.reuse.reuse_max) == (
        640,
        0.5,
        1,
    )
    assert changed.value("opacity") == 0.5
    with pytest.raises(ConfigError, match="unknown swap setting"):
        SwapConfig().changed(detect_sise=640)
