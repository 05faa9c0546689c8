"""Command-line options and config fields: the options of `livecam run`, generated from
the config fields' Settings (``livecam.config.setting``: option, help, range, choices),
which option sets which field, errors that name what the user typed, and options that
would be ignored (an error, never silent)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from livecam.config.inputs import input_file_problem
from livecam.config.option_map import FIELD_OPTIONS, as_option_error, config_settings
from livecam.config.schema import NEURAL, Config
from livecam.config.setting import (
    Setting,
    is_list,
    leaf_fields,
    literal_choices,
    option_text,
    plain_type,
    setting_of,
    value_at,
)
from livecam.config.specs import SinkSpec, SourceSpec
from livecam.config.tomlfile import split_pair
from livecam.errors import ConfigError, LivecamError, cut

log = logging.getLogger("livecam")


#: argument groups of `livecam run`, in help order: a section's fields go to the group
#: of its name (buffer's to pipeline's) unless their Setting names another
GROUPS = {
    "source": "source",
    "output": "output",
    "pipeline": "pipeline",
    "buffer": "pipeline",
    "swap": "face swap",
    NEURAL: NEURAL,
    "run": "run",
    "obs": "OBS Studio (obs-websocket 5; see docs/obs.md)",
    "remote": "swap on another machine's GPU",
}
DEBUG_GROUP = "test and bench knobs (left out of --help)"


def _help(f: dataclasses.Field[Any], info: Setting, debug_shown: bool) -> str:
    if info.debug and not debug_shown:
        return argparse.SUPPRESS
    default = f.default if f.default is not dataclasses.MISSING else None
    return info.help.replace("{default}", option_text(default, ","))


def add_config_options(
    p: argparse.ArgumentParser, debug_shown: bool = False
) -> dict[str, argparse._ArgumentGroup]:
    """The options of `livecam run` that set config fields, generated from the fields'
    Settings; every one defaults to None (unset: the config keeps its value). Debug knobs
    are hidden from the help unless ``debug_shown``. Returns the option groups by title
    (``GROUPS``' values), for the options that set no field."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for title in (*dict.fromkeys(GROUPS.values()), DEBUG_GROUP):
        groups[title] = p.add_argument_group(title)
    for name, f, hint, info in config_settings():
        assert info.option is not None
        title = DEBUG_GROUP if info.debug else info.group or GROUPS[name.partition(".")[0]]
        group: Any = groups[title]
        text = _help(f, info, debug_shown)
        kind = plain_type(hint)
        if kind is bool:
            if info.off is not None:  # --unpaced | --realtime
                group = group.add_mutually_exclusive_group()
            if info.negatable:
                action: Any = argparse.BooleanOptionalAction
            else:
                action = "store_false" if info.option.startswith("--no-") else "store_true"
            group.add_argument(info.option, dest=info.dest, action=action, default=None, help=text)
            if info.off is not None:
                off_help = argparse.SUPPRESS if text == argparse.SUPPRESS else info.off_help
                group.add_argument(
                    info.off, dest=info.dest, action="store_const", const=False, help=off_help
                )
            continue
        choices = _listed_choices(info) if info.choices is not None else literal_choices(hint)
        group.add_argument(
            info.option,
            dest=info.dest,
            type=info.parse or (None if choices else kind),
            choices=choices,
            action="append" if is_list(hint) else "store",
            metavar=info.metavar,
            help=text,
        )
    return groups


def _listed_choices(info: Setting) -> Sequence[str] | None:
    """The choices the help lists for ``info``; None when they cannot be read (a malformed
    model manifest): the parser, and ``--help``, still work, and the config check or the
    command that reads the manifest names the bad entry in one line."""
    assert info.choices is not None
    try:
        return info.choices()
    except LivecamError as e:
        log.debug("no choices for %s: %s", info.option, e)
        return None


def given_fields(args: argparse.Namespace) -> dict[str, Any]:
    """``section.field`` -> value of every option given on the command line."""
    given = {}
    for name, (_option, dest) in FIELD_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            given[name] = tuple(value) if isinstance(value, list) else value
    return given


def config_file(path: str) -> Config:
    """The config file ``path`` (``--config``) as the command line takes it: its
    ``output.overwrite`` is ignored with a warning (replacing the user's files is asked on
    the command line, ``--overwrite``, or in the panel, never by a file)."""
    if not path.strip():
        raise ConfigError("--config was given an empty path", "give the path of a TOML file")
    cfg = Config.load(path)
    if cfg.output.overwrite:
        log.warning(
            "config field 'output.overwrite' is ignored: only --overwrite on the command "
            "line (or the panel's switch) replaces existing files"
        )
        cfg = cfg.with_section("output", overwrite=False)
    return cfg


def config_from_args(args: argparse.Namespace, base: Config | None = None) -> Config:
    """Apply the options that were given on top of ``--config`` (or the defaults).

    A bad value is a ConfigError naming the option (``--fps 0``) when it came from the
    command line, the config field (``source.fps``) when it came from the file.
    """
    cfg = base or (config_file(args.config) if args.config is not None else Config())
    given = given_fields(args)
    try:
        cfg = cfg.with_fields(given)
    except ConfigError as e:
        raise as_option_error(e, given) from None
    if (args.face or getattr(args, "map", None)) and not args.stage:
        cfg = cfg.with_section("pipeline", stages=("swap",))
    return cfg


@dataclass(frozen=True)
class Scope:
    """When the fields of a scope apply (``applies(config)``): ``option_needs`` says it in
    options (``--source synthetic``), ``field_needs`` in config fields. A field names its
    scope in its Setting (``applies_with``); every field of a section in
    ``SECTION_SCOPES`` is in that section's scope too."""

    applies: Callable[[Config], bool]
    option_needs: str
    field_needs: str


def _source(cfg: Config) -> SourceSpec:
    return SourceSpec.parse(cfg.source.spec)


def _sinks(cfg: Config) -> list[SinkSpec]:
    return [SinkSpec.parse(s) for s in cfg.output.sinks]


SCOPES: Mapping[str, Scope] = MappingProxyType(
    {
        "synthetic": Scope(
            lambda c: _source(c).kind == "synthetic",
            "--source synthetic",
            "source.spec = 'synthetic'",
        ),
        "camera": Scope(
            lambda c: _source(c).is_webcam,
            "a camera source (--source camera:N)",
            "a camera in source.spec",
        ),
        "virtualcam": Scope(
            lambda c: any(s.is_virtualcam for s in _sinks(c)),
            "--sink virtualcam (or auto)",
            "'virtualcam' or 'auto' in output.sinks",
        ),
        "file output": Scope(
            lambda c: c.run.stats_json is not None or any(s.file for s in _sinks(c)),
            "a file sink (--sink out.mp4) or --stats-json",
            "a file in output.sinks or run.stats_json",
        ),
        "facebox": Scope(
            lambda c: "facebox" in c.pipeline.stages,
            "--stage facebox",
            "'facebox' in pipeline.stages",
        ),
        "swap": Scope(  # pipeline.overlap too: the swap stage's tracking and swap
            lambda c: "swap" in c.pipeline.stages,
            "the swap stage (--face PHOTO, or --stage swap)",
            "'swap' in pipeline.stages",
        ),
        "reference": Scope(
            lambda c: c.swap.select.select == "reference",
            "--select reference",
            "swap.select.select = 'reference'",
        ),
        "video file": Scope(
            lambda c: _source(c).file is not None,
            "a video file (--source clip.mp4)",
            "a video file in source.spec",
        ),
        "lossless": Scope(
            lambda c: c.buffer.lossless or _source(c).file is not None,
            "--lossless (or a video file --source)",
            "buffer.lossless = true (or a video file in source.spec)",
        ),
    }
)
#: sections whose every field applies only in a scope
SECTION_SCOPES = MappingProxyType({"swap": "swap"})


def _scoped_fields() -> dict[str, tuple[str, ...]]:
    """Scope name -> its fields (``section.field``), in config order, from the Settings."""
    found: dict[str, list[str]] = {name: [] for name in SCOPES}
    for name, f, _hint in leaf_fields(Config):
        section = name.partition(".")[0]
        for scope in (SECTION_SCOPES.get(section), setting_of(f).applies_with):
            if scope is not None:
                found[scope].append(name)
    return {name: tuple(fields) for name, fields in found.items()}


#: scope name -> the fields that apply only in it
SCOPED_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(_scoped_fields())


#: path fields checked before start: field -> (what it is called, the fix), from the fields'
#: Settings (``input``)
INPUT_FILES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        name: info.input
        for name, f, _hint in leaf_fields(Config)
        if (info := setting_of(f)).input is not None
    }
)


