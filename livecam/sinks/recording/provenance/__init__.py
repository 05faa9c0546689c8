"""Signed provenance of recordings and stills: a C2PA manifest (the official c2pa-python
bindings) that says a file was made by LiveCam and, when the swap changed any of its
frames, that it was edited by an AI model (EU AI Act Art. 50(2): machine-readable marking).

What each format carries (``CARRIES``): ``.mp4``, ``.mov``, ``.avi``, ``.png`` and
``.jpg`` get a signed C2PA manifest embedded in the file; ``.mkv`` (no C2PA support in
c2pa) gets a plain container tag (``TAG_KEY``, JSON) saying the same, unsigned; ``.bmp``
carries nothing. Every swapped frame carries the invisible watermark whatever the format
(``livecam.stream.watermark``).

The manifest of a file with swapped frames has two actions: ``c2pa.created`` and
``c2pa.edited``, both with the IPTC digital source type ``compositeWithTrainedAlgorithmicMedia``
(``AI_SOURCE_TYPE``); the edit names the preset and every model of the swap (name, file
and sha256 from the model manifest or the model store; never the source photo) and counts
the frames. A file with no swapped frame gets ``c2pa.created`` only, with the source's
own digital source type (a camera's ``digitalCapture``, ``screenCapture``, the synthetic
pattern's ``algorithmicMedia``); a converted video file with no swapped frame is not
signed (its origin is not LiveCam's to state).

The signing key is LiveCam's own, made once per user (``user_signing_key``): an ES256
(P-256) key and a two-certificate chain (a self-signed "LiveCam user root" that issued the
signing certificate), kept in the user data folder with permissions 0600. It is not in
any public trust list: readers report the signature as valid (the file is as signed) but
the signer as untrusted, which is what a self-signed chain can prove.

``read_provenance`` reads either form back (``ProvenanceReport``), for ``livecam verify``.

The modules: ``keys`` (the user's signing key), ``manifest`` (what a file's provenance
says), ``signing`` (``Provenance``: signing a session's files), ``reading``.
"""

from livecam.sinks.recording.provenance.keys import KEY_FILE, SigningKey, user_signing_key
from livecam.sinks.recording.provenance.manifest import (
    AI_ACTION,
    AI_SOURCE_TYPE,
    CARRIES,
    IPTC,
    TAG_KEY,
    FileFacts,
    ModelRef,
    ProvenanceError,
    SwapDetails,
)
from livecam.sinks.recording.provenance.reading import ProvenanceReport, read_provenance
from livecam.sinks.recording.provenance.signing import Provenance

__all__ = [
    "AI_ACTION",
    "AI_SOURCE_TYPE",
    "CARRIES",
    "IPTC",
    "KEY_FILE",
    "TAG_KEY",
    "FileFacts",
    "ModelRef",
    "Provenance",
    "ProvenanceError",
    "ProvenanceReport",
    "SigningKey",
    "SwapDetails",
    "read_provenance",
    "user_signing_key",
]
