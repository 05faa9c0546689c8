"""``livecam serve``: the preset's swapper on NVIDIA Triton Inference Server, through PyTriton.

PyTriton starts the ``tritonserver`` binary that its wheel bundles and runs our inference
function in this process (Triton's Python backend stub forwards each batch to it). Triton
does the rest: the gRPC endpoint, the dynamic batcher that gathers the crops of every
stream into one model call, health and readiness, Prometheus metrics, the restricted-
protocol token check and gRPC's own TLS.

The stub is a program linked against ``libpython3.X.so``; it must load the library of the
interpreter that runs LiveCam (a pyenv or python.org build keeps it in
``sys.base_prefix/lib``, which the loader does not search), so ``serve`` puts that folder on
``LD_LIBRARY_PATH`` before Triton starts and says in one line what is missing when there is
no shared libpython there.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from livecam.config.remote import ServerAddress
from livecam.errors import ConfigError, LivecamError
from livecam.face.enhance import FaceEnhancer
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote import wire
from livecam.remote.proxy_patch import use_dlpack

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 32
DEFAULT_QUEUE_DELAY_US = 2000


class ServeError(LivecamError):
    """The swap server cannot start (a missing library or package, a bad option)."""


@dataclass(frozen=True)
class ServeOptions:
    """How ``livecam serve`` listens and batches.

    ``host``/``port``: Triton's gRPC endpoint (127.0.0.1 by default; any other address needs
    ``token``). ``http_port``: Triton's HTTP endpoint, always on 127.0.0.1 (PyTriton talks to
    Triton through it). ``metrics_port``: Prometheus metrics on ``host``. ``tls_cert`` and
    ``tls_key``: PEM files for gRPC TLS. ``max_batch``, ``queue_delay_us`` and
    ``preferred_batch``: Triton's dynamic batcher. ``response_compression``: how much
    Triton compresses the swapped crops it sends back (one of ``wire.RESPONSE_COMPRESSION``)."""

    host: str = "127.0.0.1"
    port: int = 8001
    http_port: int = 8000
    metrics_port: int = 8002
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_batch: int = DEFAULT_MAX_BATCH
    queue_delay_us: int = DEFAULT_QUEUE_DELAY_US
    preferred_batch: tuple[int, ...] = ()
    response_compression: str = "low"

    def check(self) -> None:
        """One ConfigError for an unsafe or inconsistent choice."""
        if not ServerAddress(self.host, self.port).loopback and not self.token:
            raise ConfigError(
                f"listening on {self.host} lets any machine that reaches it use this GPU",
                "add --token SECRET (clients give it with --remote-token), or keep the "
                "default --host 127.0.0.1",
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError(
                "TLS needs both the certificate and its private key",
                "give --tls-cert CERT.pem and --tls-key KEY.pem together",
            )
        for path in (self.tls_cert, self.tls_key):
            if path is not None and not path.is_file():
                raise ConfigError(f"no such TLS file: {path}", "give the path of a PEM file")
        if not 1 <= self.max_batch <= 1024:
            raise ConfigError(
                f"--max-batch must be from 1 to 1024, got {self.max_batch}", "use e.g. 32"
            )
        if self.response_compression not in wire.RESPONSE_COMPRESSION:
            raise ConfigError(
                f"--response-compression must be one of {', '.join(wire.RESPONSE_COMPRESSION)}, "
                f"got {self.response_compression!r}",
                "use low (the default) or none",
            )
        bad = [b for b in self.preferred_batch if not 1 <= b <= self.max_batch]
        if bad:
            raise ConfigError(
                f"preferred batch sizes {bad} are outside 1..{self.max_batch}",
                "give sizes no larger than --max-batch",
            )


def python_library_dir() -> Path:
    """The folder holding this interpreter's shared libpython, which Triton's Python
    backend stub links against; a ServeError when there is none."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    name = f"libpython{version}.so.1.0"
    for folder in (Path(sys.base_prefix) / "lib", Path(sys.base_prefix) / "lib64"):
        if (folder / name).exists():
            return folder
    for folder in (Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib")):
        if (folder / name).exists():
            return folder
    raise ServeError(
        f"Triton's Python backend needs {name}, which this Python ({sys.base_prefix}) lacks",
        "use a Python built with --enable-shared (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared "
        f"pyenv install {version}; Debian: apt install libpython{version})",
    )


def with_library_path(env_value: str | None, folder: Path) -> str:
    """``LD_LIBRARY_PATH`` with ``folder`` first (kept once)."""
    parts = [p for p in (env_value or "").split(":") if p and p != str(folder)]
    return ":".join([str(folder), *parts])


def gpu_name() -> str:
    """The first NVIDIA GPU's name as NVML says it; empty when there is none."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, no GPU, no NVML: the swap runs on the CPU
        return ""
    return name.decode() if isinstance(name, bytes) else str(name)


def server_info(swapper: NeuralSwapper, enhancer: FaceEnhancer | None = None) -> wire.ServerInfo:
    return wire.ServerInfo(
        model_id=swapper.model_id,
        crop_size=swapper.crop_size,
        latent=swapper.latent,
        providers_used=tuple(swapper.providers.used),
        gpu=gpu_name() if any(p != "cpu" for p in swapper.providers.used) else "",
        enhancer=enhancer.model.model_id if enhancer is not None else "",
        enhancer_size=enhancer.input_size if enhancer is not None else 0,
    )


def enhance_batch(enhancer: FaceEnhancer, faces: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """The server's enhancer call: enhanced BGR crops for a batch of FFHQ-aligned crops."""
    return np.stack(enhancer.restore(list(np.ascontiguousarray(faces, np.uint8))))


def swap_batch(
    swapper: NeuralSwapper, crops: npt.NDArray[np.uint8], latents: npt.NDArray[np.float32]
) -> npt.NDArray[np.uint8]:
    """The server's model call: swapped BGR crops for a batch of aligned BGR crops."""
    return swapper.run_crops(np.ascontiguousarray(crops, np.uint8), latents.astype(np.float32))


class SwapServer:
    """Triton with the swapper bound as ``livecam_swapper`` (and ``livecam_info``), and the
    enhancer, when given, as ``livecam_enhancer``.

    ``start`` launches Triton and returns once it serves; ``stop`` ends it. Use it as a
    context manager. Needs the ``serve`` extra (nvidia-pytriton; Linux x86_64)."""

    def __init__(
        self,
        swapper: NeuralSwapper,
        options: ServeOptions,
        enhancer: FaceEnhancer | None = None,
    ) -> None:
        options.check()
        self.swapper = swapper
        self.enhancer = enhancer
        self.options = options
        self.info = server_info(swapper, enhancer)
        self._triton: Any = None

    @property
    def address(self) -> ServerAddress:
        return ServerAddress(
            self.options.host, self.options.port, self.options.tls_cert is not None
        )

    def start(self) -> None:
        try:
            from pytriton.decorators import batch
            from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
            from pytriton.triton import Triton, TritonConfig
        except ImportError as e:
            raise ServeError(
                f"`livecam serve` needs NVIDIA PyTriton ({e.name or e})",
                "install the serve extra: pip install 'livecam[serve]' (Linux x86_64)",
            ) from None
        folder = python_library_dir()
        os.environ["LD_LIBRARY_PATH"] = with_library_path(os.environ.get("LD_LIBRARY_PATH"), folder)
        o = self.options
        config = TritonConfig(
            grpc_address=o.host,
            grpc_port=o.port,
            http_address="127.0.0.1",
            http_port=o.http_port,
            metrics_address=o.host,
            metrics_port=o.metrics_port,
            allow_metrics=True,
            allow_cpu_metrics=True,
            grpc_use_ssl=o.tls_cert is not None,
            grpc_server_cert=o.tls_cert,
            grpc_server_key=o.tls_key,
            grpc_infer_response_compression_level=o.response_compression,
            exit_timeout_secs=2,
            log_verbose=0,
        )
        triton = Triton(config=config)
        if o.token:
            restrict(triton, o.token)
        swapper, size, info = self.swapper, self.swapper.crop_size, self.info.to_json()

        @batch  # type: ignore[untyped-decorator]
        def swap(**inputs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
            return {wire.SWAPPED: swap_batch(swapper, inputs[wire.CROP], inputs[wire.LATENT])}

        info_bytes = np.frombuffer(info.encode("utf-8"), np.uint8)

        def describe(requests: list[Any]) -> list[dict[str, npt.NDArray[Any]]]:
            return [{wire.INFO_OUT: info_bytes} for _ in requests]

        batcher = DynamicBatcher(
            max_queue_delay_microseconds=o.queue_delay_us,
            preferred_batch_size=list(o.preferred_batch) or None,
        )
        try:
            # Triton loads the models one by one in this order: the swapper last, so a
            # client that finds it ready finds the info and the enhancer ready too
            triton.bind(
                model_name=wire.INFO_MODEL,
                infer_func=describe,
                inputs=[Tensor(name=wire.INFO_IN, dtype=np.uint8, shape=(1,))],
                outputs=[Tensor(name=wire.INFO_OUT, dtype=np.uint8, shape=(-1,))],
                config=ModelConfig(batching=False),
            )
            if self.enhancer is not None:
                self._bind_enhancer(triton, self.enhancer, batcher)
            triton.bind(
                model_name=wire.MODEL,
                infer_func=swap,
                inputs=[
                    Tensor(name=wire.CROP, dtype=np.uint8, shape=(size, size, 3)),
                    Tensor(name=wire.LATENT, dtype=np.float32, shape=(wire.LATENT_DIM,)),
                ],
                outputs=[Tensor(name=wire.SWAPPED, dtype=np.uint8, shape=(size, size, 3))],
                config=ModelConfig(max_batch_size=o.max_batch, batcher=batcher),
                strict=True,
            )
            for model in triton._model_manager.models:
                use_dlpack(model)
            triton.run()
        except Exception as e:  # PyTriton's and Triton's own errors: one line
            triton.stop()
            raise ServeError(
                f"Triton did not start on {o.host}:{o.port}: {e}",
                "is the port in use? pick another with --port (and --http-port, --metrics-port)",
            ) from e
        self._triton = triton
        self._warm()
        log.info("serving %s on %s (%s)", self.info.model_id, self.address, self.info.where())
        if self.enhancer is not None:
            log.info("and the enhancer %s", self.info.enhancer)

    def _bind_enhancer(self, triton: Any, enhancer: FaceEnhancer, batcher: Any) -> None:
        from pytriton.decorators import batch
        from pytriton.model_config import ModelConfig, Tensor

        size = enhancer.input_size

        @batch  # type: ignore[untyped-decorator]
        def enhance(**inputs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
            return {wire.ENHANCED: enhance_batch(enhancer, inputs[wire.FACE])}

        triton.bind(
            model_name=wire.ENHANCER_MODEL,
            infer_func=enhance,
            inputs=[Tensor(name=wire.FACE, dtype=np.uint8, shape=(size, size, 3))],
            outputs=[Tensor(name=wire.ENHANCED, dtype=np.uint8, shape=(size, size, 3))],
            config=ModelConfig(max_batch_size=self.options.max_batch, batcher=batcher),
            strict=True,
        )

    def _warm(self) -> None:
        """One request through Triton to the swapper (PyTriton's own client, on Triton's
        local HTTP endpoint: no TLS or token in the way), so a client's first crop is not
        the one that pays for the first model run, and a broken path shows now."""
        from pytriton.client import ModelClient

        size = self.swapper.crop_size
        url = f"http://127.0.0.1:{self.options.http_port}"
        with ModelClient(url, wire.MODEL, init_timeout_s=60, inference_timeout_s=60) as client:
            client.infer_batch(
                **{
                    wire.CROP: np.zeros((1, size, size, 3), np.uint8),
                    wire.LATENT: np.full((1, wire.LATENT_DIM), wire.LATENT_DIM**-0.5, np.float32),
                }
            )
        if self.enhancer is not None:
            side = self.enhancer.input_size
            with ModelClient(
                url, wire.ENHANCER_MODEL, init_timeout_s=60, inference_timeout_s=60
            ) as client:
                client.infer_batch(**{wire.FACE: np.zeros((1, side, side, 3), np.uint8)})

    def stop(self) -> None:
        triton, self._triton = self._triton, None
        if triton is not None:
            triton.stop()

    def __enter__(self) -> SwapServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def restrict(triton: Any, token: str) -> None:
    """Make Triton check ``token`` on gRPC (its ``--grpc-restricted-protocol``). PyTriton
    0.5 passes that flag through but has no field for it (0.6 and later have one, and pin
    numpy below 2, which LiveCam cannot use), so it is set on the server's flag table."""
    flags = getattr(triton, "_triton_server_config", None)
    if flags is None:
        raise ServeError(
            "this PyTriton version cannot restrict gRPC with a token",
            "install the serve extra's version: pip install 'livecam[serve]'",
        )
    flags["grpc-restricted-protocol"] = f"{','.join(wire.RESTRICTED)}:{wire.TOKEN_KEY}={token}"


def serve_until(server: SwapServer, stop: threading.Event, ready: Callable[[], None]) -> None:
    """Start ``server``, call ``ready``, and serve until ``stop`` is set."""
    with server:
        ready()
        while not stop.wait(0.5):
            if server._triton is not None and not server._triton.is_alive():
                raise ServeError("Triton stopped by itself", "see the log above for its cause")