def _default_of(name: str) -> Any:
    return value_at(Config(), name)


def _value_of(cfg: Config, name: str) -> Any:
    return value_at(cfg, name)


def check_options(cfg: Config, given: Mapping[str, Any]) -> None:
    """Errors for options that would be ignored (``--stamp`` on a camera), missing
    companions (``--select reference`` without the reference photo) and input files that
    cannot be used; a config-file field that would be ignored is a warning.

    ``given``: the fields set on the command line (``given_fields``); their errors name
    the option, the others the config field."""

    def where(name: str) -> str:
        return FIELD_OPTIONS[name][0] if name in given else f"config field '{name}'"

    for scope_name, scope in SCOPES.items():
        if scope.applies(cfg):
            continue
        for name in SCOPED_FIELDS[scope_name]:
            if name in given:
                option = FIELD_OPTIONS[name][0]
                raise ConfigError(
                    f"{option} applies only with {scope.option_needs}",
                    f"add {scope.option_needs}, or leave out {option}",
                )
            if _value_of(cfg, name) != _default_of(name):
                log.warning(
                    "config field '%s' is ignored: it applies only with %s",
                    name,
                    scope.field_needs,
                )
    if "swap" in cfg.pipeline.stages:
        from livecam.face.swap_stage import check_swap_config

        check_swap_config(cfg.swap)  # the preset, and the photos it needs
    for name, (what, fix) in INPUT_FILES.items():
        path = _value_of(cfg, name)
        ignored = any(
            name in fields and not SCOPES[s].applies(cfg) for s, fields in SCOPED_FIELDS.items()
        )
        problem = None if path is None or ignored else input_file_problem(path)
        if problem is not None:
            raise ConfigError(f"{where(name)}: {what} {cut(str(path))} {problem}", fix)
    if "swap" in cfg.pipeline.stages:
        for pair in cfg.swap.select.map:
            for photo, what in zip(split_pair(pair) or (), ("source photo", "target photo")):
                problem = input_file_problem(photo)
                if problem is not None:
                    given_as = where("swap.select.map")
                    raise ConfigError(
                        f"{given_as} {cut(pair)}: the {what} {cut(photo)} {problem}",
                        "give SOURCE=TARGET pairs of photos (JPEG, PNG, ...), each with a face",
                    )
