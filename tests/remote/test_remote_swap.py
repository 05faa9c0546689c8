"""The remote swap against a real `livecam serve` (NVIDIA Triton through PyTriton) on
127.0.0.1: the same frames swapped here and there agree, the exported repository's graph
agrees with the server, and a wrong token, an unreachable host or a malformed URL each give
one line while the local swap goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from triton_serve import TOKEN, Served, face_region, remote_swapper

from livecam.config.remote import RemoteConfig, ServerAddress
from livecam.config.swap import SwapConfig
from livecam.errors import ConfigError
from livecam.face.enhance import FaceEnhancer
from livecam.face.parts import Swapper
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap.neural import NeuralSwapper
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage
from livecam.remote import wire
from livecam.remote.export import export_repository
from livecam.remote.link import RemoteError, RemoteLink
from livecam.remote.swapper import LOST, RemoteSwapper
from livecam.sources.image import load_image_bgr
from livecam.types import Event, FaceWork, FrameContext, FramePacket

FRAMES = 5


def standard(testdata: Path, models: dict[str, Path], **more: Any) -> SwapConfig:
    return SwapConfig.of(
        preset="standard",
        provider="cpu",
        detector_model=str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(models["recognizer"]),
        swapper_model=str(models["narrow"]),
        face=str(testdata / "faces" / "biden_official_portrait.jpg"),
        **more,
    )


def clip(testdata: Path) -> list[np.ndarray]:
    """A head moving 6 px a frame across a 480x360 frame."""
    portrait = load_image_bgr(testdata / "faces" / "obama_official_portrait_2012.jpg")
    head = cv2.resize(portrait, (200, 250), interpolation=cv2.INTER_AREA)
    frames = []
    for i in range(FRAMES):
        frame = np.full((360, 480, 3), 70, np.uint8)
        x = 120 + 6 * i
        frame[50:300, x : x + 200] = head
        frames.append(frame)
    return frames


class Events:
    def __init__(self) -> None:
        self.seen: list[Event] = []

    def event(self, event: Event) -> None:
        self.seen.append(event)

    def remote(self, reading: object) -> None:
        pass

    def swap_check(self, reading: object) -> None:
        pass


def run_stage(stage: FaceSwapStage, frames: list[np.ndarray]) -> list[FramePacket]:
    packets = [
        FramePacket(f.copy(), seq=i, t_capture_ns=i * 33_000_000) for i, f in enumerate(frames)
    ]
    for packet in packets:
        stage.process([packet])
    return packets


def remote_stage(
    testdata: Path, models: dict[str, Path], server: Served, tmp_path: Path
) -> tuple[FaceSwapStage, RemoteSwapper]:
    """The standard stage whose swapper is a RemoteSwapper on ``server`` that waits for each
    frame's own answer (a LAN), so the frames compare one to one."""
    made: list[RemoteSwapper] = []

    def wrap(local: Swapper[Any]) -> Swapper[Any]:
        assert isinstance(local, NeuralSwapper)
        made.append(
            remote_swapper(local, server.url, close_local=True, wait_ms=200, timeout_ms=3000)
        )
        return made[0]

    cfg = standard(testdata, models)
    stage = build_swap_stage(cfg, SourceFaceCache(tmp_path / "faces"), swapper_wrap=wrap)
    return stage, made[0]


@pytest.fixture(scope="module")
def local_stage(
    testdata: Path, remote_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
):
    stage = build_swap_stage(
        standard(testdata, remote_models), SourceFaceCache(tmp_path_factory.mktemp("faces"))
    )
    stage.warmup(480, 360)
    yield stage
    stage.close()


def test_remote_swap_agrees_with_the_local_swap_in_the_face(
    testdata: Path,
    remote_models: dict[str, Path],
    narrow_server: Served,
    local_stage: FaceSwapStage,
    tmp_path: Path,
) -> None:
    """The same moving clip through the local stage and through `livecam serve`: every
    frame's face region within 1 grey level, every face swapped by the server."""
    remote, swapper = remote_stage(testdata, remote_models, narrow_server, tmp_path)
    try:
        remote.warmup(480, 360)
        assert swapper.lost is None, swapper.lost
        frames = clip(testdata)
        here, there = run_stage(local_stage, frames), run_stage(remote, frames)
        for a, b in zip(here, there, strict=True):
            assert a.faces_swapped == b.faces_swapped == 1
            face = a.faces[0]
            ys, xs = face_region(FrameContext(a.frame), face)
            assert np.array_equal(a.frame[ys, xs], b.frame[ys, xs]) or (
                np.abs(a.frame[ys, xs].astype(int) - b.frame[ys, xs]).max() <= 1
            )
            assert np.abs(a.frame[ys, xs].astype(int) - frames[a.seq][ys, xs]).mean() > 5
        stats = swapper.stats()
        assert (stats.faces_remote, stats.faces_local) == (FRAMES, 0), stats
        assert stats.route == "remote" and stats.rtt_p50_ms is not None
        assert stats.server == "cpu" and stats.bytes_up_per_face == 128 * 128 * 3 + 512 * 4
    finally:
        remote.close()


