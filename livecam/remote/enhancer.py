"""``RemoteEnhancer``: an ``Enhancer`` part whose model call runs on the same Triton server
as the remote swap (``livecam serve`` serves the preset's enhancer as ``livecam_enhancer``).

It keeps everything of the local enhancer but the model call: the same FFHQ crops of the
pasted faces, the same every-Nth-frame plan, mask and blend (``FaceEnhancer.enhance_with``).
The crops go through an ``Offload`` with the remote swap's rules (newest answer per face
wins, the local enhancer runs on a face without a fresh answer, "REMOTE LOST, local
enhance: <reason> (fix: ...)" when the server is slow or gone); the remote swapper's
monitor checks the server for it and switches back when it answers again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from livecam.config.remote import RemoteConfig
from livecam.face.enhance import FaceEnhancer
from livecam.remote import wire
from livecam.remote.link import RemoteLink
from livecam.remote.offload import Offload
from livecam.remote.swapper import face_keys
from livecam.runtime.providers import Providers
from livecam.types import FaceWork, Frame, FrameContext

LOST_ENHANCE = "REMOTE LOST, local enhance"


class RemoteEnhancer:
    """``local``'s enhancement with the model call on the server behind ``link``
    (``settings``: ``[remote]``). ``close`` closes ``local``; the link is the swapper's."""

    def __init__(self, local: FaceEnhancer, link: RemoteLink, settings: RemoteConfig) -> None:
        self.local = local
        self.link = link
        self.model_id = f"{local.model_id}@{link.address}"
        # the providers of this machine's part (the fallback); where the server's runs is
        # in the figures (``RemoteStats.server``), as the server reports it
        self.providers: Providers = local.providers
        self.offload = Offload(
            link,
            settings,
            send=lambda inputs, answer: link.enhance(inputs[0], answer),
            check=self._check,
            lost_prefix=LOST_ENHANCE,
            back=lambda info: f"remote enhancer on {link.address} ({info.enhancer})",
        )

    def _check(self, timeout_s: float) -> wire.ServerInfo:
        return self.link.check_enhancer(self.local.input_size, timeout_s=timeout_s)

    def warmup(self) -> None:
        """Warm the local enhancer (the fallback) and check the server once."""
        self.local.warmup()
        self.offload.check_server()

    def close(self) -> None:
        self.offload.cancel()
        self.local.close()

    @property
    def lost(self) -> str | None:
        """Why the local enhancer runs (None: the server's does)."""
        return self.offload.lost

    def enhance(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        return self.local.enhance_with(frames, faces, self._restore)

    def _restore(self, crops: Sequence[Frame], works: Sequence[FaceWork]) -> list[Frame]:
        """The server's newest enhanced crop per face, the local model's for the rest."""
        if not crops:
            return []
        batch = np.stack(crops).astype(np.uint8)
        n_frames = len({w.frame_index for w in works})
        outputs = self.offload.outputs((batch,), face_keys(works), n_frames)
        missing = [i for i, out in enumerate(outputs) if out is None]
        if missing:
            local = self.local.restore([crops[i] for i in missing])
            for i, out in zip(missing, local, strict=True):
                outputs[i] = out
        self.offload.count(len(crops) - len(missing), len(missing))
        return [np.ascontiguousarray(out) for out in outputs if out is not None]
