"""graphpool_torch's tests need PyTorch and a CUDA device; without either every test is skipped."""

import os
import sys
from pathlib import Path

# Deterministic cuBLAS needs its workspace configuration before the first cuBLAS call.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
# Import the package from the source tree (the library is found in build/ or next to an installed copy).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
