"""The GPU bundle and check step, dry-run on this machine (no GPU, no wheels downloaded).

The check must fail fast with one line why (no driver, an old driver, no CUDA device for
Warp, a missing or corrupted part) and, with the device set to Warp's CPU, run through.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "scripts" / "gpu_check.sh"
FAIL_FAST_S = 30  # seconds; the bare fail-fast paths take ~1 s, the Warp one ~10 s loaded


def load_bundle():
    """scripts/gpu_bundle.py as a module (loaded once: its BundleError is one class)."""
    if "gpu_bundle" in sys.modules:
        return sys.modules["gpu_bundle"]
    spec = importlib.util.spec_from_file_location("gpu_bundle", ROOT / "scripts" / "gpu_bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["gpu_bundle"] = module
    return module


def run_check(tmp_path, timeout: float, **env) -> tuple[subprocess.CompletedProcess, float]:
    out = tmp_path / "out"
    full = {**os.environ, "OUT": str(out), "ORBITLAB_GPU_WORK": str(tmp_path / "work"), **env}
    start = time.perf_counter()
    result = subprocess.run(
        ["bash", str(CHECK)],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return result, time.perf_counter() - start


def fake_nvidia_smi(tmp_path, driver: str) -> str:
    """A PATH whose nvidia-smi reports an H200 with `driver`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho 'NVIDIA H200, 143771 MiB, {driver}'\n")
    tool.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


def make_bundle(tmp_path, part_mib: int = 1, max_parts: int = 2) -> Path:
    """A real bundle of a fake site (1.5 MiB of incompressible bytes) and a tiny git tree."""
    site, wheels, src = tmp_path / "site", tmp_path / "wheels", tmp_path / "src"
    for folder in (site / "fakepkg", wheels, src):
        folder.mkdir(parents=True)
    (site / "fakepkg" / "blob.bin").write_bytes(os.urandom(3 * 2**19))
    (wheels / "fakepkg-1.0-py3-none-any.whl").write_bytes(b"not a real wheel")
    (src / "hello.py").write_text("print('hello')\n")
    for args in (
        ["init", "-q"],
        ["add", "hello.py"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", "-C", str(src), *args], check=True)
    (src / "untracked.txt").write_text("kept: not ignored\n")
    load_bundle().pack(site, wheels, src, tmp_path / "bundle", None, None, part_mib, max_parts)
    return tmp_path / "bundle"


# ------------------------------------------------------------------------------ bundle
def test_bundle_round_trip_in_two_parts(tmp_path):
    bundle = load_bundle()
    out = make_bundle(tmp_path)
    manifest, files = bundle.verify([out])
    assert manifest["part_count"] == 2 and [f.name for f in files] == ["payload.1", "payload.2"]
    assert all(f.stat().st_size <= 2**20 for f in files)
    assert json.loads((out / "part2" / "MANIFEST.json").read_text()) == manifest
    bundle.unpack([out], tmp_path / "dest")
    assert (tmp_path / "dest" / "site" / "fakepkg" / "blob.bin").read_bytes() == (
        tmp_path / "site" / "fakepkg" / "blob.bin"
    ).read_bytes()
    assert sorted(p.name for p in (tmp_path / "dest" / "src").iterdir()) == [
        "hello.py",
        "untracked.txt",
    ]


def test_bundle_verification_names_a_corrupted_part(tmp_path):
    bundle = load_bundle()
    out = make_bundle(tmp_path)
    part = out / "part2" / "payload.2"
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF  # one flipped byte, same size
    part.write_bytes(bytes(data))
    with pytest.raises(bundle.BundleError, match=r"payload.2: sha256 .* \(corrupted part\)"):
        bundle.verify([out])


def test_bundle_over_the_part_limit_is_refused(tmp_path):
    bundle = load_bundle()
    with pytest.raises(bundle.BundleError, match=r"needs 2 parts of 1 MiB, over the limit of 1"):
        make_bundle(tmp_path, max_parts=1)


# ----------------------------------------------------------------- check: fail fast
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_check_without_cuda_fails_fast_with_the_reason(tmp_path):
    result, elapsed = run_check(tmp_path, FAIL_FAST_S)
    assert result.returncode == 2, result.stdout
    assert "nvidia-smi not found" in result.stdout and elapsed < FAIL_FAST_S
    assert "nvidia-smi not found" in (tmp_path / "out" / "gpu_check.log").read_text()


def test_check_refuses_a_driver_older_than_580(tmp_path):
    result, _ = run_check(tmp_path, FAIL_FAST_S, PATH=fake_nvidia_smi(tmp_path, "570.86.15"))
    assert result.returncode == 2
    assert "driver '570.86.15' is older than 580" in result.stdout


def test_check_names_a_missing_part(tmp_path):
    out = make_bundle(tmp_path)
    shutil.rmtree(out / "part2")
    result, _ = run_check(
        tmp_path, FAIL_FAST_S, ORBITLAB_GPU_CHECK_DEVICE="cpu", ORBITLAB_GPU_BUNDLE=str(out)
    )
    assert result.returncode == 2
    assert "part 2 of 2 missing" in result.stdout


def test_check_stops_when_warp_sees_no_cuda_device(tmp_path):
    pytest.importorskip("mujoco_warp")
    import warp as wp

    if wp.get_cuda_device_count() > 0:
        pytest.skip("Warp sees a CUDA device here")
    result, _ = run_check(
        tmp_path, 120, PATH=fake_nvidia_smi(tmp_path, "580.95.05"), ORBITLAB_GPU_BUNDLE="none"
    )
    assert result.returncode == 2, result.stdout[-2000:]
    assert "warp sees no CUDA device" in result.stdout
    assert "== phase" not in result.stdout  # no phase started


# --------------------------------------------------------------- check: a CPU dry run
@pytest.mark.slow
def test_check_runs_through_on_the_cpu_in_smoke_mode(tmp_path):
    """Every phase on Warp's CPU device at tiny sizes (~2 min on 2 cores, kernels cached)."""
    pytest.importorskip("mujoco_warp")
    result, elapsed = run_check(
        tmp_path,
        560,
        ORBITLAB_GPU_CHECK_DEVICE="cpu",
        ORBITLAB_GPU_CHECK_SMOKE="1",
        ORBITLAB_GPU_BUNDLE="none",
    )
    out = tmp_path / "out"
    assert result.returncode == 0, result.stdout[-3000:]
    rows = [line.split("\t") for line in (out / "phases.tsv").read_text().splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [
        (p, "ok") for p in ("sweep", "tests", "env", "restart", "cache")
    ]
    assert set(json.loads((out / "sweep.json").read_text())["physics"]) >= {"meta", "1", "2"}
    env = json.loads((out / "env.json").read_text())["env"]
    assert set(env) == {"Detumble-RW", "Docking"} and env["Docking"]["8"]["env_steps_per_s"] > 0
    assert json.loads((out / "restart.json").read_text())["restart"]["total_s"] > 0
    assert (out / "warp-cache.tar.gz").stat().st_size > 0
    print(f"cpu smoke dry run: {elapsed:.0f} s", file=sys.stderr)
