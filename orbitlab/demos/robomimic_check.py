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
    from robomimic.utils import file_utils

    from orbitlab.demos.bc import make_bc, open_dataset

    env_meta = file_utils.get_env_metadata_from_dataset(dataset_path=str(path))
    dataset, obs_keys, shapes = open_dataset(path)
    out = {"env_meta": env_meta, "shapes": shapes, "len": len(dataset), "obs_keys": obs_keys}
    if not train_step:
        return out
    from torch.utils.data import DataLoader

    model = make_bc(obs_keys, shapes, batch_size=4)
    batch = next(iter(DataLoader(dataset, batch_size=4, shuffle=False)))
    batch = model.process_batch_for_training(batch)
    info = model.train_on_batch(batch, epoch=0, validate=False)
    out["loss"] = float(info["losses"]["action_loss"])
    return out
