"""Framework kernels: the env step's per-world work (sensors, and in time actuators, agent
nodes and task terms) as Warp functions and kernels, one thread per world, on the CPU
(split across cores by `orbitlab.sim.launch.WorldLaunch`) and on a GPU alike.

The torch implementations they replace stay as the reference their tests compare against
(`orbitlab.sensors.noise`, `orbitlab.sensors.rotations`, each `Sensor.truth`).
"""
