"""The face pipeline: parts and the swap stage built from them (the presets that name
the parts' models are in ``livecam.models.presets``)."""
