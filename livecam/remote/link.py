"""The client's connection to a swap server: NVIDIA's ``tritonclient`` over gRPC.

``RemoteLink`` sends batches of aligned crops asynchronously (``send``: the answer comes to
a callback on gRPC's thread), checks a server (``check``: reachable, token, the swapper and
its contract) and reads its statistics (``batch_counts``). Every failure becomes a
``RemoteError`` with one line naming the cause and the fix (``explain``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from livecam.config.remote import Compression, ServerAddress
from livecam.errors import LivecamError
from livecam.remote import wire

log = logging.getLogger(__name__)

Answer = Callable[[npt.NDArray[np.uint8] | None, "RemoteError | None"], None]


MAX_MESSAGE = 64 * 1024 * 1024
#: gRPC channel options: tritonclient's message limits, and reconnect attempts at most a
#: second apart (gRPC's default backoff grows to two minutes, far too slow to notice that
#: a restarted server is back)
CHANNEL_ARGS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class RemoteError(LivecamError):
    """The swap server cannot be used: ``message`` says why, ``hint`` how to fix it."""


def _client_module() -> Any:
    try:
        import tritonclient.grpc as grpcclient
    except ImportError as e:
        raise RemoteError(
            f"the remote swap needs NVIDIA's tritonclient ({e.name or e})",
            "install the remote extra: pip install 'livecam[remote]'",
        ) from None
    return grpcclient


def explain(error: BaseException, address: ServerAddress, timeout_s: float) -> RemoteError:
    """One line for what went wrong talking to ``address``, with its fix."""
    text = str(error)
    low = text.lower()
    status = str(getattr(error, "status", lambda: "")() or "")
    if "restricted" in low or "unauthenticated" in low or "access" in low and "token" in low:
        return RemoteError(
            f"{address} refused the token (wrong or missing)",
            "give the server's token with --remote-token (or [remote] token)",
        )
    if "deadline" in low or "DEADLINE" in status:
        return RemoteError(
            f"{address} gave no answer within {timeout_s * 1000:.0f} ms",
            "check the network and the server's load, or raise [remote] timeout_ms",
        )
    if any(w in low for w in ("dns", "name resolution", "not known", "resolving", "lookup")):
        return RemoteError(
            f"unknown host {address.host!r}",
            "check the server's name or use its IP address (grpc://IP:PORT)",
        )
    if "ssl" in low or "handshake" in low or "certificate" in low or "tls" in low:
        return RemoteError(
            f"TLS with {address} failed ({_first_line(text)})",
            "use grpcs:// with a server started with --tls-cert/--tls-key (and --remote-ca "
            "for a self-signed one), grpc:// with one without TLS",
        )
    if "connection refused" in low or "failed to connect" in low or "unavailable" in low:
        return RemoteError(
            f"nothing answers at {address} (connection refused or server gone)",
            "start `livecam serve` there, check the host, the port and the firewall, or use "
            "grpcs:// for a server with TLS",
        )
    if "unknown model" in low or "not found" in low or "not ready" in low:
        return RemoteError(
            f"{address} does not serve the {wire.MODEL} model",
            "point --remote at a `livecam serve` server or a repository from "
            "`livecam serve --export-repository`",
        )
    return RemoteError(f"{address}: {_first_line(text)}", "see `livecam doctor --remote URL`")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "unknown error"


@dataclass(frozen=True)
class BatchCounts:
    """Triton's counters for the swapper: crops inferred and model executions (their ratio
    is the mean batch size)."""

    inferences: int
    executions: int

    def mean_batch(self, since: BatchCounts | None = None) -> float | None:
        inf = self.inferences - (since.inferences if since else 0)
        exe = self.executions - (since.executions if since else 0)
        return inf / exe if exe > 0 else None


class RemoteLink:
    """One gRPC channel to a Triton server serving ``livecam_swapper``.

    ``token``: the server's access token (sent as Triton's restricted-protocol header);
    ``ca_cert``: a PEM root certificate for TLS (``address.tls`` or given: TLS on);
    ``compression``: gRPC's message compression for requests; ``timeout_s``: the deadline
    of each request."""

    def __init__(
        self,
        address: ServerAddress,
        *,
        token: str | None = None,
        ca_cert: Path | None = None,
        compression: Compression = "gzip",
        timeout_s: float = 0.3,
    ) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self.compression = None if compression == "none" else compression
        self.headers = wire.token_headers(token)
        grpcclient = _client_module()
        self._grpc = grpcclient
        tls = address.tls or ca_cert is not None
        self._client = grpcclient.InferenceServerClient(
            url=address.target,
            ssl=tls,
            root_certificates=str(ca_cert) if ca_cert is not None else None,
            channel_args=CHANNEL_ARGS,
        )

    def close(self) -> None:
        self._client.close()

    def send(
        self,
        crops: npt.NDArray[np.uint8],
        latents: npt.NDArray[np.float32],
        answer: Answer,
    ) -> int:
        """Ask for the swapped crops of ``crops`` (F, S, S, 3) with ``latents`` (F, 512);
        ``answer(swapped, None)`` or ``answer(None, RemoteError)`` is called later on
        gRPC's thread. Returns the request's payload size in bytes."""
        return self.call(wire.MODEL, {wire.CROP: crops, wire.LATENT: latents}, wire.SWAPPED, answer)

    def enhance(self, faces: npt.NDArray[np.uint8], answer: Answer) -> int:
        """Ask for the enhanced crops of ``faces`` (F, E, E, 3), like ``send``."""
        return self.call(wire.ENHANCER_MODEL, {wire.FACE: faces}, wire.ENHANCED, answer)

    def call(
        self,
        model: str,
        inputs: dict[str, npt.NDArray[Any]],
        output: str,
        answer: Answer,
    ) -> int:
        """One asynchronous request to ``model`` (uint8 and float32 ``inputs``, the first
        one's shape is the answer's): ``answer`` is called on gRPC's thread. Returns the
        payload size in bytes."""
        g = self._grpc
        tensors = []
        for name, array in inputs.items():
            kind = "UINT8" if array.dtype == np.uint8 else "FP32"
            tensor = g.InferInput(name, list(array.shape), kind)
            tensor.set_data_from_numpy(np.ascontiguousarray(array))
            tensors.append(tensor)
        shape = next(iter(inputs.values())).shape

        def done(result: Any, error: Any) -> None:
            if error is not None:
                answer(None, explain(error, self.address, self.timeout_s))
                return
            try:
                out = np.asarray(result.as_numpy(output), np.uint8)
            except Exception as e:  # a malformed answer is the server's fault, said once
                answer(
                    None,
                    RemoteError(
                        f"{self.address} answered badly: {_first_line(str(e))}",
                        "point --remote at a `livecam serve` server or an exported repository",
                    ),
                )
                return
            if out.shape != shape:
                answer(
                    None,
                    RemoteError(
                        f"{self.address} answered crops of shape {out.shape}, not {shape}",
                        "serve the same preset and models as the local one",
                    ),
                )
                return
            answer(out, None)

        try:
            self._client.async_infer(
                model,
                tensors,
                callback=done,
                outputs=[g.InferRequestedOutput(output)],
                client_timeout=self.timeout_s,
                headers=self.headers,
                compression_algorithm=self.compression,
            )
        except Exception as e:  # a closed channel or a bad request: an answer, not a raise
            answer(None, explain(e, self.address, self.timeout_s))
        return int(sum(a.nbytes for a in inputs.values()))

    def check(self, crop_size: int, timeout_s: float = 2.0) -> wire.ServerInfo:
        """Ask the server whether it is live and serves ``livecam_swapper`` with crops of
        ``crop_size`` (and the token is right), and swap one blank crop through it: its
        ``ServerInfo``, else a RemoteError."""
        try:
            if not self._client.is_server_live(headers=self.headers, client_timeout=timeout_s):
                raise RemoteError(f"{self.address} is up but not live", "restart the server")
            meta = self._client.get_model_metadata(
                wire.MODEL, headers=self.headers, client_timeout=timeout_s, as_json=True
            )
        except RemoteError:
            raise
        except Exception as e:
            raise explain(e, self.address, timeout_s) from None
        shapes = {t["name"]: [int(d) for d in t["shape"]] for t in meta.get("inputs", [])}
        want = [-1, crop_size, crop_size, 3]
        if shapes.get(wire.CROP) != want or shapes.get(wire.LATENT) != [-1, wire.LATENT_DIM]:
            raise RemoteError(
                f"{self.address} serves another swapper contract (inputs {shapes}, this "
                f"preset sends crop {want} and latent [-1, {wire.LATENT_DIM}])",
                "serve the same preset and swapper model on both machines",
            )
        info = self._info(crop_size, timeout_s)
        crops = np.zeros((1, crop_size, crop_size, 3), np.uint8)
        latents = np.full((1, wire.LATENT_DIM), wire.LATENT_DIM**-0.5, np.float32)
        self.round_trip(crops, latents, timeout_s)  # the whole path, warmed
        return info

    def check_enhancer(self, size: int, timeout_s: float = 2.0) -> wire.ServerInfo:
        """Ask the server whether it serves ``livecam_enhancer`` for faces of ``size``
        (and the token is right): its ``ServerInfo``, else a RemoteError."""
        try:
            meta = self._client.get_model_metadata(
                wire.ENHANCER_MODEL, headers=self.headers, client_timeout=timeout_s, as_json=True
            )
        except Exception as e:
            error = explain(e, self.address, timeout_s)
            if "does not serve" in error.message:
                raise RemoteError(
                    f"{self.address} serves no enhancer",
                    "start `livecam serve` with the same preset and enhancer as this machine",
                ) from None
            raise error from None
        shapes = {t["name"]: [int(d) for d in t["shape"]] for t in meta.get("inputs", [])}
        want = [-1, size, size, 3]
        if shapes.get(wire.FACE) != want:
            raise RemoteError(
                f"{self.address} serves another enhancer contract (inputs {shapes}, this "
                f"preset sends face {want})",
                "serve the same preset and enhancer on both machines",
            )
        return self._info(0, timeout_s)

    def _info(self, crop_size: int, timeout_s: float) -> wire.ServerInfo:
        """The server's own description (``livecam_info``), or a plain one for a Triton
        container serving an exported repository (which has no info model)."""
        g = self._grpc
        ask = g.InferInput(wire.INFO_IN, [1], "UINT8")
        ask.set_data_from_numpy(np.zeros(1, np.uint8))
        try:
            result = self._client.infer(
                wire.INFO_MODEL, [ask], headers=self.headers, client_timeout=timeout_s
            )
            raw = np.asarray(result.as_numpy(wire.INFO_OUT), np.uint8).tobytes()
            return wire.ServerInfo.from_json(raw.decode("utf-8"))
        except Exception as e:  # no info model: Triton's container with an exported repository
            log.debug("no server info: %s", e)
            return wire.ServerInfo("triton-repository", crop_size, "?", ("?",), "")

    def batch_counts(self, timeout_s: float = 1.0) -> BatchCounts | None:
        """Triton's inference and execution counts of the swapper (None: unreadable)."""
        try:
            stats = self._client.get_inference_statistics(
                wire.MODEL, headers=self.headers, client_timeout=timeout_s, as_json=True
            )
            model = stats["model_stats"][0]
            return BatchCounts(int(model["inference_count"]), int(model["execution_count"]))
        except Exception:  # statistics are a nicety: none when they cannot be read
            return None

    def round_trip(
        self, crops: npt.NDArray[np.uint8], latents: npt.NDArray[np.float32], timeout_s: float
    ) -> tuple[npt.NDArray[np.uint8], float]:
        """One blocking request: (swapped crops, round trip in seconds); RemoteError."""
        g = self._grpc
        crop_in = g.InferInput(wire.CROP, list(crops.shape), "UINT8")
        crop_in.set_data_from_numpy(np.ascontiguousarray(crops, np.uint8))
        latent_in = g.InferInput(wire.LATENT, list(latents.shape), "FP32")
        latent_in.set_data_from_numpy(np.ascontiguousarray(latents, np.float32))
        start = time.perf_counter()
        try:
            result = self._client.infer(
                wire.MODEL,
                [crop_in, latent_in],
                headers=self.headers,
                client_timeout=timeout_s,
                compression_algorithm=self.compression,
            )
        except Exception as e:
            raise explain(e, self.address, timeout_s) from None
        return np.asarray(result.as_numpy(wire.SWAPPED), np.uint8), time.perf_counter() - start
