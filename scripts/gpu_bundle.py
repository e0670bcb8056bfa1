"""The GPU bundle: what the device machine needs, in at most 2 parts, and its checks there.

Standard library only (it runs on the device machine before anything is installed).

A bundle is one payload, an uncompressed tar of

* `site/<distribution>.tar.xz`, one per installed wheel: together a `pip install --target`
  tree for Python 3.12 (or `--python`'s version, for a dry run) on manylinux x86_64, put
  first on PYTHONPATH there;
* `src.tar.xz`: the project's working tree (tracked files and untracked ones git does not
  ignore, as `git ls-files` lists them, so a git worktree works the same);
* `warp-cache.tar.gz` (optional): a Warp kernel cache that an earlier check brought back;

cut into `part1/payload.1` ... `partN/payload.N` of at most `--part-mib` MiB each. Every
part folder also holds the same `MANIFEST.json`: the part count, each part's size (bytes)
and sha256, the whole payload's sha256, and what it holds (wheels with their sha256, the
source commit). Either part alone therefore says what is missing.

    python3 scripts/gpu_bundle.py pack --site DIR --wheels DIR --src-root DIR --out DIR \
        [--warp-cache FILE.tar.gz] [--cache DIR] [--part-mib 60] [--max-parts 2] \
        [--python 3.12]
    python3 scripts/gpu_bundle.py verify DIR [DIR ...]      # folders holding part<k>/
    python3 scripts/gpu_bundle.py unpack DIR [DIR ...] --dest DIR

`verify` and `unpack` exit 2 with one line on stderr naming what is wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

FORMAT = "orbitlab-gpu-bundle/1"
MIB = 1024 * 1024
XZ_PRESET = 9 | lzma.PRESET_EXTREME
PINNED = {"mujoco", "mujoco-core", "mujoco-warp", "warp-lang", "gymnasium"}
"""Distributions always taken from the bundle; any other one that the device's Python
already has (numpy, typing-extensions, ...) is used from there instead."""


class BundleError(Exception):
    """A bundle that is incomplete, corrupted or too large; the message is one line."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(4 * MIB), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------------------ pack
