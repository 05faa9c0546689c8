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
"""

from __future__ import annotations

import datetime
import io
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import c2pa
import platformdirs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from livecam import __version__
from livecam.errors import LivecamError, one_line
from livecam.sinks.recording.watched import FFmpegFile, written
from livecam.userfiles import write_private

log = logging.getLogger(__name__)

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
#: validation codes that a self-signed chain always gets: no trust list knows our root
UNTRUSTED_CODES = frozenset({"signingCredential.untrusted"})
KEY_FILE = "c2pa-signer.pem"
KEY_DAYS = 3650
#: c2pa settings: no thumbnail (on a 720p still it costs about 150 ms of the output thread)
C2PA_SETTINGS = {"builder": {"thumbnail": {"enabled": False}}}


class ProvenanceError(LivecamError):
    """A file could not be signed or read."""


# --------------------------------------------------------------------- what was used


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


# --------------------------------------------------------------------- the signing key


@dataclass(frozen=True)
class SigningKey:
    """The user's signing key: the private key and the certificate chain (PEM, the
    signing certificate first), read from ``path``."""

    key_pem: bytes
    chain_pem: bytes
    path: Path

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificates(self.chain_pem)[0]


def signing_folder() -> Path:
    """Where the key is kept: ``signing`` in the user data folder (platformdirs)."""
    return Path(platformdirs.user_data_dir("livecam")) / "signing"


def user_signing_key(folder: Path | None = None) -> SigningKey:
    """The user's signing key, made on first use (and again when its certificate has
    expired, or the file is damaged: that file is kept aside as ``KEY.bad-STAMP``); the
    file is written atomically with mode 0600. A key that cannot be read (no permission)
    is the user's identity, never replaced: ProvenanceError, as when the key folder
    cannot be written, naming the file."""
    path = (folder or signing_folder()) / KEY_FILE
    try:
        key = _read_key(path)
        if key.certificate.not_valid_after_utc > _now() + datetime.timedelta(days=1):
            return key
        log.info("the C2PA signing certificate in %s has expired: making a new one", path)
    except FileNotFoundError:
        log.info("making LiveCam's C2PA signing key (self-signed, once per user): %s", path)
    except OSError as e:  # no permission, a folder in its place: not damage
        raise ProvenanceError(
            f"the C2PA signing key {path} cannot be read ({e.strerror or e}); it is kept",
            f"make it readable by you (chmod 600 {path}) or move it away for a new key",
        ) from e
    except ValueError as e:
        aside = path.with_name(f"{path.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            os.replace(path, aside)
        except OSError as moved:
            raise ProvenanceError(
                f"the C2PA signing key {path} is damaged ({e}) and cannot be moved aside "
                f"({moved.strerror or moved}); it is kept",
                f"move it away yourself for a new key: mv {path} {aside}",
            ) from moved
        log.warning(
            "the C2PA signing key %s is damaged (%s): kept as %s, making a new one", path, e, aside
        )
    key_pem, chain_pem = _new_key()
    try:
        write_private(path, key_pem + chain_pem)
        return _read_key(path)
    except OSError as e:
        raise ProvenanceError(
            f"the C2PA signing key cannot be written to {path.parent} ({e.strerror or e})",
            f"free some room or make {path.parent} writable",
        ) from e


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _read_key(path: Path) -> SigningKey:
    data = path.read_bytes()
    start = data.find(b"-----BEGIN CERTIFICATE-----")
    if start < 0:
        raise ValueError("no certificate in the file")
    key_pem, chain_pem = data[:start], data[start:]
    serialization.load_pem_private_key(key_pem, password=None)  # raises when damaged
    return SigningKey(key_pem, chain_pem, path)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "LiveCam user (self-signed)"),
        ]
    )


def _usage(*, sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=not sign,
        crl_sign=not sign,
        encipher_only=False,
        decipher_only=False,
    )


def _new_key() -> tuple[bytes, bytes]:
    """A new ES256 key and its chain (PEM): a self-signed root, used once to issue the
    signing certificate and then thrown away (C2PA takes no self-signed signing
    certificate, so the chain has two links)."""
    now = _now()
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=KEY_DAYS)
    root_key = ec.generate_private_key(ec.SECP256R1())
    root_name = _name("LiveCam user root")
    root = (
        x509.CertificateBuilder()
        .subject_name(root_name)
        .issuer_name(root_name)
        .public_key(root_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(sign=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()), False)
        .sign(root_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("LiveCam C2PA signer"))
        .issuer_name(root_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(sign=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), False
        )
        .sign(root_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, cert.public_bytes(pem) + root.public_bytes(pem)


# --------------------------------------------------------------------- writing


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


class Provenance:
    """The provenance of one session's files: what the swap is made of (``describe``,
    asked when a file is finished: after a live preset change the manifest names the
    preset and models in use at the end) and the user's key.

    ``frame_swapped`` says whether the frame being sent now was changed by the swap: the
    output thread sets it before each send and the file sinks (driven by that thread)
    count it. ``mark_session``: the session id of the invisible mark in the swapped
    frames (None: the mark is off), named in the manifests. The key is read (made on
    first use) when the first file is signed.
    """

    def __init__(
        self, describe: Callable[[], SwapDetails], *, key_folder: Path | None = None
    ) -> None:
        self.describe = describe
        self.key_folder = key_folder
        self.frame_swapped = False
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


# --------------------------------------------------------------------- reading


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
