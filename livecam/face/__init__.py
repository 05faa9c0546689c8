"""The face pipeline: parts, presets and the swap stage built from them."""
