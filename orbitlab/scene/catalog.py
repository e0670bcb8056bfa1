"""The bundled spacecraft assets and their orbit-layer elements.

Each MJCF file in `orbitlab/assets/` is one standalone spacecraft whose root body carries a
free joint; this module pairs it with the orbit-layer elements that MuJoCo does not model:
drag/SRP surfaces, residual dipoles, thrusters, reaction wheels, magnetorquers and CMGs.

    spec = SimSpec.from_xml_path(asset_path("formation_flyer"))
    spec.orbit.elements = formation_flyer_elements()
    model = spec.compile(timestep=0.01)

Conventions (assets/README.md has the numbers and their derivations):
  * body names are the MJCF's, unprefixed; a scene that attaches a file under a prefix
    ("chaser/") must prefix `body_name` the same way;
  * SurfaceCfg.center_of_pressure_body is relative to the body COM; every root body here
    has its COM at its origin, so a face centre is its centre of pressure;
  * ThrusterCfg.position_body is relative to the body ORIGIN; each thruster has a site of
    the same name whose +z axis is the force direction on the body;
  * a wheel's axial inertia is NOT in the MJCF body inertia (the orbit layer carries it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import orbitlab
from orbitlab.sim.elements import (
    ControlMomentGyroCfg,
    ElementSet,
    MagneticDipoleCfg,
    MagnetorquerCfg,
    ReactionWheelCfg,
    SurfaceCfg,
    ThrusterCfg,
)

ASSETS: dict[str, str] = {
    "free_body": "free_body.xml",
    "cubesat_3u": "cubesat_3u.xml",
    "cubesat_6u": "cubesat_6u.xml",
    "formation_flyer": "formation_flyer.xml",
    "docking_chaser": "docking_chaser.xml",
    "docking_target": "docking_target.xml",
    "station_module": "station_module.xml",
    "arm_bus": "arm_bus.xml",
    "solar_array_sat": "solar_array_sat.xml",
    "client_sat": "client_sat.xml",
    "oru": "oru.xml",
    "oru_worksite": "oru_worksite.xml",
}
"""Short asset name -> MJCF file name in the package's assets folder."""

CD = 2.2
"""Drag coefficient of every surface (free-molecular flat plate)."""
CR_CELLS = 1.21
"""SRP coefficient of solar cells (mostly absorbed, ~21 % reflected)."""
CR_BODY = 1.6
"""SRP coefficient of MLI / painted structure."""

_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def asset_dir() -> Path:
    """The folder holding the bundled MJCF files (shipped with the package)."""
    return Path(orbitlab.__file__).parent / "assets"


def asset_path(name_or_file: str) -> Path:
    """Path of a bundled asset, by short name ('arm_bus') or file name ('arm_bus.xml')."""
    file = ASSETS.get(name_or_file, name_or_file)
    if file not in ASSETS.values():
        raise ValueError(f"unknown asset '{name_or_file}'; known: {', '.join(ASSETS)}")
    return asset_dir() / file


# ---------------------------------------------------------------------------- helpers
def _box_faces(
    body: str, half: tuple[float, float, float], cr: float = CR_BODY, cells: tuple[str, ...] = ()
) -> list[SurfaceCfg]:
    """The six faces of a box centred on the body COM; faces named in `cells` get CR_CELLS."""
    surfaces = []
    for i, axis in enumerate("xyz"):
        j, k = (i + 1) % 3, (i + 2) % 3
        area = 4.0 * half[j] * half[k]
        for sign, tag in ((1.0, "p"), (-1.0, "n")):
            name = f"face_{tag}{axis}"
            normal = [0.0, 0.0, 0.0]
            normal[i] = sign
            surfaces.append(
                SurfaceCfg(
                    name=name,
                    body_name=body,
                    normal_body=tuple(normal),
                    center_of_pressure_body=tuple(half[i] * n for n in normal),
                    area=area,
                    drag_coeff=CD,
                    srp_coeff=CR_CELLS if name in cells else cr,
                )
            )
    return surfaces


def _panel(
    name: str,
    body: str,
    mid: tuple[float, float, float],
    normal: tuple[float, float, float],
    area: float,
    half_thickness: float,
) -> list[SurfaceCfg]:
    """Both sides of a flat panel: '<name>_cells' on `normal` (CR_CELLS) and '<name>_back'
    opposite (CR_BODY), each centred half a thickness off the mid-plane point `mid`."""
    return [
        SurfaceCfg(
            name=f"{name}_{tag}",
            body_name=body,
            area=area,
            drag_coeff=CD,
            srp_coeff=cr,
            normal_body=tuple(s * n + 0.0 for n in normal),
            center_of_pressure_body=tuple(
                c + s * half_thickness * n for c, n in zip(mid, normal, strict=True)
            ),
        )
        for tag, s, cr in (("cells", 1.0, CR_CELLS), ("back", -1.0, CR_BODY))
    ]


