"""Leader-follower formation flying (registered as Orbitlab-Formation-v0); see README.md."""

from orbitlab_tasks.formation.multi_agent import FollowerBatchEnv, FormationMultiAgentEnv

__all__ = ["FollowerBatchEnv", "FormationMultiAgentEnv"]
