"""The source face: photos analysed once, cached, and shown as a face sheet."""
