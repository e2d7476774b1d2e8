"""Runs Toad (batrachian-toad 0.6.20) on CPython 3.13, for machines without Python 3.14.

Toad declares Requires-Python >= 3.14 and uses three things 3.13 lacks; nothing else of it
differs. The registries these machines reach offer no Python 3.14 for Debian 12 (Debian's
bookworm has 3.11, PyPI ships no interpreter), so tests/toad/install.sh installs Toad into a
3.13 venv and tests/toad/run.sh starts it through this file, which supplies the three:

1. Deferred evaluation of annotations (PEP 649, new in 3.14): Toad's modules annotate with
   names defined later in the module (toad/app.py: `-> SettingsScreen`). Toad's own modules
   are compiled here with `from __future__ import annotations` (PEP 563), which leaves
   annotations unevaluated as PEP 649 does until something asks for them.
2. Toad's JSON-RPC layer (toad/jsonrpc.py) reads a handler's parameter types with
   `inspect.signature` and `eval`s string annotations in its own module, where the names of
   the handler's module are unknown; with PEP 563 every annotation is a string, so it gets
   `inspect.signature(..., eval_str=True)`, which evaluates them in the handler's module.
3. `concurrent.futures.InterpreterPoolExecutor` (new in 3.14), which Toad's fuzzy file search
   uses: a `ThreadPoolExecutor` of the same interface stands in.

Toad's code itself is unchanged: this only changes how it is compiled and what it imports.
Usage: python toad_py313.py [toad's arguments]   (as the `toad` command)
"""

import __future__
import concurrent.futures
import functools
import inspect
import sys
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, SourceFileLoader


class _PostponedAnnotationsLoader(SourceFileLoader):
    """Compiles a module as if it began with `from __future__ import annotations`."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return compile(
            self.get_data(path),
            path,
            "exec",
            flags=__future__.annotations.compiler_flag,
            dont_inherit=True,
        )


class _ToadFinder:
    """Finds Toad's own modules (`toad`, `toad.*`) for the loader above; the rest as usual."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "toad" and not name.startswith("toad."):
            return None
        for entry in path or sys.path:
            finder = FileFinder(entry, (_PostponedAnnotationsLoader, SOURCE_SUFFIXES))
            spec = finder.find_spec(name, target)
            # A folder without __init__.py (a namespace package such as toad.data) is left to
            # the standard path finder, which joins its portions.
            if spec is not None and spec.loader is not None:
                return spec
        return None


def main():
    if sys.version_info >= (3, 14):
        sys.exit("toad_py313.py is for Python 3.13; run Toad's own `toad` on 3.14")
    sys.meta_path.insert(0, _ToadFinder)
    if not hasattr(concurrent.futures, "InterpreterPoolExecutor"):
        concurrent.futures.InterpreterPoolExecutor = concurrent.futures.ThreadPoolExecutor
    import toad.jsonrpc

    toad.jsonrpc.signature = functools.partial(inspect.signature, eval_str=True)
    from toad.cli import main as toad_main

    sys.argv[0] = "toad"
    toad_main()


if __name__ == "__main__":
    main()
