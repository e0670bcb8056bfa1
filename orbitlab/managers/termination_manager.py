"""Termination terms, keeping terminal states and time-outs apart.

Terms are torch functions (or classes) or kernel terms (`orbitlab.fw.terms`); the kernel
terms run in one generated kernel, which also combines the flags when every term is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orbitlab.fw.terms import make_termination_kernel
from orbitlab.managers.base import call_params, resolve_refs, resolve_term, term_table
from orbitlab.managers.kernel_terms import KernelTerms, kernel_names, kernel_or_twin
from orbitlab.managers.terms import TerminationTermCfg
from orbitlab.quiet import wp  # Warp, started quietly
from orbitlab.stateful import Stateful

if TYPE_CHECKING:
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


class TerminationManager(Stateful):
    """`terminated` (a terminal state) and `time_outs` (truncation) per env."""

    state_attrs = ("terminated", "time_outs", "last", "_funcs", "term_state")

    def __init__(self, terms: dict[str, TerminationTermCfg], env: ManagerBasedRLEnv):
        self.env, self.terms = env, terms
        self._funcs = {n: resolve_term(n, t, env) for n, t in terms.items()}
        self._refs = {n: resolve_refs(f"termination term '{n}'", t, env) for n, t in terms.items()}
        self._funcs = {
            n: kernel_or_twin(f"termination term '{n}'", t, self._refs[n], env, self._funcs[n])
            for n, t in terms.items()
        }
        n = env.num_envs
        self.terminated = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.time_outs = torch.zeros(n, dtype=torch.bool, device=env.device)
        self._done = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.last = {name: torch.zeros(n, dtype=torch.bool, device=env.device) for name in terms}
        """Each term's flags of the last step (a kernel term's: a live view of the kernel's
        output, overwritten at the next step)."""
        self.term_state: torch.Tensor | None = None
        """The stateful kernel terms' per-world state (None without kernel terms)."""
        names = kernel_names(self._funcs)
        self._kernel: KernelTerms | None = None
        self._kernel_names = set(names)
        if names:
            self._flags = torch.zeros((n, len(names)), dtype=torch.bool, device=env.device)
            for i, name in enumerate(names):
                self.last[name] = self._flags[:, i]
            self._fused = len(names) == len(terms)
            self._kernel = KernelTerms(
                "termination term",
                env,
                terms,
                self._refs,
                names,
                make_termination_kernel,
                self._outputs,
            )
            self.term_state = self._kernel.term_state

    @property
    def kernel_flags(self) -> torch.Tensor | None:
        """The kernel terms' flags of the last step, (N, kernel terms) bool (None without
        kernel terms): column `kernel_flag_columns[name]` is `last[name]`."""
        return self._flags if self._kernel is not None else None

    @property
    def kernel_flag_columns(self) -> dict[str, int]:
        """Each kernel term's column of `kernel_flags`."""
        return {name: i for i, name in enumerate(self._kernel.names)} if self._kernel else {}

    def _outputs(self, kernel: KernelTerms) -> list:
        """The termination kernel's arguments after its `StepArrays`."""
        time_out = [int(self.terms[k].time_out) for k in kernel.names]
        self._time_out = torch.tensor(time_out, dtype=torch.int32, device=self.env.device)
        return [
            wp.from_torch(self._time_out),
            wp.from_torch(self._flags),
            wp.from_torch(self.terminated),
            wp.from_torch(self.time_outs),
            wp.from_torch(self._done),
            int(self._fused),
        ]

    def compute(self) -> torch.Tensor:
        """Evaluate every term; returns terminated | time_outs."""
        if self._kernel is not None:
            self._kernel.launch()
            if self._fused:  # the kernel combined every term's flags
                return self._done
        self.terminated.zero_()
        self.time_outs.zero_()
        for name, cfg in self.terms.items():
            if name in self._kernel_names:
                value = self.last[name]
            else:
                params = call_params(cfg, self._refs[name])
                value = self._funcs[name](self.env, **params).to(torch.bool)
                self.last[name] = value
            if cfg.time_out:
                self.time_outs |= value
            else:
                self.terminated |= value
        return self.terminated | self.time_outs

    def reset(self, env_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per term, how many of the `env_ids` episodes it ended; with a 'success' term
        also `Episode/success_rate`, the fraction of them that ended by it. 0-d float
        tensors on the env's device (no wait for the device here)."""
        log = {
            f"Episode_Termination/{name}": value[env_ids].sum(dtype=torch.float32)
            for name, value in self.last.items()
        }
        if "success" in self.last and env_ids.numel():
            log["Episode/success_rate"] = self.last["success"][env_ids].float().mean()
        return log

    @property
    def term_funcs(self) -> dict[str, Any]:
        """Each term's callable (a function, or the instance of a term class with state)."""
        return dict(self._funcs)

    def __str__(self) -> str:
        return term_table(
            "TerminationManager",
            [(n, t.time_out) for n, t in self.terms.items()],
            ("term", "time_out"),
        )
