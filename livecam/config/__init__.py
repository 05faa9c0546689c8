"""Configuration: ``schema`` (the settings tree; the swap section in ``swap``), ``setting``
(each field's option, help, range and choices), ``validation``, ``tomlfile`` (config files),
``specs`` (source and sink specs, parsed once), ``inputs`` (the user's input files) and
``keycombo`` (the hotkeys' key combos)."""
