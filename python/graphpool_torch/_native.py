"""The plug-in library (libgraphpool_c, built by the project's CMake) over ctypes.

Found, in order: ``$GRAPHPOOL_TORCH_LIBRARY``; next to this package (``pip install``, or the build
tree's ``python/`` folder); an installed graphpool-torch distribution (when this copy is the source
tree's); the source tree's CMake builds (``build/bindings``, ``build/*/bindings``). PyTorch is imported
first so the CUDA runtime the library links (CUDA 13) is the one PyTorch already loaded.
"""

from __future__ import annotations

import ctypes
import glob
import os
from pathlib import Path

GRAPHPOOL_OK = 0


class GraphpoolError(RuntimeError):
    """An error from graphpool: its message names what was wrong and what to change."""


def _installed() -> list[Path]:
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        return [Path(distribution("graphpool-torch").locate_file("graphpool_torch/libgraphpool_c.so"))]
    except (ImportError, PackageNotFoundError):
        return []


def _candidates() -> list[Path]:
    here = Path(__file__).resolve().parent
    explicit = os.environ.get("GRAPHPOOL_TORCH_LIBRARY")
    if explicit:
        return [Path(explicit)]
    found = [Path(p) for p in sorted(glob.glob(str(here / "libgraphpool_c.so*")))] + _installed()
    for pattern in ("build/bindings", "build/*/bindings"):
        found += [Path(p) for p in sorted(glob.glob(str(here.parent.parent / pattern / "libgraphpool_c.so*")))]
    return found


def library_path() -> Path:
    """The plug-in library's path. Raises GraphpoolError, naming where it looked, when there is none."""
    for path in _candidates():
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in _candidates()) or "next to the package, an installed graphpool-torch, build/bindings"
    raise GraphpoolError(
        "graphpool_torch: libgraphpool_c.so not found (looked at " + looked + "); install the package with "
        "`pip install .` from the repository, build it with CMake, or set GRAPHPOOL_TORCH_LIBRARY to its path"
    )


_library: ctypes.CDLL | None = None
_library_file: str | None = None  # the path ctypes loaded _library from


def library_file() -> str:
    """The absolute path of the file library() loaded (loading it first)."""
    library()
    return _library_file


def library() -> ctypes.CDLL:
    global _library, _library_file
    if _library is None:
        import torch  # loads the CUDA runtime the plug-in links

        if not (torch.version.cuda or "").startswith("13."):
            raise GraphpoolError(f"graphpool_torch: PyTorch {torch.__version__} is built for CUDA {torch.version.cuda}; "
                                 "graphpool's plug-in needs a CUDA 13 build of PyTorch (e.g. the cu130 wheels)")
        path = os.path.abspath(library_path())
        lib = ctypes.CDLL(path)  # CUDAPluggableAllocator loads this same file (library_file())
        size_p = ctypes.POINTER(ctypes.c_size_t)
        int_p = ctypes.POINTER(ctypes.c_int)
        signatures = {
            "graphpool_torch_create": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_size_t],
            "graphpool_torch_destroy": [size_p],
            "graphpool_torch_exists": [int_p],
            "graphpool_torch_shape": [int_p, int_p],
            "graphpool_torch_slot_of": [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_p],
            "graphpool_torch_select": [ctypes.c_int, ctypes.c_int, ctypes.c_int],
            "graphpool_torch_deselect": [],
            "graphpool_torch_used_bytes": [ctypes.c_int, ctypes.c_int, ctypes.c_int, size_p],
            "graphpool_torch_frame_physical_bytes": [ctypes.c_int, ctypes.c_int, size_p],
            "graphpool_torch_first_microbatches": [int_p],
            "graphpool_torch_physical_bytes": [size_p],
            "graphpool_torch_live_segments": [size_p],
            "graphpool_torch_plan_bytes": [size_p, size_p, size_p],
            "graphpool_torch_add_persistent": [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                               int_p],
            "graphpool_torch_window_pages": [ctypes.c_int, ctypes.c_int, ctypes.c_int, size_p, size_p],
            "graphpool_torch_page_bytes": [size_p],
            "graphpool_torch_lay_out": [],
            "graphpool_torch_frame_range": [ctypes.c_int, ctypes.c_int, size_p, size_p],
        }
        for name, arguments in signatures.items():
            function = getattr(lib, name)
            function.argtypes = arguments
            function.restype = ctypes.c_int
        lib.graphpool_last_error.argtypes = []
        lib.graphpool_last_error.restype = ctypes.c_char_p
        _library = lib
        _library_file = path
    return _library


def call(name: str, *arguments) -> None:
    """Calls the library's function `name`; raises GraphpoolError with the library's message when it fails."""
    lib = library()
    if getattr(lib, name)(*arguments) != GRAPHPOOL_OK:
        raise GraphpoolError(lib.graphpool_last_error().decode())


def _out(kind, name: str, *arguments) -> int:
    value = kind(0)
    call(name, *arguments, ctypes.byref(value))
    return int(value.value)


def size_out(name: str, *arguments) -> int:
    """Calls `name` with a trailing size_t* and returns what it wrote."""
    return _out(ctypes.c_size_t, name, *arguments)


def int_out(name: str, *arguments) -> int:
    """Calls `name` with a trailing int* and returns what it wrote."""
    return _out(ctypes.c_int, name, *arguments)


def strings(values: list[str]):
    array = (ctypes.c_char_p * len(values))(*[v.encode() for v in values])
    return array, len(values)
