"""Rewrite a fixed-batch-1 ONNX model to a dynamic batch axis, verified before use.

Many exports (MobileFaceNet, PFLD, inswapper) declare batch 1, so every face is one call.
``make_dynamic_batch`` sets axis 0 of the inputs and outputs to the symbolic ``N``. The
usual trap is a ``Reshape`` whose constant shape hard-codes the batch (``[1, -1]`` before
a classifier): where its data has axis 0 of size 1 at batch 1, the ``1`` becomes ``0``
(ONNX: copy that axis from the data), which gives the very same result at batch 1; any
other hard-coded batch is refused. The rewrite is then run at batch 3 against 3 single
runs of the original and used only when they agree within ``TOLERANCE`` (relative to the
output's largest value); otherwise the model keeps its fixed batch and the stage loops.
Verified rewrites (and refusals, with their reason) are cached by the file's sha256.

A cached rewrite is trusted only as far as its record: ``<name>.onnx.json`` beside it
(written atomically after it) holds the sha256 of the rewrite and of its source. Each load
hashes the rewrite (once per process and file state, ``FileHashes``) and compares; a
missing record, another source or other bytes (bit rot, a bad copy, zeroed weights) rebuild
it with one warning. ``check_cache`` is the same check for ``livecam models verify``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from livecam.models.download import sha256_of
from livecam.models.manifest import FileHashes
from livecam.userfiles import write_atomically

log = logging.getLogger(__name__)

#: the cached rewrites hashed in this process (a file is hashed again once it changed)
_HASHES = FileHashes()
RECORD_SUFFIX = ".json"  # ``x.dynbatch.onnx`` -> ``x.dynbatch.onnx.json``

#: batched vs single runs must agree within this, times max(1, largest |output|)
TOLERANCE = 1e-4
BATCH_AXIS = "N"
_VERIFY_BATCH = 3


@dataclass(frozen=True)
class Rewrite:
    """The outcome of a rewrite: the model (None when refused) and what was done or why
    it was refused."""

    model: onnx.ModelProto | None
    detail: str


def _real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [
        d.dim_value if d.HasField("dim_value") else d.dim_param
        for d in value.type.tensor_type.shape.dim
    ]


def batch_size(model: onnx.ModelProto) -> int | str | None:
    """Axis 0 of the model's first real input: an int when fixed, a name when dynamic,
    None when the input has no axes."""
    inputs = _real_inputs(model.graph)
    dims = _dims(inputs[0]) if inputs else []
    return dims[0] if dims else None


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray[Any, Any]]:
    out = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            out[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return out


def rewrite_batch_axis(model: onnx.ModelProto, fix_reshape: bool = True) -> Rewrite:
    """A copy of ``model`` (fixed batch 1) with a symbolic batch axis, or a refusal
    (``fix_reshape=False``: any Reshape that hard-codes batch 1 is refused).

    Unverified: ``rewrite_and_verify`` runs it against the original before use.
    """
    graph = model.graph
    inputs = _real_inputs(graph)
    for value in [*inputs, *graph.output]:
        dims = _dims(value)
        if not dims or dims[0] != 1:
            return Rewrite(None, f"{value.name} has shape {dims}, not batch 1 on axis 0")
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {
        v.name: _dims(v)
        for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
    }
    consts = _constants(graph)
    # tensors computed from the inputs (the ones that carry the batch)
    batched = {i.name for i in inputs}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    patched = []
    for node in out.graph.node:
        if not any(name in batched for name in node.input):
            continue
        batched.update(node.output)
        if node.op_type != "Reshape" or node.input[0] not in batched:
            continue
        shape = consts.get(node.input[1])
        if shape is None:
            continue  # computed at run time (Shape -> ...): follows the batch
        allowzero = any(a.name == "allowzero" and a.i for a in node.attribute)
        first = int(shape[0]) if shape.size else 0
        if first in (0, -1) and not allowzero:
            continue
        data_dims = shapes.get(node.input[0], [])
        if fix_reshape and first == 1 and not allowzero and data_dims[:1] == [1]:
            fixed = shape.copy()
            fixed[0] = 0
            name = f"{node.input[1]}__dynamic_batch"
            out.graph.initializer.append(numpy_helper.from_array(fixed, name))
            node.input[1] = name
            patched.append(f"{node.name or node.output[0]} {shape.tolist()}")
            continue
        return Rewrite(
            None,
            f"Reshape {node.name or node.output[0]} hard-codes shape {shape.tolist()} "
            "with the batch in it",
        )
    for value in [*_real_inputs(out.graph), *out.graph.output]:
        dim0 = value.type.tensor_type.shape.dim[0]
        dim0.Clear()
        dim0.dim_param = BATCH_AXIS
    del out.graph.value_info[:]  # inferred for batch 1; ORT infers them again
    done = "batch axis made dynamic"
    if patched:
        done += f"; Reshape shapes with a hard-coded batch 1 copy it instead: {patched}"
    return Rewrite(out, done)


def _feeds(session: Any, batch: int, rng: np.random.Generator) -> dict[str, Any]:
    feeds = {}
    for arg in session.get_inputs():
        dims = [batch] + [d if isinstance(d, int) and d > 0 else 64 for d in arg.shape[1:]]
        if "float" in arg.type:
            dtype = np.float16 if "float16" in arg.type else np.float32
            feeds[arg.name] = rng.uniform(-1, 1, dims).astype(dtype)
        else:
            feeds[arg.name] = np.zeros(dims, np.int64 if "int64" in arg.type else np.int32)
    return feeds


def verify_batching(original: str | os.PathLike[str] | bytes, rewritten: bytes) -> str | None:
    """None when the rewritten model run at batch 3 equals 3 single runs of the original
    within ``TOLERANCE``, else why not (on the CPU provider, seeded random inputs)."""
    import onnxruntime as ort

    cpu = ["CPUExecutionProvider"]
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 3  # no initializer-as-input chatter while checking
    try:
        source = original if isinstance(original, bytes) else os.fspath(original)
        single = ort.InferenceSession(source, quiet, providers=cpu)
        batched = ort.InferenceSession(rewritten, quiet, providers=cpu)
        feeds = _feeds(single, _VERIFY_BATCH, np.random.default_rng(0))
        together = batched.run(None, feeds)
        apart = [single.run(None, {k: v[i : i + 1] for k, v in feeds.items()}) for i in range(3)]
    except Exception as e:  # ORT's own error types: a shape the rewrite broke
        return f"the rewritten model does not run at batch {_VERIFY_BATCH}: {e}"
    for k, out in enumerate(together):
        ref = np.concatenate([a[k] for a in apart]).astype(np.float64)
        if out.shape != ref.shape:
            return f"output {k} has shape {out.shape} at batch 3, not {ref.shape}"
        diff = float(np.max(np.abs(out.astype(np.float64) - ref), initial=0.0))
        limit = TOLERANCE * max(1.0, float(np.max(np.abs(ref), initial=0.0)))
        if not diff <= limit:
            return f"output {k} differs from single runs by {diff:.3g} (allowed {limit:.3g})"
    return None


def make_dynamic_batch(
    path: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str],
    *,
    fix_reshape: bool = True,
    sha256: str | None = None,
) -> Path | None:
    """The path of a verified dynamic-batch version of the ONNX file ``path``: ``path``
    itself when its batch axis is already dynamic, a rewrite in ``cache_dir`` (made once
    per file content), or None when the rewrite is refused (logged with its reason; the
    caller keeps the fixed batch and loops). ``fix_reshape=False`` refuses a Reshape
    that hard-codes batch 1 instead of making it copy the batch.

    A rewrite or refusal is kept in ``cache_dir`` per file content (``sha256``: the file's,
    when the caller knows it), so a later build of the same file neither loads nor checks
    the model again (a live change rebuilds every part). A cached rewrite is used only when
    its record names this source and its own sha256 (``cached_problem``), else rebuilt."""
    source = Path(path)
    cache = Path(cache_dir)
    digest = sha256 if sha256 is not None else _HASHES.sha256(source)
    stem = f"{source.stem}.{digest[:16]}.dynbatch{'' if fix_reshape else '-strict'}"
    target, refused = cache / f"{stem}.onnx", cache / f"{stem}.refused.txt"
    if target.exists():
        problem = cached_problem(target, digest)
        if problem is None:
            return target
        log.warning("%s: the cached rewrite %s %s; rebuilding it", source.name, target, problem)
    elif refused.exists():
        log.info("%s keeps its fixed batch: %s", source.name, refused.read_text().strip())
        return None
    model = onnx.load(str(source))
    batch = batch_size(model)
    if isinstance(batch, str) and batch:
        return source
    rewrite = rewrite_and_verify(model, source, fix_reshape)
    try:
        return _keep(rewrite, source, digest, target, refused)
    except OSError as e:  # a full or unwritable cache costs speed, never the run
        log.warning(
            "LiveCam's cache folder %s cannot be written (%s): %s keeps its fixed batch (the "
            "stage loops per face); free some room there or choose another folder with "
            "LIVECAM_CACHE_DIR",
            cache,
            e.strerror or e,
            source.name,
        )
        return None


def _keep(rewrite: Rewrite, source: Path, digest: str, target: Path, refused: Path) -> Path | None:
    """Write the verified rewrite (and its record) or the refusal into the cache."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if rewrite.model is None:
        write_atomically(refused, (rewrite.detail + "\n").encode())
        log.warning(
            "%s keeps its fixed batch (the stage loops per face): %s", source.name, rewrite.detail
        )
        return None
    data = rewrite.model.SerializeToString()
    write_atomically(target, data)
    record = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "source": source.name,
        "source_sha256": digest,
        "detail": rewrite.detail,
    }
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    write_atomically(record_path(target), text.encode())  # after the rewrite: complete
    log.info("%s: %s, verified; copy at %s", source.name, rewrite.detail, target)
    return target


