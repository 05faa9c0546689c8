"""Telemetry: frame rates, per-stage timings, latency, drops, memory and GPU readings."""
