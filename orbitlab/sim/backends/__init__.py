"""Simulation backends behind one interface.

A backend owns MuJoCo's batched state for `nworld` worlds and exposes it to the
orbit-layer kernel as Warp arrays:

* `device`: the Warp device the arrays live on;
* `alloc(shape, dtype)`: a zero-initialised Warp array on that device;
* `native(array)`: what users get for an array: a live numpy view on the CPU
  backend, the Warp array itself on MuJoCo-Warp (see `OrbitData`);
* `body_field(name)` / `placeholder(name)`: MjData fields for the kernel;
* `model`: per-body model arrays (body_mass, body_inertia, body_ipos, body_irot);
* `forward()`, `step(derived)`, `reset(ids)`, `bind(name)`, `expand(name)`,
  `check()`.
"""

from __future__ import annotations


def make_backend(
    name: str, mj_model, nworld: int, nthread: int = 0, device: str | None = None, **kwargs
):
    """Create backend `name` ('cpu' or 'warp') for `nworld` worlds of `mj_model`."""
    if name == "cpu":
        from orbitlab.sim.backends.cpu import CpuBackend

        if device not in (None, "cpu") or kwargs:
            raise ValueError(
                f"backend 'cpu' runs on the host: device={device!r} and options "
                f"{sorted(kwargs)} apply to backend='warp' only"
            )
        return CpuBackend(mj_model, nworld, nthread=nthread)
    if name == "warp":
        from orbitlab.sim.backends.warp import WarpBackend

        return WarpBackend(mj_model, nworld, device=device, **kwargs)
    raise ValueError(f"unknown backend '{name}' (available: 'cpu', 'warp')")
