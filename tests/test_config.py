"""Config: frozen dataclasses, TOML round trip, errors naming the field and allowed values."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from livecam.cli import build_parser, config_from_args
from livecam.config import Config, SourceConfig
from livecam.errors import ConfigError


def test_defaults_round_trip_through_toml(tmp_path: Path) -> None:
    cfg = Config().with_section("source", spec="screen:0,0,640,480", size=(640, 480))
    path = tmp_path / "c.toml"
    cfg.save(path)
    assert Config.load(path) == cfg


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().source.fps = 60  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "field", "allowed"),
    [
        ({"source": {"fps": 0}}, "source.fps", "from 1 to 240"),
        ({"source": {"size": [641, 480]}}, "source.size", "even width and height"),
        ({"source": {"camera_backend": "directshow"}}, "source.camera_backend", "'dshow'"),
        ({"pipeline": {"stages": ["passthrough", "blur"]}}, "pipeline.stages[1]", "'facebox'"),
        ({"buffer": {"batch_limit": 9}}, "buffer.batch_limit", "1 to capacity"),
        ({"swap": {"select": "biggest"}}, "swap.select", "'reference'"),
        ({"run": {"frames": -5}}, "run.frames", "from 1 to 1000000000"),
        ({"buffer": {"lossless": "yes"}}, "buffer.lossless", "bool"),
    ],
)
def test_bad_values_name_field_and_allowed(data: dict, field: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_dict(data)
    assert f"'{field}'" in str(info.value) and allowed in str(info.value)


def test_unknown_field_lists_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="allowed fields: spec, fps"):
        Config.from_dict({"source": {"fsp": 30}})


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(ConfigError, match="source.fps"):
        SourceConfig(fps=-1)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.toml"
    bad.write_text("[source\nfps = 3")
    with pytest.raises(ConfigError, match="x.toml is not valid TOML"):
        Config.load(bad)


def test_cli_options_override_the_config_file(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('[source]\nspec = "screen"\nfps = 15.0\n[output]\nsinks = ["window"]\n')
    args = build_parser().parse_args(
        ["run", "--config", str(toml), "--fps", "60", "--sink", "null", "--sink", "out.mp4"]
    )
    cfg = config_from_args(args)
    assert cfg.source.spec == "screen" and cfg.source.fps == 60.0
    assert cfg.output.sinks == ("null", "out.mp4")


def test_face_option_selects_the_swap_stage() -> None:
    args = build_parser().parse_args(["run", "--face", "me.jpg"])
    assert config_from_args(args).pipeline.stages == ("swap",)


def test_run_help_documents_every_option() -> None:
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    for action in run_parser._actions:
        if action.option_strings and action.dest != "help":
            assert action.help, f"{action.option_strings} has no help text"
    text = run_parser.format_help()
    for option in (
        "--source",
        "--sink",
        "--fps",
        "--size",
        "--frames",
        "--stats-json",
        "--unpaced",
        "--config",
    ):
        assert option in text