def _wheels(
    body: str, inertia: float, max_speed: float, max_torque: float
) -> list[ReactionWheelCfg]:
    """Three orthogonal wheels 'rw_x', 'rw_y', 'rw_z' (inertia kg m^2, rad/s, N m)."""
    return [
        ReactionWheelCfg(
            name=f"rw_{a}",
            body_name=body,
            axis_body=axis,
            inertia=inertia,
            max_speed=max_speed,
            max_torque=max_torque,
        )
        for a, axis in _AXES.items()
    ]


def _magnetorquers(body: str, max_dipole: float) -> list[MagnetorquerCfg]:
    """Three orthogonal torque rods 'mtq_x', 'mtq_y', 'mtq_z' (A m^2)."""
    return [
        MagnetorquerCfg(name=f"mtq_{a}", body_name=body, axis_body=axis, max_dipole=max_dipole)
        for a, axis in _AXES.items()
    ]


def _thrusters(
    body: str, prefix: str, table: list[tuple[tuple, tuple]], max_force: float
) -> list[ThrusterCfg]:
    """Thrusters f'{prefix}{i:02d}' from (position from body origin m, force direction)."""
    return [
        ThrusterCfg(
            name=f"{prefix}{i:02d}",
            body_name=body,
            position_body=pos,
            direction_body=direction,
            max_force=max_force,
        )
        for i, (pos, direction) in enumerate(table)
    ]


def _dipole(body: str, moment: tuple[float, float, float]) -> list[MagneticDipoleCfg]:
    return [MagneticDipoleCfg(name="residual", body_name=body, dipole_body=moment)]


# ----------------------------------------------------------------------------- assets
def cubesat_3u_elements() -> ElementSet:
    """3U CubeSat: 6 faces (cells on +-x, +-y), 0.023 A m^2 residual, 3 x 0.2 A m^2 rods,
    3 wheels of 2e-5 kg m^2 (800 rad/s, 1 mN m)."""
    return ElementSet(
        surfaces=_box_faces(
            "bus", (0.05, 0.05, 0.17), cr=1.5, cells=("face_px", "face_nx", "face_py", "face_ny")
        ),
        dipoles=_dipole("bus", (0.01, -0.005, 0.02)),
        magnetorquers=_magnetorquers("bus", 0.2),
        wheels=_wheels("bus", 2.0e-5, 800.0, 1.0e-3),
    )


def cubesat_6u_elements() -> ElementSet:
    """6U CubeSat: 6 faces + 2 deployed wings (cells +x), 0.03 A m^2 residual,
    3 x 0.4 A m^2 rods, 3 wheels of 5e-5 kg m^2 (800 rad/s, 2 mN m)."""
    wings = [
        surface
        for side, y in (("left", 0.273), ("right", -0.273))
        for surface in _panel(
            f"wing_{side}", "bus", (0.0, y, 0.0), (1.0, 0.0, 0.0), 0.30 * 0.34, 0.002
        )
    ]
    return ElementSet(
        surfaces=_box_faces("bus", (0.05, 0.113, 0.183), cr=1.5) + wings,
        dipoles=_dipole("bus", (0.02, 0.015, -0.015)),
        magnetorquers=_magnetorquers("bus", 0.4),
        wheels=_wheels("bus", 5.0e-5, 800.0, 2.0e-3),
    )


FORMATION_ARM_M = 0.17
"""Formation flyer thruster arm, m (0.51 N m = 2 x 1.5 N x 0.17 m)."""
FORMATION_THRUSTERS: list[tuple[tuple, tuple]] = (
    [((0.0, 0.0, s * FORMATION_ARM_M), d) for s in (1.0, -1.0) for d in ((1, 0, 0), (-1, 0, 0))]
    + [((s * FORMATION_ARM_M, 0.0, 0.0), d) for s in (1.0, -1.0) for d in ((0, 1, 0), (0, -1, 0))]
    + [((0.0, s * FORMATION_ARM_M, 0.0), d) for s in (1.0, -1.0) for d in ((0, 0, 1), (0, 0, -1))]
)
"""(position from the body origin, force direction) of thruster_00 .. thruster_11."""