def record_path(rewrite: Path) -> Path:
    """The integrity record beside the cached rewrite ``rewrite``."""
    return rewrite.with_name(rewrite.name + RECORD_SUFFIX)


def cached_problem(
    rewrite: Path, source_sha256: str | None = None, *, fresh: bool = False
) -> str | None:
    """Why the cached rewrite ``rewrite`` cannot be trusted (None: it can): no readable
    record, made from another source than ``source_sha256`` (when given), or bytes whose
    sha256 is not the recorded one (hashed once per process and file state; ``fresh``:
    hashed now). Phrased to follow the file's name."""
    try:
        record = json.loads(record_path(rewrite).read_text(encoding="utf-8"))
        expected, made_from = str(record["sha256"]), str(record["source_sha256"])
    except FileNotFoundError:
        return f"has no integrity record ({record_path(rewrite).name})"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"has an unreadable integrity record ({record_path(rewrite).name}: {e})"
    if source_sha256 is not None and made_from != source_sha256:
        return f"was made from another file (sha256 {made_from}, the source is {source_sha256})"
    try:
        actual = sha256_of(rewrite) if fresh else _HASHES.sha256(rewrite)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if actual != expected:
        return f"is corrupt (sha256 {actual}, recorded {expected})"
    return None


def check_cache(cache_dir: str | os.PathLike[str]) -> list[tuple[Path, str | None]]:
    """Every cached rewrite in ``cache_dir`` and why it cannot be trusted (None: it can),
    each hashed now (``livecam models verify``)."""
    rewrites = sorted(Path(cache_dir).glob("*.dynbatch*.onnx"))
    return [(rewrite, cached_problem(rewrite, fresh=True)) for rewrite in rewrites]


def rewrite_and_verify(
    model: onnx.ModelProto, original: str | os.PathLike[str] | bytes, fix_reshape: bool = True
) -> Rewrite:
    """``rewrite_batch_axis`` of ``model`` (loaded from ``original``), refused unless
    ``verify_batching`` passes."""
    rewrite = rewrite_batch_axis(model, fix_reshape)
    if rewrite.model is None:
        return rewrite
    failed = verify_batching(original, rewrite.model.SerializeToString())
    return rewrite if failed is None else Rewrite(None, f"{rewrite.detail}, but {failed}")
