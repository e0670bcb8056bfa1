"""PNG plots of a `Recording` (matplotlib, Agg backend: no display needed).

`save_plots(recording, out_dir)` writes:
* `position.png`: with more than one free-floating entity, each other entity's position
  relative to the first one in the first one's Hill frame (radial x, along-track y,
  orbit normal z; m) over time and as an along-track/radial track; otherwise the
  chief's ECI position (km) and altitude above the equatorial radius (km) over time;
* `attitude.png`: body rates (deg/s, body axes, and their norm) of each free entity,
  and the reward terms named like '*error*' when the task has any;
* `actuators.png`: each actuator group's applied output (mean over each env step, in
  the group's units) and the policy's raw actions when there are any;
* `terms.png`: every unweighted reward term over time (each in its own units).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orbitlab.viz import VizUnavailable
from orbitlab.viz.recorder import Recording

EARTH_RADIUS_KM = 6378.137
"""Equatorial radius used for the altitude plot, km."""
AXES = ("x", "y", "z")
HILL_AXES = ("radial x", "along-track y", "normal z")


def require_matplotlib():
    """matplotlib.pyplot on the Agg backend, or VizUnavailable naming the install."""
    try:
        import matplotlib
    except ImportError as error:
        raise VizUnavailable(
            f"plots= needs matplotlib: pip install 'orbitlab-sim[viz]' ({error})"
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure(plt, rows: int, title: str, sharex: bool = True):
    fig, axes = plt.subplots(rows, 1, figsize=(9, 2.6 * rows + 0.6), sharex=sharex, squeeze=False)
    fig.suptitle(title)
    return fig, axes[:, 0]


def _save(plt, fig, axes, path: Path) -> Path:
    if not axes[-1].get_xlabel():
        axes[-1].set_xlabel("episode time (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_position(plt, rec: Recording, path: Path) -> Path:
    t = rec.time_s
    names = list(rec.entities)
    if len(names) > 1:
        ref = rec.entities[names[0]].pos_m
        others = names[1:]
        fig, axes = _figure(
            plt,
            4,
            f"Hill-frame position relative to '{names[0]}' (world {rec.world})",
            sharex=False,
        )
        for name in others:
            rel = np.einsum("tij,tj->ti", rec.hill, rec.entities[name].pos_m - ref)
            for i in range(3):
                axes[i].plot(t, rel[:, i], label=name)
            axes[3].plot(rel[:, 1], rel[:, 0], label=name)
        for i in range(3):
            axes[i].set_ylabel(f"{HILL_AXES[i]} (m)")
            axes[i].set_xlabel("episode time (s)")
        axes[3].set_ylabel("radial (m)")
        axes[3].set_xlabel("along-track (m)")
        return _save(plt, fig, axes, path)
    fig, axes = _figure(plt, 2, f"Chief orbit (ECI, world {rec.world})")
    for i in range(3):
        axes[0].plot(t, rec.r_eci_km[:, i], label=f"R {AXES[i]}")
    axes[0].set_ylabel("position (km)")
    axes[1].plot(t, np.linalg.norm(rec.r_eci_km, axis=-1) - EARTH_RADIUS_KM)
    axes[1].set_ylabel("altitude (km)")
    return _save(plt, fig, axes, path)


def plot_attitude(plt, rec: Recording, path: Path) -> Path:
    t = rec.time_s
    errors = {k: v for k, v in rec.terms.items() if "error" in k.lower()}
    rows = max(len(rec.entities), 1) + (1 if errors else 0)
    fig, axes = _figure(plt, rows, f"Attitude (world {rec.world})")
    for ax, (name, track) in zip(axes, rec.entities.items(), strict=False):
        rate = np.degrees(track.rate_rad_s)
        for i in range(3):
            ax.plot(t, rate[:, i], label=f"omega {AXES[i]}")
        ax.plot(t, np.linalg.norm(rate, axis=-1), "k--", label="|omega|")
        ax.set_ylabel(f"{name} rate (deg/s)")
    if errors:
        for name, values in errors.items():
            axes[-1].plot(t, values, label=name)
        axes[-1].set_ylabel("error terms (own units)")
    return _save(plt, fig, axes, path)


def plot_actuators(plt, rec: Recording, path: Path) -> Path:
    t = rec.time_s
    panels = list(rec.outputs.items())
    rows = max(len(panels) + (rec.actions is not None), 1)
    fig, axes = _figure(plt, rows, f"Actuator usage (world {rec.world})")
    for ax, (name, values) in zip(axes, panels, strict=False):
        for i in range(values.shape[1]):
            ax.step(t, values[:, i], where="pre", label=f"{i}")
        ax.set_ylabel(f"{name} ({rec.output_units.get(name, '')})")
    if rec.actions is not None:
        for i in range(rec.actions.shape[1]):
            axes[len(panels)].step(t, rec.actions[:, i], where="pre")
        axes[len(panels)].set_ylabel("actions (raw)")
    if len(panels) > 0 and panels[0][1].shape[1] > 8:
        for ax in axes:
            legend = ax.get_legend()
            if legend is not None:
                legend.remove()
    return _save(plt, fig, axes, path)


def plot_terms(plt, rec: Recording, path: Path) -> Path:
    t = rec.time_s
    fig, axes = _figure(
        plt, max(len(rec.terms), 1), f"Reward terms, unweighted (world {rec.world})"
    )
    for ax, (name, values) in zip(axes, rec.terms.items(), strict=False):
        ax.plot(t, values)
        ax.set_ylabel(name)
    return _save(plt, fig, axes, path)


def save_plots(recording: Recording, out_dir: str | Path) -> list[Path]:
    """Write the plots of the module doc into `out_dir` (created); returns their paths."""
    plt = require_matplotlib()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        plot(plt, recording, out / f"{name}.png")
        for name, plot in (
            ("position", plot_position),
            ("attitude", plot_attitude),
            ("actuators", plot_actuators),
            ("terms", plot_terms),
        )
    ]
