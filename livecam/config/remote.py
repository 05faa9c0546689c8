"""The ``[remote]`` section: swap on another machine's GPU (``livecam run --remote``), and
the server's address (``grpc://HOST:PORT``, ``grpcs://`` for TLS) parsed once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from livecam.config.setting import setting
from livecam.config.validation import Validated
from livecam.errors import ConfigError

Compression = Literal["none", "gzip", "deflate"]
IN_FLIGHT_RANGE = (1, 16)

DEFAULT_PORT = 8001  # Triton's gRPC port
SCHEMES = ("grpc", "grpcs")


@dataclass(frozen=True)
class ServerAddress:
    """A Triton gRPC endpoint: ``host``, ``port`` and whether the URL asked for TLS."""

    host: str
    port: int
    tls: bool = False

    @property
    def target(self) -> str:
        """``host:port`` as gRPC wants it (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{'grpcs' if self.tls else 'grpc'}://{self.target}"

    @property
    def loopback(self) -> bool:
        return self.host in ("localhost", "::1") or self.host.startswith("127.")


def parse_address(url: str) -> ServerAddress:
    """``grpc://HOST[:PORT]`` or ``grpcs://HOST[:PORT]`` (port 8001 by default); anything
    else is one ConfigError naming the URL and the form it must have."""
    hint = "write the server as grpc://HOST:PORT, e.g. grpc://192.168.1.20:8001"
    text = url.strip()
    try:
        parts = urlsplit(text if "://" in text else f"grpc://{text}")
        port = parts.port
    except ValueError as e:
        raise ConfigError(f"the remote server URL {url!r} is malformed ({e})", hint) from None
    if parts.scheme not in SCHEMES:
        raise ConfigError(
            f"the remote server URL {url!r} has scheme {parts.scheme!r}, not grpc or grpcs",
            hint,
        )
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.username:
        raise ConfigError(f"the remote server URL {url!r} is malformed", hint)
    return ServerAddress(parts.hostname, port or DEFAULT_PORT, parts.scheme == "grpcs")


@dataclass(frozen=True)
class RemoteConfig(Validated):
    """Where the swapper's model call runs: this machine (``url`` unset) or a Triton server
    (``livecam serve``, or Triton's container with an exported repository). Only aligned
    face crops and the source face's latent leave this machine."""

    SECTION: ClassVar[str] = "remote"
    url: str | None = setting(
        None,
        option="--remote",
        metavar="URL",
        help="swap on a Triton server: grpc://HOST:PORT (grpcs:// for TLS); the local swap "
        "takes over while it is slow or gone",
    )
    token: str | None = setting(
        None,
        option="--remote-token",
        metavar="SECRET",
        help="the server's access token (`livecam serve --token`; default: $LIVECAM_REMOTE_TOKEN)",
    )
    ca_cert: str | None = setting(
        None,
        path=True,
        option="--remote-ca",
        metavar="PEM",
        help="root certificate of a server with a self-signed TLS certificate (turns TLS on)",
    )
    in_flight: int = setting(
        3,
        option="--remote-in-flight",
        metavar="N",
        range=IN_FLIGHT_RANGE,
        help="requests on their way at once (default {default}); the newest crop wins",
    )
    timeout_ms: int = setting(
        300,
        option="--remote-timeout-ms",
        metavar="MS",
        range=(50, 5000),
        help="a request unanswered this long means the server is slow or gone: the local "
        "swap takes over (default {default})",
    )
    wait_ms: int = setting(
        20,
        option="--remote-wait-ms",
        metavar="MS",
        range=(0, 1000),
        help="how long a frame waits for its own swapped faces while the server usually "
        "answers that fast; else it shows the newest answer (default {default})",
    )
    compression: Compression = setting(
        "gzip",
        option="--remote-compression",
        help="gRPC compression of the crops sent (default {default}: 128 px crops at 30 fps "
        "take 9 Mbit/s up instead of 12)",
    )

    def _check(self) -> None:
        if self.ca_cert is not None and not Path(self.ca_cert).is_file():
            raise ConfigError(
                f"config field 'remote.ca_cert': no such certificate file {self.ca_cert}",
                "give the server's root certificate (a PEM file) to --remote-ca",
                field="remote.ca_cert",
                value=self.ca_cert,
            )
        if self.url is None:
            return
        try:
            parse_address(self.url)
        except ConfigError as e:
            raise ConfigError(e.message, e.hint, field="remote.url", value=self.url) from None