def test_bytes_per_frame_never_run_ahead_of_the_frames(
    testdata: Path, remote_models: dict[str, Path], narrow_server: Served, tmp_path: Path
) -> None:
    """The stats read at the very moment a request goes out (after its bytes are counted,
    before its answer is back): the bytes sent per frame are still at most one face's, the
    frame being counted with its bytes (the panel once showed 54.0 KB up per frame, over
    the one 128 px crop and 512 floats a one-face frame sends)."""
    seen: list[float] = []
    stage, swapper = remote_stage(testdata, remote_models, narrow_server, tmp_path)
    try:
        stage.warmup(480, 360)
        offload = swapper.offload
        send = offload._send

        def send_and_look(inputs: Any, answer: Any) -> int:
            sent = send(inputs, answer)
            seen.append(swapper.stats().bytes_up_per_frame)
            return sent

        offload._send = send_and_look
        run_stage(stage, clip(testdata))
        stats = swapper.stats()
        assert stats.faces_remote == FRAMES and len(seen) >= FRAMES - 1, (stats, seen)
        assert max(seen) <= stats.bytes_up_per_face == 128 * 128 * 3 + 512 * 4, seen
    finally:
        stage.close()


def test_the_presets_enhancer_runs_on_the_server_and_agrees(
    testdata: Path,
    remote_models: dict[str, Path],
    narrow_server: Served,
    local_stage: FaceSwapStage,
    tmp_path: Path,
) -> None:
    """A preset with an enhancer (the small GPEN-256-shaped one, blend 1): `livecam run
    --remote`'s wrappers send the swap and the enhancement to `livecam serve`; every
    frame's face agrees with the local swap-and-enhance within 1 grey level, every face
    was enhanced by the server, and the enhancement really changed the face."""
    from livecam.remote.enhancer import RemoteEnhancer
    from livecam.remote.wraps import RemoteWraps

    cfg = standard(
        testdata,
        remote_models,
        enhancer="gpen-bfr-256",
        enhancer_model=str(remote_models["enhancer"]),
        enhance_blend=1.0,
    )
    here = build_swap_stage(cfg, SourceFaceCache(tmp_path / "here"))
    settings = RemoteConfig(url=narrow_server.url, token=TOKEN, wait_ms=200, timeout_ms=3000)
    wraps = RemoteWraps(settings)
    there = build_swap_stage(
        cfg, SourceFaceCache(tmp_path / "there"), None, wraps.swapper, wraps.enhancer
    )
    try:
        here.warmup(480, 360)
        there.warmup(480, 360)
        enhancer = there.parts.enhancer
        assert isinstance(enhancer, RemoteEnhancer)
        assert enhancer.lost is None, enhancer.lost
        frames = clip(testdata)
        local, remote = run_stage(here, frames), run_stage(there, frames)
        plain = run_stage(local_stage, frames)  # swapped, not enhanced
        for a, b, c in zip(local, remote, plain, strict=True):
            assert a.faces_swapped == b.faces_swapped == 1
            ys, xs = face_region(FrameContext(a.frame), a.faces[0])
            assert np.abs(a.frame[ys, xs].astype(int) - b.frame[ys, xs]).max() <= 1
            assert np.abs(b.frame[ys, xs].astype(int) - c.frame[ys, xs]).mean() > 2
        state = enhancer.offload.state
        assert (state.faces_remote, state.faces_local) == (FRAMES, 0)
        assert wraps.remote_swapper is not None
        stats = wraps.remote_swapper.stats()
        assert stats.enhancer == "remote" and "enhancer: remote" in stats.details()
    finally:
        here.close()
        there.close()


