"""Per-world misalignment of element axes: small random rotations drawn at reset."""

from __future__ import annotations

import torch


def rotate_small(axes: torch.Tensor, std_rad: float, generator: torch.Generator) -> torch.Tensor:
    """Rotate unit axes (n, 3) by random rotations (rotation vector ~ N(0, std^2 I)) per world.

    Returns (num_worlds, n, 3) for a leading world dimension given by `axes`'s
    first axis when it has three dims, else (n, 3). Uses Rodrigues' formula.
    """
    r = std_rad * torch.randn(axes.shape, generator=generator, dtype=axes.dtype, device=axes.device)
    angle = torch.linalg.vector_norm(r, dim=-1, keepdim=True)
    k = r / angle.clamp_min(1e-300)
    cos, sin = torch.cos(angle), torch.sin(angle)
    kxa = torch.cross(k, axes, dim=-1)
    kda = (k * axes).sum(-1, keepdim=True)
    return axes * cos + kxa * sin + k * kda * (1.0 - cos)
