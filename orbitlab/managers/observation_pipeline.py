"""The observation groups without noise or history, built by one kernel launch.

Each distinct term of these groups (a term shared by the policy and critic groups once) is
evaluated and its value cast into its columns of one float32 buffer; the kernel
(`orbitlab.fw.observation_kernel`) then scales and clips every column of every such group
into one output buffer, and each group's observation is a contiguous copy of its columns.
The torch pipeline's per-term cast, product, clamp and concatenation become one copy per
distinct term, one launch and one copy per group, with the same float32 results.

A group with observation noise (`noise_std` > 0 with its noise on), a history
(`history_length` > 0) or `concatenate=False` keeps the torch pipeline. A curriculum's edit
of any term config (params, scale, clip, noise, history) is noticed at the next compute
(`snapshot`, compared by the manager) and the plan is made again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.fw.observation_kernel import ColumnTable, observation_kernel
from orbitlab.fw.terms import KernelTerm, TermBuild, make_observation_term_kernel, step_arrays
from orbitlab.managers.base import call_params
from orbitlab.managers.terms import ObservationGroupCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.sim.launch import WorldLaunch

if TYPE_CHECKING:
    from orbitlab.managers.observation_manager import ObservationManager


def fusable(cfg: ObservationGroupCfg) -> bool:
    """Whether the kernel can build this group: concatenated, no noise, no history."""
    return cfg.concatenate and all(
        t.history_length == 0 and (t.noise_std == 0.0 or not cfg.enable_noise)
        for t in cfg.terms.values()
    )


def snapshot(groups: dict[str, ObservationGroupCfg], copy: bool = False) -> list[Any]:
    """What a plan is made from: every group's switches and every term's config (with
    `copy`, the params dicts copied, to compare later edits against)."""
    return [
        (
            name,
            cfg.enable_noise,
            cfg.concatenate,
            [
                (n, t, dict(t.params) if copy else t.params, t.scale, t.clip, t.noise_std)
                + (t.history_length,)
                for n, t in cfg.terms.items()
            ],
        )
        for name, cfg in groups.items()
    ]


class FusedObservations:
    """The fusable groups `names` of `manager` and every kernel term of its groups: their
    distinct terms, columns and launches (made at the first compute, from the terms'
    widths). A kernel term of a group the torch pipeline builds is evaluated here too, and
    that pipeline reads its value from the shared cache."""

    def __init__(self, manager: ObservationManager, names: list[str]):
        self.manager, self.names = manager, names
        self.distinct: dict[tuple[int, str], tuple[str, str]] = {}
        """Sharing key -> (group, term) of each distinct term, in order."""
        for group in names:
            for name in manager.groups[group].terms:
                self.distinct.setdefault(manager.plan(group, name).key, (group, name))
        for group, group_cfg in manager.groups.items():
            for name in group_cfg.terms:
                if manager.is_kernel(group, name):
                    self.distinct.setdefault(manager.plan(group, name).key, (group, name))
        self._kernel_terms: dict[tuple[int, str], tuple[Any, int]] = {}
        """Sharing key -> (Warp function, width) of each distinct kernel term."""
        self._uses_frames = False
        """Whether some kernel term reads the body frames (made current before its launch)."""
        self._uses_constraint_forces = False
        """Whether some kernel term reads MuJoCo's constraint forces (bound for the kernel)."""
        for key, (group, name) in self.distinct.items():
            term_cfg = manager.groups[group].terms[name]
            if manager.is_kernel(group, name):
                assert isinstance(term_cfg.func, KernelTerm)
                build = TermBuild(manager.env, f"observation term '{group}/{name}'")
                params = call_params(term_cfg, manager.refs(group, name))
                func, dim = term_cfg.func.factory(build, **params)
                if build.columns:
                    raise ValueError(f"{build.term}: an observation kernel term keeps no state")
                self._kernel_terms[key] = (func, int(dim))
                self._uses_frames = self._uses_frames or build.uses_frames
                self._uses_constraint_forces = self._uses_constraint_forces or (
                    build.uses_constraint_forces
                )
        self._spans: list[tuple[tuple[int, str], int, int]] = []
        """(sharing key, first raw column, end) of each distinct torch term; empty until
        built."""
        self._built = False
        self._launch: WorldLaunch | None = None
        self._term_launch: WorldLaunch | None = None

    def _build(self, widths: dict[tuple[int, str], int]) -> None:
        manager, env = self.manager, self.manager.env
        n, device = env.num_envs, env.device
        first: dict[tuple[int, str], int] = {}
        width = 0
        for key in self.distinct:
            first[key] = width
            if key not in self._kernel_terms:
                self._spans.append((key, width, width + widths[key]))
            width += widths[key]
        sources: list[int] = []
        scaled: list[int] = []
        scales: list[float] = []
        clipped: list[int] = []
        lows: list[float] = []
        highs: list[float] = []
        self.columns: dict[str, tuple[int, int]] = {}
        """Each group's (first, end) columns of the output buffer."""
        for group in self.names:
            start = len(sources)
            for name, term in manager.groups[group].terms.items():
                key = manager.plan(group, name).key
                low, high = term.clip if term.clip is not None else (0.0, 0.0)
                for c in range(widths[key]):
                    sources.append(first[key] + c)
                    scaled.append(int(term.scale != 1.0))
                    scales.append(term.scale)
                    clipped.append(int(term.clip is not None))
                    lows.append(low)
                    highs.append(high)
            self.columns[group] = (start, len(sources))
        self.raw = torch.zeros((n, width), dtype=torch.float32, device=device)
        """Each distinct term's value, cast to float32, in its columns."""
        self.out = torch.zeros((n, len(sources)), dtype=torch.float32, device=device)
        """Every fused group's columns, group after group."""

        def column(values, dtype):
            return torch.tensor(values, dtype=dtype, device=device)

        self._tables = [
            column(sources, torch.int32),
            column(scaled, torch.int32),
            column(scales, torch.float32),
            column(clipped, torch.int32),
            column(lows, torch.float32),
            column(highs, torch.float32),
        ]
        table = ColumnTable()
        table.source, table.scaled, table.scale, table.clipped, table.low, table.high = (
            wp.from_torch(t) for t in self._tables
        )
        if sources:
            self._launch = WorldLaunch(
                observation_kernel,
                n,
                [wp.from_torch(self.raw), table, wp.from_torch(self.out)],
                str(device),
                env.scene.data.kernel_threads,
            )
        self._built = True
        if self._kernel_terms:
            keys = list(self._kernel_terms)
            self._kernel_first = {key: first[key] for key in keys}
            no_state = torch.zeros((n, 0), dtype=torch.float64, device=device)  # none kept
            self._step_arrays = step_arrays(env, no_state, self._uses_constraint_forces)
            kernel = make_observation_term_kernel(
                [self._kernel_terms[k][0] for k in keys],
                [self._kernel_terms[k][1] for k in keys],
                [first[k] for k in keys],
                self._step_arrays.qpos.dtype,
            )
            self._term_launch = WorldLaunch(
                kernel,
                n,
                [self._step_arrays, wp.from_torch(self.raw)],
                str(device),
                env.scene.data.kernel_threads,
            )

    def compute(self, cache: dict) -> dict[str, torch.Tensor]:
        """Every fused group's observation (new tensors); fills `cache` with the distinct
        terms' float32 values (columns of `raw`) for the other groups to share."""
        manager, n = self.manager, self.manager.env.num_envs
        if not self._built:  # the first compute: the widths come from the values
            values = {
                key: manager.torch_value(group, name).reshape(n, -1)
                for key, (group, name) in self.distinct.items()
                if key not in self._kernel_terms
            }
            widths = {key: value.shape[1] for key, value in values.items()}
            widths.update({key: dim for key, (_, dim) in self._kernel_terms.items()})
            self._build(widths)
            for key, a, b in self._spans:
                self.raw[:, a:b].copy_(values[key])
                cache[key] = self.raw[:, a:b]
        else:
            raw, distinct = self.raw, self.distinct
            for key, a, b in self._spans:
                columns = raw[:, a:b]
                group, name = distinct[key]
                try:
                    columns.copy_(manager.torch_value(group, name).reshape(n, -1))
                except RuntimeError as error:  # e.g. a term whose width changed
                    raise ValueError(
                        f"observation term '{group}/{name}': its value does not fit its "
                        f"{b - a} columns ({error})"
                    ) from None
                cache[key] = columns
        if self._term_launch is not None:
            self._launch_terms()
            for key, first in self._kernel_first.items():
                cache[key] = self.raw[:, first : first + self._kernel_terms[key][1]]
        if self._launch is not None:
            self._launch.launch()
        out = self.out
        return {
            g: out[:, a:b].clone(memory_format=torch.contiguous_format)
            for g, (a, b) in self.columns.items()
        }

    def kernel_value(self, key: tuple[int, str]) -> torch.Tensor:
        """A kernel term's value now, float32 (num_envs, width) (a new tensor)."""
        self._launch_terms()
        first = self._kernel_first[key]
        return self.raw[:, first : first + self._kernel_terms[key][1]].clone()

    def _launch_terms(self) -> None:
        """Evaluate every kernel term into its columns of `raw`."""
        assert self._term_launch is not None  # built by the manager's first compute
        if self._uses_frames:
            self.manager.env.scene.view.frames()
        self._term_launch.launch()

    def close(self) -> None:
        for launch in (self._launch, self._term_launch):
            if launch is not None:
                launch.close()
