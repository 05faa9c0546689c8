"""Swapper parts: the classic mesh warp and the neural swappers, and crop reuse."""
