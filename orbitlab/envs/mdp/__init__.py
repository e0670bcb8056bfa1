"""Reusable manager terms: observations, rewards, terminations, events, curriculum."""

from orbitlab.envs.mdp.curriculum import *
from orbitlab.envs.mdp.events import *
from orbitlab.envs.mdp.observations import *
from orbitlab.envs.mdp.rewards import *
from orbitlab.envs.mdp.terminations import *