def small_enhancer(models: dict[str, Path]) -> FaceEnhancer:
    """The small GPEN-256-shaped enhancer the session server serves, built here (CPU)."""
    from livecam.face.build import build_enhancer
    from livecam.models.presets import resolve_preset
    from livecam.models.store import ModelStore

    cfg = SwapConfig.of(
        preset="standard",
        provider="cpu",
        enhancer="gpen-bfr-256",
        enhancer_model=str(models["enhancer"]),
    )
    store = ModelStore()
    enhancer = build_enhancer(resolve_preset("standard", store, cfg), cfg, store)
    assert isinstance(enhancer, FaceEnhancer)
    return enhancer


def test_an_unreachable_enhancer_server_is_one_line_and_the_local_enhancer_runs(
    testdata: Path,
    remote_models: dict[str, Path],
    local_stage: FaceSwapStage,
    refused_port: int,
) -> None:
    """The remote enhancer's own fallback: "REMOTE LOST, local enhance: <cause> (fix:
    ...)" once, and the faces are enhanced here."""
    from livecam.remote.enhancer import LOST_ENHANCE, RemoteEnhancer

    local = small_enhancer(remote_models)
    url = f"grpc://127.0.0.1:{refused_port}"
    link = RemoteLink(ServerAddress("127.0.0.1", refused_port))
    remote = RemoteEnhancer(local, link, RemoteConfig(url=url))
    said: list[str] = []
    remote.offload.sink = lambda event: said.append(event.message)
    try:
        remote.warmup()
        [line] = said
        assert line.startswith(f"{LOST_ENHANCE}: nothing answers") and "(fix: " in line, line
        [packet] = run_stage(local_stage, clip(testdata)[:1])
        work = FaceWork(0, 0, packet.faces[0], source_index=0)
        [done] = remote.enhance([FrameContext(packet.frame)], [work])
        assert done.output is not None and done.output.shape == (256, 256, 3)
        assert (remote.offload.state.faces_local, remote.offload.state.faces_remote) == (1, 0)
    finally:
        remote.close()
        link.close()


