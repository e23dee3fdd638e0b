"""graphpool for PyTorch: variant graphs and pipeline microbatches sharing one planned footprint.

    import graphpool_torch
    graphed = graphpool_torch.GraphedVariants(block, {"cp1": (x1,), "cp2": (x2,), "cp4": (x4,)}, in_flight=2)
    y0 = graphed(x2, microbatch=0)   # the variant is picked by the arguments' shapes
    y1 = graphed(x4, microbatch=1)
    y0.sum().backward(); y1.sum().backward()
    graphed.memory()                 # physical, plan, live bound, scratch, per window, torch_reserved
    graphed.release()

Every (chunk, slot, variant) is captured once, up front, through PyTorch's CUDAPluggableAllocator into
frames whose variants share physical pages (graphpool's libgraphpool_c, loaded with ctypes).
"""

try:
    import torch  # noqa: F401
except ImportError as e:
    raise ImportError("graphpool_torch needs PyTorch, a CUDA 13 build of 2.9 or later (e.g. the cu130 wheels), "
                      f"which this Python cannot import ({e})") from e

from ._graphed import GraphedVariants, in_flight_schedule, slot_debug_requested
from ._native import GraphpoolError, library_path

__all__ = ["GraphedVariants", "GraphpoolError", "in_flight_schedule", "library_path", "slot_debug_requested"]
