"""Batched rotation helpers in torch: quaternions are (w, x, y, z), scalar first."""

from __future__ import annotations

import torch


def quat_from_matrix(Q: torch.Tensor) -> torch.Tensor:
    """Unit quaternions (..., 4) with w >= 0 from rotation matrices (..., 3, 3)."""
    m = Q
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    candidates = torch.stack(
        [
            torch.stack(
                [
                    1 + trace,
                    m[..., 2, 1] - m[..., 1, 2],
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1],
                ],
                -1,
            ),
            torch.stack(
                [
                    m[..., 2, 1] - m[..., 1, 2],
                    1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
                    m[..., 0, 1] + m[..., 1, 0],
                    m[..., 0, 2] + m[..., 2, 0],
                ],
                -1,
            ),
            torch.stack(
                [
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 0, 1] + m[..., 1, 0],
                    1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
                    m[..., 1, 2] + m[..., 2, 1],
                ],
                -1,
            ),
            torch.stack(
                [
                    m[..., 1, 0] - m[..., 0, 1],
                    m[..., 0, 2] + m[..., 2, 0],
                    m[..., 1, 2] + m[..., 2, 1],
                    1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2],
                ],
                -1,
            ),
        ],
        -2,
    )
    # Pick the best-conditioned candidate (largest norm) per rotation.
    best = torch.linalg.vector_norm(candidates, dim=-1).argmax(-1)
    q = torch.gather(candidates, -2, best[..., None, None].expand(*best.shape, 1, 4))[..., 0, :]
    return canonical(q / torch.linalg.vector_norm(q, dim=-1, keepdim=True))


def canonical(q: torch.Tensor) -> torch.Tensor:
    """The same rotation with w >= 0."""
    return torch.where(q[..., :1] < 0, -q, q)


def quat_multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product a (x) b of (..., 4) quaternions."""
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def quat_from_rotation_vector(r: torch.Tensor) -> torch.Tensor:
    """Quaternions (..., 4) of rotation vectors (..., 3) (axis times angle, rad)."""
    angle = torch.linalg.vector_norm(r, dim=-1, keepdim=True)
    half = 0.5 * angle
    scale = torch.where(angle > 1e-12, torch.sin(half) / angle.clamp_min(1e-300), 0.5)
    return torch.cat([torch.cos(half), scale * r], -1)


def quat_angle(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Rotation angle between two unit quaternions, rad, in [0, pi]."""
    dot = (a * b).sum(-1).abs().clamp(max=1.0)
    return 2.0 * torch.acos(dot)


def rotate(Q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Q @ v for matrices (..., 3, 3) and vectors (..., 3)."""
    return (Q @ v[..., None])[..., 0]


def rotate_inverse(Q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Q^T @ v for matrices (..., 3, 3) and vectors (..., 3)."""
    return (Q.transpose(-1, -2) @ v[..., None])[..., 0]
