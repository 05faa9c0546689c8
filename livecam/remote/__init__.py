"""Swap on another machine's GPU: the client half (``swapper``: a ``Swapper`` part that
sends aligned crops to NVIDIA Triton and falls back to the local swap) and the server half
(``serve``: the preset's swapper on Triton through PyTriton; ``export``: a Triton model
repository for NVIDIA's container)."""
