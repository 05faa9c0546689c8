"""PyTriton's proxy model with NumPy 2: tensors cross Triton's Python backend by DLPack.

PyTriton's proxy (the ``model.py`` that Triton's Python backend stub runs) converts tensors
with the stub's ``as_numpy()`` and ``pb_utils.Tensor(name, array)``. The stub of the
PyTriton releases that allow NumPy 2 reads NumPy's array descriptors through the NumPy 1
ABI, so with NumPy 2 every output comes back empty (0 bytes); the releases built for NumPy
2 pin NumPy below 2, which the rest of LiveCam cannot use. DLPack, the array-exchange ABI
both sides share, moves the same bytes correctly: ``proxy_files`` gives the proxy's files
with its two conversions done through DLPack. After handing a NumPy capsule to the stub,
the capsule is marked used the way NumPy expects (the stub marks it with another name),
so NumPy does not report a false error for every tensor.
"""

from __future__ import annotations

from typing import Any

INPUT_CALL = "request[input_name] = input_tensor.as_numpy()"
OUTPUT_CALL = "pb_utils.Tensor(name, value)"
ANCHOR = "def _wrap_response("
HELPERS = '''
import ctypes as _ctypes

import numpy as _np

_USED_CAPSULE = b"used_dltensor"
_set_capsule_name = _ctypes.pythonapi.PyCapsule_SetName
_set_capsule_name.argtypes = [_ctypes.py_object, _ctypes.c_char_p]


def _dlpack_tensor(name, value):
    """Output tensor ``name`` from a NumPy array through DLPack (LiveCam's patch)."""
    capsule = _np.ascontiguousarray(value).__dlpack__()
    tensor = pb_utils.Tensor.from_dlpack(name, capsule)
    _set_capsule_name(capsule, _USED_CAPSULE)  # the stub owns it now
    return tensor


'''


def patched_proxy(source: str) -> str:
    """The proxy ``model.py`` text with both conversions through DLPack; ValueError when
    this PyTriton's proxy does not have the expected lines."""
    for needle in (INPUT_CALL, OUTPUT_CALL, ANCHOR):
        if needle not in source:
            raise ValueError(f"PyTriton's proxy model has no {needle!r}")
    source = source.replace(INPUT_CALL, "request[input_name] = _np.from_dlpack(input_tensor)")
    source = source.replace(OUTPUT_CALL, "_dlpack_tensor(name, value)")
    return source.replace(ANCHOR, HELPERS + ANCHOR, 1)


def use_dlpack(model: Any) -> None:
    """Make the PyTriton ``model`` (``pytriton.models.model.Model``) upload the patched
    proxy: its ``get_proxy_model_files`` is replaced on this instance only."""
    original = model.get_proxy_model_files

    def files() -> dict[str, bytes]:
        found: dict[str, bytes] = original()
        for key, content in found.items():
            if key.endswith("/model.py"):
                found[key] = patched_proxy(content.decode("utf-8")).encode("utf-8")
        return found

    model.get_proxy_model_files = files
