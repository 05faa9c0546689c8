"""The model manifest (``models/manifest.toml``) as typed entries, the structural check of
an ONNX file against an entry's I/O contract, and file identities for cache keys.

Finding, verifying and downloading files is ``livecam.models.store``; the HTTP transfer is
``livecam.models.download``.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import os
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from livecam.errors import ModelError
from livecam.models.download import sha256_of

log = logging.getLogger(__name__)

Task = Literal["detector", "landmarker", "recognizer", "swapper", "enhancer", "masker"]
TASKS: tuple[str, ...] = get_args(Task)
#: where a model's weights come from: ``download`` (the model folders, downloaded when
#: missing) or ``bundled`` (shipped with LiveCam in livecam/assets, the store's last folder:
#: never downloaded for a preset)
Source = Literal["download", "bundled"]
SOURCES: tuple[str, ...] = get_args(Source)
#: the checkout's ``models/`` (beside ``livecam/`` and pyproject.toml; None in an installed
#: wheel): its manifest, else the copy packaged as livecam.modeldata, is read
_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_MODELS = _ROOT / "models" if (_ROOT / "pyproject.toml").is_file() else None
MANIFEST_NAME = "manifest.toml"

Dim = int | str


@dataclass(frozen=True)
class TensorShape:
    """One input or output of the contract: its name ("" = any) and shape (an int is a
    fixed axis; a string or -1 a dynamic one)."""

    name: str
    shape: tuple[Dim, ...]

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{self.name or '?'}[{dims}]"


@dataclass(frozen=True)
class ModelEntry:
    """One model of the manifest (see the comment at the top of models/manifest.toml)."""

    name: str
    task: Task
    part: str
    file: str
    urls: tuple[str, ...]
    size: int
    sha256: str
    hash_source: str
    licence: str
    licence_url: str
    commercial: bool
    inputs: tuple[TensorShape, ...]
    outputs: tuple[TensorShape, ...]
    contract: Mapping[str, Any]
    source: Source = "download"
    facts: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def needs_acceptance(self) -> bool:
        """A licence that forbids commercial use must be accepted before use."""
        return not self.commercial

    @property
    def downloaded(self) -> bool:
        """Whether a preset that uses it needs it downloaded (``livecam models fetch``)."""
        return self.source == "download"


@functools.cache
def default_manifest() -> Mapping[str, ModelEntry]:
    """``load_manifest()`` read once per process (the entries are immutable)."""
    return load_manifest()


def names_for(task: Task, manifest: Mapping[str, ModelEntry] | None = None) -> tuple[str, ...]:
    """The models of ``task`` in manifest order (``default_manifest()`` when None): the
    choices of ``swap.neural.swapper`` and ``swap.neural.enhancer``, for example."""
    entries = default_manifest() if manifest is None else manifest
    return tuple(name for name, entry in entries.items() if entry.task == task)


def load_manifest(path: str | os.PathLike[str] | None = None) -> Mapping[str, ModelEntry]:
    """The manifest's entries by name: ``path``, else the checkout's models/manifest.toml,
    else the copy packaged with LiveCam. A malformed entry raises ModelError naming it."""
    if path is not None:
        text = Path(path).read_text(encoding="utf-8")
        where = str(path)
    elif CHECKOUT_MODELS is not None and (CHECKOUT_MODELS / MANIFEST_NAME).is_file():
        text = (CHECKOUT_MODELS / MANIFEST_NAME).read_text(encoding="utf-8")
        where = str(CHECKOUT_MODELS / MANIFEST_NAME)
    else:
        packaged = importlib.resources.files("livecam.modeldata") / MANIFEST_NAME
        text, where = packaged.read_text(encoding="utf-8"), str(packaged)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ModelError(f"model manifest {where} is not valid TOML: {e}") from e
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ModelError(f"model manifest {where} has no [models.NAME] tables")
    return MappingProxyType({name: _entry(name, fields, where) for name, fields in models.items()})


def _entry(name: str, raw: Any, where: str) -> ModelEntry:
    def bad(key: str, expected: str) -> ModelError:
        return ModelError(
            f"model manifest {where}: models.{name}.{key} must be {expected}",
            f"correct models.{name} in {where} (its keys are described at the top of the file)",
        )

    if not isinstance(raw, dict):
        raise bad("", "a table")
    strings = ("task", "part", "file", "sha256", "hash_source", "licence", "licence_url")
    for key in strings:
        if not isinstance(raw.get(key, ""), str):
            raise bad(key, "a string")
    if raw.get("task") not in TASKS:
        raise bad("task", f"one of {', '.join(TASKS)}")
    if not raw.get("file") or "/" in raw["file"] or "\\" in raw["file"]:
        raise bad("file", "a plain file name")
    urls = raw.get("urls", [])
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise bad("urls", "a list of strings")
    size = raw.get("size", 0)
    if not isinstance(size, int) or size < 0:
        raise bad("size", "a byte count (0 = unknown)")
    sha = raw.get("sha256", "").lower()
    if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise bad("sha256", '64 hex digits or "" (unknown)')
    if not isinstance(raw.get("commercial"), bool):
        raise bad("commercial", "true or false")
    contract = raw.get("contract", {})
    if not isinstance(contract, dict):
        raise bad("contract", "a table")
    facts = raw.get("facts", {})
    if not isinstance(facts, dict):
        raise bad("facts", "a table")
    source = raw.get("source", "download")
    if source not in SOURCES:
        raise bad("source", f"one of {', '.join(SOURCES)}")
    known = {*strings, "urls", "size", "commercial", "inputs", "outputs", "contract"}
    known |= {"facts", "source"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ModelError(
            f"model manifest {where}: models.{name}.{unknown[0]} is not a manifest key",
            f"use the keys listed at the top of the manifest: {', '.join(sorted(known))}",
        )
    return ModelEntry(
        name=name,
        task=raw["task"],
        part=raw.get("part", ""),
        file=raw["file"],
        urls=tuple(urls),
        size=size,
        sha256=sha,
        hash_source=raw.get("hash_source", ""),
        licence=raw.get("licence", ""),
        licence_url=raw.get("licence_url", ""),
        commercial=raw["commercial"],
        inputs=_shapes(raw.get("inputs", []), bad("inputs", "a list of {name, shape}")),
        outputs=_shapes(raw.get("outputs", []), bad("outputs", "a list of {name, shape}")),
        contract=MappingProxyType(dict(contract)),
        source=source,
        facts=MappingProxyType(dict(facts)),
    )


def _shapes(raw: Any, error: ModelError) -> tuple[TensorShape, ...]:
    if not isinstance(raw, list):
        raise error
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("shape"), list):
            raise error
        shape = item["shape"]
        if not all(isinstance(d, int | str) and not isinstance(d, bool) for d in shape):
            raise error
        out.append(TensorShape(str(item.get("name", "")), tuple(shape)))
    return tuple(out)


def contract_problems(path: str | os.PathLike[str], entry: ModelEntry) -> list[str]:
    """What in the ONNX file at ``path`` does not match ``entry``'s inputs and outputs
    (empty: it matches). A file ONNX Runtime cannot load is one problem."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # initializer-as-input notes are not our business
    try:
        session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own exception types for a bad file
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return [f"ONNX Runtime cannot load it ({first})"]
    problems = _compare("input", entry.inputs, session.get_inputs(), exact_count=True)
    return problems + _compare("output", entry.outputs, session.get_outputs(), False)


