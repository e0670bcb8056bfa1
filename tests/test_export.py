"""orbitlab.rl.export and scripts/export.py: TorchScript / ONNX exports match the checkpoint."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rsl_rl")
pytest.importorskip("hydra")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from orbitlab.rl import export as export_mod
from orbitlab.rl.export import (
    DEFAULT_RTOL,
    ROLLOUT_STEPS,
    ExportMismatchError,
    action_tolerance,
    export_policy,
    load_source,
    verify_exports,
)

DETUMBLE_RW_OBS = 3 + 3 + 3 + 3 + 3  # gyro, gyro_fine, magnetometer, last action, wheel speeds

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
TOL = DEFAULT_RTOL  # the export check's bound for actions in [-1, 1] (scale 1)


@pytest.fixture(scope="module")
def checkpoint(tiny_rsl_rl_run) -> Path:
    """The last checkpoint of a tiny scripts/train.py rsl-rl run."""
    assert tiny_rsl_rl_run.result.returncode == 0, tiny_rsl_rl_run.result.stderr[-2000:]
    return max(tiny_rsl_rl_run.run.glob("model_*.pt"))


@pytest.fixture(scope="module")
def exported(checkpoint):
    return export_policy(checkpoint)


def onnx_actions(path: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["actions"], {"obs": obs.astype(np.float32)})[0]


def checkpoint_actions(
    checkpoint: Path, num_envs: int = 4, trust: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(observations, actions) of the checkpoint's actor via orbitlab's own load_policy."""
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.rl.policies import load_policy, run_config
    from orbitlab_tasks import task_entry

    env = ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=num_envs))
    env.reset(seed=7)
    policy = load_policy(env, checkpoint, run_config(checkpoint), trust_checkpoint=trust)
    env.step(policy())  # a state a little away from the reset one
    obs = env.obs_buf["policy"].clone()
    actions = policy()
    return obs.numpy(), actions.numpy()


def test_rsl_rl_export_writes_files_that_match_the_checkpoint(checkpoint, exported):
    run = checkpoint.parent
    assert exported.jit_path == run / "exported" / "policy.pt"
    assert exported.onnx_path == run / "exported" / "policy.onnx"
    assert sorted(p.name for p in (run / "exported").iterdir()) == ["policy.onnx", "policy.pt"]
    assert exported.library == "rsl_rl" and exported.obs_dim == DETUMBLE_RW_OBS
    assert exported.action_dim == 3
    assert exported.tolerance == pytest.approx(TOL)  # this actor's actions stay within [-1, 1]
    assert exported.max_diff_jit <= TOL and exported.max_diff_onnx <= TOL
    # the task's own observations: 16 worlds, reset and then driven by the policy
    assert exported.num_obs_checked == 16 * (ROLLOUT_STEPS + 1)

    obs, expected = checkpoint_actions(checkpoint)
    jit = torch.jit.load(str(exported.jit_path))
    np.testing.assert_allclose(
        jit(torch.from_numpy(obs)).detach().numpy(), expected, atol=TOL, rtol=0
    )
    np.testing.assert_allclose(onnx_actions(exported.onnx_path, obs), expected, atol=TOL, rtol=0)


def test_onnx_model_interface(exported):
    model = onnx.load(str(exported.onnx_path))
    onnx.checker.check_model(model)
    assert max(op.version for op in model.opset_import if op.domain in ("", "ai.onnx")) >= 17
    (inp,), (out,) = model.graph.input, model.graph.output
    assert inp.name == "obs" and out.name == "actions"
    assert inp.type.tensor_type.shape.dim[0].dim_param  # symbolic batch dimension
    for batch in (1, 5, 33):
        actions = onnx_actions(exported.onnx_path, np.zeros((batch, exported.obs_dim)))
        assert actions.shape == (batch, exported.action_dim)


def test_normalizer_is_inside_the_export(checkpoint, exported):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)["actor_state_dict"]
    mean = state["obs_normalizer._mean"]
    assert int(state["obs_normalizer.count"]) > 0 and mean.abs().max() > 0
    jit = torch.jit.load(str(exported.jit_path))
    assert torch.equal(jit.obs_normalizer._mean, mean)


