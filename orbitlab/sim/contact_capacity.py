"""How many contacts and constraint rows a scene's worlds need: the worst case and a measured peak.

MuJoCo allocates contacts per call on the CPU; MuJoCo-Warp allocates them once, for every
world together: a pool of `nworld x nconmax` contacts (which also bounds the broadphase's
candidate pairs and sizes the convex narrowphase's scratch, 5 KB a slot at MuJoCo's default
35 CCD iterations), and `njmax` constraint rows per world (its dense Jacobian holds
`njmax x nv` floats per world). Sizing both for the scene's worst case, every collidable
pair touching at 8 points at once in every world, is safe but grows with the world count:
a docking scene's worst case is 256 contacts a world, 1.25 MB of narrowphase scratch per
world, 84 GB at 65,536 worlds.

`PeakCounter` counts, after each physics step, the most contacts, broadphase candidates
(collidable pairs whose bounding spheres overlap, MuJoCo-Warp's first filter) and
constraint rows any world holds; `orbitlab bench mode=contacts` runs it over a task's
rollouts, and a task sets its scene's capacity from the peaks with a margin
(`suggested_capacity`; `SceneCfg.contacts_per_world`, `constraint_rows_per_world`). A world
that still overflows is flagged and the step raises, as before: nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

MAX_CONTACTS_PER_PAIR = 8
"""The most contact points one geom pair produces (box-box and mesh pairs)."""


def collidable_pairs(mj_model: mujoco.MjModel) -> np.ndarray:
    """(n, 2) geom ids of the pairs MuJoCo's collision filter lets through.

    Geoms on different weld bodies that pass the contype/conaffinity test; a parent-child
    pair is filtered unless the parent is the world (or parent filtering is disabled).
    Explicit <pair> elements are not included (see `worst_case`).
    """
    m = mj_model
    filter_parent = not (m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    weld = m.body_weldid[m.geom_bodyid]
    pairs = []
    for i in range(m.ngeom):
        for j in range(i + 1, m.ngeom):
            wi, wj = weld[i], weld[j]
            if wi == wj:
                continue
            parent_child = m.body_parentid[wi] == wj or m.body_parentid[wj] == wi
            if filter_parent and parent_child and wi != 0 and wj != 0:
                continue
            if (m.geom_contype[i] & m.geom_conaffinity[j]) or (
                m.geom_contype[j] & m.geom_conaffinity[i]
            ):
                pairs.append((i, j))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def rows_per_contact(mj_model: mujoco.MjModel) -> int:
    """Constraint rows of one contact at the scene's largest condim: condim (elliptic cone)
    or 2 (condim - 1) (pyramidal)."""
    m = mj_model
    condim = int(max(m.geom_condim.max(initial=1), m.pair_dim.max(initial=1)))
    if m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC:
        return condim
    return max(1, 2 * (condim - 1))


def other_rows(mj_model: mujoco.MjModel) -> int:
    """Constraint rows that are not contacts, at most: every joint and tendon limit, and 6
    per equality."""
    m = mj_model
    return int(np.sum(m.jnt_limited)) + int(np.sum(m.tendon_limited)) + 6 * m.neq


def worst_case(mj_model: mujoco.MjModel) -> tuple[int, int]:
    """(contacts, constraint rows) per world that the scene can need at most: every
    collidable pair and explicit <pair> at MAX_CONTACTS_PER_PAIR points."""
    ncon = (len(collidable_pairs(mj_model)) + mj_model.npair) * MAX_CONTACTS_PER_PAIR
    return ncon, ncon * rows_per_contact(mj_model) + other_rows(mj_model)


@dataclass(frozen=True)
class ContactPeaks:
    """The most any one world held at once over a rollout."""

    contacts: int
    """Contact points (MuJoCo's ncon)."""
    candidates: int
    """Collidable pairs whose bounding spheres (radius + margin + gap) overlapped, plus the
    explicit pairs: an upper bound of MuJoCo-Warp's broadphase output."""
    rows: int
    """Constraint rows (MuJoCo's nefc)."""
    samples: int
    """Physics steps x worlds looked at."""


def suggested_capacity(
    peaks: ContactPeaks, mj_model: mujoco.MjModel, margin: float = 2.0
) -> tuple[int, int]:
    """(contacts_per_world, constraint_rows_per_world) for measured `peaks`.

    The contact pool must hold both the contacts and the broadphase's candidate pairs: the
    contacts with `margin`, and the candidates with `margin` but never more than the
    scene's pairs (each pair is one candidate at most). The pool is shared by all worlds,
    while the rows are a bound per world: they are sized for the whole contact allowance
    (at the scene's rows per contact, plus every limit and equality row), and at least
    `margin` x the measured rows. Counts are rounded up to multiples of 8, at least 8.
    """

    def up(value: float) -> int:
        return max(8, -(-int(np.ceil(value)) // 8) * 8)

    pairs = len(collidable_pairs(mj_model)) + int(mj_model.npair)
    contacts = max(up(margin * peaks.contacts), min(up(margin * peaks.candidates), max(pairs, 1)))
    rows = max(contacts * rows_per_contact(mj_model) + other_rows(mj_model), margin * peaks.rows)
    return contacts, up(rows)


class PeakCounter:
    """Counts contacts, broadphase candidates and constraint rows of a CPU-backend batch:
    call `sample()` after each physics step."""

    def __init__(self, mj_model: mujoco.MjModel, bind):
        """`bind(name)` gives a live (nworld, ...) MjData field (`CpuBackend.bind`)."""
        m = mj_model
        self.pairs = collidable_pairs(m)
        reach = m.geom_rbound + m.geom_margin + m.geom_gap
        self.bound = reach[self.pairs[:, 0]] + reach[self.pairs[:, 1]]
        self.planar = (m.geom_rbound[self.pairs] == 0.0).any(axis=1)  # planes: always kept
        self.explicit = int(m.npair)
        self.ncon, self.nefc, self.xpos = bind("ncon"), bind("nefc"), bind("geom_xpos")
        self.contacts = self.candidates = self.rows = self.samples = 0

    def sample(self) -> None:
        ncon = np.asarray(self.ncon).reshape(-1)
        self.contacts = max(self.contacts, int(ncon.max(initial=0)))
        self.rows = max(self.rows, int(np.asarray(self.nefc).max(initial=0)))
        self.samples += ncon.size
        if len(self.pairs):
            xpos = np.asarray(self.xpos)
            gap = xpos[:, self.pairs[:, 0]] - xpos[:, self.pairs[:, 1]]
            near = (np.einsum("wpk,wpk->wp", gap, gap) <= self.bound**2) | self.planar
            most = int(near.sum(axis=1).max(initial=0))
        else:
            most = 0
        self.candidates = max(self.candidates, most + self.explicit)

    def peaks(self) -> ContactPeaks:
        return ContactPeaks(self.contacts, self.candidates, self.rows, self.samples)
