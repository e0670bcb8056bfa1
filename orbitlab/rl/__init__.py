"""Adapters from orbitlab environments to reinforcement-learning libraries."""
