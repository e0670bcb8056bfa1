"""A manager's kernel terms (`orbitlab.fw.terms`) built into one recorded launch.

The reward and termination managers hand their `KernelTerm` terms here: each factory is
called once with its params (scene references resolved), the stateful ones get columns of
`term_state`, and the manager's generated kernel is recorded over the worlds
(`WorldLaunch`: split across cores on the CPU, one launch on a GPU). A curriculum that edits
a kernel term's params or weight is noticed at the next step (a comparison of the configs,
no host read) and the kernel is made again for the new values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from orbitlab.fw.terms import KernelTerm, KernelUnavailable, TermBuild, step_arrays
from orbitlab.managers.base import call_params, resolve_term
from orbitlab.managers.terms import TermCfg
from orbitlab.sim.launch import WorldLaunch

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def kernel_names(funcs: Mapping[str, Any]) -> list[str]:
    """The names of the terms resolved to a `KernelTerm` (`kernel_or_twin`), in order."""
    return [n for n, f in funcs.items() if isinstance(f, KernelTerm)]


def kernel_or_twin(where: str, cfg: TermCfg, refs: dict[str, Any], env: Any, func: Any) -> Any:
    """`func` (a term as `resolve_term` resolved it), or, for a kernel term whose inputs this
    env keeps in torch (its factory raises `KernelUnavailable`: e.g. a sensor outside the
    fused sensor kernel) and that declares a torch twin (`KernelTerm.twin`), the twin
    resolved as a torch term (a term class instantiated). `where` names the term."""
    if not (isinstance(func, KernelTerm) and func.twin is not None):
        return func
    try:
        func.factory(TermBuild(env, where), **call_params(cfg, refs))
    except KernelUnavailable:
        return resolve_term(where, dataclasses.replace(cfg, func=func.twin), env)
    return func


class KernelTerms:
    """The kernel terms `names` of one manager, their state and their recorded launch.

    `make_kernel(funcs, float_dtype)` generates the manager's kernel; `outputs(self)`
    returns the launch's arguments after the `StepArrays` (the manager's buffers)."""

    def __init__(
        self,
        where: str,
        env: ManagerBasedRLEnv,
        terms: Mapping[str, TermCfg],
        refs: dict[str, dict[str, Any]],
        names: list[str],
        make_kernel: Callable[[list[Any], Any], Any],
        outputs: Callable[[KernelTerms], list[Any]],
    ):
        self.where, self.env, self.terms, self.refs, self.names = where, env, terms, refs, names
        self._make_kernel, self._outputs = make_kernel, outputs
        self.columns: list[str] = []
        funcs = self._build_funcs()
        self.term_state = torch.zeros(
            (env.num_envs, len(self.columns)), dtype=torch.float64, device=env.device
        )
        """Per-world state of the stateful kernel terms, float64 (N, columns)."""
        self._launch: WorldLaunch | None = None
        self._record(funcs)

    def _snapshot(self) -> list[tuple[Any, ...]]:
        """What the kernel was made from: each term's config object, params and weight."""
        return [
            (t, dict(t.params), getattr(t, "weight", None))
            for t in (self.terms[n] for n in self.names)
        ]

    def _build_funcs(self) -> list[Any]:
        self.columns = []
        funcs = []
        self.uses_frames = False
        """Whether some term reads the body frames (made current before each launch)."""
        self.uses_constraint_forces = False
        """Whether some term reads MuJoCo's constraint forces (bound for the kernel)."""
        for name in self.names:
            cfg = self.terms[name]
            build = TermBuild(self.env, f"{self.where} '{name}'", self.columns)
            assert isinstance(cfg.func, KernelTerm)  # see kernel_names
            funcs.append(cfg.func.factory(build, **call_params(cfg, self.refs[name])))
            self.uses_frames = self.uses_frames or build.uses_frames
            self.uses_constraint_forces = self.uses_constraint_forces or (
                build.uses_constraint_forces
            )
        self._made_from = self._snapshot()
        return funcs

    def _record(self, funcs: list[Any]) -> None:
        if self._launch is not None:
            self._launch.close()
        self.step_arrays = step_arrays(self.env, self.term_state, self.uses_constraint_forces)
        kernel = self._make_kernel(funcs, self.step_arrays.qpos.dtype)
        data = self.env.scene.data
        self._launch = WorldLaunch(
            kernel,
            self.env.num_envs,
            [self.step_arrays, *self._outputs(self)],
            self.env.device if isinstance(self.env.device, str) else str(self.env.device),
            data.kernel_threads,
        )

    def _edited(self) -> bool:
        try:  # identical values compare by identity first: no Python call
            now = [
                (t, t.params, getattr(t, "weight", None))
                for t in map(self.terms.__getitem__, self.names)
            ]
            return now != self._made_from
        except (RuntimeError, TypeError, ValueError):  # an array-valued param was replaced
            return True

    def launch(self) -> None:
        """Run the kernel for every world (made again first if a config was edited)."""
        if self._edited():
            columns = list(self.columns)
            funcs = self._build_funcs()
            if self.columns != columns:
                raise ValueError(
                    f"{self.where}s: an edited kernel term asks for state columns "
                    f"{self.columns}, not {columns} (its state cannot change shape)"
                )
            self._record(funcs)
        assert self._launch is not None
        if self.uses_frames:
            self.env.scene.view.frames()
        self._launch.launch()

    def close(self) -> None:
        if self._launch is not None:
            self._launch.close()
            self._launch = None
