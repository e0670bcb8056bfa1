"""Start Warp without the notices that do not concern the user.

On a machine without an NVIDIA driver, Warp's native start-up prints "Warp CUDA warning:
Could not find or load the NVIDIA CUDA driver" to stderr on every command, although
orbitlab then runs on the CPU as asked. `init_warp()` starts Warp with that one write
hidden when no CUDA driver can be loaded; set ORBITLAB_VERBOSE=1 to see it anyway. Where a
driver exists nothing is hidden.

orbitlab's modules import Warp as `from orbitlab.quiet import wp`: the first such import
starts Warp with its log level at warnings (no banner, no per-module load lines; set
`warp.config.log_level = warp.LOG_INFO` to see them) and without that notice. `import
orbitlab` itself does not load Warp, so a process that needs only the orbit math or the
bridge client (numpy) loads neither Warp, MuJoCo nor torch.
"""

from __future__ import annotations

import ctypes
import os
import sys

import warp as wp


def cuda_driver_present() -> bool:
    """True if the NVIDIA driver library (libcuda) can be loaded on this machine."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def init_warp() -> None:
    """`wp.init()`, with the no-driver notice hidden on CPU-only machines (module doc)."""
    if os.environ.get("ORBITLAB_VERBOSE") or cuda_driver_present():
        wp.init()
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            wp.init()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


wp.config.log_level = wp.LOG_WARNING
init_warp()
