"""graphpool_torch's tests need PyTorch and a CUDA device; without either every test is skipped."""

import os
import sys
from pathlib import Path

# Deterministic cuBLAS needs its workspace configuration before the first cuBLAS call.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
# Import the package from the source tree (the library is found in build/ or next to an installed copy).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "counts_memory: checks that memory goes back (not meaningful under "
                            "compute-sanitizer, which keeps the Python frames it records alive)")
    config.addinivalue_line("markers", "planted_cuda_error: makes a CUDA API error on purpose (memcheck runs it "
                            "with API errors not reported)")


def pytest_sessionfinish(session, exitstatus):
    """Under CTest (GRAPHPOOL_PYTEST_SKIP_CODE set), a run where everything skipped (pytest: exit 0, or 5
    when the skip came at collection) exits with that code,
    so it is reported as skipped, and says why in one line."""
    code = os.environ.get("GRAPHPOOL_PYTEST_SKIP_CODE")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter is not None else {}
    if not code or exitstatus not in (0, 5) or not stats.get("skipped") or any(stats.get(k) for k in ("passed", "failed", "error")):
        return
    longrepr = stats["skipped"][0].longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    print(f"\ngraphpool_torch tests: skipped: {reason.removeprefix('Skipped: ')}")
    session.exitstatus = int(code)
