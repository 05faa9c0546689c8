"""What ``build_swap_stage`` puts in front of the preset's parts for ``[remote]``: a
``RemoteSwapper`` in front of its swapper and, when the preset has one, a
``RemoteEnhancer`` in front of its enhancer, both on one gRPC channel to the server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from livecam.config.remote import RemoteConfig, parse_address
from livecam.errors import ConfigError
from livecam.face.enhance import FaceEnhancer
from livecam.face.parts import Enhancer, Swapper
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote.enhancer import RemoteEnhancer
from livecam.remote.link import RemoteLink
from livecam.remote.swapper import RemoteSwapper

TOKEN_ENV = "LIVECAM_REMOTE_TOKEN"


class RemoteWraps:
    """``swapper`` and then ``enhancer`` wrap the preset's parts (``build_swap_stage``'s
    ``swapper_wrap`` and ``enhancer_wrap``); a ConfigError for a swapper it cannot
    offload."""

    def __init__(self, settings: RemoteConfig) -> None:
        if settings.url is None:
            raise ConfigError("no remote server set", "give --remote grpc://HOST:PORT")
        self.settings = settings
        self.address = parse_address(settings.url)
        self.token = settings.token or os.environ.get(TOKEN_ENV) or None
        self.remote_swapper: RemoteSwapper | None = None

    def swapper(self, local: Swapper[Any]) -> Swapper[Any]:
        if not isinstance(local, NeuralSwapper):
            raise ConfigError(
                "the remote swap offloads a neural swapper; this preset swaps with the "
                "classic CPU swapper",
                "use --preset standard (or quality) with --remote",
            )
        s = self.settings
        link = RemoteLink(
            self.address,
            token=self.token,
            ca_cert=Path(s.ca_cert) if s.ca_cert else None,
            compression=s.compression,
            timeout_s=s.timeout_ms / 1000,
        )
        self.remote_swapper = RemoteSwapper(local, link, s)
        return self.remote_swapper

    def enhancer(self, local: Enhancer) -> Enhancer:
        """The remote enhancer on the swapper's channel (its monitor checks it too); a
        part that is no ONNX enhancer stays local."""
        swapper = self.remote_swapper
        if swapper is None or not isinstance(local, FaceEnhancer):
            return local
        remote = RemoteEnhancer(local, swapper.link, self.settings)
        swapper.companions.append(remote.offload)
        return remote
