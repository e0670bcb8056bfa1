"""Train a policy on a task from the command line (hydra; defaults in configs/train.yaml).

    python scripts/train.py                                   # Detumble-RW, rsl-rl PPO, CPU
    python scripts/train.py task=pointing num_envs=512 agent.max_iterations=300

Each run directory (runs/<task>/<time>/) receives the resolved config, checkpoints
(model_<iteration>.pt, the last one also on Ctrl-C) and metrics.json: the success rate
of the final policy over one episode of `eval_num_envs` fresh worlds.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

import orbitlab_tasks
from orbitlab.envs.evaluate import rollout
from orbitlab.envs.gym import load_cfg
from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv


def make_env(cfg: DictConfig, num_envs: int, seed: int) -> ManagerBasedRLEnv:
    entry = orbitlab_tasks.task_entry(cfg.task.name)
    env_cfg = load_cfg(entry.env_cfg, num_envs=num_envs, backend=cfg.backend, device=cfg.device)
    env_cfg.seed = seed
    return ManagerBasedRLEnv(env_cfg)


def write_json(path: Path, payload: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, path)


@hydra.main(version_base="1.3", config_path="../configs", config_name="train")
def main(cfg: DictConfig) -> None:
    from rsl_rl.runners import OnPolicyRunner

    from orbitlab.rl.rsl_rl import RslRlVecEnvWrapper, runner_cfg_from_agent

    if cfg.agent.library != "rsl_rl":
        raise SystemExit(f"agent library '{cfg.agent.library}' is not available yet "
                         "(configs/agent: rsl_rl_ppo)")
    run_dir = Path(hydra.core.hydra_config.HydraConfig.get().runtime.output_dir)
    torch.manual_seed(cfg.seed)
    env = RslRlVecEnvWrapper(make_env(cfg, cfg.num_envs, cfg.seed))
    agent = OmegaConf.to_container(cfg.agent, resolve=True)
    runner = OnPolicyRunner(env, runner_cfg_from_agent(agent), log_dir=str(run_dir), device=str(env.device))
    start = time.perf_counter()
    try:
        runner.learn(num_learning_iterations=agent["max_iterations"])
    finally:  # keep what was learned, also on Ctrl-C
        runner.save(str(run_dir / f"model_{runner.current_learning_iteration}.pt"))
    train_s = time.perf_counter() - start
    policy = runner.get_inference_policy(device=str(env.device))
    evaluation = RslRlVecEnvWrapper(make_env(cfg, cfg.eval_num_envs, cfg.seed + 1))
    with torch.inference_mode():
        score = rollout(evaluation.unwrapped,
                        policy=lambda: policy(evaluation.get_observations()))
    metrics = {"task": cfg.task.name, "train_s": train_s, "iterations": agent["max_iterations"],
               "success_rate": score.success_rate, "mean_return": score.mean_return,
               "mean_success_time_s": score.mean_success_time_s, "episodes": score.episodes}
    write_json(run_dir / "metrics.json", metrics)
    print(f"{cfg.task.name}: trained {agent['max_iterations']} iterations in {train_s:.0f} s; "
          f"final policy: {score}")
    print(f"run directory: {run_dir}")


if __name__ == "__main__":
    main()