def _source_files(root: Path) -> tuple[list[str], dict]:
    """Files of the working tree (tracked + untracked, not ignored) and the commit."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], check=True, text=True, capture_output=True
        ).stdout

    names = [
        n
        for n in git("ls-files", "-z", "-co", "--exclude-standard").split("\0")
        if n and (root / n).is_file()
    ]
    commit = git("rev-parse", "HEAD").strip()
    dirty = bool(git("status", "--porcelain").strip())
    return sorted(set(names)), {"commit": commit, "dirty": dirty, "files": len(set(names))}


def _tar_xz(path: Path, base: Path, names: list[str]) -> None:
    """A tar of `names` under `base`, xz -9e: by the xz tool on every core when there is
    one (Python's lzma is single-threaded, ~2x slower), else by Python."""
    if shutil.which("xz") is None:
        with tarfile.open(path, "w:xz", preset=XZ_PRESET) as tar:
            for name in names:
                tar.add(base / name, arcname=name, recursive=False)
        return
    with open(path, "wb") as sink:
        xz = subprocess.Popen(["xz", "-9e", "-T0", "-c"], stdin=subprocess.PIPE, stdout=sink)
        with tarfile.open(fileobj=xz.stdin, mode="w|") as tar:
            for name in names:
                tar.add(base / name, arcname=name, recursive=False)
        xz.stdin.close()
        if xz.wait() != 0:
            raise BundleError(f"xz failed (exit {xz.returncode}) writing {path}")


def _normalized(name: str) -> str:
    """'Name-1.0' (a dist-info less its suffix) or 'name-1.0-py3-none-any.whl' -> 'name-1.0'."""
    dist, version = name.split("-")[:2]
    return f"{dist.lower().replace('_', '-').replace('.', '-')}-{version}"


def _dist_groups(site: Path) -> dict[str, list[str]]:
    """The --target tree's files by distribution ({'warp_lang-1.19.0': [paths]}, from each
    *.dist-info/RECORD, the dist-info itself included); files no RECORD lists (pip's
    own leftovers, a test's fake tree) under '_other'."""
    groups: dict[str, list[str]] = {}
    claimed: set[str] = set()
    for info in sorted(site.glob("*.dist-info")):
        record = info / "RECORD"
        listed = record.read_text().splitlines() if record.is_file() else []
        names = {line.rsplit(",", 2)[0] for line in listed if line.strip()}
        names |= {str(p.relative_to(site)) for p in info.rglob("*") if p.is_file()}
        files = sorted(n for n in names if (site / n).is_file() and n not in claimed)
        claimed.update(files)
        groups[info.name.removesuffix(".dist-info")] = files
    other = sorted(
        n
        for n in (str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
        if n not in claimed
    )
    if other:
        groups["_other"] = other
    return groups


def _site_archives(site: Path, cache: Path | None) -> dict[str, Path]:
    """One `site/<distribution>.tar.xz` per installed distribution, each kept in `cache`
    under a key of its files' names and contents: xz -9e of warp's ~300 MB library takes
    ~15 minutes on a 2-core machine, so a change of the package list or of the Python
    version compresses only what changed (warp-lang's wheel is the same for every Python)."""
    folder = cache or site.parent
    folder.mkdir(parents=True, exist_ok=True)
    archives = {}
    for dist, names in _dist_groups(site).items():
        digest = hashlib.sha256()
        for name in names:
            digest.update(f"{name}\0{sha256_file(site / name)}\0".encode())
        target = folder / f"{dist}-{digest.hexdigest()[:16]}.tar.xz"
        if not target.exists():
            start = time.perf_counter()
            _tar_xz(target.with_suffix(".part"), site, names)
            target.with_suffix(".part").rename(target)
            print(
                f"gpu_bundle: compressed {dist} ({len(names)} files) in "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
        archives[f"site/{dist}.tar.xz"] = target
    return archives


def pack(
    site: Path,
    wheels_dir: Path,
    src_root: Path,
    out: Path,
    warp_cache: Path | None,
    cache: Path | None,
    part_mib: int,
    max_parts: int,
    python: str = "3.12",
) -> dict:
    """Write out/part1..partN and their manifests; return the manifest."""
    installed = {_normalized(i.name.removesuffix(".dist-info")) for i in site.glob("*.dist-info")}
    wheels = [
        {"file": w.name, "sha256": sha256_file(w)}
        for w in sorted(wheels_dir.glob("*.whl"))
        if not installed or _normalized(w.name) in installed
    ]
    if not wheels:
        raise BundleError(f"no wheels in {wheels_dir}")
    members = _site_archives(site, cache)
    names, source = _source_files(src_root)
    out.mkdir(parents=True, exist_ok=True)
    members["src.tar.xz"] = out / "src.tar.xz"
    _tar_xz(members["src.tar.xz"], src_root, names)
    if warp_cache is not None:
        members["warp-cache.tar.gz"] = warp_cache
    sizes = {name: path.stat().st_size for name, path in members.items()}
    payload = out / "payload.tar"
    with tarfile.open(payload, "w") as tar:
        for name, path in members.items():
            tar.add(path, arcname=name)
    part_bytes, total = part_mib * MIB, payload.stat().st_size
    count = -(-total // part_bytes)
    if count > max_parts:
        listing = ", ".join(f"{n} {s / MIB:.1f} MiB" for n, s in sizes.items())
        raise BundleError(
            f"payload of {total / MIB:.1f} MiB needs {count} parts of {part_mib} "
            f"MiB, over the limit of {max_parts} ({listing}): drop a wheel or "
            "the warp cache"
        )
    for old in out.glob("part*"):
        shutil.rmtree(old)
    parts = []
    with open(payload, "rb") as handle:
        for k in range(1, count + 1):
            folder = out / f"part{k}"
            folder.mkdir()
            chunk = folder / f"payload.{k}"
            chunk.write_bytes(handle.read(part_bytes))
            parts.append(
                {
                    "index": k,
                    "file": f"part{k}/payload.{k}",
                    "bytes": chunk.stat().st_size,
                    "sha256": sha256_file(chunk),
                }
            )
    manifest = {
        "format": FORMAT,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "part_count": count,
        "parts": parts,
        "payload_bytes": total,
        "payload_sha256": sha256_file(payload),
        "members": sizes,
        "wheels": wheels,
        "source": source,
        "python": python,
        "platform": "manylinux_2_28_x86_64",
    }
    for k in range(1, count + 1):
        (out / f"part{k}" / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    payload.unlink()
    members["src.tar.xz"].unlink()
    return manifest


# ------------------------------------------------------------------- verify / unpack
def _find_manifest(dirs: list[Path]) -> dict:
    found = sorted(p for d in dirs for p in d.glob("part*/MANIFEST.json"))
    if not found:
        raise BundleError(
            f"no part*/MANIFEST.json under {' '.join(map(str, dirs))}: carry the "
            "parts made by scripts/gpu_bundle.sh"
        )
    try:
        manifest = json.loads(found[0].read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise BundleError(f"{found[0]}: unreadable manifest ({error})") from error
    if manifest.get("format") != FORMAT:
        raise BundleError(f"{found[0]}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    return manifest


def verify(dirs: list[Path]) -> tuple[dict, list[Path]]:
    """Check the part count, every part's size and sha256, and the payload's sha256;
    return the manifest and the part files in order."""
    manifest = _find_manifest(dirs)
    files, payload = [], hashlib.sha256()
    for part in manifest["parts"]:
        candidates = [d / part["file"] for d in dirs if (d / part["file"]).is_file()]
        if not candidates:
            raise BundleError(
                f"part {part['index']} of {manifest['part_count']} missing "
                f"({part['file']} not under {' '.join(map(str, dirs))}): carry it "
                "in an earlier call within the warm window"
            )
        path, size = candidates[0], candidates[0].stat().st_size
        if size != part["bytes"]:
            raise BundleError(f"{path}: {size} bytes, manifest says {part['bytes']}")
        digest = sha256_file(path)
        if digest != part["sha256"]:
            raise BundleError(
                f"{path}: sha256 {digest[:12]}... differs from the manifest's "
                f"{part['sha256'][:12]}... (corrupted part)"
            )
        with open(path, "rb") as handle:
            for block in iter(lambda h=handle: h.read(4 * MIB), b""):
                payload.update(block)
        files.append(path)
    if payload.hexdigest() != manifest["payload_sha256"]:
        raise BundleError("the parts join into a payload whose sha256 differs from the manifest")
    return manifest, files


class _Joined(io.RawIOBase):
    """The parts read back to back as one stream, one file open at a time."""

    def __init__(self, files: list[Path]):
        self._paths, self._current = list(files), None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self._current is None:
                if not self._paths:
                    return 0
                self._current = open(self._paths.pop(0), "rb")  # noqa: SIM115 - closed below
            n = self._current.readinto(buffer)
            if n:
                return n
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        super().close()


def _drop_system_duplicates(site: Path) -> list[str]:
    """Remove bundled distributions that this Python already has (except PINNED)."""
    from importlib import metadata

    dropped = []
    for info in sorted(site.glob("*.dist-info")):
        name = info.name.split("-")[0].lower().replace("_", "-")
        if name in PINNED:
            continue
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        for line in (info / "RECORD").read_text().splitlines():
            path = site / line.split(",")[0]
            if path.is_file():
                path.unlink()
        shutil.rmtree(info, ignore_errors=True)
        dropped.append(f"{name} {version}")
    return dropped


def unpack(dirs: list[Path], dest: Path) -> dict:
    """Verify, then extract site/, src/ and warp-cache/ under `dest`."""
    manifest, files = verify(dirs)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BufferedReader(_Joined(files), 4 * MIB), mode="r|") as outer:
        for member in outer:
            folder = dest / member.name.split("/")[0].split(".")[0]
            with tarfile.open(fileobj=outer.extractfile(member), mode="r|*") as inner:
                inner.extractall(folder, filter="data")
    dropped = _drop_system_duplicates(dest / "site")
    if dropped:
        print(f"gpu_bundle: using this Python's own {', '.join(dropped)}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--site", type=Path, required=True)
    p.add_argument("--wheels", type=Path, required=True)
    p.add_argument("--src-root", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--warp-cache", type=Path, default=None)
    p.add_argument("--cache", type=Path, default=None, help="where site-<key>.tar.xz is kept")
    p.add_argument("--part-mib", type=int, default=60)
    p.add_argument("--max-parts", type=int, default=2)
    p.add_argument("--python", default="3.12", help="the Python version the site is for")
    for name in ("verify", "unpack"):
        q = sub.add_parser(name)
        q.add_argument("dirs", type=Path, nargs="+")
        if name == "unpack":
            q.add_argument("--dest", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            m = pack(
                args.site,
                args.wheels,
                args.src_root,
                args.out,
                args.warp_cache,
                args.cache,
                args.part_mib,
                args.max_parts,
                args.python,
            )
            for part in m["parts"]:
                print(
                    f"{args.out}/{part['file']}: {part['bytes'] / MIB:.1f} MiB "
                    f"sha256 {part['sha256'][:16]}"
                )
        elif args.command == "verify":
            m, _ = verify(args.dirs)
            print(
                f"gpu_bundle: {m['part_count']} part(s), {m['payload_bytes'] / MIB:.1f} MiB, "
                f"checksums ok (source {m['source']['commit'][:10]})"
            )
        else:
            start = time.perf_counter()
            m = unpack(args.dirs, args.dest)
            print(
                f"gpu_bundle: unpacked {m['part_count']} part(s) into {args.dest} in "
                f"{time.perf_counter() - start:.1f} s (source {m['source']['commit'][:10]}"
                f"{', dirty' if m['source']['dirty'] else ''})"
            )
    except BundleError as error:
        print(f"gpu_bundle: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
