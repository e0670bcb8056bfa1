"""A run's record of what it was made with (`orbitlab.rl.provenance`)."""

import platform
import subprocess
from importlib import metadata

from orbitlab.rl import provenance


def test_the_record_names_the_python_the_libraries_and_the_checkout():
    record = provenance.run_environment()
    assert record["python"] == platform.python_version()
    packages = record["packages"]
    assert set(packages) == set(provenance.PACKAGES)
    assert packages["torch"] == metadata.version("torch")
    assert packages["mujoco"] == metadata.version("mujoco")
    source = record["source"]
    if (provenance.SOURCE_ROOT / ".git").exists():  # the tests run from a checkout
        head = subprocess.run(
            ["git", "-C", str(provenance.SOURCE_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert source["commit"] == head and isinstance(source["modified"], bool)
    else:
        assert source is None


def test_a_missing_library_is_recorded_as_none(monkeypatch):
    monkeypatch.setattr(provenance, "PACKAGES", ("torch", "no-such-distribution-xyz"))
    versions = provenance.package_versions()
    assert versions["no-such-distribution-xyz"] is None and versions["torch"]


def test_without_git_the_source_is_none(monkeypatch, tmp_path):
    (tmp_path / ".git").mkdir()  # looks like a checkout, but git cannot read it
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path)
    assert provenance.source_revision() is None
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path / "elsewhere")
    assert provenance.source_revision() is None
