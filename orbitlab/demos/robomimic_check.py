"""Check that robomimic (v0.3) reads a demo file and trains BC on it for one step.

robomimic imports torchvision at module level (image encoders) even for low-dim BC. Where
torchvision is missing or broken (e.g. a CPU-only torch without its matching
`torchvision+cpu` wheel), `stub_torchvision()` installs a minimal stand-in module so that
low-dim BC works; image observations then need the real package.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path


def stub_torchvision() -> bool:
    """Install a torchvision stand-in if the real one does not import; True if stubbed."""
    try:
        import torchvision  # noqa: F401

        return False
    except (ImportError, RuntimeError, OSError):  # missing, or a mismatched build
        for name in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[name]
    root = types.ModuleType("torchvision")
    transforms = types.ModuleType("torchvision.transforms")
    functional = types.ModuleType("torchvision.transforms.functional")
    models = types.ModuleType("torchvision.models")

    class _Unavailable:
        def __init__(self, *args, **kwargs):
            raise ImportError("torchvision is not installed (stubbed for low-dim robomimic)")

    for name in (
        "Lambda",
        "Compose",
        "Normalize",
        "RandomCrop",
        "CenterCrop",
        "ColorJitter",
        "Resize",
    ):
        setattr(transforms, name, _Unavailable)
    transforms.functional = functional
    root.transforms, root.models = transforms, models
    root.__version__ = "0.0-stub"
    sys.modules.update(
        {
            "torchvision": root,
            "torchvision.transforms": transforms,
            "torchvision.transforms.functional": functional,
            "torchvision.models": models,
        }
    )
    return True


def check_robomimic(path: str | Path, train_step: bool = True) -> dict:
    """Load `path` with robomimic's file utils and SequenceDataset and (optionally) build
    a BC model and run one training step. Returns what it found."""
    stub_torchvision()
    from robomimic.utils import file_utils, obs_utils
    from robomimic.utils.dataset import SequenceDataset

    path = str(path)
    env_meta = file_utils.get_env_metadata_from_dataset(dataset_path=path)
    import h5py

    with h5py.File(path, "r") as f:
        first = min(f["data"].keys(), key=lambda n: int(n.split("_")[-1]))
        obs_keys = list(f["data"][first]["obs"].keys())
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": obs_keys, "rgb": []}})
    shapes = file_utils.get_shape_metadata_from_dataset(dataset_path=path, all_obs_keys=obs_keys)
    dataset = SequenceDataset(
        hdf5_path=path,
        obs_keys=obs_keys,
        dataset_keys=("actions", "rewards", "dones"),
        load_next_obs=True,
        frame_stack=1,
        seq_length=1,
        pad_frame_stack=True,
        pad_seq_length=True,
        get_pad_mask=False,
        goal_mode=None,
        hdf5_cache_mode="all",
        hdf5_use_swmr=True,
        hdf5_normalize_obs=False,
        filter_by_attribute=None,
    )
    out = {"env_meta": env_meta, "shapes": shapes, "len": len(dataset), "obs_keys": obs_keys}
    if not train_step:
        return out
    import torch
    from robomimic.algo import algo_factory
    from robomimic.config import config_factory
    from torch.utils.data import DataLoader

    config = config_factory("bc")
    with config.unlocked():
        config.observation.modalities.obs.low_dim = obs_keys
        config.observation.modalities.obs.rgb = []
        config.train.batch_size = 4
    model = algo_factory(
        algo_name="bc",
        config=config,
        obs_key_shapes=shapes["all_shapes"],
        ac_dim=shapes["ac_dim"],
        device=torch.device("cpu"),
    )
    batch = next(iter(DataLoader(dataset, batch_size=4, shuffle=False)))
    batch = model.process_batch_for_training(batch)
    info = model.train_on_batch(batch, epoch=0, validate=False)
    out["loss"] = float(info["losses"]["action_loss"])
    return out
