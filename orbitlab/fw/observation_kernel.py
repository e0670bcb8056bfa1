"""The observation pipeline as one Warp kernel: scale and clip every column of every fused
group, one thread per world.

The observation manager writes each distinct term's value once into `raw` (float32, the
value's own cast) and this kernel builds the groups' columns from it, in the torch
pipeline's order of operations: times the term's scale (float32) where it is not 1, then
clipped to its bounds (float32), NaN kept as torch's `clamp` keeps it
(`orbitlab.managers.observation_manager`).
"""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly

wp.set_module_options({"enable_backward": False, "fuse_fp": False})


@wp.struct
class ColumnTable:
    """Per output column j: where it comes from and what is done to it."""

    source: wp.array(dtype=int)  # column of `raw`
    scaled: wp.array(dtype=int)  # 1: times scale[j]
    scale: wp.array(dtype=wp.float32)
    clipped: wp.array(dtype=int)  # 1: clipped to [low[j], high[j]]
    low: wp.array(dtype=wp.float32)
    high: wp.array(dtype=wp.float32)


@wp.kernel
def observation_kernel(
    world_offset: int,
    chunk: int,
    raw: wp.array2d(dtype=wp.float32),
    table: ColumnTable,
    out: wp.array2d(dtype=wp.float32),
):
    """out[w, j] = clip(raw[w, source[j]] * scale[j]) for every column j of world w."""
    w = world_offset + wp.tid()
    for j in range(out.shape[1]):
        x = raw[w, table.source[j]]
        if table.scaled[j] != 0:
            x = x * table.scale[j]
        if table.clipped[j] != 0:  # comparisons, not min/max, which would drop a NaN
            if x < table.low[j]:  # noqa: PLR1730
                x = table.low[j]
            if x > table.high[j]:  # noqa: PLR1730
                x = table.high[j]
        out[w, j] = x
