"""Telemetry: frame rates, per-stage timings, latency, drops, memory and GPU readings.

``hub`` (``Telemetry``: fed by the pipeline threads, read and subscribed to), ``meters``
(rates, face counts, percentiles), ``snapshot`` (``Snapshot``, ``FrameReport``, labels),
``gpu`` (NVML readings), ``doctor`` (what this machine can do: `livecam doctor`'s checks).
"""
