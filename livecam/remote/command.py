"""``livecam serve``: this machine's GPU as a swap server for LiveCam clients elsewhere
(NVIDIA Triton through PyTriton), or ``--export-repository DIR``: a Triton model repository
for NVIDIA's Triton container."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import Any

from livecam.config.swap import SwapConfig
from livecam.errors import ConfigError
from livecam.remote import wire

TOKEN_ENV = "LIVECAM_SERVE_TOKEN"
#: the options `livecam serve` shares with `livecam run` (its swap config fields)
SWAP_OPTIONS = (
    "--preset",
    "--provider",
    "--gpu",
    "--swapper-model",
    "--enhancer",
    "--enhancer-model",
)


def add_serve_command(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve this machine's swapper to LiveCam clients elsewhere (NVIDIA Triton)",
        description="Start NVIDIA Triton Inference Server (through PyTriton) with the "
        "preset's swapper: clients run `livecam run --remote grpc://HOST:PORT` and send "
        "only aligned face crops. Triton batches the faces of every client. Stops on "
        "Ctrl-C. With --export-repository, write a Triton model repository instead.",
    )
    serve.add_argument("--preset", default="standard", help="a neural preset (default standard)")
    serve.add_argument("--swapper-model", metavar="ONNX", help="the swapper model file to serve")
    serve.add_argument(
        "--enhancer",
        metavar="NAME",
        help="the face enhancer to serve too (none: off; default: the preset's)",
    )
    serve.add_argument("--enhancer-model", metavar="ONNX", help="the enhancer model file to serve")
    serve.add_argument(
        "--provider",
        default="auto",
        choices=("auto", "tensorrt", "cuda", "cpu"),
        help="where the swapper runs (default: the best one present)",
    )
    serve.add_argument("--gpu", type=int, default=0, help="GPU index (default 0)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="listen address (default 127.0.0.1; another needs --token)",
    )
    serve.add_argument("--port", type=int, default=8001, help="gRPC port (default 8001)")
    serve.add_argument("--http-port", type=int, default=8000, help="Triton's HTTP port (127.0.0.1)")
    serve.add_argument("--metrics-port", type=int, default=8002, help="Prometheus metrics port")
    serve.add_argument("--token", help=f"access token clients must give (default: ${TOKEN_ENV})")
    serve.add_argument("--tls-cert", type=Path, metavar="PEM", help="TLS certificate (gRPC SSL)")
    serve.add_argument("--tls-key", type=Path, metavar="PEM", help="TLS private key")
    serve.add_argument("--max-batch", type=int, default=32, help="largest batch (default 32)")
    serve.add_argument(
        "--queue-delay-us",
        type=int,
        default=2000,
        help="how long Triton's dynamic batcher waits for more faces (default 2000 µs)",
    )
    serve.add_argument(
        "--preferred-batch",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="a batch size the batcher prefers; repeat for several",
    )
    serve.add_argument(
        "--response-compression",
        default="low",
        choices=wire.RESPONSE_COMPRESSION,
        help="gzip level of the swapped crops sent back (default low: about a quarter "
        "fewer bytes down)",
    )
    serve.add_argument(
        "--export-repository",
        type=Path,
        metavar="DIR",
        help="write a Triton model repository (ONNX Runtime backend) to DIR and exit",
    )
    serve.add_argument(
        "--tensorrt-fp16",
        action="store_true",
        help="with --export-repository: ask Triton's ONNX Runtime backend for TensorRT fp16",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from livecam.face.build import build_enhancer, build_swapper
    from livecam.face.swap.neural import NeuralSwapper
    from livecam.models.presets import resolve_preset
    from livecam.models.store import ModelStore

    try:
        cfg = SwapConfig.of(
            preset=args.preset,
            provider="cpu" if args.export_repository else args.provider,
            gpu=args.gpu,
            swapper_model=args.swapper_model,
            enhancer=args.enhancer,
            enhancer_model=args.enhancer_model,
        )
    except ConfigError as e:  # said with the option the user typed, as `livecam run` does
        from livecam.config.option_map import FIELD_OPTIONS, as_option_error

        given = {
            name: True for name, (option, _) in FIELD_OPTIONS.items() if option in SWAP_OPTIONS
        }
        raise as_option_error(e, given) from None
    store = ModelStore()
    row = resolve_preset(cfg.preset, store, cfg)
    swapper = build_swapper(row, cfg, store)
    if not isinstance(swapper, NeuralSwapper):
        swapper.close()
        raise ConfigError(
            f"preset {row.name!r} swaps with the classic CPU swapper, which runs where the "
            "camera is",
            "serve a neural preset: --preset standard (or quality)",
        )
    enhancer = None
    try:
        enhancer = build_enhancer(row, cfg, store)
        if args.export_repository is not None:
            return _export(swapper, enhancer, args)
        return _serve(swapper, enhancer, args)
    finally:
        swapper.close()
        if enhancer is not None:
            enhancer.close()


def _export(swapper: Any, enhancer: Any, args: argparse.Namespace) -> int:
    from livecam.remote.export import export_repository

    folder = export_repository(
        swapper,
        args.export_repository,
        max_batch=args.max_batch,
        queue_delay_us=args.queue_delay_us,
        preferred_batch=tuple(args.preferred_batch),
        tensorrt_fp16=args.tensorrt_fp16,
        enhancer=enhancer,
    )
    print(f"wrote the Triton model repository {folder}")
    print(
        "serve it with NVIDIA's container: docker run --gpus all --rm -p 8001:8001 -p 8002:8002 "
        f"-v {folder.resolve()}:/models nvcr.io/nvidia/tritonserver:<yy.mm>-py3 "
        "tritonserver --model-repository=/models"
    )
    return 0


def _serve(swapper: Any, enhancer: Any, args: argparse.Namespace) -> int:
    from livecam.remote.serve import ServeOptions, SwapServer, serve_until

    options = ServeOptions(
        host=args.host,
        port=args.port,
        http_port=args.http_port,
        metrics_port=args.metrics_port,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        max_batch=args.max_batch,
        queue_delay_us=args.queue_delay_us,
        preferred_batch=tuple(args.preferred_batch),
        response_compression=args.response_compression,
    )
    server = SwapServer(swapper, options, enhancer)

    def ready() -> None:
        enhancing = f" and the enhancer {server.info.enhancer}" if server.info.enhancer else ""
        print(
            f"serving {server.info.model_id}{enhancing} on {server.address} "
            f"({server.info.where()}); "
            f"metrics on http://{args.host}:{args.metrics_port}/metrics; Ctrl-C stops",
            flush=True,
        )

    serve_until(server, threading.Event(), ready)
    print("stopped", file=sys.stderr)
    return 0
