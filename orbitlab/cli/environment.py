"""The environment variables orbitlab's commands read, checked before anything heavy loads.

* `MUJOCO_GL`: MuJoCo refuses an unknown value when it is imported (a RuntimeError
  traceback from `import mujoco`), so it is checked before MuJoCo is;
* `RANK`, `LOCAL_RANK`, `WORLD_SIZE` (torchrun's; `orbitlab.rl.train.distributed`):
  integers with 0 <= RANK < WORLD_SIZE and 0 <= LOCAL_RANK < WORLD_SIZE; a
  multi-process run (WORLD_SIZE > 1) also needs torchrun's `MASTER_ADDR` and
  `MASTER_PORT`, without which torch's rendezvous fails with a traceback.

`ORBITLAB_TASK_MODULES` is checked where it is read (`orbitlab.registry`: a module that
fails to load is one line naming it, the other tasks stay usable); `ORBITLAB_VERBOSE` and
`DISPLAY` are only tested for being set.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping

from orbitlab.cli.args import ArgumentError

GL_OFF = ("disable", "disabled", "off", "false", "0")
GL_ANY = ("", "enable", "enabled", "on", "true", "1", "glfw")
GL_PLATFORM = {"Linux": ("glx", "egl", "osmesa"), "Windows": ("wgl",), "Darwin": ("cgl",)}
"""The MUJOCO_GL values MuJoCo accepts (its `rendering.classic.gl_context`), per system."""


def mujoco_gl_values(system: str | None = None) -> tuple[str, ...]:
    """Every MUJOCO_GL value MuJoCo accepts on `system` (default: this one)."""
    return GL_OFF + GL_ANY + GL_PLATFORM.get(system or platform.system(), ())


def _integer(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise ArgumentError(
            f"environment variable {name}={text!r} is invalid: expected an integer "
            "(torchrun sets it; unset it for a single-process run)"
        ) from None


def distributed_ranks(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """(RANK, LOCAL_RANK, WORLD_SIZE) of `environ` (default: os.environ), checked;
    ArgumentError naming the variable, its value and what is allowed."""
    env = os.environ if environ is None else environ
    rank, local, size = (
        _integer(env, "RANK", 0),
        _integer(env, "LOCAL_RANK", 0),
        _integer(env, "WORLD_SIZE", 1),
    )
    if size < 1:
        raise ArgumentError(f"environment variable WORLD_SIZE={size} is invalid: expected >= 1")
    for name, value in (("RANK", rank), ("LOCAL_RANK", local)):
        if not 0 <= value < size:
            raise ArgumentError(
                f"environment variable {name}={value} is invalid: expected an integer in "
                f"[0, WORLD_SIZE={size})"
            )
    if size > 1:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not env.get(name, "").strip():
                raise ArgumentError(
                    f"environment variable {name} is not set, but WORLD_SIZE={size} asks for a "
                    "multi-process run: start it with torchrun (which sets both), or unset "
                    "WORLD_SIZE"
                )
    return rank, local, size


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """ArgumentError for the first environment variable orbitlab cannot run with."""
    env = os.environ if environ is None else environ
    gl = env.get("MUJOCO_GL")
    if gl is not None and gl.lower().strip() not in mujoco_gl_values():
        allowed = ", ".join(v for v in mujoco_gl_values() if v)
        raise ArgumentError(
            f"environment variable MUJOCO_GL={gl!r} is invalid: expected one of {allowed}, "
            "or unset it"
        )
    distributed_ranks(env)