def _compare(
    kind: str, expected: tuple[TensorShape, ...], actual: Any, exact_count: bool
) -> list[str]:
    if not expected:
        return []
    have = [
        TensorShape(a.name, tuple(d if d is not None else "?" for d in a.shape)) for a in actual
    ]
    if (len(have) != len(expected)) if exact_count else (len(have) < len(expected)):
        listed = ", ".join(str(h) for h in have)
        return [f"{len(have)} {kind}s ({listed}), expected {len(expected)}"]
    problems = []
    by_name = {h.name: h for h in have}
    for i, want in enumerate(expected):
        got = by_name.get(want.name) if want.name else have[i]
        if got is None:
            problems.append(f"no {kind} named {want.name!r} (has {', '.join(by_name)})")
        elif not _shape_fits(want.shape, got.shape):
            problems.append(f"{kind} {got} does not fit {want}")
    return problems


def _shape_fits(want: tuple[Dim, ...], got: tuple[Dim, ...]) -> bool:
    """A fixed expected axis must equal a fixed actual one; dynamic axes fit anything."""
    if len(want) != len(got):
        return False
    return all(
        not (isinstance(w, int) and w > 0 and isinstance(g, int) and g > 0 and w != g)
        for w, g in zip(want, got)
    )


class FileHashes:
    """sha256 of files, remembered in memory only (never across processes: every process
    hashes each file it loads at least once) while the file's state is unchanged: path,
    inode, size, mtime and ctime. A model store keeps one (a 550 MB model takes about a
    second to hash, and a live change rebuilds its parts). ctime is in the key because an
    in-place write that restores size and mtime (``cp -p``, ``os.utime``) still moves it
    (on Windows ``st_ctime`` is the creation time: there, as for bit rot, which moves
    nothing, the next start finds it)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int, int, int], str] = {}
        self._lock = threading.Lock()

    def sha256(self, path: str | os.PathLike[str]) -> str:
        resolved = Path(path).resolve()
        stat = resolved.stat()
        key = (str(resolved), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        with self._lock:
            known = self._known.get(key)
        if known is None:
            known = sha256_of(resolved)
            with self._lock:
                self._known[key] = known
        return known

    def identity(self, path: str | os.PathLike[str]) -> str:
        """``<file stem>-<first 12 hex of its sha256>``: names a model file's content (for
        cache keys and ``model_id``); a changed file gets a new identity."""
        return f"{Path(path).stem}-{self.sha256(path)[:12]}"


def model_identity(path: str | os.PathLike[str]) -> str:
    """``<file stem>-<first 12 hex of its sha256>`` (hashed now; ``FileHashes`` caches)."""
    return FileHashes().identity(path)
