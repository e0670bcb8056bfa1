"""The GPU bundle and check step, dry-run on this machine (no GPU).

The check must fail fast with one line why (no driver, an old driver, no CUDA device for
Warp, a missing or corrupted part) and, with the device set to Warp's CPU, run through: the
slow test builds the real bundle and runs every phase with a bare interpreter
(scripts/gpu_dry_run.sh).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "scripts" / "gpu_check.sh"
DRY_RUN = ROOT / "scripts" / "gpu_dry_run.sh"
PYTHON_312 = Path("/root/.pyenv/versions/3.12.1/bin/python3.12")
PHASES = ("sweep", "tests", "parity", "env", "train", "restart", "cache")
FAIL_FAST_S = 30  # seconds; the bare fail-fast paths take ~1 s, the Warp one ~10 s loaded


def load_script(name: str):
    """scripts/<name>.py as a module (loaded once: its exception classes are one class)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def load_bundle():
    return load_script("gpu_bundle")


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


def make_bundle(tmp_path, part_mib: int = 1, max_parts: int = 2, cache: Path | None = None) -> Path:
    """A real bundle of a fake site (1.5 MiB of incompressible bytes) and a tiny git tree."""
    site, wheels, src = tmp_path / "site", tmp_path / "wheels", tmp_path / "src"
    for folder in (site / "fakepkg", wheels, src):
        folder.mkdir(parents=True, exist_ok=True)
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
    load_bundle().pack(site, wheels, src, tmp_path / "bundle", None, cache, part_mib, max_parts)
    return tmp_path / "bundle"


def fake_dist(site: Path, name: str, files: dict[str, str]) -> None:
    """An installed distribution: its files and a dist-info whose RECORD lists them."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    (info / "METADATA").write_text(f"Name: {name}\nVersion: 1.0\n")
    record = [f"{path},," for path in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


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


def test_bundle_keeps_one_archive_per_distribution_and_reuses_it(tmp_path, capsys):
    """Each distribution is compressed once into the cache; a second bundle (a source
    change) reuses them, and the manifest lists only the wheels installed."""
    bundle, site, cache = load_bundle(), tmp_path / "site", tmp_path / "cache"
    fake_dist(site, "alpha", {"alpha/__init__.py": "A = 1\n"})
    fake_dist(site, "beta", {"beta.py": "B = 2\n", "beta_data/x.txt": "x\n"})
    (tmp_path / "wheels").mkdir()
    for wheel in ("alpha-1.0-py3-none-any.whl", "stale-2.0-py3-none-any.whl"):
        (tmp_path / "wheels" / wheel).write_bytes(b"a wheel")
    make_bundle(tmp_path, part_mib=60, cache=cache)
    first = capsys.readouterr().out
    assert "compressed alpha-1.0 (3 files)" in first and "compressed beta-1.0 (4 files)" in first
    manifest, _ = bundle.verify([tmp_path / "bundle"])
    assert [w["file"] for w in manifest["wheels"]] == ["alpha-1.0-py3-none-any.whl"]
    assert {"site/alpha-1.0.tar.xz", "site/beta-1.0.tar.xz", "site/_other.tar.xz"} <= set(
        manifest["members"]
    )
    shutil.rmtree(tmp_path / "src" / ".git")  # a new tree and a new fake blob
    (tmp_path / "src" / "untracked.txt").unlink()
    make_bundle(tmp_path, part_mib=60, cache=cache)
    assert "compressed alpha" not in capsys.readouterr().out  # reused from the cache
    bundle.unpack([tmp_path / "bundle"], tmp_path / "dest")
    assert (tmp_path / "dest" / "site" / "beta_data" / "x.txt").read_text() == "x\n"


def test_bundle_over_the_part_limit_is_refused(tmp_path):
    bundle = load_bundle()
    with pytest.raises(bundle.BundleError, match=r"needs 2 parts of 1 MiB, over the limit of 1"):
        make_bundle(tmp_path, max_parts=1)


# ------------------------------------------------------------------- check: phases
def test_every_phase_has_a_limit_and_the_limits_fit_one_device_call():
    text = CHECK.read_text()
    limits = dict(re.findall(r"\[(\w+)\]=(\d+)", text.split("declare -A limit=(")[1].split(")")[0]))
    default = re.search(r'phases="\$\{ORBITLAB_GPU_CHECK_PHASES:-([^}]*)\}"', text).group(1)
    assert tuple(default.split()) == PHASES
    assert set(limits) == {"setup", *PHASES}
    assert sum(map(int, limits.values())) < 570


def test_parity_on_cuda_fails_when_a_graph_test_skipped():
    passes = load_script("gpu_parity").passes
    ran = {"passed": 4, "failed": 0, "skipped": 0}
    assert passes(0, ran, cuda=True)
    assert not passes(0, {"passed": 3, "failed": 0, "skipped": 1}, cuda=True)
    assert not passes(0, {"passed": 0, "failed": 0, "skipped": 4}, cuda=True)
    assert passes(0, {"passed": 0, "failed": 0, "skipped": 4}, cuda=False)  # Warp's CPU
    assert not passes(1, {**ran, "failed": 1}, cuda=False)


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


# ------------------------------------------- check: the bundle, a bare interpreter
@pytest.mark.slow
@pytest.mark.skipif(not PYTHON_312.exists(), reason=f"no Python 3.12 at {PYTHON_312}")
def test_dry_run_of_the_real_bundle_with_a_bare_interpreter(tmp_path):
    """scripts/gpu_dry_run.sh: the real bundle built (seconds with its cache, ~15 minutes
    without), the two device calls played in copies of the tree with one part each, every
    phase on Warp's CPU at smoke sizes with a bare venv (numpy, pytest, CPU torch), ~5 min."""
    start = time.perf_counter()
    result = subprocess.run(
        ["bash", str(DRY_RUN)],
        cwd=ROOT,
        env={**os.environ, "OUT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=2400,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    rows = [line.split("\t") for line in (tmp_path / "dry_run.tsv").read_text().splitlines()[1:]]
    ran = {(r[0], r[1]): r[2] for r in rows}
    assert set(ran.values()) == {"ok"}
    torch_python = rows[-1][0]  # 3.12 when a CPU torch for it could be had, else 3.11
    assert {phase for python, phase in ran if python == torch_python} == set(PHASES)
    assert ("3.12", "sweep") in ran  # the real parts, verified and unpacked by Python 3.12
    out = tmp_path / f"py{torch_python}"
    env = json.loads((out / "env.json").read_text())["env"]
    assert len(env) >= 9 and all(rows["8"]["env_steps_per_s"] > 0 for rows in env.values())
    train = json.loads((out / "train.json").read_text())["train"]["Detumble-RW"]["8"]
    assert train["total_steps_per_s"] > 0
    parity = json.loads((out / "parity.json").read_text())["parity"]
    assert parity["ok"] and parity["skipped"] == 4  # no CUDA graphs on Warp's CPU device
    assert json.loads((out / "restart.json").read_text())["restart"]["total_s"] > 0
    assert (out / "warp-cache.tar.gz").stat().st_size > 0
    print(f"bare dry run: {time.perf_counter() - start:.0f} s", file=sys.stderr)
