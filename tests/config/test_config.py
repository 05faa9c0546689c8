"""Config: frozen dataclasses, TOML round trip, errors naming the field and allowed values."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest
from cli_output import subcommand_parser

from livecam.cli.main import build_parser
from livecam.cli.options import config_from_args
from livecam.config.schema import Config, SourceConfig
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
        ({"swap": {"select": "biggest"}}, "swap.select.select", "'reference'"),
        ({"run": {"frames": -5}}, "run.frames", "from 1 to 1000000000"),
        ({"buffer": {"lossless": "yes"}}, "buffer.lossless", "true or false (or leave"),
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
    run_parser = subcommand_parser("run")
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


def test_a_config_file_with_a_utf8_bom_loads(tmp_path: Path) -> None:
    """Windows editors start UTF-8 files with a byte order mark."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b'\xef\xbb\xbf[source]\nspec = "synthetic"\nfps = 24\n')
    cfg = Config.load(path)
    assert cfg.source.spec == "synthetic" and cfg.source.fps == 24.0


def test_paths_in_a_config_file_are_relative_to_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "setup"
    folder.mkdir()
    (folder / "c.toml").write_text(
        '[source]\nspec = "clips/in.mp4"\nface_motion = "../portrait.png"\n'
        '[output]\nsinks = ["null", "out.mp4", "window", "/abs/last.png"]\n'
        '[swap]\nface = "me.jpg"\nreference = "~/ref.jpg"\n'
        '[pipeline]\nyunet_model = "models/yunet.onnx"\n'
        '[run]\nstats_json = "stats.json"\n'
    )
    monkeypatch.chdir(tmp_path)  # somewhere else than the config's folder
    cfg = Config.load(Path("setup") / "c.toml")
    assert cfg.source.spec == str(folder / "clips" / "in.mp4")
    assert cfg.source.face_motion == str(folder / ".." / "portrait.png")
    assert cfg.output.sinks == ("null", str(folder / "out.mp4"), "window", "/abs/last.png")
    assert cfg.swap.face == str(folder / "me.jpg")
    assert cfg.swap.select.reference == str(Path.home() / "ref.jpg")
    assert cfg.pipeline.yunet_model == str(folder / "models" / "yunet.onnx")
    assert cfg.run.stats_json == str(folder / "stats.json")


@pytest.mark.parametrize(
    "spec", ["synthetic", "camera:1", "screen:0,0,64,48", "0", "rtsp://h/s", "", "/dev/video2"]
)
def test_source_specs_that_are_not_files_are_kept(tmp_path: Path, spec: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[source]\nspec = "{spec}"\n')
    assert Config.load(path).source.spec == spec


def test_saved_paths_load_back_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = Config.from_dict(
        {
            "source": {"spec": "in.mp4"},
            "output": {"sinks": ["virtualcam", "rec/out.mp4"]},
            "swap": {"face": "me\tnew.jpg"},  # a tab: escaped in TOML
        }
    )
    saved = tmp_path / "sub" / "c.toml"
    saved.parent.mkdir()
    cfg.save(saved)
    monkeypatch.chdir(saved.parent)
    loaded = Config.load("c.toml")
    assert loaded.source.spec == str(tmp_path / "in.mp4")
    assert loaded.output.sinks == ("virtualcam", str(tmp_path / "rec" / "out.mp4"))
    assert loaded.swap.face == str(tmp_path / "me\tnew.jpg")


def test_save_keeps_an_existing_file_unless_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("# mine\n")
    with pytest.raises(ConfigError, match="already exists") as info:
        Config().save(path)
    assert "--overwrite" in info.value.hint and path.read_text() == "# mine\n"
    Config().save(path, overwrite=True)
    assert Config.load(path) == Config()
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"], "no temporary file is left"


def test_any_text_round_trips_and_a_non_utf8_name_is_an_error(tmp_path: Path) -> None:
    label, device = 'say "hi" \\ to all', 'dev\t"x"\\\u00e9\x7f'
    cfg = Config().with_section("output", label=label, virtualcam_device=device)
    cfg.save(tmp_path / "c.toml")
    loaded = Config.load(tmp_path / "c.toml")
    assert (loaded.output.label, loaded.output.virtualcam_device) == (label, device)
    bad = Config().with_section("swap", face=str(tmp_path / "caf\udce9.jpg"))  # not UTF-8
    with pytest.raises(ConfigError, match="not UTF-8"):
        bad.save(tmp_path / "d.toml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"], "nothing else written"


def test_save_gives_the_file_the_users_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        Config().save(tmp_path / "c.toml")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "c.toml").stat().st_mode) == 0o644


def test_save_into_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="folder .* does not exist"):
        Config().save(tmp_path / "no" / "c.toml")


@pytest.mark.parametrize(
    ("data", "field", "allowed"),
    [
        ({"source": {"fps": 241}}, "source.fps", "1 to 240"),
        ({"source": {"fps": float("nan")}}, "source.fps", "1 to 240"),
        ({"output": {"fps": 1e-10}}, "output.fps", "1 to 240"),
        ({"source": {"reopen_interval_s": 1e10}}, "source.reopen_interval_s", "0.05 to 60"),
        ({"run": {"status_interval_s": 1e10}}, "run.status_interval_s", "0.1 to 3600"),
        ({"run": {"status_interval_s": 0.01}}, "run.status_interval_s", "0.1 to 3600"),
        ({"run": {"frames": 10**9 + 1}}, "run.frames", "1 to 1000000000"),
        ({"swap": {"face_index": 1000}}, "swap.face_index", "0 to 999"),
    ],
)
def test_every_number_is_bounded(data: dict, field: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_dict(data)
    assert info.value.field == field and allowed in (info.value.allowed or "")


def test_demo_help_names_the_source_face_and_the_target_the_right_way_round() -> None:
    """The face of SOURCE_FACE goes onto TARGET (whose face is replaced), as the demo does."""
    from livecam.cli.demo import demo_config
    from livecam.sources.synthetic.portraits import SOURCE_FACE, TARGET

    demo_parser = subcommand_parser("demo")
    text = " ".join(demo_parser.format_help().split())
    assert f"the face from {SOURCE_FACE} (the source face) onto {TARGET} (the target" in text
    cfg = demo_config("x.mp4", 3, False, Path(SOURCE_FACE), Path(TARGET))
    assert Path(cfg.swap.face or "").name == SOURCE_FACE
    assert Path(cfg.source.face_motion or "").name == TARGET
