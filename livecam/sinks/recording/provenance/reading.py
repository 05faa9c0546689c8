"""Reading a file's provenance back (``read_provenance`` -> ``ProvenanceReport``): its C2PA
manifest, checked, or LiveCam's container tag; for ``livecam verify``."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import av
import c2pa

from livecam.errors import one_line
from livecam.sinks.recording.provenance.manifest import (
    AI_SOURCE_TYPES,
    C2PA_TYPES,
    IPTC,
    TAG_KEY,
    TAG_SUFFIXES,
    ProvenanceError,
)

log = logging.getLogger(__name__)

#: validation codes that a self-signed chain always gets: no trust list knows our root
UNTRUSTED_CODES = frozenset({"signingCredential.untrusted"})


@dataclass(frozen=True)
class ProvenanceReport:
    """What a file says about itself. ``present``: a C2PA manifest or LiveCam tag was
    found; ``signature_valid``: the manifest's signature and hashes check out (the file is
    as signed; a tag is never signed: False); ``trusted``: its signer is in c2pa's trust
    list (never for LiveCam's self-signed key); ``ai_action``: the action that declares
    an AI edit with its digital source type (None: none declared); ``models``: the models
    it names; ``kind``: ``c2pa``, ``tag`` or ``none``; ``detail``: one line saying more
    (the signer, the failed checks, or why nothing was read); ``watermark``: the invisible
    mark it says the frames carry ("LiveCam invisible mark, session 1a2b3c4d", or "")."""

    present: bool
    signature_valid: bool
    ai_action: str | None
    models: tuple[dict[str, str], ...] = ()
    detail: str = ""
    kind: str = "none"
    trusted: bool = False
    signer: str = ""
    preset: str | None = None
    failures: tuple[str, ...] = field(default_factory=tuple)
    watermark: str = ""
    #: the manifest's own signature checks out, whatever its content hashes say (a file
    #: changed after signing: signature valid, hash mismatch)
    signature_checked: bool = False


def read_provenance(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> ProvenanceReport:
    """The provenance ``path`` carries (see ``ProvenanceReport``). A file with damaged or
    unreadable provenance data is reported (``present`` False or ``signature_valid``
    False, with the reason in ``detail``), never raised; ProvenanceError only when the
    file itself cannot be opened. ``progress(bytes read so far)`` follows the C2PA check,
    which hashes the whole file (minutes for 20 GB)."""
    file = Path(path)
    try:
        with file.open("rb"):
            pass
    except OSError as e:
        raise ProvenanceError(f"cannot read {file}: {e.strerror or e}") from e
    if file.suffix.lower() in TAG_SUFFIXES:
        return _read_tag(file)
    return _read_c2pa(file, progress or (lambda _done: None))


class _CountedReads:
    """A file opened for reading, as c2pa reads it (read, seek, tell; write and flush
    refused or idle), calling ``progress`` with the bytes read so far after each read."""

    def __init__(self, file: BinaryIO, progress: Callable[[int], None]) -> None:
        self._file = file
        self._progress = progress
        self._done = 0

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        self._done += len(data)
        self._progress(self._done)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def write(self, _data: bytes) -> int:
        raise OSError("the file is read, never written, by verify")

    def flush(self) -> None:
        return None


def _read_c2pa(file: Path, progress: Callable[[int], None]) -> ProvenanceReport:
    mime = C2PA_TYPES.get(file.suffix.lower())
    try:
        with file.open("rb") as opened:
            stream = _CountedReads(opened, progress)
            reader = c2pa.Reader.try_create(mime, stream) if mime else c2pa.Reader(stream)
            if reader is None:
                return ProvenanceReport(False, False, None, detail="no C2PA manifest")
            with reader:
                text = reader.json()
    except c2pa.C2paError.NotSupported:
        return ProvenanceReport(
            False, False, None, detail="no C2PA manifest (a format c2pa does not read)"
        )
    except Exception as e:
        why = one_line(str(e))
        return ProvenanceReport(False, False, None, detail=f"no readable C2PA manifest ({why})")
    store = _untrusted_json(text)
    if not isinstance(store, dict):
        return ProvenanceReport(True, False, None, detail="a damaged C2PA manifest", kind="c2pa")
    return _report(store)


# Everything a file says about itself is untrusted: anyone can write a tag, and anyone can
# sign a manifest with a key of their own. Each field is read for the type it should have;
# any other type, nesting or size is named as damaged, never raised.

#: the longest text kept of one field, and the most models named
_TEXT_LIMIT = 300
_MODELS_LIMIT = 64


def _untrusted_json(text: object) -> object:
    """``text`` parsed as JSON, or None when it is not JSON (or nested too deeply)."""
    if not isinstance(text, str | bytes):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _at(data: object, *keys: str) -> object:
    """``data[key][key]...`` of untrusted JSON; None where a level is not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _items(value: object) -> list[object]:
    return value if isinstance(value, list) else []


class _Fields:
    """Reads typed fields of untrusted JSON, noting the names of the damaged ones."""

    def __init__(self) -> None:
        self.damaged: list[str] = []

    def text(self, value: object, name: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            self.damaged.append(name)
            return ""
        return value if len(value) <= _TEXT_LIMIT else value[:_TEXT_LIMIT] + "..."

    def models(self, value: object) -> tuple[dict[str, str], ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or len(value) > _MODELS_LIMIT:
            self.damaged.append("models")
            return ()
        found = []
        for model in value:
            if not isinstance(model, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in model.items()
            ):
                self.damaged.append("models")
                continue
            found.append({k: self.text(v, "models") for k, v in model.items()})
        return tuple(found)

    def note(self, detail: str) -> str:
        """``detail`` with the damaged fields named."""
        if not self.damaged:
            return detail
        return f"{detail}; DAMAGED fields: {', '.join(dict.fromkeys(self.damaged))}"


def _report(store: dict[str, Any]) -> ProvenanceReport:
    fields = _Fields()
    active = _at(store, "manifests", fields.text(_at(store, "active_manifest"), "active"))
    results = _at(store, "validation_results", "activeManifest")
    codes = [fields.text(_at(f, "code"), "failure") for f in _items(_at(results, "failure"))]
    failures = tuple(c or "an unnamed failure" for c in codes if c not in UNTRUSTED_CODES)
    signed = any(
        _at(s, "code") == "claimSignature.validated" for s in _items(_at(results, "success"))
    )
    signer = ", ".join(
        t
        for k in ("common_name", "issuer")
        if (t := fields.text(_at(active, "signature_info", k), "signature_info"))
    )
    ai_action: str | None = None
    params: object = None
    for assertion in _items(_at(active, "assertions")):
        if not fields.text(_at(assertion, "label"), "label").startswith("c2pa.actions"):
            continue
        for action in _items(_at(assertion, "data", "actions")):
            source_type = fields.text(_at(action, "digitalSourceType"), "digitalSourceType")
            parameters = _at(action, "parameters")
            if source_type in AI_SOURCE_TYPES and (ai_action is None or parameters):
                name = fields.text(_at(action, "action"), "action") or "?"
                ai_action = f"{name} ({source_type.removeprefix(IPTC)})"
                params = parameters
    if params is not None and not isinstance(params, dict):
        fields.damaged.append("parameters")
    trusted = store.get("validation_state") == "Trusted"
    valid = signed and not failures
    if valid:
        trust = "a trusted signer" if trusted else "a self-signed key not in any trust list"
        detail = f"signed by {signer or 'an unnamed signer'} ({trust})"
    elif signed:
        detail = (
            "the content does NOT match the signed hashes (changed after signing): FAILED "
            + ", ".join(failures)
        )
    else:
        detail = "signature check FAILED: " + (", ".join(failures) or "not validated")
    models = fields.models(_at(params, "models"))
    preset = fields.text(_at(params, "preset"), "preset") or None
    watermark = fields.text(_at(params, "watermark"), "watermark")
    return ProvenanceReport(
        True,
        valid,
        ai_action,
        models,
        fields.note(detail),
        "c2pa",
        trusted,
        signer,
        preset,
        failures,
        watermark,
        signed,
    )


def _read_tag(file: Path) -> ProvenanceReport:
    try:
        with av.open(str(file)) as container:
            text = dict(container.metadata).get(TAG_KEY)
    except Exception as e:
        why = one_line(str(e))
        return ProvenanceReport(False, False, None, detail=f"no readable container tag ({why})")
    if text is None:
        return ProvenanceReport(False, False, None, detail=f"no {TAG_KEY} tag")
    statement = _untrusted_json(text)
    if not isinstance(statement, dict):
        return ProvenanceReport(True, False, None, detail=f"a damaged {TAG_KEY} tag", kind="tag")
    fields = _Fields()
    action = fields.text(statement.get("action"), "action") or "?"
    source_type = fields.text(statement.get("digitalSourceType"), "digitalSourceType")
    ai = f"{action} ({source_type.removeprefix(IPTC)})" if source_type in AI_SOURCE_TYPES else None
    models = fields.models(statement.get("models"))
    generator = fields.text(statement.get("generator"), "generator") or "?"
    preset = fields.text(statement.get("preset"), "preset") or None
    watermark = fields.text(statement.get("watermark"), "watermark")
    return ProvenanceReport(
        True,
        False,
        ai,
        models,
        fields.note(f"an unsigned {TAG_KEY} tag ({generator}): anyone can write or remove it"),
        "tag",
        preset=preset,
        watermark=watermark,
    )
