"""Warp records shared by the kernels: switches, element tables, per-world state.

All three are built from the tables of `orbitlab.sim.schema`.
"""

from __future__ import annotations

from orbitlab.sim.schema import (
    element_record_fields,
    switch_record_fields,
    warp_struct,
    world_record_fields,
)

Switches = warp_struct(
    "Switches",
    "Model switches (0/1) and the chief schedule (`orbitlab.sim.schema.SWITCHES`).",
    switch_record_fields(),
)

Elements = warp_struct(
    "Elements",
    "Element tables (body ids, body-axes geometry, limits), one row per element "
    "(columns: `orbitlab.sim.schema.ELEMENT_KINDS`).",
    element_record_fields(),
)

WorldState = warp_struct(
    "WorldState",
    "Per-world orbit-layer state, commands and outputs "
    "(fields, units and roles: `orbitlab.sim.schema.WORLD_FIELDS`).",
    world_record_fields(),
)
