"""One ONNX model in one ONNX Runtime session: its I/O contract, the provider really used,
and batch-first runs.

``OnnxModel`` is what every ONNX part holds. Inputs are cast to the dtype the model
declares (an fp16 export takes float16), and ``run_batch`` runs a batch in one call when
the model's batch axis is dynamic, else in chunks of its fixed batch size.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from livecam.pipeline.parts import Providers
from livecam.runtime.providers import Prefer, create_session, short_name

log = logging.getLogger(__name__)

_ORT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True)
class RuntimeOptions:
    """How ONNX Runtime sessions are made: the provider preference, CPU threads (0: ORT's
    default) and where TensorRT keeps its engine and timing caches."""

    provider: Prefer = "auto"
    threads: int = 0
    cache_dir: Path | None = None
    provider_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model: name, shape (a str or None for a dynamic axis) and
    NumPy dtype."""

    name: str
    shape: tuple[int | str | None, ...]
    dtype: type[np.generic]

    @property
    def fixed_batch(self) -> int | None:
        """The batch size the model requires (axis 0), or None when it is dynamic."""
        first = self.shape[0] if self.shape else None
        return first if isinstance(first, int) and first > 0 else None


def _spec(arg: Any) -> TensorSpec:
    return TensorSpec(arg.name, tuple(arg.shape), _ORT_DTYPES.get(arg.type, np.float32))


class OnnxModel:
    """An ONNX file loaded on the best provider for ``options.provider``.

    ``providers`` says what was asked for and what the session really uses (ORT falls back
    to CPU silently; ``create_session`` warns loudly). ``model_id`` defaults to the file
    name without its extension.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        options: RuntimeOptions | None = None,
        *,
        model_id: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.options = options if options is not None else RuntimeOptions()
        self.model_id = model_id if model_id is not None else self.path.stem
        opts = ort.SessionOptions()
        if self.options.threads > 0:
            opts.intra_op_num_threads = self.options.threads
        self.session, used = create_session(
            self.path, self.options.provider, opts, trt_cache_dir=self.options.cache_dir
        )
        self.providers = Providers(
            requested=(self.options.provider,),
            used=tuple(short_name(p) for p in self.session.get_providers()[:1]) or (used,),
        )
        self.inputs = tuple(_spec(a) for a in self.session.get_inputs())
        self.outputs = tuple(_spec(a) for a in self.session.get_outputs())

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs]

    @property
    def fixed_batch(self) -> int | None:
        """The first input's required batch size, or None when its batch axis is dynamic."""
        return self.inputs[0].fixed_batch if self.inputs else None

    def run(self, feeds: Mapping[str, npt.ArrayLike]) -> list[npt.NDArray[Any]]:
        """Every output for ``feeds`` (each cast to the dtype its input declares)."""
        types = {s.name: s.dtype for s in self.inputs}
        cast = {
            name: np.ascontiguousarray(np.asarray(value), dtype=types.get(name, np.float32))
            for name, value in feeds.items()
        }
        return list(self.session.run(None, cast))

    def run_batch(
        self, feeds: Mapping[str, npt.ArrayLike], batched: Sequence[str]
    ) -> list[npt.NDArray[Any]]:
        """Every output for a batch: the inputs named in ``batched`` share axis 0 (the
        batch), the others are fed whole to each call. One call when the batch axis is
        dynamic, else chunks of the fixed batch size (the last one padded by repeating its
        last item); outputs are concatenated along axis 0, padding removed."""
        arrays = {k: np.asarray(v) for k, v in feeds.items()}
        n = len(arrays[batched[0]])
        step = self.fixed_batch
        if step is None or step == n:
            return self.run(arrays)
        parts: list[list[npt.NDArray[Any]]] = []
        for start in range(0, n, step):
            chunk = dict(arrays)
            for name in batched:
                piece = arrays[name][start : start + step]
                if len(piece) < step:
                    pad = np.repeat(piece[-1:], step - len(piece), axis=0)
                    piece = np.concatenate([piece, pad])
                chunk[name] = piece
            outs = self.run(chunk)
            parts.append([o[: min(step, n - start)] for o in outs])
        return [np.concatenate(column) for column in zip(*parts, strict=True)]

    def warmup(self) -> None:
        """One run on zeros of the declared shapes (dynamic axes: 1, or 64 for spatial
        axes), so the first real call does not pay for allocation and kernel choice."""
        feeds: dict[str, npt.NDArray[Any]] = {}
        for spec in self.inputs:
            dims = [
                d if isinstance(d, int) and d > 0 else (1 if i == 0 else 64)
                for i, d in enumerate(spec.shape)
            ]
            feeds[spec.name] = np.zeros(dims, spec.dtype)
        self.session.run(None, feeds)

    def close(self) -> None:
        """Drop the session (ORT frees its memory when the last reference goes)."""
        self.session = None