def test_exported_repository_parses_and_its_graph_agrees_with_the_server(
    local_stage: FaceSwapStage, narrow_server: Served, tmp_path: Path
) -> None:
    """`config.pbtxt` parses as Triton's ModelConfig; the exported ONNX graph (uint8 in,
    uint8 out, normalisation folded in) run by ONNX Runtime answers what the server does."""
    import onnxruntime as ort
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc

    swapper = local_stage.parts.swapper
    assert isinstance(swapper, NeuralSwapper)
    folder = export_repository(
        swapper, tmp_path / "repo", max_batch=8, queue_delay_us=500, tensorrt_fp16=True
    )
    config = text_format.Parse((folder / wire.MODEL / "config.pbtxt").read_text(), mc.ModelConfig())
    assert (config.name, config.backend, config.max_batch_size) == (wire.MODEL, "onnxruntime", 8)
    assert config.dynamic_batching.max_queue_delay_microseconds == 500
    assert [(i.name, list(i.dims), i.data_type) for i in config.input] == [
        (wire.CROP, [128, 128, 3], mc.TYPE_UINT8),
        (wire.LATENT, [512], mc.TYPE_FP32),
    ]
    accelerator = config.optimization.execution_accelerators.gpu_execution_accelerator[0]
    assert accelerator.name == "tensorrt" and accelerator.parameters["precision_mode"] == "FP16"

    rng = np.random.default_rng(3)
    crops = rng.integers(0, 256, (3, 128, 128, 3), dtype=np.uint8)
    latents = rng.standard_normal((3, 512)).astype(np.float32)
    latents /= np.linalg.norm(latents, axis=1, keepdims=True)
    session = ort.InferenceSession(
        str(folder / wire.MODEL / "1" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    exported = session.run(None, {wire.CROP: crops, wire.LATENT: latents})[0]
    link = RemoteLink(narrow_server.address, token=TOKEN)
    try:
        served, _ = link.round_trip(crops, latents, timeout_s=10)
    finally:
        link.close()
    assert exported.dtype == np.uint8 and exported.shape == crops.shape
    assert np.abs(exported.astype(int) - served).max() <= 1
    assert np.abs(served.astype(int) - crops).mean() > 5  # a swap, not a copy


def warm_and_hear_one_line(swapper: RemoteSwapper) -> str:
    """Warm ``swapper`` (it checks its server) and return the one event it said: a
    "REMOTE LOST, local swap: ..." line."""
    events = Events()
    swapper.report_to(events)
    swapper.warmup()
    [said] = [e.message for e in events.seen]
    assert said.startswith(f"{LOST}: ") and "\n" not in said
    return said


def test_the_exported_enhancer_agrees_with_the_server(
    local_stage: FaceSwapStage,
    narrow_server: Served,
    remote_models: dict[str, Path],
    tmp_path: Path,
) -> None:
    """With an enhancer, the repository holds ``livecam_enhancer`` too: its config parses
    as Triton's, and its graph (uint8 in and out, the normalisation and CodeFormer's weight
    folded in) answers what `livecam serve`'s enhancer does."""
    import threading

    import onnxruntime as ort
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc

    swapper = local_stage.parts.swapper
    assert isinstance(swapper, NeuralSwapper)
    enhancer = small_enhancer(remote_models)
    try:
        folder = export_repository(swapper, tmp_path / "repo", enhancer=enhancer)
    finally:
        enhancer.close()
    text = (folder / wire.ENHANCER_MODEL / "config.pbtxt").read_text()
    config = text_format.Parse(text, mc.ModelConfig())
    assert (config.name, config.backend) == (wire.ENHANCER_MODEL, "onnxruntime")
    assert [(i.name, list(i.dims)) for i in config.input] == [(wire.FACE, [256, 256, 3])]
    faces = np.random.default_rng(5).integers(0, 256, (2, 256, 256, 3), dtype=np.uint8)
    session = ort.InferenceSession(
        str(folder / wire.ENHANCER_MODEL / "1" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    exported = session.run(None, {wire.FACE: faces})[0]
    link = RemoteLink(narrow_server.address, token=TOKEN, timeout_s=10)
    done = threading.Event()
    got: list[Any] = []

    def answer(out: Any, error: Any) -> None:
        got.append(out if error is None else error)
        done.set()

    try:
        link.enhance(faces, answer)
        assert done.wait(30)
    finally:
        link.close()
    [served] = got
    assert isinstance(served, np.ndarray), served
    assert exported.dtype == np.uint8 and exported.shape == faces.shape
    assert np.abs(exported.astype(int) - served).max() <= 1
    assert np.abs(served.astype(int) - faces).mean() > 5  # enhanced, not a copy


UNUSABLE = {  # case: (url, what the line says, its fix)
    "wrong token": ("", "refused the token", "fix: give the server's token"),
    "refused": ("grpc://127.0.0.1:{port}", "nothing answers", "fix: start `livecam serve`"),
    "unknown host": ("grpc://no-such-host.invalid:8001", "unknown host", "fix: check the server"),
}


@pytest.mark.parametrize("case", list(UNUSABLE))
def test_unusable_server_is_one_line_and_the_local_swap_goes_on(
    case: str,
    local_stage: FaceSwapStage,
    narrow_server: Served,
    testdata: Path,
    remote_models: dict[str, Path],
    tmp_path: Path,
    refused_port: int,
) -> None:
    """Each cause is one "REMOTE LOST, local swap: <cause> (fix: <fix>)" line, handed by
    the stage to its report, and the same line in the figures the status line and the
    panel show; the face is swapped here."""
    url, cause, fix = UNUSABLE[case]
    url = url.format(port=refused_port) or narrow_server.url
    made: list[RemoteSwapper] = []

    def wrap(local: Swapper[Any]) -> Swapper[Any]:
        assert isinstance(local, NeuralSwapper)
        made.append(remote_swapper(local, url, token="not-the-token", close_local=True))
        return made[0]

    cfg = standard(testdata, remote_models)
    stage = build_swap_stage(cfg, SourceFaceCache(tmp_path / "faces"), swapper_wrap=wrap)
    events = Events()
    stage.report_to(events)
    try:
        [swapper] = made
        swapper.warmup()
        [said] = [e.message for e in events.seen]
        assert said.startswith(f"{LOST}: ") and "\n" not in said
        assert cause in said and fix in said, said
        frame = clip(testdata)[0]
        packet = FramePacket(frame.copy(), seq=0, t_capture_ns=0)
        local_stage.prepare([packet])
        work = FaceWork(0, 0, packet.faces[0], source_index=0)
        [done] = swapper.swap([FrameContext(frame)], [work], [swapper.prepare(stage.source)])
        assert done.output is not None  # swapped here, never an unswapped face
        stats = swapper.stats()
        assert (stats.faces_local, stats.faces_remote, stats.route) == (1, 0, "local")
        assert stats.label() == said
    finally:
        stage.close()


def test_a_server_with_another_swapper_contract_is_one_line(
    narrow_server: Served, testdata: Path, tmp_path: Path
) -> None:
    """A hyperswap client (256 px crops, embedding vectors) against the inswapper server
    (128 px, emap): one line naming both contracts; the local swap stands in."""
    from livecam.benchmark.synthetic_models import hyperswap_like
    from livecam.face.build import build_swapper
    from livecam.models.presets import resolve_preset
    from livecam.models.store import ModelStore

    hyperswap_like(tmp_path / "hyperswap_like.onnx", 16)
    cfg = SwapConfig.of(
        preset="quality", provider="cpu", swapper_model=str(tmp_path / "hyperswap_like.onnx")
    )
    store = ModelStore(data_dir=tmp_path / "data")
    local = build_swapper(resolve_preset("quality", store, cfg), cfg, store)
    assert isinstance(local, NeuralSwapper) and local.crop_size == 256
    swapper = remote_swapper(local, narrow_server.url, close_local=True)
    try:
        said = warm_and_hear_one_line(swapper)
        assert "serves another swapper contract" in said and "[-1, 256, 256, 3]" in said, said
        assert "fix: serve the same preset and swapper model" in said
        assert swapper.lost is not None
    finally:
        swapper.close()


def test_a_malformed_url_is_one_line() -> None:
    with pytest.raises(ConfigError) as e:
        RemoteConfig(url="http://gpu-box:8001")
    assert "grpc://HOST:PORT" in str(e.value) and e.value.field == "remote.url"


def test_doctor_and_check_test_a_server(
    narrow_server: Served, remote_models: dict[str, Path]
) -> None:
    """`livecam check --remote` finds the server, its token, where it swaps and that its
    swap agrees with this machine's; `livecam doctor --remote` with a wrong token is one
    FAIL line naming the token."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "livecam"]
    check = subprocess.run(
        [
            *base,
            "check",
            "--remote",
            narrow_server.url,
            "--remote-token",
            TOKEN,
            "--preset",
            "standard",
            "--swapper-model",
            str(remote_models["narrow"]),
            "--provider",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    lines = check.stdout.splitlines()
    assert any("agrees with the local one" in line for line in lines), lines
    assert any("token accepted; swap runs on cpu" in line for line in lines), lines
    assert any("serves the enhancer gpen-bfr-256" in line for line in lines), lines
    doctor = subprocess.run(
        [*base, "doctor", "--remote", narrow_server.url, "--remote-token", "wrong"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert doctor.returncode == 1
    [line] = doctor.stdout.splitlines()
    assert line.startswith("[FAIL] remote:") and "refused the token" in line
    assert "Traceback" not in doctor.stderr


def test_livecam_run_remote_swaps_on_the_server_and_says_so(
    testdata: Path, remote_models: dict[str, Path], narrow_server: Served, tmp_path: Path
) -> None:
    """`livecam run --remote URL --remote-token T`: the frames are swapped, the faces came
    from the server, and --stats-json says where and how (round trip, bytes, batch)."""
    import json
    import subprocess
    import sys

    stats = tmp_path / "stats.json"
    cmd = [
        sys.executable, "-m", "livecam", "run", "--preset", "standard",
        "--face", str(testdata / "faces" / "biden_official_portrait.jpg"),
        "--source", str(testdata / "faces" / "obama_official_portrait_2012.jpg"),
        "--sink", "null", "--frames", "60", "--fps", "30", "--provider", "cpu",
        "--detector-model", str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        "--recognizer-model", str(remote_models["recognizer"]),
        "--swapper-model", str(remote_models["narrow"]),
        "--remote", narrow_server.url, "--remote-token", TOKEN, "--remote-timeout-ms", "2000",
        "--remote-wait-ms", "500",
        "--stats-json", str(stats), "-q",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(stats.read_text())
    remote = summary["remote"]
    assert remote is not None, summary
    assert (remote["route"], remote["address"], remote["server"]) == (
        "remote",
        narrow_server.url,
        "cpu",
    )
    assert remote["faces_remote"] > 0 and remote["rtt_p50_ms"] > 0
    assert remote["bytes_up_per_face"] == 128 * 128 * 3 + 512 * 4
    # one face a frame: a frame's payload is at most its face's (a frame whose batch a newer
    # one replaced sends nothing)
    assert 0 < remote["bytes_up_per_frame"] <= remote["bytes_up_per_face"]
    assert (remote["server_providers"], remote["server_gpu"]) == (["cpu"], "")
    assert remote["server_model"].startswith("inswapper-128")
    assert summary["faces_swapped"] >= 1


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "livecam-test")])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_tls_server_works_with_its_certificate_and_a_mismatch_is_one_line(
    remote_models: dict[str, Path], tmp_path: Path
) -> None:
    """`livecam serve --tls-cert --tls-key` (Triton's gRPC SSL): grpcs:// with the
    certificate swaps; grpcs:// without it and plain grpc:// each give one line."""
    from triton_serve import needs_serve_extra

    from livecam.benchmark.remote_rig import ServeChild
    from livecam.remote.probe import probe_server

    needs_serve_extra()
    cert, key = self_signed(tmp_path)
    server = ServeChild(remote_models["narrow"], tmp_path / "tls.log", tls_cert=cert, tls_key=key)
    server.start()
    try:
        good = probe_server(server.url, ca_cert=cert)
        assert good.ok and server.url.startswith("grpcs://"), good.lines
        link = RemoteLink(server.address, token=TOKEN, ca_cert=cert)
        try:  # this server has no enhancer: a remote enhancer would say so in one line
            with pytest.raises(RemoteError) as no_enhancer:
                link.check_enhancer(256)
            assert "serves no enhancer" in no_enhancer.value.message
        finally:
            link.close()
        for url, ca in ((server.url, None), (server.url.replace("grpcs", "grpc"), None)):
            found = probe_server(url, ca_cert=ca)
            [line] = found.lines
            assert not found.ok and ("TLS" in line or "grpcs://" in line), line
    finally:
        server.kill()


def test_livecam_run_with_no_server_says_one_line_and_records_every_frame(
    testdata: Path, remote_models: dict[str, Path], tmp_path: Path, refused_port: int
) -> None:
    """`livecam run --remote` at a port where nothing listens: one REMOTE LOST line with
    its fix, no traceback, every frame with a face swapped here, and every frame sent
    out recorded."""
    import json
    import subprocess
    import sys

    import av

    stats, video = tmp_path / "stats.json", tmp_path / "out.mp4"
    cmd = [
        sys.executable, "-m", "livecam", "run", "--preset", "standard",
        "--face", str(testdata / "faces" / "biden_official_portrait.jpg"),
        "--source", str(testdata / "faces" / "obama_official_portrait_2012.jpg"),
        "--sink", str(video), "--frames", "20", "--fps", "30", "--provider", "cpu",
        "--detector-model", str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        "--recognizer-model", str(remote_models["recognizer"]),
        "--swapper-model", str(remote_models["narrow"]),
        "--remote", f"grpc://127.0.0.1:{refused_port}", "--stats-json", str(stats),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    # said once as a warning (the status line, printed about once a second, shows it too)
    said = [line for line in output.splitlines() if LOST in line and "livecam.remote" in line]
    assert len(said) == 1 and "nothing answers" in said[0] and "(fix: " in said[0], said
    assert "Traceback" not in output
    summary = json.loads(stats.read_text())
    remote = summary["remote"]
    assert remote["route"] == "local" and remote["faces_remote"] == 0
    assert summary["frames_swapped"] == summary["frames_searched"] >= 1, summary
    assert remote["faces_local"] >= 1, remote  # (a still photo: later frames may reuse)
    with av.open(str(video)) as container:
        assert sum(1 for _ in container.decode(video=0)) == summary["frames_out"] >= 1


def test_a_bad_serve_option_names_the_option(remote_models: dict[str, Path]) -> None:
    """`livecam serve --enhancer nope`: the option and the allowed values, no traceback."""
    import subprocess
    import sys

    model = str(remote_models["narrow"])
    cmd = [sys.executable, "-m", "livecam", "serve", "--swapper-model", model, "--enhancer", "nope"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    message, fix = proc.stderr.strip().splitlines()[-2:]
    assert message == "error: --enhancer nope is invalid" and "'gpen-bfr-256'" in fix
    assert "Traceback" not in proc.stderr
