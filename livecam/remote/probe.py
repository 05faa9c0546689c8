"""``livecam doctor --remote URL`` and ``livecam check --remote URL``: is a swap server
usable from here? Reachable, the token, the swapper's contract, where it runs, the round
trip, and (with a local swapper) whether it answers what the local swap gives."""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from livecam.config.remote import parse_address
from livecam.face.swap.neural import NeuralSwapper
from livecam.remote import wire
from livecam.remote.link import RemoteError, RemoteLink

ROUND_TRIPS = 10
AGREEMENT_LEVELS = 1  # grey levels the server's crop may differ from the local one


@dataclass
class Probe:
    """What a probe found: ``lines`` to print, ``ok`` whether the server is usable."""

    url: str
    ok: bool = True
    lines: list[str] = field(default_factory=list)

    def say(self, ok: bool | None, text: str) -> None:
        mark = {True: "ok", False: "FAIL", None: "--"}[ok]
        self.lines.append(f"[{mark:>4}] remote: {text}")
        if ok is False:
            self.ok = False


def probe_server(
    url: str,
    token: str | None = None,
    ca_cert: Path | None = None,
    crop_size: int = 128,
    local: NeuralSwapper | None = None,
    timeout_s: float = 3.0,
) -> Probe:
    """Check the server at ``url``; every failure is one line with its fix."""
    found = Probe(url)
    try:
        address = parse_address(url)
        link = RemoteLink(address, token=token, ca_cert=ca_cert, timeout_s=timeout_s)
    except Exception as e:  # a malformed URL or a missing client package: one line
        found.say(False, f"{getattr(e, 'message', e)} (fix: {getattr(e, 'hint', '')})")
        return found
    try:
        try:
            info = link.check(crop_size, timeout_s=timeout_s)
        except RemoteError as e:
            found.say(False, f"{e.message} (fix: {e.hint})")
            return found
        found.say(True, f"{address} serves {wire.MODEL} ({info.model_id})")
        found.say(
            True, f"token {'accepted' if token else 'not needed'}; swap runs on {info.where()}"
        )
        if info.enhancer:
            found.say(
                True,
                f"it serves the enhancer {info.enhancer} ({wire.ENHANCER_MODEL}, "
                f"{info.enhancer_size} px faces) for presets that have one",
            )
        rng = np.random.default_rng(0)
        crops = rng.integers(0, 256, (1, crop_size, crop_size, 3), dtype=np.uint8)
        latents = rng.standard_normal((1, wire.LATENT_DIM)).astype(np.float32)
        latents /= np.linalg.norm(latents)
        times = []
        answer = None
        for _ in range(ROUND_TRIPS):
            start = time.perf_counter()
            answer, _ = link.round_trip(crops, latents, timeout_s)
            times.append((time.perf_counter() - start) * 1000)
        found.say(
            None,
            f"round trip of one {crop_size}px crop: p50 {np.percentile(times, 50):.1f} ms, "
            f"max {max(times):.1f} ms ({ROUND_TRIPS} tries)",
        )
        if local is not None and answer is not None:
            here = local.run_crops(crops, latents)
            worst = int(np.abs(here.astype(int) - answer).max())
            agrees = worst <= AGREEMENT_LEVELS
            found.say(
                agrees,
                f"the server's swap {'agrees with' if agrees else 'differs from'} the local "
                f"one (max {worst} grey levels)"
                + ("" if agrees else "; fix: serve the same swapper model on both machines"),
            )
    except RemoteError as e:
        found.say(False, f"{e.message} (fix: {e.hint})")
    finally:
        link.close()
    return found


def add_remote_probe_options(p: argparse.ArgumentParser) -> None:
    """``--remote URL``, ``--remote-token`` and ``--remote-ca`` of doctor and check."""
    p.add_argument("--remote", metavar="URL", help="check this swap server (grpc://HOST:PORT)")
    p.add_argument(
        "--remote-token", metavar="SECRET", help="its token (default: $LIVECAM_REMOTE_TOKEN)"
    )
    p.add_argument("--remote-ca", type=Path, metavar="PEM", help="its root certificate (TLS)")


def run_probe(args: argparse.Namespace, local: NeuralSwapper | None = None) -> int:
    """Probe ``args.remote`` (doctor's and check's options), print it; the exit status."""
    found = probe_server(
        str(args.remote),
        args.remote_token or os.environ.get("LIVECAM_REMOTE_TOKEN"),
        args.remote_ca,
        local=local,
    )
    print("\n".join(found.lines))
    return 0 if found.ok else 1
