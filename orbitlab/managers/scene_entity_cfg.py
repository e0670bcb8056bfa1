"""Typed references to a scene's parts in term params, resolved once when the env is built.

    params={"entity": SceneEntityCfg("sat")}
    params={"sensor_cfg": SceneEntityCfg("sat", sensor_names=("gyro",))}

Each manager replaces every `SceneEntityCfg` in a term's params (also inside a dict, tuple
or list of params, e.g. `held_for`'s `condition_params`) by a resolved copy bound to the
scene: the entity's handle, its body and site ids, its actuator groups and sensors. The term
then reads `entity.data.root_ang_vel_b` or `sensor_cfg.sensor.value` with no look-up by
name. A name that does not exist fails the env's construction with one line naming the
term, the param, the missing name, a "did you mean" and what exists, instead of a KeyError
at the first step.

The config keeps its unresolved references (its copies hold the scene's objects), so one
config builds any number of envs. Params without references are read from the config on
every call, so a curriculum may still change them.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orbitlab.actuators.base import ActuatorGroup
    from orbitlab.scene.handles import EntityData, EntityHandle
    from orbitlab.scene.scene import Scene
    from orbitlab.sensors.base import Sensor


def missing_name(where: str, missing: str, name: str, known: Sequence[str]) -> ValueError:
    """One line: where, what is missing (e.g. "no entity"), the closest known name and every
    known one."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ValueError(f"{where}: {missing} '{name}'{hint} (have: {', '.join(known) or 'none'})")


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass
class SceneEntityCfg:
    """An entity of the scene and, optionally, some of its bodies, sites, actuator groups
    and sensors, named as in its config (without the 'entity/' prefix)."""

    name: str
    """Entity name (a key of `SceneCfg.entities`)."""
    _: KW_ONLY
    body_names: tuple[str, ...] = ()
    """Bodies of the entity, e.g. 'panel' for 'sat/panel' (one name may be a str)."""
    site_names: tuple[str, ...] = ()
    """Sites of the entity, e.g. 'probe_tip' for 'chaser/probe_tip'."""
    actuator_names: tuple[str, ...] = ()
    """Actuator groups of the entity, e.g. 'wheels' for 'sat/wheels'."""
    sensor_names: tuple[str, ...] = ()
    """Sensors of the entity, e.g. 'gyro' for 'sat/gyro'."""

    body_ids: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    """Resolved: MuJoCo ids of `body_names`, in order."""
    site_ids: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    """Resolved: MuJoCo ids of `site_names`, in order."""
    actuators: dict[str, ActuatorGroup] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Resolved: the actuator groups of `actuator_names`, by those names."""
    sensors: dict[str, Sensor] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Resolved: the sensors of `sensor_names`, by those names."""
    _handle: EntityHandle | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for kind in ("body_names", "site_names", "actuator_names", "sensor_names"):
            setattr(self, kind, _names(getattr(self, kind)))

    # ------------------------------------------------------------- resolved view
    @property
    def handle(self) -> EntityHandle:
        """The entity's handle (root body, bodies, mass, state writes)."""
        if self._handle is None:
            raise RuntimeError(
                f"{self!r} is not resolved: pass it in a term's params (the managers resolve "
                "it) or use SceneEntityCfg.resolve(scene)"
            )
        return self._handle

    @property
    def data(self) -> EntityData:
        """The entity's root state (`EntityHandle.data`)."""
        return self.handle.data

    @property
    def sensor(self) -> Sensor:
        """The one sensor named in `sensor_names`."""
        return _only(self, self.sensors, "sensor")

    @property
    def actuator(self) -> ActuatorGroup:
        """The one actuator group named in `actuator_names`."""
        return _only(self, self.actuators, "actuator group")

    # ---------------------------------------------------------------- resolving
    def resolve(self, scene: Scene, where: str = "SceneEntityCfg") -> SceneEntityCfg:
        """A copy bound to `scene`; `where` (e.g. "reward term 'rate', param 'entity'")
        starts the error raised for a name that does not exist."""
        if self.name not in scene.entities:
            raise missing_name(where, "no entity", self.name, list(scene.entities))
        out = dataclasses.replace(self)
        out._handle = handle = scene.entities[self.name]
        prefix, m = f"{self.name}/", scene.mj_model
        bodies = {m.body(b).name.removeprefix(prefix): b for b in handle.body_ids}
        sites = {
            m.site(s).name.removeprefix(prefix): s
            for s in range(m.nsite)
            if m.site(s).name.startswith(prefix)
        }
        actuators, sensors = _own(scene.actuators, prefix), _own(scene.sensors, prefix)
        has = f"entity '{self.name}' has no"
        out.body_ids = tuple(_pick(where, f"{has} body", self.body_names, bodies).values())
        out.site_ids = tuple(_pick(where, f"{has} site", self.site_names, sites).values())
        out.actuators = _pick(where, f"{has} actuator group", self.actuator_names, actuators)
        out.sensors = _pick(where, f"{has} sensor", self.sensor_names, sensors)
        return out


def _own(items: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {k.removeprefix(prefix): v for k, v in items.items() if k.startswith(prefix)}


def _pick(where: str, missing: str, names: tuple[str, ...], known: dict[str, Any]) -> dict:
    """{name: known[name]} for each of `names`, in order."""
    for name in names:
        if name not in known:
            raise missing_name(where, missing, name, list(known))
    return {name: known[name] for name in names}


def _only(cfg: SceneEntityCfg, items: dict[str, Any], what: str) -> Any:
    if len(items) != 1:
        raise ValueError(f"{cfg!r}: wants exactly one {what}, has {len(items)}: {list(items)}")
    return next(iter(items.values()))


def resolve_params(where: str, params: dict[str, Any], scene: Scene) -> dict[str, Any]:
    """The params holding scene references, resolved against `scene` ({param: value}); the
    others are left out. `where` names the term, e.g. "reward term 'rate'"."""
    out = {}
    for key, value in params.items():
        resolved = _resolve(f"{where}, param '{key}'", value, scene)
        if resolved is not value:
            out[key] = resolved
    return out


def _resolve(where: str, value: Any, scene: Scene) -> Any:
    """`value` with its references resolved; `value` itself when it holds none."""
    if isinstance(value, SceneEntityCfg):
        return value.resolve(scene, where)
    if isinstance(value, dict):
        items = {k: _resolve(f"{where}['{k}']", v, scene) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, (tuple, list)):
        seq = [_resolve(f"{where}[{i}]", v, scene) for i, v in enumerate(value)]
        return type(value)(seq) if any(a is not b for a, b in zip(seq, value)) else value
    return value
