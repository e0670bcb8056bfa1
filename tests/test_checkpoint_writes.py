"""Training checkpoints are written atomically: a write that dies half-way (here: a
`torch.save` or library save that writes some bytes, then raises, standing in for a
SIGKILL) leaves the previous checkpoint as it was and no file under the final name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from orbitlab.rl.checkpoints import load_torch_checkpoint, save_torch_checkpoint

TORN = b"PK\x03\x04 torn"
"""The first bytes of a zip (a torch file), as a write cut short leaves them."""


class Killed(Exception):
    """The stand-in for a process killed during the write."""


def torn_torch_save(obj, f, *args, **kwargs):
    """Writes a few bytes of a checkpoint, then dies."""
    if isinstance(f, (str, Path)):
        Path(f).write_bytes(TORN)
    else:
        f.write(TORN)
        f.flush()
    raise Killed


def only_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_an_interrupted_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model_4.pt"
    save_torch_checkpoint({"iter": 4, "w": torch.ones(3)}, path)
    monkeypatch.setattr(torch, "save", torn_torch_save)
    with pytest.raises(Killed):
        save_torch_checkpoint({"iter": 9, "w": torch.zeros(3)}, path)
    assert load_torch_checkpoint(path)["iter"] == 4
    assert only_files(tmp_path) == ["model_4.pt"]  # the temporary file is gone too


def test_an_interrupted_first_write_leaves_no_final_file(tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "save", torn_torch_save)
    with pytest.raises(Killed):
        save_torch_checkpoint({"iter": 1}, tmp_path / "model_1.pt")
    assert only_files(tmp_path) == []


def test_rsl_rl_runner_saves_atomically(tmp_path, monkeypatch):
    pytest.importorskip("rsl_rl")
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.rl.rsl_rl import OrbitlabOnPolicyRunner, RslRlVecEnvWrapper, ppo_runner_cfg
    from orbitlab.rl.train.rsl_rl import checkpoints, is_resumable
    from orbitlab_tasks import task_entry

    env = RslRlVecEnvWrapper(
        ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=2))
    )
    runner = OrbitlabOnPolicyRunner(env, ppo_runner_cfg(), log_dir=None, device="cpu")
    runner.resumable, runner.current_learning_iteration = True, 4
    runner.save(str(tmp_path / "model_4.pt"))
    runner.current_learning_iteration = 9
    monkeypatch.setattr(torch, "save", torn_torch_save)
    with pytest.raises(Killed):
        runner.save(str(tmp_path / "model_9.pt"))
    assert only_files(tmp_path) == ["model_4.pt"]
    assert is_resumable(tmp_path / "model_4.pt")
    assert checkpoints(tmp_path) == [tmp_path / "model_4.pt"]


def test_rl_games_agent_saves_atomically(tmp_path, monkeypatch):
    pytest.importorskip("rl_games")
    from orbitlab.rl.train.rl_games import AtomicA2CAgent

    class Agent:  # only what `save` uses of rl-games' agent
        def __init__(self, epoch: int):
            self.epoch = epoch

        def get_full_state_weights(self) -> dict:
            return {"epoch": self.epoch, "model": {"w": torch.ones(2)}}

    AtomicA2CAgent.save(Agent(5), str(tmp_path / "orbitlab_ppo"))  # type: ignore[arg-type]
    monkeypatch.setattr(torch, "save", torn_torch_save)
    with pytest.raises(Killed):
        AtomicA2CAgent.save(Agent(6), str(tmp_path / "orbitlab_ppo"))  # type: ignore[arg-type]
    assert only_files(tmp_path) == ["orbitlab_ppo.pth"]
    assert load_torch_checkpoint(tmp_path / "orbitlab_ppo.pth")["epoch"] == 5


def test_sb3_save_is_atomic(tmp_path):
    pytest.importorskip("stable_baselines3")
    from orbitlab.rl.train.sb3 import save

    class Model:  # SB3's `save` writes the zip itself: a torn one, then dies
        def save(self, path: Path) -> None:
            Path(path).write_bytes(TORN)
            raise Killed

    final = tmp_path / "model_3.zip"
    final.write_bytes(b"the previous checkpoint")
    with pytest.raises(Killed):
        save(Model(), final)  # type: ignore[arg-type]
    assert only_files(tmp_path) == ["model_3.zip"]
    assert final.read_bytes() == b"the previous checkpoint"
