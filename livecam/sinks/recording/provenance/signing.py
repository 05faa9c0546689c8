"""Signing a session's files (``Provenance``): a C2PA manifest embedded in recordings and
stills with the user's key, or the plain container tag for ``.mkv``."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import c2pa

from livecam.errors import one_line
from livecam.sinks.recording.provenance.keys import user_signing_key
from livecam.sinks.recording.provenance.manifest import (
    C2PA_TYPES,
    TAG_KEY,
    TAG_SUFFIXES,
    FileFacts,
    ProvenanceError,
    SwapDetails,
    manifest_definition,
    tag_text,
)
from livecam.sinks.recording.watched import FFmpegFile, written

log = logging.getLogger(__name__)

#: c2pa settings: no thumbnail (on a 720p still it costs about 150 ms of the output thread)
C2PA_SETTINGS = {"builder": {"thumbnail": {"enabled": False}}}


class Provenance:
    """The provenance of one session's files: what the swap is made of (``describe``,
    asked when a file is finished: after a live preset change the manifest names the
    preset and models in use at the end) and the user's key.

    The file sinks count the frames the swap changed (each frame reaches them with that
    answer: ``Sink.send``'s ``swapped``). ``mark_session``: the session id of the
    invisible mark in the swapped frames (None: the mark is off), named in the manifests.
    The key is read (made on first use) when the first file is signed.
    """

    def __init__(
        self, describe: Callable[[], SwapDetails], *, key_folder: Path | None = None
    ) -> None:
        self.describe = describe
        self.key_folder = key_folder
        self.mark_session: int | None = None
        self._signer: Any = None

    @property
    def signer(self) -> Any:
        if self._signer is None:
            key = user_signing_key(self.key_folder)
            info = c2pa.C2paSignerInfo(c2pa.C2paSigningAlg.ES256, key.chain_pem, key.key_pem, None)
            self._signer = c2pa.Signer.from_info(info)
        return self._signer

    def _builder(self, facts: FileFacts) -> Any:
        definition = manifest_definition(self.describe(), facts, self.mark_session)
        if definition is None:
            return None
        return c2pa.Builder(definition, context=c2pa.Context.from_dict(C2PA_SETTINGS))

    def sign_bytes(self, data: bytes, suffix: str, facts: FileFacts) -> bytes:
        """The image ``data`` (a ``suffix`` file) with its manifest (``data`` itself when
        the format carries none or there is nothing to state). ProvenanceError on failure."""
        mime = C2PA_TYPES.get(suffix.lower())
        if mime is None:
            return data
        try:
            builder = self._builder(facts)
            if builder is None:
                return data
            out = io.BytesIO()
            builder.sign(self.signer, mime, io.BytesIO(data), out)
            return out.getvalue()
        except Exception as e:
            raise ProvenanceError(f"cannot sign {facts.title}: {one_line(str(e))}") from e

    def finish_file(self, src: Path, dst: Path, facts: FileFacts) -> bool:
        """Write ``src`` (a finished temporary recording) to ``dst`` with its manifest or
        tag; False when its format carries neither or there is nothing to state (``dst``
        is then not written). ProvenanceError on failure (``dst`` removed); OSError when
        a file could not be read or written (a full disk: c2pa only says that a write
        failed, the error is the one the file raised)."""
        suffix = src.suffix.lower()
        try:
            if suffix in TAG_SUFFIXES:
                _remux_with_tag(src, dst, tag_text(self.describe(), facts, self.mark_session))
                return True
            if suffix not in C2PA_TYPES:
                return False
            builder = self._builder(facts)
            if builder is None:
                return False
            with src.open("rb") as source, written(dst) as dest:
                builder.sign(self.signer, C2PA_TYPES[suffix], source, dest)
            return True
        except OSError:
            dst.unlink(missing_ok=True)
            raise
        except Exception as e:
            dst.unlink(missing_ok=True)
            raise ProvenanceError(f"cannot sign {facts.title}: {one_line(str(e))}") from e


def _remux_with_tag(src: Path, dst: Path, text: str) -> None:
    """Copy every packet of ``src`` into ``dst`` (same container) with the tag set;
    OSError when ``dst`` cannot be written whole."""
    with (
        written(dst) as file,
        av.open(str(src)) as inp,
        av.open(FFmpegFile(file), "w", format="matroska") as out,
    ):
        out.metadata[TAG_KEY] = text
        streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        for packet in inp.demux():
            if packet.size == 0 or packet.stream.index not in streams:
                continue  # a demuxer's flush packet
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
