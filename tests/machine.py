"""The machine-code key of pinned digests: results pinned bit for bit depend on it.

numba compiles for the host CPU and OpenBLAS picks its kernels by CPU, so another processor may
round differently at the same commit. Pins recorded on such a machine are kept under its key.
"""

from __future__ import annotations


def platform() -> str:
    """The host CPU as LLVM names it (numba's compile target), e.g. ``"znver3"``; OpenBLAS's
    choice of kernels follows the same CPU."""
    import llvmlite.binding as ll

    return str(ll.get_host_cpu_name())