def test_a_perturbed_export_is_detected(checkpoint, exported, tmp_path):
    source = load_source(checkpoint, num_real_obs=0)
    obs = torch.randn(64, source.obs_dim)
    # intact copies pass
    diff_jit, diff_onnx, tolerance = verify_exports(
        source.reference, exported.jit_path, exported.onnx_path, obs
    )
    assert max(diff_jit, diff_onnx) <= tolerance
    jit = torch.jit.load(str(exported.jit_path))
    bias = next(p for name, p in jit.named_parameters() if name.endswith("bias"))
    with torch.no_grad():
        bias.add_(1e-3)
    bad_jit = tmp_path / "bad.pt"
    jit.save(str(bad_jit))
    with pytest.raises(ExportMismatchError, match="TorchScript differs"):
        verify_exports(source.reference, bad_jit, exported.onnx_path, obs)

    model = onnx.load(str(exported.onnx_path))
    weight = max(model.graph.initializer, key=lambda t: len(t.raw_data) + len(t.float_data))
    values = onnx.numpy_helper.to_array(weight) + np.float32(1e-3)
    weight.CopyFrom(onnx.numpy_helper.from_array(values.astype(np.float32), weight.name))
    bad_onnx = tmp_path / "bad.onnx"
    onnx.save(model, str(bad_onnx))
    with pytest.raises(ExportMismatchError, match="ONNX differs"):
        verify_exports(source.reference, exported.jit_path, bad_onnx, obs)


def test_mismatch_leaves_earlier_exports_alone(checkpoint, exported, monkeypatch):
    before = exported.jit_path.read_bytes()
    original = export_mod.write_torchscript

    def perturbed(module, path):
        with torch.no_grad():
            module.mlp[-1].bias.add_(0.1)
        try:
            original(module, path)
        finally:
            with torch.no_grad():
                module.mlp[-1].bias.sub_(0.1)

    monkeypatch.setattr(export_mod, "write_torchscript", perturbed)
    with pytest.raises(ExportMismatchError, match="TorchScript differs by 0.1"):
        export_policy(checkpoint, num_real_obs=0)
    assert exported.jit_path.read_bytes() == before
    assert sorted(p.name for p in exported.jit_path.parent.iterdir()) == [
        "policy.onnx",
        "policy.pt",
    ]


def test_bad_paths_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_policy(tmp_path / "missing.pt")
    stray = tmp_path / "model_1.pt"
    stray.write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="no saved run config"):
        export_policy(stray)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "export.py"),
            f"checkpoint={tmp_path / 'missing.pt'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "expected an existing file" in result.stderr


def test_missing_onnx_names_the_extra(checkpoint, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"pip install 'orbitlab-sim\[export\]'"):
        export_policy(checkpoint)


