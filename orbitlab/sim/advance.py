"""Advancing a world over one timestep: chief orbit (RK4, orbit_dt schedule), clock, actuators."""

from __future__ import annotations

from orbitlab.orbit.propagation import hermite_interpolate, rk4_propagate, rk4_propagate_from
from orbitlab.orbit.types import CentralBody
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.records import Elements, Switches, WorldState

f64 = wp.float64
vec3d = wp.vec3d


@wp.func
def advance_world(
    body: CentralBody,
    sw: Switches,
    el: Elements,
    state: WorldState,
    w: int,
    g_R: wp.vec3d,
    a_fb: wp.vec3d,
    use_j2: int,
    K: int,
    substeps: int,
    nrw: int,
    ncmg: int,
):
    """Advance the chief, the clock and the actuator states of world w by one timestep.

    g_R is the central gravity at the chief's current position (km/s^2), which the
    loads have computed already: RK4's first stage from R reuses it.

    The chief's motion over the step depends only on its state and this step's
    load feedback, so it is advanced in the same launch as the loads, before
    MuJoCo integrates the bodies over the same interval. use_j2, K (segment
    steps), substeps (RK4 substeps per step) and the wheel and CMG counts are
    passed in so that a specialised kernel can make them constants.
    """
    dt = sw.timestep
    if K <= 1:
        h = dt / f64(substeps)
        R, V = rk4_propagate_from(body, use_j2, state.R[w], state.V[w], g_R, a_fb, h, substeps)
        state.R[w] = R
        state.V[w] = V
    else:
        T = dt * f64(K)
        k = state.seg_k[w]
        if k == 0:
            # Predict the segment's end with the feedback at its start.
            state.seg_R0[w] = state.R[w]
            state.seg_V0[w] = state.V[w]
            R1, V1 = rk4_propagate_from(body, use_j2, state.R[w], state.V[w], g_R, a_fb, T, 1)
            state.seg_R1[w] = R1
            state.seg_V1[w] = V1
            state.seg_a_sum[w] = vec3d(f64(0.0), f64(0.0), f64(0.0))
        state.seg_a_sum[w] = state.seg_a_sum[w] + a_fb
        k = k + 1
        if k == K:
            # Close the segment from its start with the time-averaged feedback.
            R, V = rk4_propagate(
                body, use_j2, state.seg_R0[w], state.seg_V0[w], state.seg_a_sum[w] / f64(K), T, 1
            )
            state.R[w] = R
            state.V[w] = V
            k = 0
        else:
            R, V = hermite_interpolate(
                state.seg_R0[w],
                state.seg_V0[w],
                state.seg_R1[w],
                state.seg_V1[w],
                T,
                f64(k) / f64(K),
            )
            state.R[w] = R
            state.V[w] = V
        state.seg_k[w] = k
    n = state.nstep[w] + wp.int64(1)
    state.nstep[w] = n
    state.t[w] = state.t_anchor[w] + f64(n) * dt
    for i in range(nrw):
        state.wheel_momentum[w, i] = (
            state.wheel_momentum[w, i] + state.wheel_torque_applied[w, i] * dt
        )
    for i in range(ncmg):
        state.cmg_angle[w, i] = wp.clamp(
            state.cmg_angle[w, i] + state.cmg_rate_applied[w, i] * dt,
            el.cmg_min_angle[i],
            el.cmg_max_angle[i],
        )
