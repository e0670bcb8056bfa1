"""Where a component may read a tensor's value on the host.

On the CPU a host read (`bool(mask.any())`, `int(due.sum())`) costs nothing, so a component
may branch on it to skip work no world needs (a node none of whose worlds is due, a sensor
whose worlds all sample at once). On a GPU the same read waits for the device, so components
built there take their branch-free path instead: the same arithmetic on every world, masked,
with the same results for every world (tests/test_host_syncs.py runs both on the CPU).
"""

from __future__ import annotations

import torch

__all__ = ["host_reads_are_free"]


def host_reads_are_free(device: torch.device | str) -> bool:
    """True where reading a tensor's value on the host does not wait for a device (the CPU);
    a component decides once, when it is built."""
    return torch.device(device).type == "cpu"
