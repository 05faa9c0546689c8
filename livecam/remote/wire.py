"""The contract between a LiveCam client and a swap server, in Triton's terms.

One model, ``livecam_swapper``: input ``crop`` (uint8, batch x S x S x 3, BGR, the face
aligned to the swapper's template at its crop size S) and ``latent`` (float32, batch x 512,
the swapper's source vector, computed once per source face on the client); output
``swapped`` (uint8, batch x S x S x 3, BGR). The uint8-to-float normalisation happens on
the server (in ``livecam serve``'s swapper part, or folded into the exported ONNX graph),
so only bytes travel. ``livecam serve`` also serves ``livecam_info``: no input that
matters, one JSON string saying which model, provider and GPU the swap really runs on.

When the preset has an enhancer, ``livecam serve`` serves it too as ``livecam_enhancer``:
input ``face`` (uint8, batch x E x E x 3, BGR: the swapped face pasted back, aligned to the
enhancer's FFHQ template at its size E), output ``enhanced`` (uint8, same shape); the
normalisation and the fidelity weight are the server's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

MODEL = "livecam_swapper"
INFO_MODEL = "livecam_info"
CROP = "crop"
LATENT = "latent"
SWAPPED = "swapped"
INFO_IN = "ask"
INFO_OUT = "info"
ENHANCER_MODEL = "livecam_enhancer"
FACE = "face"
ENHANCED = "enhanced"
LATENT_DIM = 512
#: Triton's restricted-protocol header key (gRPC sends it as triton-grpc-protocol-<key>)
TOKEN_KEY = "triton-access" + "-token"
#: Triton's gzip levels for the swapped crops it sends back (``livecam serve
#: --response-compression``, Triton's ``--grpc-infer-response-compression-level``)
RESPONSE_COMPRESSION = ("none", "low", "medium", "high")
#: endpoints a token protects; health stays open so probes and load balancers work
RESTRICTED = ("inference", "metadata", "model-config", "statistics", "model-repository")


def token_headers(token: str | None) -> dict[str, str] | None:
    """The gRPC metadata carrying ``token`` (None: no token)."""
    return {f"triton-grpc-protocol-{TOKEN_KEY}": token} if token else None


@dataclass(frozen=True)
class ServerInfo:
    """What the server says about itself: the swapper (model id, crop size, latent mode),
    the compute providers it asked for and really uses, and its GPU (empty: none)."""

    model_id: str
    crop_size: int
    latent: str
    providers_used: tuple[str, ...]
    gpu: str
    enhancer: str = ""  # the enhancer's model id (empty: none served)
    enhancer_size: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServerInfo:
        data = json.loads(text)
        return cls(
            model_id=str(data["model_id"]),
            crop_size=int(data["crop_size"]),
            latent=str(data["latent"]),
            providers_used=tuple(str(p) for p in data["providers_used"]),
            gpu=str(data["gpu"]),
            enhancer=str(data.get("enhancer", "")),
            enhancer_size=int(data.get("enhancer_size", 0)),
        )

    def where(self) -> str:
        """``cuda on NVIDIA H200`` / ``cpu``."""
        used = "+".join(self.providers_used) or "?"
        return f"{used} on {self.gpu}" if self.gpu else used
