#!/usr/bin/env python3
"""Prunes a cargo target folder used as a build cache (tests/run-all.sh): removes the
artifacts of this repository's own crates that a newer build of the same crate target has
replaced, which cargo never removes itself.

Why: a workspace crate's artifacts are named `<target>-<hash>`, where the hash covers its
dependencies' versions and features. Every change of the dependency graph (a crate added to
Cargo.toml, a feature turned on) gives every dependent test binary a new hash, and the old
ones stay: here 9 generations of one 270 MB test binary were found, 65 GB in all, until the
disk was full. Third-party artifacts are kept: several builds of one dependency (other
features, a build dependency) are normal and live side by side, and they change only with
Cargo.lock.

How: each `<deps>/<stem>.d` (rustc's dep-info, written with every artifact) names the
artifact's sources; its first source is the crate target's root file. A build of a root
file of this repository (a path not under ~/.cargo or a toolchain) is kept when it was
written since `--since` (the run that calls this built or rebuilt it), when it is the newest
of its kind (a library, its metadata alone as `cargo clippy` writes it, an executable) for
that root file in that folder, or when it was written less than `--keep-days` days ago (3);
every file of the others is removed: `<stem>`, `<stem>.*`, `lib<stem>.*`.
Incremental-compilation folders not written for `--incremental-days` days go too.

Why the days: several builds of one crate target in one folder can all be live. The
windows suite builds tether.exe with the `real-agents` feature and the tests of tether-host
and tether-store without it, so the workspace's libraries there exist in two builds (other
features of their dependencies, another hash), and clippy's metadata for the library and
for its tests likewise. A build cargo finds fresh is not written again, so "written by this
run" misses it; keeping only the newest then removed the other build after every run, and the
next run compiled it again (measured: 29 packages compiled by the windows suite's build and
13 checked by clippy in a run where no source had changed, about 95 s of 849). Nothing in a
target folder says which builds the next run will want, so a replaced build is given the
days: an unchanged live build is compiled again at most once in that time, and a replaced
generation is gone after it.

Usage: prune-cache.py TARGET_DIR [--since EPOCH_SECONDS] [--keep-days N]
                      [--incremental-days N] [--dry-run]
Prints what it freed. Never fails the run: an unreadable file is skipped.
"""

import argparse
import os
import shutil
import sys
import time


def root_source(dep_info):
    """The first source named by a rustc dep-info file, or None."""
    try:
        with open(dep_info, encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return None
    _, sep, sources = first.partition(": ")
    if not sep:
        return None
    parts = sources.split()
    return parts[0] if parts else None


def repository_key(source):
    """The source's path inside this repository, or None for a third-party source."""
    if not os.path.isabs(source):
        return source  # cargo names a workspace member's files relative to the workspace
    for marker in ("/.cargo/registry/", "/.cargo/git/", "/.rustup/", "/rustlib/"):
        if marker in source:
            return None
    # A path dependency outside the workspace being built (the fuzz workspace builds the
    # repository's crates so): keyed from its crates/ folder on.
    i = source.find("/crates/")
    return source[i + 1:] if i >= 0 else None


def stem_of(file_name):
    """`daemon-0123abcd` of `daemon-0123abcd`, `daemon-0123abcd.d`, `libx-0123abcd.rlib`."""
    base = file_name[3:] if file_name.startswith("lib") else file_name
    return base.split(".", 1)[0]


def kind_of(extensions):
    """What a build wrote, from its files' extensions (the .d file aside)."""
    if "rlib" in extensions:
        return "library"
    if extensions & {"so", "dylib", "dll"}:
        return "dynamic library"
    if extensions == {"rmeta"}:
        return "metadata"
    return "executable"


def prune_deps(deps, cutoff, dry_run):
    """Removes the replaced builds of each repository crate target in `deps` written before
    `cutoff` (the earlier of `--since` and `--keep-days` ago; see the module docs); returns
    the bytes freed."""
    extensions = {}  # stem -> the extensions of its files
    for entry in os.scandir(deps):
        stem = stem_of(entry.name)
        ext = entry.name[len(stem) + (3 if entry.name.startswith("lib") else 0):].lstrip(".")
        extensions.setdefault(stem, set()).add(ext)
    newest = {}  # (crate name, repository key, kind) -> (mtime, stem)
    builds = []
    for entry in os.scandir(deps):
        if not entry.name.endswith(".d") or "-" not in entry.name:
            continue
        stem = entry.name[:-2]
        source = root_source(entry.path)
        key = repository_key(source) if source else None
        if key is None:
            continue
        try:
            mtime = entry.stat().st_mtime
        except OSError:
            continue
        kind = kind_of(extensions.get(stem, set()) - {"d"})
        group = (stem.rsplit("-", 1)[0], key, kind)
        builds.append((group, mtime, stem))
        if group not in newest or mtime > newest[group][0]:
            newest[group] = (mtime, stem)
    old_stems = {
        stem for group, mtime, stem in builds if mtime < cutoff and newest[group][1] != stem
    }
    if not old_stems:
        return 0
    freed = 0
    for entry in os.scandir(deps):
        if stem_of(entry.name) in old_stems:
            try:
                freed += entry.stat().st_size
                if not dry_run:
                    os.remove(entry.path)
            except OSError:
                pass
    return freed


def tree_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def prune_incremental(folder, days, dry_run):
    """Removes the incremental-compilation folders in `folder` older than `days`."""
    cutoff = time.time() - days * 86400
    freed = 0
    for entry in os.scandir(folder):
        try:
            if entry.is_dir() and entry.stat().st_mtime < cutoff:
                freed += tree_size(entry.path)
                if not dry_run:
                    shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            pass
    return freed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target_dir")
    parser.add_argument("--since", type=float, default=float("inf"))
    parser.add_argument("--keep-days", type=float, default=3)
    parser.add_argument("--incremental-days", type=float, default=3)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    if not os.path.isdir(args.target_dir):
        return 0
    freed = 0
    cutoff = min(args.since, time.time() - args.keep_days * 86400)
    for root, dirs, _ in os.walk(args.target_dir):
        for d in list(dirs):
            path = os.path.join(root, d)
            if d == "deps":
                freed += prune_deps(path, cutoff, args.dry_run)
                dirs.remove(d)
            elif d == "incremental":
                freed += prune_incremental(path, args.incremental_days, args.dry_run)
                dirs.remove(d)
            elif d in ("wine", "dist", "nextest", ".fingerprint", "build", "tmp"):
                dirs.remove(d)
    verb = "would free" if args.dry_run else "freed"
    print(f"build cache {args.target_dir}: {verb} {freed / 1e9:.1f} GB of replaced builds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
