"""Which per-world timers can be due at one call of a fixed cycle of calls.

An env runs `decimation` physics steps per env step and resets worlds only between env
steps, so every world's physics-step count is a multiple of the decimation when an env step
starts, and congruent to i modulo it at the env step's i-th physics step: the phase of the
cycle. A timer due every `period` steps (`count % period == 0`) is then due in every world,
in some worlds (by each world's own count), or in none, and which of the three is known from
(period, cycle, phase) alone, on the host, with no read of any world's count. The agent
graph (`AgentGraph.compile`) and the scene's sensors (`SensorStage.compile`) use this to
skip the work no world is due for and the timer evaluation of work every world is due for.
"""

from __future__ import annotations

import math
from typing import Literal

Timing = Literal["every", "timer"]
"""How a timer is due at one call of a cycle: in every world (nothing to evaluate), or in
the worlds whose own count says so (a per-world mask)."""


def timing_in_cycle(period_steps: int, cycle: int, phase: int) -> Timing | None:
    """How a timer due every `period_steps` calls is due at call `phase` of a cycle of
    `cycle` calls, given that every world's call count is a multiple of `cycle` when the cycle
    starts: "every" world if the period divides the cycle and the phase, "timer" (some worlds,
    by their own count) if the period's common divisor with the cycle divides the phase,
    else None (no world is due: a call count phase + k * cycle is never a multiple of the
    period)."""
    if cycle % period_steps == 0:
        return "every" if phase % period_steps == 0 else None
    return "timer" if phase % math.gcd(period_steps, cycle) == 0 else None
