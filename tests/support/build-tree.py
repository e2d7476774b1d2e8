#!/usr/bin/env python3
"""Makes the build tree an exact copy of a checkout, rewriting only the files that differ.

Usage: build-tree.py CHECKOUT TREE

Why (tests/run-all.sh, "The build tree"): Cargo calls a workspace crate fresh when its
sources are older than its last build and compiles the checkout's path into it
(CARGO_MANIFEST_DIR). A fresh clone gives every file a new time at a new path, so every
crate of the workspace is built again although nothing changed. Copied here instead, a file
whose content is what the tree already holds keeps its old time, so Cargo finds exactly the
crates whose sources changed and rebuilds only those (and what depends on them); one path
serves every clone. Freshness is decided by content, as a content-addressed cache would,
with no cache of its own to keep.

The files copied are those git lists for the checkout: tracked and untracked but not
ignored (`git ls-files --cached --others --exclude-standard`), the ones deleted in the work
tree left out; a checkout that is not a git work tree is an error. Everything else in the
tree is removed (files of an earlier commit, and what earlier runs generated there:
node_modules, test artifacts), so the tree holds what the checkout holds and nothing more.
A file is rewritten through a temporary file and a rename, so the tree never holds half a
file; its executable bit follows the checkout's; symbolic links are copied as links.

Prints one line: the files in the tree, how many were written and how many removed.
Exit status 1 with a message on any error (the caller stops the run).
"""

import os
import shutil
import stat
import subprocess
import sys


def listed(checkout: str) -> list[str]:
    """The checkout's files as git lists them, relative paths, those deleted skipped."""
    out = subprocess.run(
        ["git", "-C", checkout, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    paths = {os.fsdecode(p) for p in out.split(b"\0") if p}
    return sorted(p for p in paths if os.path.lexists(os.path.join(checkout, p)))


def same(src: str, dst: str, src_st: os.stat_result) -> bool:
    """Whether dst already is what src is: the same kind, executable bit and content."""
    try:
        dst_st = os.lstat(dst)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(src_st.st_mode) or stat.S_ISLNK(dst_st.st_mode):
        return (
            stat.S_ISLNK(src_st.st_mode)
            and stat.S_ISLNK(dst_st.st_mode)
            and os.readlink(src) == os.readlink(dst)
        )
    if not stat.S_ISREG(dst_st.st_mode) or dst_st.st_size != src_st.st_size:
        return False
    if (dst_st.st_mode & 0o111 != 0) != (src_st.st_mode & 0o111 != 0):
        return False
    with open(src, "rb") as a, open(dst, "rb") as b:
        while True:
            chunk = a.read(1 << 20)
            if chunk != b.read(1 << 20):
                return False
            if not chunk:
                return True


def clear_way(tree: str, rel: str) -> None:
    """Removes whatever non-folder stands where a folder of rel must be (a file that became a
    folder between commits), and a folder where rel itself must be a file."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        p = os.path.join(tree, *parts[:i])
        if os.path.islink(p) or (os.path.lexists(p) and not os.path.isdir(p)):
            os.unlink(p)
    target = os.path.join(tree, rel)
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)


def copy(src: str, dst: str, src_st: os.stat_result) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = f"{dst}.tether-tree.tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    if stat.S_ISLNK(src_st.st_mode):
        os.symlink(os.readlink(src), tmp)
    else:
        with open(src, "rb") as a, open(tmp, "wb") as b:
            while chunk := a.read(1 << 20):
                b.write(chunk)
        os.chmod(tmp, 0o755 if src_st.st_mode & 0o111 else 0o644)
    os.replace(tmp, dst)


def prune(tree: str, keep: set[str]) -> int:
    """Removes from the tree every file and link not in keep, then the folders left empty."""
    removed = 0
    for root, dirs, files in os.walk(tree, topdown=False):
        rel_root = os.path.relpath(root, tree)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if rel not in keep:
                os.unlink(os.path.join(root, name))
                removed += 1
        if root != tree and not os.listdir(root):
            os.rmdir(root)
    return removed


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: build-tree.py CHECKOUT TREE", file=sys.stderr)
        return 2
    checkout, tree = (os.path.abspath(a) for a in sys.argv[1:])
    if tree == checkout or tree.startswith(checkout + os.sep):
        print(f"build-tree.py: the tree {tree} must lie outside the checkout {checkout}", file=sys.stderr)
        return 1
    try:
        files = listed(checkout)
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        print(f"build-tree.py: cannot list the files of {checkout} with git: {e} {detail.decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    os.makedirs(tree, mode=0o700, exist_ok=True)
    written = 0
    for rel in files:
        src, dst = os.path.join(checkout, rel), os.path.join(tree, rel)
        src_st = os.lstat(src)
        if not (stat.S_ISREG(src_st.st_mode) or stat.S_ISLNK(src_st.st_mode)):
            continue  # a submodule's folder or a special file: nothing a build reads
        if same(src, dst, src_st):
            continue
        clear_way(tree, rel)
        copy(src, dst, src_st)
        written += 1
    removed = prune(tree, set(files))
    print(f"build tree {tree}: {len(files)} files, {written} written, {removed} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
