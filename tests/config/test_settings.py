"""One definition per setting: the options of `livecam run`, their help, the range and
choice checks and the panel's lists all come from the config fields' Settings."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cli_output import subcommand_parser

from livecam.cli.main import build_parser, main
from livecam.cli.options import config_from_args
from livecam.config.option_map import FIELD_OPTIONS, config_settings
from livecam.config.schema import Config, SwapConfig, field_choices
from livecam.config.setting import number_text, option_text, plain_type
from livecam.errors import ConfigError
from livecam.models.manifest import load_manifest
from livecam.models.presets import ALIASES, PRESETS, is_neural
from livecam.sinks.recording.video import VIDEO_CODECS

#: options of `livecam run` that set no config field (the run's own)
RUN_OWN = {
    "-h", "--help", "--config", "--save-config", "--commands", "--hotkeys", "-q", "--quiet",
    "-v", "--verbose", "--help-debug",
}  # fmt: skip


def run_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subcommand_parser("run")
    return parser


def test_every_run_option_is_a_config_field_or_the_runs_own() -> None:
    offered = {s for action in run_parser()._actions for s in action.option_strings}
    derived = set()
    for _name, _field, _hint, info in config_settings():
        assert info.option is not None
        derived.add(info.option)
        if info.off:
            derived.add(info.off)
        if info.negatable:
            derived.add("--no-" + info.option.removeprefix("--"))
    assert offered == derived | RUN_OWN
    assert len(FIELD_OPTIONS) == len({option for option, _ in FIELD_OPTIONS.values()})


def test_the_help_shows_each_fields_own_default() -> None:
    """A default shown in the help is the field's (``{default}``), not a copy of it."""
    debug_help = io_help(["run", "--help-debug"])
    checked = 0
    for name, f, _hint, info in config_settings():
        default = f.default
        if default is None or isinstance(default, bool) or default == ():
            continue
        assert "{default}" in info.help, f"{name}: the help does not show its default"
        shown = " ".join(debug_help.split())
        assert f"{info.option} " in shown and option_text(default, ",") in shown, name
        checked += 1
    assert checked > 25


def io_help(argv: list[str]) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    return out.getvalue()


def test_test_and_bench_knobs_leave_the_help_but_still_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main_help = io_help(["run", "--help"])
    debug_help = io_help(["run", "--help-debug"])
    knobs = [info.option for _, _, _, info in config_settings() if info.debug]
    assert set(knobs) >= {"--stage", "--yunet", "--stamp", "--face-motion", "--cuda-graph"}
    for option in knobs:
        assert option is not None
        assert f"{option} " not in main_help and f"{option} " in debug_help
    assert "--fps " in main_help and "--help-debug" in main_help
    assert main(["run", "--help-debug"]) == 0 and "--stamp" in capsys.readouterr().out
    args = run_parser().parse_args(["--stamp", "--stage", "facebox", "--cuda-graph"])
    cfg = config_from_args(args)
    assert cfg.source.stamp and cfg.pipeline.stages == ("facebox",) and cfg.swap.neural.cuda_graph


def test_range_errors_say_the_fields_range() -> None:
    """Every range in the metadata is enforced, with its bounds in the error."""
    checked = 0
    for name, _field, hint, info in config_settings():
        if info.range is None:
            continue
        key = name.rpartition(".")[2]
        low, high = info.range
        too_big: Any = high + 1 if plain_type(hint) is int else high * 1.5 + 1
        if key == "mask_padding":
            too_big = (0, 0, 0, too_big)
        with pytest.raises(ConfigError) as e:
            Config().with_fields({name: too_big})
        assert e.value.field == name and number_text(high) in (e.value.allowed or ""), name
        checked += 1
    assert checked >= 20


def test_model_and_preset_names_come_from_the_manifest_and_the_table() -> None:
    manifest = load_manifest()
    swappers = [n for n, e in manifest.items() if e.task == "swapper"]
    enhancers = [n for n, e in manifest.items() if e.task == "enhancer"]
    assert list(field_choices("swap.neural.swapper")) == swappers and swappers
    assert list(field_choices("swap.neural.enhancer")) == ["none", *enhancers]
    assert set(field_choices("swap.preset")) == {"auto", *PRESETS, *ALIASES}
    for name in swappers:
        assert SwapConfig.of(swapper=name).neural.swapper == name
    for name in enhancers:
        assert SwapConfig.of(enhancer=name).neural.enhancer == name
    for name in PRESETS:
        assert SwapConfig(preset=name).preset == name
    with pytest.raises(ConfigError) as e:
        Config.from_dict({"swap": {"swapper": "inswapper-64"}})
    assert e.value.field == "swap.neural.swapper" and repr(swappers[0]) in (e.value.allowed or "")
    with pytest.raises(ConfigError, match="'swap.preset'"):
        SwapConfig(preset="fast")


def test_the_parser_offers_the_fields_choices() -> None:
    by_option = {a.option_strings[0]: a for a in run_parser()._actions if a.option_strings}
    for option, field in (
        ("--swapper", "swap.neural.swapper"),
        ("--label-position", "output.label_position"),
    ):
        assert tuple(by_option[option].choices or ()) == field_choices(field)
    assert field_choices("swap.masks.masks") == ("box", "insightface", "ellipse", "region")
    with pytest.raises(KeyError):
        field_choices("source.fps")


def test_every_field_default_is_valid() -> None:
    """Defaults skip the computed-choice check, so they must be among the choices."""
    for name, f, _hint, info in config_settings():
        if info.choices is not None and f.default is not None:
            assert f.default in info.choices(), name
    assert dataclasses.replace(Config()) == Config()


def test_run_help_says_what_the_code_and_the_docs_say() -> None:
    """The help's sink list names every video type the recorder writes (as docs/usage.md
    does), its model group names only neural presets, and --select says what one picks."""
    help_text = " ".join(io_help(["run", "--help"]).split())
    usage = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text()
    for suffix in VIDEO_CODECS:
        assert f"/{suffix}" in help_text or f"FILE{suffix}" in help_text, suffix
        assert f"`{suffix}`" in usage or f"`FILE{suffix}`" in usage, suffix
    heading = next(line for line in io_help(["run", "--help"]).splitlines() if "neural" in line)
    named = [name for name in PRESETS if name in heading]
    assert named and all(is_neural(PRESETS[name].swapper) for name in named), heading
    assert "main face" in help_text and "(largest)" not in help_text
