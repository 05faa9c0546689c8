"""`livecam bench`: the live pipeline's figures on a synthetic or file source, and the
naive loop it is compared with."""
