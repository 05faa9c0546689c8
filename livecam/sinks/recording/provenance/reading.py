"""Reading a file's provenance back (``read_provenance`` -> ``ProvenanceReport``): its C2PA
manifest, checked, or LiveCam's container tag; for ``livecam verify``."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def read_provenance(path: str | os.PathLike[str]) -> ProvenanceReport:
    """The provenance ``path`` carries (see ``ProvenanceReport``). A file with damaged or
    unreadable provenance data is reported (``present`` False or ``signature_valid``
    False, with the reason in ``detail``), never raised; ProvenanceError only when the
    file itself cannot be opened."""
    file = Path(path)
    try:
        with file.open("rb"):
            pass
    except OSError as e:
        raise ProvenanceError(f"cannot read {file}: {e.strerror or e}") from e
    if file.suffix.lower() in TAG_SUFFIXES:
        return _read_tag(file)
    return _read_c2pa(file)


def _read_c2pa(file: Path) -> ProvenanceReport:
    mime = C2PA_TYPES.get(file.suffix.lower())
    try:
        with file.open("rb") as stream:
            reader = c2pa.Reader.try_create(mime, stream) if mime else c2pa.Reader(stream)
            if reader is None:
                return ProvenanceReport(False, False, None, detail="no C2PA manifest")
            with reader:
                store = json.loads(reader.json())
    except c2pa.C2paError.NotSupported:
        return ProvenanceReport(
            False, False, None, detail="no C2PA manifest (a format c2pa does not read)"
        )
    except Exception as e:
        why = one_line(str(e))
        return ProvenanceReport(False, False, None, detail=f"no readable C2PA manifest ({why})")
    return _report(store)


def _report(store: dict[str, Any]) -> ProvenanceReport:
    active = store.get("manifests", {}).get(store.get("active_manifest", ""), {})
    results = store.get("validation_results", {}).get("activeManifest", {})
    failures = tuple(
        f["code"] for f in results.get("failure", []) if f.get("code") not in UNTRUSTED_CODES
    )
    signed = any(s.get("code") == "claimSignature.validated" for s in results.get("success", []))
    info = active.get("signature_info", {})
    signer = ", ".join(str(info[k]) for k in ("common_name", "issuer") if info.get(k))
    ai_action: str | None = None
    params: dict[str, Any] = {}
    for assertion in active.get("assertions", []):
        if not str(assertion.get("label", "")).startswith("c2pa.actions"):
            continue
        for action in assertion.get("data", {}).get("actions", []):
            source_type = action.get("digitalSourceType", "")
            if source_type in AI_SOURCE_TYPES and (ai_action is None or action.get("parameters")):
                ai_action = f"{action.get('action')} ({source_type.removeprefix(IPTC)})"
                params = action.get("parameters") or {}
    trusted = store.get("validation_state") == "Trusted"
    valid = signed and not failures
    if valid:
        trust = "a trusted signer" if trusted else "a self-signed key not in any trust list"
        detail = f"signed by {signer or 'an unnamed signer'} ({trust})"
    else:
        detail = "signature or content check FAILED: " + (", ".join(failures) or "not validated")
    return ProvenanceReport(
        True,
        valid,
        ai_action,
        tuple(m for m in params.get("models", []) if isinstance(m, dict)),
        detail,
        "c2pa",
        trusted,
        signer,
        params.get("preset"),
        failures,
        str(params.get("watermark", "")),
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
    try:
        statement = json.loads(text)
        assert isinstance(statement, dict)
    except (ValueError, AssertionError):
        return ProvenanceReport(True, False, None, detail=f"a damaged {TAG_KEY} tag", kind="tag")
    action = statement.get("action")
    source_type = str(statement.get("digitalSourceType", ""))
    ai = f"{action} ({source_type.removeprefix(IPTC)})" if source_type in AI_SOURCE_TYPES else None
    models = tuple(m for m in statement.get("models", []) if isinstance(m, dict))
    return ProvenanceReport(
        True,
        False,
        ai,
        models,
        f"an unsigned {TAG_KEY} tag ({statement.get('generator', '?')}): anyone can write "
        "or remove it",
        "tag",
        preset=statement.get("preset"),
        watermark=str(statement.get("watermark", "")),
    )
