"""Formation's two followers trained with one shared policy, then flown as PettingZoo agents.

Parameter sharing: both followers act from the same network, each on its own 18-value
observation (slot error, slot velocity, attitude error, rate, last action), and each is
trained on its own reward. Training runs a small PPO in plain torch on the batched dict env
`FormationMultiAgentEnv` (many worlds at once); the trained policy is then scored on one world
through the PettingZoo API (`orbitlab_tasks.formation.parallel_env`), before and after
training, with the same seed.

    python examples/formation_pettingzoo_shared_policy.py              # defaults, ~1-2 min
    python examples/formation_pettingzoo_shared_policy.py --iterations 2 --num-envs 8

Needs PettingZoo for the scoring: pip install 'orbitlab-sim[multiagent]'.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
from orbitlab_tasks.formation import FormationMultiAgentEnv, parallel_env
from orbitlab_tasks.formation import geometry as geo
from orbitlab_tasks.formation.formation_env_cfg import env_cfg

GAMMA, LAM, CLIP = 0.97, 0.95, 0.2
"""PPO's discount, GAE lambda and ratio clip."""


class SharedPolicy(nn.Module):
    """Gaussian actor (linear in the normalised observation) and a value critic on one
    follower's observation, shared by all followers."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 64, init_std: float = 0.1):
        super().__init__()
        self.mean = nn.Linear(obs_dim, act_dim)
        self.value = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.log_std = nn.Parameter(torch.full((act_dim,), float(np.log(init_std))))
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_var", torch.ones(obs_dim))
        self.register_buffer("obs_count", torch.tensor(1e-4))
        with torch.no_grad():  # start at the zero action: an untrained policy drifts less
            self.mean.weight.zero_()
            self.mean.bias.zero_()

    @torch.no_grad()
    def observe(self, x: torch.Tensor) -> None:
        """Fold a batch of observations (..., D) into the running mean and variance."""
        x = x.reshape(-1, x.shape[-1])
        n, total = x.shape[0], self.obs_count + x.shape[0]
        delta = x.mean(0) - self.obs_mean
        self.obs_mean += delta * n / total
        self.obs_var.copy_(
            (self.obs_var * self.obs_count + x.var(0, unbiased=False) * n) / total
            + delta.pow(2) * self.obs_count * n / total**2
        )
        self.obs_count.copy_(total)

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.obs_mean) / (self.obs_var.sqrt() + 1e-6)).clamp(-5.0, 5.0)

    def dist(self, obs: torch.Tensor) -> torch.distributions.Normal:
        return torch.distributions.Normal(self.mean(self._norm(obs)), self.log_std.exp())

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value(self._norm(obs))[..., 0]

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action (the mean) in [-1, 1]."""
        return self.mean(self._norm(obs)).clamp(-1.0, 1.0)


def rollout(ma: FormationMultiAgentEnv, policy: SharedPolicy, obs, steps: int, episodes: dict):
    """`steps` env steps of every world; each follower is one row: tensors (steps, N, 2, ...).
    `episodes` keeps each row's running return ("running") and the ended ones ("ended")."""
    agents = ma.agents
    buf: dict[str, list[torch.Tensor]] = {k: [] for k in ("obs", "act", "logp", "rew", "done")}
    for _ in range(steps):
        x = torch.stack([obs[a] for a in agents], 1)  # (N, 2, D): one batch, one network
        with torch.no_grad():
            dist = policy.dist(x)
            act = dist.sample()
        obs, rew, term, trunc, infos = ma.step(
            {a: act[:, k].clamp(-1.0, 1.0) for k, a in enumerate(agents)}
        )
        r = torch.stack([rew[a] for a in agents], 1)
        if "final_obs" in infos:  # bootstrap time-outs with the value of the last observation
            last = torch.stack([infos["final_obs"][a] for a in agents], 1)
            with torch.no_grad():
                v_last = policy.values(last)
            r = r + GAMMA * v_last * trunc[agents[0]][:, None]
        done = term[agents[0]] | trunc[agents[0]]
        episodes["running"] += torch.stack([rew[a] for a in agents], 1)
        episodes["ended"].extend(episodes["running"][done].mean(-1).tolist())
        episodes["running"][done] = 0.0
        buf["obs"].append(x)
        buf["act"].append(act)
        buf["logp"].append(dist.log_prob(act).sum(-1))
        buf["rew"].append(r)
        buf["done"].append(done.float()[:, None].expand_as(r))
    out = {k: torch.stack(v) for k, v in buf.items()}
    return out, obs