def formation_flyer_elements() -> ElementSet:
    """Formation free-flyer: 6 faces, 0.02 A m^2 residual, 12 x 1.5 N thrusters, no wheels."""
    half = 0.5 * math.sqrt(6.0 * 0.315 / 17.8)
    return ElementSet(
        surfaces=_box_faces("bus", (half, half, half), cr=1.3),
        dipoles=_dipole("bus", (0.0, 0.0, 0.02)),
        thrusters=_thrusters("bus", "thruster_", FORMATION_THRUSTERS, 1.5),
    )


CHASER_THRUSTERS: list[tuple[tuple, tuple]] = (
    [((-0.45, y, z), (1, 0, 0)) for z in (0.3, -0.3) for y in (0.3, -0.3)]
    + [((0.45, y, z), (-1, 0, 0)) for z in (0.3, -0.3) for y in (0.3, -0.3)]
    + [((0.0, y, 0.0), d) for y in (0.4, -0.4) for d in ((0, 0, 1), (0, 0, -1))]
    + [((0.0, 0.0, z), d) for z in (0.4, -0.4) for d in ((0, 1, 0), (0, -1, 0))]
)
"""(position from the bus origin, force direction) of rcs_00 .. rcs_15."""


def docking_chaser_elements() -> ElementSet:
    """Docking chaser: 6 bus faces (cells +-z), 0.5 A m^2 residual, 16 x 22 N RCS,
    3 wheels of 2e-3 kg m^2 (600 rad/s, 0.05 N m)."""
    return ElementSet(
        surfaces=_box_faces("bus", (0.45, 0.4, 0.4), cells=("face_pz", "face_nz")),
        dipoles=_dipole("bus", (0.3, 0.2, -0.35)),
        thrusters=_thrusters("bus", "rcs_", CHASER_THRUSTERS, 22.0),
        wheels=_wheels("bus", 2.0e-3, 600.0, 0.05),
    )


def docking_target_elements() -> ElementSet:
    """Docking target: 6 bus faces + 2 wings (cells +z), 1 A m^2 residual,
    3 wheels of 0.01 kg m^2 (600 rad/s, 0.1 N m)."""
    wings = [
        surface
        for side, y in (("left", 1.8), ("right", -1.8))
        for surface in _panel(
            f"wing_{side}", "bus", (0.0, y, 0.0), (0.0, 0.0, 1.0), 2.0 * 1.0, 0.015
        )
    ]
    return ElementSet(
        surfaces=_box_faces("bus", (0.8, 0.7, 0.7)) + wings,
        dipoles=_dipole("bus", (0.6, -0.5, 0.6)),
        wheels=_wheels("bus", 0.01, 600.0, 0.1),
    )


def station_module_elements() -> ElementSet:
    """Station module: 2 end caps + 8 hull facets, 5 A m^2 residual, 4 CMGs (300 N m s)
    in a pyramid about x (skew 54.74 deg), zero net momentum at zero gimbal angle."""
    radius, length = 2.1, 8.0
    facet = 2.0 * radius * math.tan(math.pi / 8.0) * length
    surfaces = [
        SurfaceCfg(
            name=f"cap_{tag}",
            body_name="module",
            normal_body=(s, 0.0, 0.0),
            center_of_pressure_body=(s * length / 2, 0.0, 0.0),
            area=math.pi * radius**2,
            drag_coeff=CD,
            srp_coeff=1.5,
        )
        for s, tag in ((1.0, "px"), (-1.0, "nx"))
    ]
    for k in range(8):
        phi = k * math.pi / 4.0
        n = (0.0, math.cos(phi), math.sin(phi))
        surfaces.append(
            SurfaceCfg(
                name=f"hull_{k}",
                body_name="module",
                normal_body=n,
                center_of_pressure_body=tuple(radius * c for c in n),
                area=facet,
                drag_coeff=CD,
                srp_coeff=1.5,
            )
        )
    beta = math.acos(1.0 / math.sqrt(3.0))
    cmgs = []
    for k in range(4):
        phi = k * math.pi / 2.0
        gimbal = (math.cos(beta), math.sin(beta) * math.cos(phi), math.sin(beta) * math.sin(phi))
        cmgs.append(
            ControlMomentGyroCfg(
                name=f"cmg_{k}",
                body_name="module",
                gimbal_axis_body=gimbal,
                spin_axis_body=(0.0, -math.sin(phi), math.cos(phi)),
                rotor_momentum=300.0,
                max_rate=0.2,
            )
        )
    return ElementSet(surfaces=surfaces, dipoles=_dipole("module", (3.0, -2.0, 3.5)), cmgs=cmgs)


