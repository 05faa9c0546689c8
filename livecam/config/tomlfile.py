"""Config files: read with tomllib, written with tomli_w through the atomic writer of
``livecam.userfiles``, and the relative paths in them taken from the file's folder."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import tomli_w

from livecam.config.setting import setting_of
from livecam.errors import ConfigError, WriteFailed, cut
from livecam.userfiles import write_atomically

MAX_CONFIG_BYTES = 1 << 20  # a config file is a few hundred bytes

T = TypeVar("T")


def read_toml(p: Path) -> dict[str, Any]:
    """The table in TOML file ``p`` (UTF-8, a BOM allowed); ConfigError naming the file."""
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(
                f"config file {p} is a folder",
                "give the path of a TOML file (write one with --save-config FILE.toml)",
            )
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"config file {p} is not a regular file", "give a TOML file")
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {p} is {st.st_size} bytes, too large for a config file",
                "give a TOML file (write one with --save-config FILE.toml)",
            )
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist", "check the path") from None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"cannot read the config file {p}: {why}") from None
    if b"\0" in raw:
        raise ConfigError(
            f"config file {p} is a binary file, not TOML text", "give a TOML text file"
        )
    try:
        text = raw.decode("utf-8-sig")  # Windows editors may start UTF-8 with a BOM
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {p} is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            "save the file as UTF-8",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"config file {p} nests too deeply to be a config file") from None


def to_toml(cfg: Any) -> str:
    """The config tree ``cfg`` as TOML: one table per section (unset optional fields are
    left out: TOML has no none)."""
    return tomli_w.dumps(_table(cfg))


def _table(part: Any) -> dict[str, Any]:
    """A section as a TOML table: its fields' values and its own sections' tables."""
    table: dict[str, Any] = {}
    for f in fields(part):
        value = getattr(part, f.name)
        if is_dataclass(value):
            table[f.name] = _table(value)
        elif value is not None:
            table[f.name] = list(value) if isinstance(value, tuple) else value
    return table


def write_toml(path: str | os.PathLike[str], text: str, overwrite: bool) -> None:
    """Write ``text`` to the config file ``path`` atomically; an existing file is kept
    unless ``overwrite``. Every problem is a ConfigError naming the file."""
    p = Path(path)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a byte of a non-UTF-8 file name (surrogate escape)
        raise ConfigError(
            "a path holds bytes that are not UTF-8 and cannot be saved in a TOML file",
            "rename the file to a UTF-8 name",
        ) from None
    folder = p.absolute().parent
    if not folder.is_dir():
        raise ConfigError(
            f"cannot write the config file {p}: the folder {folder} does not exist",
            "create the folder first, or choose another path",
        )
    if p.is_dir():
        raise ConfigError(f"cannot write the config file {p}: it is a folder")
    if os.path.lexists(p) and not overwrite:  # a dangling or looping link is there too
        raise ConfigError(
            f"config file {p} already exists and is kept",
            "add --overwrite to replace it, or choose another name",
        )
    try:
        write_atomically(p, data)  # after the check above: an existing file is replaced
    except OSError as e:
        raise WriteFailed(f"cannot write the config file {p}: {e.strerror or e}") from None


def split_pair(value: str) -> tuple[str, str] | None:
    """``"a.jpg=b.jpg"`` -> ``("a.jpg", "b.jpg")``; None when it is not two non-blank paths."""
    left, sep, right = value.partition("=")
    return (left.strip(), right.strip()) if sep and left.strip() and right.strip() else None


def _rebase(value: str, base: Path) -> str:
    """``value`` as an absolute path, a relative one taken from ``base`` (a blank value is
    left as it is: it names no file)."""
    if not value.strip() or value == "-":  # "-": standard output (--stats-json -)
        return value
    expanded = os.path.expanduser(value)
    return expanded if os.path.isabs(expanded) else os.path.join(base, expanded)


#: config fields naming files LiveCam writes: a relative one in a config file stays in
#: the file's folder (no ``..``), so a shared config cannot write anywhere else
OUTPUT_FIELDS = ("output.sinks", "run.stats_json")


def check_output_paths(cfg: Any, file: Path) -> None:
    """ConfigError when a relative output path of config file ``file`` climbs out of its
    folder (``../../.bashrc``)."""
    for name in OUTPUT_FIELDS:
        section, _, key = name.partition(".")
        part = getattr(cfg, section)
        info = setting_of(next(f for f in fields(part) if f.name == key))
        value = getattr(part, key)
        for v in value if isinstance(value, tuple) else (value,):
            path = info.path(v) if v is not None and info.path is not None else None
            if path is None or os.path.isabs(os.path.expanduser(path)):
                continue
            if ".." in Path(path).parts:
                raise ConfigError(
                    f"{file}: config field '{name}' {cut(path)!r} climbs out of the config "
                    "file's folder (..)",
                    "give an absolute path, or one inside the config file's folder",
                )


def with_paths_from(cfg: T, base: Path) -> T:
    """A copy of the config tree ``cfg`` whose relative paths (the fields whose Setting
    has ``path``) are taken from ``base``."""
    changes: dict[str, Any] = {}
    for f in fields(cfg):  # type: ignore[arg-type]
        value = getattr(cfg, f.name)
        if is_dataclass(value):
            rebased = with_paths_from(value, base)
            if rebased is not value:
                changes[f.name] = rebased
            continue
        info = setting_of(f)
        if info.path is None or value is None:
            continue
        values = value if isinstance(value, tuple) else (value,)
        if info.pairs:
            pairs = [split_pair(v) for v in values]
            new = tuple(
                f"{_rebase(p[0], base)}={_rebase(p[1], base)}" if p else v
                for v, p in zip(values, pairs, strict=True)
            )
        else:
            new = tuple(_rebase(v, base) if info.path(v) is not None else v for v in values)
        if new != values:
            changes[f.name] = new if isinstance(value, tuple) else new[0]
    return replace(cfg, **changes) if changes else cfg  # type: ignore[type-var]
