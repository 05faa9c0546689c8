"""What a file's provenance says: the swap's parts (``SwapDetails``, ``ModelRef``), the
file's counts (``FileFacts``), the C2PA manifest definition (``manifest_definition``) and
the container tag of a format without C2PA (``tag_text``), and what each output format
carries (``CARRIES``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from livecam import __version__
from livecam.errors import LivecamError

IPTC = "http://cv.iptc.org/newscodes/digitalsourcetype/"
#: the IPTC digital source type of a face-swapped frame: a composite with trained
#: algorithmic media (a real picture with parts made by a trained model)
AI_SOURCE_TYPE = IPTC + "compositeWithTrainedAlgorithmicMedia"
#: IPTC source types that say "made or changed by an AI model" (any of them is an AI action)
AI_SOURCE_TYPES = frozenset(
    IPTC + name
    for name in (
        "compositeWithTrainedAlgorithmicMedia",
        "trainedAlgorithmicMedia",
        "compositeSynthetic",
    )
)
AI_ACTION = "c2pa.edited"
#: the MIME type of every suffix that carries a C2PA manifest
C2PA_TYPES = {
    ".mp4": "video/mp4",
    ".mov": "video/quicktime",
    ".avi": "video/x-msvideo",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}
#: suffixes that get the plain container tag instead (PyAV container metadata)
TAG_SUFFIXES = (".mkv",)
#: the container tag's name (Matroska keeps it as a tag of the segment)
TAG_KEY = "LIVECAM_PROVENANCE"
#: what each output format carries, as the README says it
CARRIES = {
    **{s: "signed C2PA manifest" for s in C2PA_TYPES},
    ".mkv": "unsigned container tag",
    ".bmp": "nothing (the invisible watermark only)",
}


class ProvenanceError(LivecamError):
    """A file could not be signed or read."""


@dataclass(frozen=True)
class ModelRef:
    """One part of the swap: its ``role`` (detector, swapper, ...), its ``name`` (a model
    of the manifest, a part without weights such as ``classic-mesh``, or a file the user
    gave), the weights' ``file`` and their ``sha256`` ("" when the part has no weights or
    the hash is unknown)."""

    role: str
    name: str
    file: str = ""
    sha256: str = ""

    def as_dict(self) -> dict[str, str]:
        found = {"role": self.role, "name": self.name, "file": self.file, "sha256": self.sha256}
        return {k: v for k, v in found.items() if v}


@dataclass(frozen=True)
class SwapDetails:
    """What made the swapped frames: the preset (None: no swap stage) and its parts;
    ``source_type``: the IPTC digital source type of the input (None: a file, unknown)."""

    preset: str | None
    models: tuple[ModelRef, ...] = ()
    source_type: str | None = None


@dataclass(frozen=True)
class FileFacts:
    """What one finished file holds: its ``title`` (file name), how many ``frames`` and
    how many of them the swap changed (``frames_swapped``)."""

    title: str
    frames: int
    frames_swapped: int


def manifest_definition(
    details: SwapDetails, facts: FileFacts, mark_session: int | None = None
) -> dict[str, Any] | None:
    """The C2PA manifest of a file (see the module docstring); None when there is
    nothing LiveCam may state (no swapped frame and an input of unknown origin).
    ``mark_session``: the invisible mark's session id in these frames (None: unmarked)."""
    agent = {"name": "LiveCam", "version": __version__}
    if facts.frames_swapped > 0:
        actions: list[dict[str, Any]] = [
            {"action": "c2pa.created", "digitalSourceType": AI_SOURCE_TYPE, "softwareAgent": agent},
            {
                "action": AI_ACTION,
                "digitalSourceType": AI_SOURCE_TYPE,
                "softwareAgent": agent,
                "description": "faces replaced by an AI face-swap model (LiveCam)",
                "parameters": {
                    "preset": details.preset,
                    "models": [m.as_dict() for m in details.models],
                    "frames": facts.frames,
                    "frames_swapped": facts.frames_swapped,
                    "watermark": _mark_text(mark_session),
                },
            },
        ]
    elif details.source_type is not None:
        actions = [
            {
                "action": "c2pa.created",
                "digitalSourceType": details.source_type,
                "softwareAgent": agent,
                "description": "recorded by LiveCam; no frame was changed by the face swap",
            }
        ]
    else:
        return None
    return {
        "claim_generator_info": [agent],
        "title": facts.title,
        "assertions": [{"label": "c2pa.actions.v2", "data": {"actions": actions}}],
    }


def _mark_text(session: int | None) -> str:
    return "none" if session is None else f"LiveCam invisible mark, session {session:08x}"


def tag_text(details: SwapDetails, facts: FileFacts, mark_session: int | None = None) -> str:
    """The container tag of a format without C2PA: the same statement as the manifest,
    as one line of JSON."""
    statement: dict[str, Any] = {
        "generator": f"LiveCam {__version__}",
        "frames": facts.frames,
        "frames_swapped": facts.frames_swapped,
        "signed": False,
    }
    if facts.frames_swapped > 0:
        statement |= {
            "action": AI_ACTION,
            "digitalSourceType": AI_SOURCE_TYPE,
            "preset": details.preset,
            "models": [m.as_dict() for m in details.models],
            "watermark": _mark_text(mark_session),
        }
    return json.dumps(statement, separators=(",", ":"))