def test_tolerance_scales_with_the_actions_float32_rounding_passes(tmp_path):
    """The regression of the failed main job: an actor whose outputs reach ~100 differs
    from its float64 evaluation by float32 rounding (~1e-5 absolute, ~1e-7 relative). An
    absolute 1e-5 failed such exports; the bound relative to the action scale passes them
    and still catches a real change of 1e-3 of the scale."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ELU(), torch.nn.Linear(64, 4))
    with torch.no_grad():
        module[2].weight.mul_(300.0)
    module.eval()
    obs = torch.randn(256, 8)

    def reference(batch):
        with torch.no_grad():
            return module.double()(batch.double()).float()

    expected = reference(obs)
    module.float()
    jit, onnx_path = tmp_path / "p.pt", tmp_path / "p.onnx"
    export_mod.write_torchscript(module, jit)
    export_mod.write_onnx(module, 8, onnx_path)
    scale = float(expected.abs().max())
    assert scale > 50.0
    diff_jit, diff_onnx, tolerance = verify_exports(reference, jit, onnx_path, obs)
    assert tolerance == pytest.approx(DEFAULT_RTOL * scale)
    assert max(diff_jit, diff_onnx) > 1e-5  # float32 rounding: the old absolute bound failed
    assert max(diff_jit, diff_onnx) <= tolerance  # ... and are accepted

    def shifted(batch):
        return reference(batch) + 1e-3 * scale

    with pytest.raises(ExportMismatchError, match="of the action scale"):
        verify_exports(shifted, jit, onnx_path, obs)
    assert action_tolerance(torch.full((3, 2), 0.2)) == pytest.approx(DEFAULT_RTOL)  # floor 1


def train_script():
    """scripts/train.py as a module (its export step, in process)."""
    spec = importlib.util.spec_from_file_location("train_cli", ROOT / "scripts" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_main_job_export_failures_are_warnings_not_crashes(checkpoint, monkeypatch, capsys):
    train = train_script()

    def missing_extra(*args, **kwargs):
        raise ImportError("no onnxruntime")

    monkeypatch.setattr(export_mod, "export_policy", missing_extra)
    assert "install [export]" in train.export(checkpoint, checkpoint.parent)["export_warning"]
    assert "export skipped: install [export]" in capsys.readouterr().out

    def mismatch(*args, **kwargs):
        raise ExportMismatchError("ONNX differs by 0.5")

    monkeypatch.setattr(export_mod, "export_policy", mismatch)
    warning = train.export(checkpoint, checkpoint.parent)["export_warning"]
    assert warning.startswith("export check failed") and "ONNX differs by 0.5" in warning
    assert "WARNING: export check failed" in capsys.readouterr().out


def cli():
    """scripts/export.py as a module (in process: a subprocess would re-import torch)."""
    spec = importlib.util.spec_from_file_location("export_cli", ROOT / "scripts" / "export.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_prints_paths_and_differences(checkpoint, tmp_path, capsys, monkeypatch):
    out = tmp_path / "deploy"
    assert cli().main([f"checkpoint={checkpoint}", f"out={out}"]) == 0
    printed = capsys.readouterr().out
    assert str(out / "policy.pt") in printed and str(out / "policy.onnx") in printed
    assert "max |diff|" in printed
    assert (out / "policy.pt").is_file() and (out / "policy.onnx").is_file()

    def mismatch(*args, **kwargs):
        raise ExportMismatchError("TorchScript differs by 0.5")

    monkeypatch.setattr(export_mod, "export_policy", mismatch)
    assert cli().main([f"checkpoint={checkpoint}"]) == 1
    assert "FAILED" in capsys.readouterr().err


# ------------------------------------------------------------------ stable-baselines3
@pytest.fixture(scope="module")
def sb3_env():
    pytest.importorskip("stable_baselines3")
    from orbitlab.envs.gym import load_cfg
    from orbitlab.envs.manager_based_rl_env import ManagerBasedRLEnv
    from orbitlab.rl.sb3 import Sb3VecEnvWrapper
    from orbitlab_tasks import task_entry

    return Sb3VecEnvWrapper(
        ManagerBasedRLEnv(load_cfg(task_entry("Detumble-RW").env_cfg, num_envs=8))
    )


SB3_RUN = {"task": {"name": "Detumble-RW"}, "agent": {"library": "sb3"}}


def sb3_check(model, result, obs: np.ndarray, normalize=None) -> None:
    """The exported files reproduce SB3's deterministic predict (clipped to [-1, 1])."""
    expected, _ = model.predict(obs if normalize is None else normalize(obs), deterministic=True)
    jit = torch.jit.load(str(result.jit_path))
    jit_actions = jit(torch.from_numpy(obs)).detach().numpy()
    np.testing.assert_allclose(np.clip(jit_actions, -1, 1), expected, atol=TOL, rtol=0)
    np.testing.assert_allclose(
        np.clip(onnx_actions(result.onnx_path, obs), -1, 1), expected, atol=TOL, rtol=0
    )


