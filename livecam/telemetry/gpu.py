"""NVIDIA GPU readings (name, VRAM of this process or the whole GPU, utilisation) through
NVML, guarded when absent."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Protocol

log = logging.getLogger(__name__)

VramScope = Literal["process", "device"]


class GpuReader(Protocol):
    """Anything that returns a GPU reading (a dataclass such as ``GpuSnapshot``) or None."""

    def snapshot(self) -> Any | None: ...


@dataclass(frozen=True)
class GpuSnapshot:
    """One reading of one GPU."""

    index: int
    name: str
    vram_used_mb: float
    vram_total_mb: float
    util_percent: float  # GPU core utilisation over NVML's last sample period
    driver: str = ""
    #: this process's VRAM when NVML lists it among the GPU's processes, else None
    vram_process_mb: float | None = None
    #: what a single VRAM figure should show: "process" (vram_process_mb) or "device"
    #: (vram_used_mb, the whole GPU: no per-process figure, e.g. in a container whose
    #: process ids NVML cannot see, or before this process has touched the GPU)
    vram_scope: VramScope = "device"


class NvmlReader:
    """Initialises NVML once for one GPU; read with ``snapshot()``, release with ``close()``.

    Without an NVIDIA driver (or without the ``nvidia-ml-py`` package) ``available`` is
    False, ``error`` says why and ``snapshot()`` returns None. Never raises.
    """

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self.error: str | None = None
        self._nvml: Any = None
        self._handle: Any = None
        self._name = ""
        self._driver = ""
        try:
            import pynvml
        except ImportError:
            self.error = "the nvidia-ml-py package is not installed"
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:
            self.error = f"no NVIDIA driver/GPU found ({e})"
            return
        self._nvml = pynvml
        try:
            count = pynvml.nvmlDeviceGetCount()
            if index >= count:
                raise IndexError(f"GPU {index} requested but {count} found")
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._name = _text(pynvml.nvmlDeviceGetName(self._handle))
            self._driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except (pynvml.NVMLError, IndexError) as e:
            self.error = f"NVML could not open GPU {index}: {e}"
            self.close()

    @property
    def available(self) -> bool:
        return self._handle is not None

    def snapshot(self) -> GpuSnapshot | None:
        """Current VRAM and utilisation, or None when unavailable or the read fails."""
        if self._handle is None:
            return None
        nvml = self._nvml
        try:
            mem = nvml.nvmlDeviceGetMemoryInfo(self._handle)
            util = nvml.nvmlDeviceGetUtilizationRates(self._handle)
        except nvml.NVMLError as e:
            log.debug("NVML read failed: %s", e)
            return None
        mine = process_vram_mb(self._processes(), os.getpid())
        return GpuSnapshot(
            index=self.index,
            name=self._name,
            vram_used_mb=mem.used / 2**20,
            vram_total_mb=mem.total / 2**20,
            util_percent=float(util.gpu),
            driver=self._driver,
            vram_process_mb=mine,
            vram_scope="device" if mine is None else "process",
        )

    def _processes(self) -> list[Any]:
        """NVML's compute and graphics process records of this GPU (empty when unreadable)."""
        nvml, found = self._nvml, []
        for query in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            try:
                found += list(getattr(nvml, query)(self._handle))
            except (nvml.NVMLError, AttributeError) as e:
                log.debug("%s failed: %s", query, e)
        return found

    def close(self) -> None:
        """Release NVML. Safe to call twice."""
        nvml, self._nvml, self._handle = self._nvml, None, None
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError as e:
                log.debug("nvmlShutdown failed: %s", e)

    def __enter__(self) -> NvmlReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def process_vram_mb(processes: Iterable[Any], pid: int) -> float | None:
    """VRAM used by ``pid`` in MB from NVML process records (``pid``, ``usedGpuMemory``
    in bytes, None when the driver withholds it), summed over its contexts; None when
    ``pid`` is not listed or no figure is given."""
    used = [p.usedGpuMemory for p in processes if p.pid == pid]
    known = [u for u in used if isinstance(u, int) and 0 <= u < 2**63]
    return sum(known) / 2**20 if known else None


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def gpu_snapshot(index: int = 0) -> GpuSnapshot | None:
    """One reading of GPU ``index``, or None when there is no NVIDIA GPU/driver."""
    with NvmlReader(index) as reader:
        return reader.snapshot()
