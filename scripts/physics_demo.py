"""The reference's complete CPU example, run on orbitlab with only its imports changed.

Two sides of a panel and a residual magnetic dipole on the bundled free body,
100 steps of 10 ms, then the environment at the chief.

    python scripts/physics_demo.py
"""

import numpy as np

from orbitlab.compat import MagneticBodySpec, MjoSpec, OrbitInit, SurfaceSpec, mjo_forward, mjo_step
from orbitlab.testdata import FREE_BODY_XML

spec = MjoSpec.from_xml_path(FREE_BODY_XML)
spec.mjorbit.use_j2 = True
spec.mjorbit.use_gravity_gradient = True
spec.mjorbit.use_drag = True
spec.mjorbit.use_srp = True
spec.mjorbit.use_magnetic = True

# These are the default Earth atmosphere parameters.
central = spec.mjorbit.central_body
central.atmosphere_h0 = 400.0  # km above the reference radius
central.atmosphere_rho0 = 2.62e-13  # kg/m^3 at that altitude
central.atmosphere_scale_height = 58.2  # km

for name, normal in [("panel_front", [0.0, 1.0, 0.0]), ("panel_back", [0.0, -1.0, 0.0])]:
    spec.mjorbit.add_surface(
        SurfaceSpec(
            name=name,
            body_name="spacecraft",
            center_of_pressure_body=[0.0, 0.0, 0.5],  # m from body COM, in body axes
            normal_body=normal,
            area=2.0,  # m^2 per side
            drag_coeff=2.2,
            srp_coeff=1.8,
        )
    )

spec.mjorbit.add_magnetic_body(
    MagneticBodySpec(
        name="residual_dipole",
        body_name="spacecraft",
        dipole_body=[0.0, 0.0, 0.05],  # A m^2
    )
)

radius_km = central.radius + 400.0
orbit = OrbitInit(
    R_eci=[radius_km, 0.0, 0.0],
    V_eci=[0.0, np.sqrt(central.gm / radius_km), 0.0],
    t=0.0,  # environment time in seconds since J2000
)
model = spec.compile(mj_timestep=0.01)
data = model.make_data(orbit=orbit)
mjo_forward(model, data)
for _ in range(100):
    mjo_step(model, data)

print("Chief atmospheric density [kg/m^3]:", data.env.atm_density)
print("Chief illumination factor:", data.env.eclipse)
print("Chief magnetic field [T]:", data.env.mag_field_eci)
