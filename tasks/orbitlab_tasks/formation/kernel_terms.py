"""The formation's observation terms as kernel terms (`orbitlab.fw.terms`).

Each term is the per-world twin of the torch term of the same name in `mdp` (same params,
same meaning), which stays as the reference its tests compare against. The chief's Hill
frame is recomputed in each term from the orbit state (`StepArrays.R`, `.V`); a follower's
measured terms read its fused relative-nav and star-tracker readings (where those run in
torch, the term runs as its torch twin); the privileged terms read the root states.

The math follows the torch terms' order of operations; torch's norms and batched matrix
products may round differently in the last bit, so the tests compare to float32 rounding.
"""

# No `from __future__ import annotations` here: Warp reads the functions' annotations as
# objects.

from typing import Any

import numpy as np

from orbitlab.envs.mdp.kernel_terms import sensor_columns, vector_type
from orbitlab.fw.quat import hill_frame, quat_from_matrix, quat_multiply, quat_to_matrix, rotate
from orbitlab.fw.terms import TermBuild, kernel_term
from orbitlab.managers.scene_entity_cfg import SceneEntityCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation import mdp

f64 = wp.float64
vec6d = vector_type(6)
vec1d = vector_type(1)


@wp.func
def hill(s: Any, w: int):
    """The chief's ECI -> Hill rotation and the Hill frame's ECI rate, rad/s
    (`SimView.hill`)."""
    R = s.R[w]
    V = s.V[w]
    h = wp.cross(R, V)
    return hill_frame(R, V), h / (R[0] * R[0] + R[1] * R[1] + R[2] * R[2])


@wp.func
def attitude_error(attitude: wp.vec4d, target: wp.vec4d) -> wp.vec4d:
    """q_target^* (x) q with w >= 0, both normalised first
    (`orbitlab.agent.attitude.attitude_error`)."""
    q = attitude / wp.length(attitude)
    t = target / wp.length(target)
    error = quat_multiply(wp.vec4d(t[0], -t[1], -t[2], -t[3]), q)
    if error[0] < f64(0.0):
        return -error
    return error


@wp.func
def _vec3(a: Any, w: int, c: int) -> wp.vec3d:
    return wp.vec3d(f64(a[w, c]), f64(a[w, c + 1]), f64(a[w, c + 2]))


@wp.func
def _vec4(a: Any, w: int, c: int) -> wp.vec4d:
    return wp.vec4d(f64(a[w, c]), f64(a[w, c + 1]), f64(a[w, c + 2]), f64(a[w, c + 3]))


def _index(build: TermBuild, follower: SceneEntityCfg) -> int:
    if follower.name not in geo.FOLLOWERS:
        raise ValueError(f"{build.term}: unknown follower '{follower.name}'")
    return geo.FOLLOWERS.index(follower.name)


def _sensor_column(build: TermBuild, follower: SceneEntityCfg, name: str) -> int:
    label = f"{name!r} of '{follower.name}'"
    return sensor_columns(build, follower.sensors[name], label)[0]


def _offset(build: TermBuild, follower: SceneEntityCfg) -> Any:
    return wp.vec3d(*(float(x) for x in geo.SLOT_OFFSETS_M[geo.FOLLOWERS[_index(build, follower)]]))


def _root(build: TermBuild, name: str) -> tuple[int, int]:
    """(qpos, dof) addresses of entity `name`'s free root joint."""
    joint = build.env.scene.view.free_joint(build.env.scene.entities[name].root_body)
    if joint is None:
        raise ValueError(f"{build.term}: '{name}' has no free root joint")
    return int(joint[0]), int(joint[1])


def _measured_slot(build: TermBuild, follower: SceneEntityCfg, velocity: bool, body: bool):
    """The measured slot error (or its rate), Hill or body (star tracker) axes."""
    nav = _sensor_column(build, follower, "relative_nav")
    star = _sensor_column(build, follower, "star_tracker") if body else 0
    offset = _offset(build, follower)

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        if wp.static(velocity):
            error = -_vec3(s.sensors, w, nav + 3)
        else:
            error = -_vec3(s.sensors, w, nav) - offset
        if wp.static(body):
            C = hill_frame(s.R[w], s.V[w])
            M = wp.transpose(quat_to_matrix(_vec4(s.sensors, w, star))) @ wp.transpose(C)
            error = M @ error
        return error

    return f, 3


@kernel_term(twin=mdp.slot_pos_error)
def slot_pos_error(build: TermBuild, follower: SceneEntityCfg):
    """Measured slot error, Hill axes, m (`mdp.slot_pos_error`)."""
    return _measured_slot(build, follower, velocity=False, body=False)


@kernel_term(twin=mdp.slot_vel_error)
def slot_vel_error(build: TermBuild, follower: SceneEntityCfg):
    """Measured slot error rate, Hill frame, m/s (`mdp.slot_vel_error`)."""
    return _measured_slot(build, follower, velocity=True, body=False)


