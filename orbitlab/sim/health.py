"""Per-world health: why a world was frozen, as one integer code per world.

The loads kernel checks every world before it computes that world's loads and again
after: a world whose chief or body state is not finite, whose chief is at or below
the central body's surface, whose bodies have left any plausible neighbourhood of the
chief (an integrator blow-up), whose loads are not finite (e.g. a non-finite central-body
constant or user force) or whose actuator commands are not finite is marked with the
first reason found and frozen: its chief, clock and actuator states stop, the CPU
backend stops stepping it in MuJoCo, and no value of it reaches another world. MuJoCo's
own instability warnings (bad qpos, qvel or qacc: MuJoCo then resets the world to its
initial state by itself) mark the world too. `OrbitData.reset` of a world clears its
code; the env layer terminates and resets such worlds.
"""

from __future__ import annotations

from orbitlab.quiet import wp  # Warp, started quietly

OK = wp.constant(0)
NONFINITE_CHIEF = wp.constant(1)
BELOW_SURFACE = wp.constant(2)
NONFINITE_STATE = wp.constant(3)
DIVERGED = wp.constant(4)
NONFINITE_LOADS = wp.constant(5)
NONFINITE_COMMAND = wp.constant(6)
MUJOCO_UNSTABLE = wp.constant(7)
NONFINITE_ACTION = wp.constant(8)

REASONS = {
    OK: "ok",
    NONFINITE_CHIEF: "chief position, velocity or time not finite",
    BELOW_SURFACE: "chief at or below the central body's surface",
    NONFINITE_STATE: "body position or velocity not finite",
    DIVERGED: "a body beyond 1e8 m or 1e5 m/s from the chief (integrator blow-up)",
    NONFINITE_LOADS: "orbit-layer or user loads not finite",
    NONFINITE_COMMAND: "an actuator command (thruster, wheel, magnetorquer, CMG) not finite",
    MUJOCO_UNSTABLE: "MuJoCo found a bad qpos, qvel or qacc (and reset the world itself)",
    NONFINITE_ACTION: "the policy's action not finite (on a GPU, where it is not refused)",
}
"""What each code means."""

MAX_DISTANCE_M = wp.constant(wp.float64(1.0e8))
"""A body this far from its chief (m) has left the chief-centred frame's domain."""
MAX_SPEED_MPS = wp.constant(wp.float64(1.0e5))
"""A body this fast relative to the chief frame (m/s) has blown up (orbital speeds are
~1e4 m/s in absolute terms; relative motion in a scene is far slower)."""


@wp.func
def finite3(v: wp.vec3d) -> int:
    """1 if all three components are finite."""
    if wp.isfinite(v[0]) and wp.isfinite(v[1]) and wp.isfinite(v[2]):
        return 1
    return 0


@wp.func
def chief_code(radius: wp.float64, R: wp.vec3d, V: wp.vec3d, t: wp.float64) -> int:
    """The chief's health: OK, NONFINITE_CHIEF or BELOW_SURFACE (radius in km)."""
    if finite3(R) == 0 or finite3(V) == 0 or not wp.isfinite(t):
        return NONFINITE_CHIEF
    if wp.length(R) <= radius:
        return BELOW_SURFACE
    return OK


@wp.func
def body_code(com: wp.vec3d, omega: wp.vec3d, v_com: wp.vec3d) -> int:
    """One body's health from its COM (m), rate (rad/s) and COM velocity (m/s)."""
    if finite3(com) == 0 or finite3(omega) == 0 or finite3(v_com) == 0:
        return NONFINITE_STATE
    if wp.length(com) > MAX_DISTANCE_M or wp.length(v_com) > MAX_SPEED_MPS:
        return DIVERGED
    return OK


@wp.func
def wrench_code(total: wp.spatial_vectord) -> int:
    """NONFINITE_LOADS if any component of a body's total wrench is not finite."""
    for k in range(6):
        if not wp.isfinite(total[k]):
            return NONFINITE_LOADS
    return OK


def describe(code: int) -> str:
    """The reason of a health code, e.g. 'chief at or below the central body's surface'."""
    return REASONS.get(int(code), f"unknown code {int(code)}")