def advantages(policy: SharedPolicy, data: dict[str, torch.Tensor], next_x: torch.Tensor):
    """GAE per follower row: (advantages, returns), each (steps, N, 2)."""
    with torch.no_grad():
        values = policy.values(data["obs"])
        next_value = policy.values(next_x)
    adv = torch.zeros_like(values)
    gae = torch.zeros_like(next_value)
    for t in reversed(range(values.shape[0])):
        keep = 1.0 - data["done"][t]
        nxt = next_value if t == values.shape[0] - 1 else values[t + 1]
        delta = data["rew"][t] + GAMMA * nxt * keep - values[t]
        gae = delta + GAMMA * LAM * keep * gae
        adv[t] = gae
    return adv, adv + values


def update(policy: SharedPolicy, optim, data, adv, ret, epochs: int = 4, minibatches: int = 4):
    """PPO's clipped surrogate on every follower row of the rollout."""
    flat = {k: v.reshape(-1, *v.shape[3:]) for k, v in data.items()}
    adv, ret = adv.reshape(-1), ret.reshape(-1)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    n = adv.numel()
    for _ in range(epochs):
        for idx in torch.randperm(n).chunk(minibatches):
            dist = policy.dist(flat["obs"][idx])
            ratio = (dist.log_prob(flat["act"][idx]).sum(-1) - flat["logp"][idx]).exp()
            surrogate = torch.min(ratio * adv[idx], ratio.clamp(1 - CLIP, 1 + CLIP) * adv[idx])
            value_loss = (policy.values(flat["obs"][idx]) - ret[idx]).pow(2).mean()
            loss = -surrogate.mean() + 0.5 * value_loss
            optim.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optim.step()


def score(policy: SharedPolicy, episode_s: float, seed: int) -> tuple[dict[str, float], float]:
    """One episode on the PettingZoo ParallelEnv, the shared policy acting for each agent:
    (return per agent, mean slot error over followers and steps, m)."""
    env = parallel_env(episode_length_s=episode_s)
    obs, _ = env.reset(seed=seed)
    returns = dict.fromkeys(env.agents, 0.0)
    errors = []
    while env.agents:
        actions = {a: policy.act(torch.as_tensor(obs[a])).numpy() for a in env.agents}
        errors.append(float(geo.slot_errors(env.env).norm(dim=-1).mean()))
        obs, rewards, *_ = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
    env.close()
    return returns, float(np.mean(errors))


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=positive_int, default=60, help="PPO iterations")
    parser.add_argument("--num-envs", type=positive_int, default=64, help="worlds in training")
    parser.add_argument("--steps", type=positive_int, default=50, help="env steps per rollout")
    parser.add_argument("--episode-s", type=float, default=20.0, help="episode length, s")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.episode_s > 0:
        parser.error(f"--episode-s must be > 0 s, got {args.episode_s}")
    if not args.lr > 0:
        parser.error(f"--lr must be > 0, got {args.lr}")
    torch.manual_seed(args.seed)

    cfg = env_cfg(args.num_envs)
    cfg.episode_length_s, cfg.seed = args.episode_s, args.seed
    ma = FormationMultiAgentEnv(ManagerBasedRLEnv(cfg))
    policy = SharedPolicy(ma.view.obs_dim, ma.action_spaces[ma.agents[0]].shape[0])
    optim = torch.optim.Adam(policy.parameters(), lr=args.lr)
    before, error_before = score(policy, args.episode_s, seed=args.seed + 1)

    obs, _ = ma.reset(seed=args.seed)
    episodes = {"running": torch.zeros(args.num_envs, len(ma.agents)), "ended": []}
    start = time.perf_counter()
    for it in range(args.iterations):
        data, obs = rollout(ma, policy, obs, args.steps, episodes)
        next_x = torch.stack([obs[a] for a in ma.agents], 1)
        adv, ret = advantages(policy, data, next_x)
        update(policy, optim, data, adv, ret)
        policy.observe(data["obs"])  # the next rollout's normalisation
        if episodes["ended"] and (it % 10 == 9 or it == args.iterations - 1):
            print(
                f"iteration {it + 1:3d}: mean return per follower of the "
                f"{len(episodes['ended'])} episodes ended since the last line "
                f"{np.mean(episodes['ended']):6.2f}, std {policy.log_std.exp().mean():.3f}, "
                f"{time.perf_counter() - start:.0f} s"
            )
            episodes["ended"] = []
    ma.close()

    after, error_after = score(policy, args.episode_s, seed=args.seed + 1)
    for name, returns, error in (("before", before, error_before), ("after", after, error_after)):
        per_agent = ", ".join(f"{a} {r:.2f}" for a, r in returns.items())
        print(f"ParallelEnv episode {name} training: return {per_agent}; slot error {error:.3f} m")
    return {
        "return_before": float(np.mean(list(before.values()))),
        "return_after": float(np.mean(list(after.values()))),
    }


if __name__ == "__main__":
    main()