@kernel_term(twin=mdp.slot_pos_error_body)
def slot_pos_error_body(build: TermBuild, follower: SceneEntityCfg):
    """Measured slot error in the follower's body axes, m (`mdp.slot_pos_error_body`)."""
    return _measured_slot(build, follower, velocity=False, body=True)


@kernel_term(twin=mdp.slot_vel_error_body)
def slot_vel_error_body(build: TermBuild, follower: SceneEntityCfg):
    """Measured slot error rate in the follower's body axes, m/s
    (`mdp.slot_vel_error_body`)."""
    return _measured_slot(build, follower, velocity=True, body=True)


@kernel_term(twin=mdp.leader_attitude_error)
def leader_attitude_error(build: TermBuild, follower: SceneEntityCfg):
    """Vector part of the measured error quaternion to the leader's attitude
    (`mdp.leader_attitude_error`)."""
    nav = _sensor_column(build, follower, "relative_nav")
    star = _sensor_column(build, follower, "star_tracker")

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        C = hill_frame(s.R[w], s.V[w])
        q_follower_hill = quat_multiply(quat_from_matrix(C), _vec4(s.sensors, w, star))
        q = attitude_error(q_follower_hill, _vec4(s.sensors, w, nav + 6))
        return wp.vec3d(q[1], q[2], q[3])

    return f, 3


@kernel_term(twin=mdp.follower_last_action)
def follower_last_action(build: TermBuild, follower: SceneEntityCfg):
    """The follower's part of the previous action (`mdp.follower_last_action`)."""
    dim = int(build.env.action_manager.total_dim) // len(geo.FOLLOWERS)
    first = dim * _index(build, follower)
    value_type = vector_type(dim)

    @wp.func
    def f(w: int, s: Any) -> value_type:
        out = value_type()
        for c in range(wp.static(dim)):
            out[c] = f64(s.action[w, first + c])
        return out

    return f, dim


def _true_slot(build: TermBuild, follower: SceneEntityCfg, body: bool):
    """True slot error and rate (6), Hill or the follower's true body axes (m, m/s)."""
    leader_q, leader_d = _root(build, geo.LEADER)
    own_q, own_d = _root(build, follower.name)
    offset = _offset(build, follower)

    @wp.func
    def f(w: int, s: Any) -> vec6d:
        C, omega = hill(s, w)
        pos = _vec3(s.qpos, w, own_q) - _vec3(s.qpos, w, leader_q)
        vel = _vec3(s.qvel, w, own_d) - _vec3(s.qvel, w, leader_d)
        error = rotate(C, pos) - offset
        rate = rotate(C, vel - wp.cross(omega, pos))
        if wp.static(body):
            M = wp.transpose(quat_to_matrix(_vec4(s.qpos, w, own_q + 3))) @ wp.transpose(C)
            error = M @ error
            rate = M @ rate
        return vec6d(error[0], error[1], error[2], rate[0], rate[1], rate[2])

    return f, 6


@kernel_term(twin=mdp.true_slot_body)
def true_slot_body(build: TermBuild, follower: SceneEntityCfg):
    """True slot error and rate in the follower's true body axes, m, m/s
    (`mdp.true_slot_body`, privileged)."""
    return _true_slot(build, follower, body=True)


@kernel_term(twin=mdp.true_slot_hill)
def true_slot_hill(build: TermBuild, follower: SceneEntityCfg):
    """True slot error and rate in Hill axes, m, m/s (`mdp.true_slot_hill`, privileged)."""
    return _true_slot(build, follower, body=False)


@kernel_term(twin=mdp.leader_velocity_hill)
def leader_velocity_hill(build: TermBuild):
    """The leader's velocity relative to the chief, Hill axes, m/s
    (`mdp.leader_velocity_hill`)."""
    q, d = _root(build, geo.LEADER)

    @wp.func
    def f(w: int, s: Any) -> wp.vec3d:
        C, omega = hill(s, w)
        return rotate(C, _vec3(s.qvel, w, d) - wp.cross(omega, _vec3(s.qpos, w, q)))

    return f, 3


@kernel_term(twin=mdp.waypoint_phase)
def waypoint_phase(build: TermBuild, command: str = "waypoint"):
    """Time since the leader's waypoint began, as a fraction of the hold (float32 division,
    as `mdp.waypoint_phase`)."""
    hold = int(build.env.command_manager.terms[command].hold_steps)
    scale = float(np.float32(hold))

    @wp.func
    def f(w: int, s: Any) -> vec1d:
        phase = wp.float32(s.episode_length[w] % wp.int64(hold)) / wp.float32(scale)
        return vec1d(f64(phase))

    return f, 1