def test_sb3_ppo_export(sb3_env, tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", sb3_env, n_steps=16, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    model.save(tmp_path / "ppo.zip")
    result = export_policy(
        tmp_path / "ppo.zip", tmp_path / "out", run_cfg=SB3_RUN, trust_checkpoint=True
    )
    assert result.library == "sb3" and (result.obs_dim, result.action_dim) == (DETUMBLE_RW_OBS, 3)
    assert result.max_diff_jit <= TOL and result.max_diff_onnx <= TOL
    sb3_check(model, result, sb3_env.reset())


def test_sb3_sac_export_with_vec_normalize(sb3_env, tmp_path):
    from stable_baselines3 import SAC
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(sb3_env, norm_reward=False)
    model = SAC("MlpPolicy", venv, learning_starts=32, batch_size=32, seed=0, device="cpu")
    model.learn(256)
    # a scripts/train.py-style run directory: model_<it>.zip beside .hydra/config.yaml
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(
        "task:\n  name: Detumble-RW\nagent:\n  library: sb3\n  algorithm: SAC\nseed: 0\n"
    )
    model.save(tmp_path / "model_1.zip")
    venv.save(tmp_path / "vecnormalize.pkl")
    result = export_policy(
        tmp_path / "model_1.zip", vec_normalize=tmp_path / "vecnormalize.pkl", trust_checkpoint=True
    )
    assert result.jit_path == tmp_path / "exported" / "policy.pt"
    assert result.num_obs_checked == 16 * (ROLLOUT_STEPS + 1)  # the run's task's observations
    assert result.max_diff_jit <= TOL and result.max_diff_onnx <= TOL
    venv.training = False
    sb3_check(model, result, venv.get_original_obs(), venv.normalize_obs)


# ------------------------------------------------------------------ rl-games
@pytest.fixture(scope="module")
def rl_games_checkpoint(tmp_path_factory) -> Path:
    """The checkpoint of a tiny in-process rl-games run, in a scripts/train.py-style run
    directory (<run>/nn/*.pth below .hydra/config.yaml)."""
    pytest.importorskip("rl_games")
    import yaml

    from orbitlab.rl.train import TrainSettings, trainer

    agent = yaml.safe_load(
        (ROOT / "orbitlab" / "configs" / "agent" / "rl_games_ppo.yaml").read_text()
    )
    agent.update(max_iterations=2, save_interval=2)
    agent["config"].update(horizon_length=8, mini_epochs=1, print_stats=False)
    run = tmp_path_factory.mktemp("rl_games") / "run"
    run.mkdir()
    (run / ".hydra").mkdir()
    config = {"task": {"name": "Detumble-RW"}, "agent": agent, "seed": 0, "num_envs": 4}
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    result = trainer("rl_games").train(TrainSettings("Detumble-RW", agent, run, num_envs=4))
    return result.checkpoint


def test_rl_games_export_matches_what_play_runs(rl_games_checkpoint):
    """The exports give the actions orbitlab's play loop takes from the checkpoint (the
    player's normalized, clamped mean); they go to the run directory, not nn/."""
    run = rl_games_checkpoint.parent.parent
    result = export_policy(rl_games_checkpoint, trust_checkpoint=True)
    assert result.library == "rl_games" and result.jit_path == run / "exported" / "policy.pt"
    assert (result.obs_dim, result.action_dim) == (DETUMBLE_RW_OBS, 3)
    assert result.max_diff_jit <= result.tolerance and result.max_diff_onnx <= result.tolerance
    obs, actions = checkpoint_actions(rl_games_checkpoint, trust=True)
    jit = torch.jit.load(str(result.jit_path))
    np.testing.assert_allclose(
        jit(torch.from_numpy(obs)).detach().numpy(), actions, atol=TOL, rtol=0
    )
    np.testing.assert_allclose(onnx_actions(result.onnx_path, obs), actions, atol=TOL, rtol=0)


def test_rl_games_export_needs_trust_and_the_main_job_trusts_its_own(rl_games_checkpoint, tmp_path):
    from orbitlab.rl.checkpoints import UntrustedCheckpointError

    with pytest.raises(UntrustedCheckpointError, match="unpickling can run code"):
        export_policy(rl_games_checkpoint, tmp_path)
    assert not list(tmp_path.iterdir())
    run = rl_games_checkpoint.parent.parent
    metrics = train_script().export(rl_games_checkpoint, run)  # this run wrote it: trusted
    assert "export_warning" not in metrics, metrics
    assert metrics["exported"]["library"] == "rl_games"
    assert metrics["exported"]["onnx_path"] == str(run / "exported" / "policy.onnx")


def test_an_rl_games_model_it_cannot_express_is_refused_in_one_line():
    from types import SimpleNamespace

    network = SimpleNamespace(is_continuous=True, has_rnn=True, has_cnn=False)
    player = SimpleNamespace(model=SimpleNamespace(a2c_network=network))
    with pytest.raises(ValueError) as refused:
        export_mod.rl_games_module(player)
    message = str(refused.value)
    assert "\n" not in message
    assert message.endswith(
        "only feed-forward a2c_continuous actors (actor_critic MLP, no RNN or CNN) are supported"
    )