def arm_bus_elements() -> ElementSet:
    """Arm bus: 6 bus faces (cells +z), 0.2 A m^2 residual,
    3 wheels of 1e-3 kg m^2 (600 rad/s, 0.02 N m). The arm links carry no surfaces."""
    return ElementSet(
        surfaces=_box_faces("bus", (0.3, 0.3, 0.3), cells=("face_pz",)),
        dipoles=_dipole("bus", (0.1, 0.1, -0.15)),
        wheels=_wheels("bus", 1.0e-3, 600.0, 0.02),
    )


SERVICER_THRUSTERS: list[tuple[tuple, tuple]] = (
    [((-0.3, y, z), (1, 0, 0)) for z in (0.2, -0.2) for y in (0.2, -0.2)]
    + [((0.3, y, z), (-1, 0, 0)) for z in (0.2, -0.2) for y in (0.2, -0.2)]
    + [((0.0, y, 0.0), d) for y in (0.3, -0.3) for d in ((0, 0, 1), (0, 0, -1))]
    + [((0.0, 0.0, z), d) for z in (0.3, -0.3) for d in ((0, 1, 0), (0, -1, 0))]
)
"""(position from the arm bus's origin, force direction) of rcs_00 .. rcs_15: four along
each x direction at the +-x faces' corners, two along each of y and z on the faces' centre
lines (the +x face carries the arm on its centre)."""


def servicer_elements() -> ElementSet:
    """The arm bus as a servicer: its faces, residual dipole and wheels, plus 16 x 10 N RCS
    (`SERVICER_THRUSTERS`)."""
    elements = arm_bus_elements()
    elements.thrusters = _thrusters("bus", "rcs_", SERVICER_THRUSTERS, 10.0)
    return elements


def solar_array_sat_elements() -> ElementSet:
    """Solar-array satellite: 6 bus faces + both sides of each array (cells face +x when
    deployed), 0.5 A m^2 residual, 3 x 10 A m^2 rods, 3 wheels of 2.5e-3 kg m^2."""
    # Each array body's COM is its panel's mid-plane centre: cop offsets are +-15 mm.
    arrays = [
        surface
        for side, sign in (("left", 1.0), ("right", -1.0))
        for surface in _panel(
            f"array_{side}", f"array_{side}", (0.0, 0.0, 0.0), (0.0, sign, 0.0), 1.1 * 0.9, 0.015
        )
    ]
    return ElementSet(
        surfaces=_box_faces("bus", (0.6, 0.4, 0.5)) + arrays,
        dipoles=_dipole("bus", (0.3, -0.25, 0.3)),
        magnetorquers=_magnetorquers("bus", 10.0),
        wheels=_wheels("bus", 2.5e-3, 600.0, 0.05),
    )


def client_sat_elements() -> ElementSet:
    """Defunct client: 6 bus faces (cells +z), 0.3 A m^2 residual; no actuators."""
    return ElementSet(
        surfaces=_box_faces("bus", (0.5, 0.4, 0.3), cells=("face_pz",)),
        dipoles=_dipole("bus", (0.2, -0.1, 0.2)),
    )


def oru_elements() -> ElementSet:
    """Orbital replacement unit: its box's 6 faces; no dipole, no actuators."""
    return ElementSet(surfaces=_box_faces("bus", (0.125, 0.1, 0.1)))


def oru_worksite_elements() -> ElementSet:
    """ORU worksite panel: its 6 faces (the socket's walls are not surfaces); passive."""
    return ElementSet(surfaces=_box_faces("bus", (0.05, 0.4, 0.4)))


ELEMENTS: dict[str, Callable[[], ElementSet]] = {
    "cubesat_3u": cubesat_3u_elements,
    "cubesat_6u": cubesat_6u_elements,
    "formation_flyer": formation_flyer_elements,
    "docking_chaser": docking_chaser_elements,
    "docking_target": docking_target_elements,
    "station_module": station_module_elements,
    "arm_bus": arm_bus_elements,
    "solar_array_sat": solar_array_sat_elements,
    "client_sat": client_sat_elements,
    "oru": oru_elements,
    "oru_worksite": oru_worksite_elements,
}
"""Short asset name -> the function returning its orbit-layer elements."""


def asset_elements(name: str) -> ElementSet:
    """A fresh ElementSet for a spacecraft asset, by short name."""
    if name not in ELEMENTS:
        raise ValueError(f"no orbit-layer elements for '{name}'; known: {', '.join(ELEMENTS)}")
    return ELEMENTS[name]()
