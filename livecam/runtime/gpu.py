"""NVIDIA GPU readings (name, VRAM, utilisation) through NVML, guarded when absent."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuSnapshot:
    """One reading of one GPU."""

    index: int
    name: str
    vram_used_mb: float
    vram_total_mb: float
    util_percent: float  # GPU core utilisation over NVML's last sample period
    driver: str = ""


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
        return GpuSnapshot(
            index=self.index,
            name=self._name,
            vram_used_mb=mem.used / 2**20,
            vram_total_mb=mem.total / 2**20,
            util_percent=float(util.gpu),
            driver=self._driver,
        )

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


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def gpu_snapshot(index: int = 0) -> GpuSnapshot | None:
    """One reading of GPU ``index``, or None when there is no NVIDIA GPU/driver."""
    with NvmlReader(index) as reader:
        return reader.snapshot()
