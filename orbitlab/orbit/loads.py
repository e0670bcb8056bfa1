"""Surface and magnetic load laws (Warp, float64, SI on the MuJoCo side).

Each function is one equation of the spec; both backends call them.
"""

from __future__ import annotations

from orbitlab.orbit.constants import SOLAR_PRESSURE_N_PER_M2
from orbitlab.quiet import wp  # Warp, started quietly

f64 = wp.float64

DRAG_MIN_SPEED_M_S = 1.0e-10
"""Below this atmosphere-relative speed (m/s) drag is zero."""
_DRAG_MIN_SPEED_SQ = DRAG_MIN_SPEED_M_S**2  # computed in float64 here, not inside a kernel


@wp.func
def drag_force(rho: f64, u: wp.vec3d, n: wp.vec3d, area: f64, cd: f64) -> wp.vec3d:
    """F_D = -1/2 rho |u|^2 C_D A max(0, n.u_hat) u_hat, N.

    rho in kg/m^3, u (surface velocity relative to the atmosphere) in m/s, n the
    unit outward world normal, area in m^2. A back-facing plate gets zero.
    Evaluated as the identical -1/2 rho C_D A max(0, n.u) u, which needs neither
    |u| nor u_hat.
    """
    if wp.dot(u, u) < f64(_DRAG_MIN_SPEED_SQ):
        return wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    return -f64(0.5) * rho * cd * area * wp.max(f64(0.0), wp.dot(n, u)) * u


@wp.func
def srp_force(chi: f64, s_hat: wp.vec3d, n: wp.vec3d, area: f64, cr: f64) -> wp.vec3d:
    """F_SRP = -chi P_sun C_R A max(0, n.s_hat) s_hat, N (P_sun = 4.56e-6 N/m^2)."""
    exposed = area * wp.max(f64(0.0), wp.dot(n, s_hat))
    return -chi * f64(SOLAR_PRESSURE_N_PER_M2) * cr * exposed * s_hat


@wp.func
def magnetic_torque(m_world: wp.vec3d, B: wp.vec3d) -> wp.vec3d:
    """tau = m x B, N m (dipole m in A m^2, field B in T, both in world axes).

    Equal to Q (m_B x Q^T B) for a body-axes dipole m_B = Q^T m.
    """
    return wp.cross(m_world, B)
