"""The user's C2PA signing key (``user_signing_key``): an ES256 (P-256) key and a
two-certificate chain (a self-signed "LiveCam user root" that issued the signing
certificate), made once per user and kept in the user data folder, readable by the user
only (0600, folder 0700); made again when its certificate has expired or the file is
damaged (kept aside); one that cannot be read is never replaced."""

from __future__ import annotations

import datetime
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from livecam.sinks.recording.provenance.manifest import ProvenanceError
from livecam.userfiles import write_private

log = logging.getLogger(__name__)

KEY_FILE = "c2pa-signer.pem"
KEY_DAYS = 3650


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
    except (FileNotFoundError, NotADirectoryError):  # none yet (a file where a folder goes
        # is said when the new key cannot be written there)
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
            f"move away the file that stands in the path of {path.parent}"
            if isinstance(e, NotADirectoryError | FileExistsError)
            else f"free some room or make {path.parent} writable",
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
