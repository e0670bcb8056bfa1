"""Multi-process training under torchrun: process group, ranks, devices, one run directory.

    torchrun --nproc_per_node=2 scripts/train.py num_envs=128            # one machine
    torchrun --nnodes=2 --node_rank=<0|1> --nproc_per_node=8 \\
        --rdzv_backend=c10d --rdzv_endpoint=<host0>:29400 scripts/train.py  # two machines

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE; without them a run is single-process.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class ProcessInfo:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def process_info() -> ProcessInfo:
    """This process's rank, local rank and world size (torchrun's environment, checked:
    ArgumentError naming a bad variable)."""
    from orbitlab.cli.environment import distributed_ranks

    return ProcessInfo(*distributed_ranks())


def init(info: ProcessInfo, device: str | None) -> str | None:
    """Join the process group (nccl for CUDA devices, gloo otherwise); returns the
    device this process simulates and learns on (`cuda:<local rank>` on GPUs)."""
    if not info.distributed:
        return device
    use_cuda = (device or "").startswith("cuda") or (device is None and torch.cuda.is_available())
    if use_cuda:
        device = f"cuda:{info.local_rank}"
        torch.cuda.set_device(info.local_rank)
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(
            "nccl" if use_cuda else "gloo", rank=info.rank, world_size=info.world_size
        )
    return device


def shared_run_dir(info: ProcessInfo, run_dir: Path) -> Path:
    """Rank 0's run directory, on every rank. A rank whose launcher made another one
    (its own timestamp) removes it when it holds nothing but the launcher's config."""
    if not info.distributed:
        return run_dir
    chosen = [str(run_dir)]
    torch.distributed.broadcast_object_list(chosen, src=0)
    shared = Path(chosen[0])
    launcher_only = run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {
        ".hydra",
        "train.log",
    }
    if shared.resolve() != run_dir.resolve() and launcher_only:
        shutil.rmtree(run_dir, ignore_errors=True)
    return shared


def finish(info: ProcessInfo) -> None:
    """Leave the process group."""
    if info.distributed and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
