"""Build the compiled accelerator: `python -m protocol.accel_build` (`make accel`).

Each module of `protocol.accel.ACCELERATED` is compiled by Cython as it is (pure-Python mode:
the same source, no .pyx), then by the C compiler, into `protocol/_compiled/`; the MANIFEST
written last records the CRC-32 of each source, so the finder in `protocol.accel` uses a build
only for the source it came from. Needs Cython (pinned in pyproject's `accel` extra) and a C
compiler; exits 1 without changing a working build when either is missing or a compile fails.

Directives: `annotation_typing=False` keeps every argument an untyped Python object, so the
compiled functions accept exactly what the pure ones accept (a `bytes` annotation would make
Cython refuse a bytearray the pure decoder slices happily); the gain is the interpreter's
dispatch gone and C calls for builtins, the behaviour identical.

The exception: the hot request decoders, whose generated `.pxd` (protocol/codegen.py's
TYPED_FAMILIES) Cython reads beside their `.py`. Their positions, lengths and counts are C integers
and their buffer `bytes` (every caller converts first): measured 1.17x (a 100-partition OffsetCommit)
and 1.23x (a Heartbeat) on top of the untyped compile, header and body decoded; the manifest's CRC
covers the `.pxd` too. Property tests hold both builds to the same results and errors.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import multiprocessing
import os
import shutil
import sys
import sysconfig
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from protocol.accel import ACCELERATED, COMPILED_DIR, MANIFEST, source_crc

ROOT = Path(__file__).resolve().parent.parent
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,
    "binding": True,
    "always_allow_keywords": True,
    "embedsignature": False,
    # The typed decoders (a `bytes` buffer, see protocol/codegen.py's .pxd files) check for None as
    # Python would (TypeError), rather than read through a null pointer.
    "nonecheck": True,
}


def source_of(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".py")


def _cythonize_one(cythonize: Any, c_dir: str, extension: Any) -> list[Any] | str:
    """The module's extension with its C source, or why Cython refused it."""
    try:
        return list(cythonize([extension], build_dir=c_dir, compiler_directives=DIRECTIVES, quiet=True))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def build(jobs: int, build_dir: Path) -> int:
    try:  # through import_module: neither ships type information (Any, as mypy would see them untyped)
        cythonize: Any = importlib.import_module("Cython.Build").cythonize
        Extension: Any = importlib.import_module("setuptools").Extension
        Distribution: Any = importlib.import_module("setuptools.dist").Distribution
    except ImportError as exc:
        print(f"accelerator not built: {exc} (pip install '.[accel]')", file=sys.stderr)
        return 1
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    sources = {module: source_of(module) for module in ACCELERATED}
    crcs = {module: source_crc(str(path)) for module, path in sources.items()}
    # -g0 -O2: no debug information and gcc's usual level; the generated C of the big codec modules
    # otherwise takes minutes more to compile, for no speed measured.
    extensions = [Extension(module, [str(path.relative_to(ROOT))], extra_compile_args=["-g0", "-O2"])
                  for module, path in sources.items()]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        # Each module through Cython on its own, `jobs` at a time: a module Cython refuses is left
        # pure, the rest built.
        compiled = []
        translate = functools.partial(_cythonize_one, cythonize, str(build_dir / "c"))
        with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=multiprocessing.get_context("fork")) as pool:
            for extension, result in zip(extensions, pool.map(translate, extensions), strict=True):
                if isinstance(result, str):
                    print(f"left pure: {extension.name}: {result}", file=sys.stderr)
                else:
                    compiled += result
        dist = Distribution({"name": "groupcoord-accel", "ext_modules": compiled})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib = str(build_dir / "lib")
        cmd.build_temp = str(build_dir / "tmp")
        cmd.parallel = jobs
        cmd.inplace = False
        dist.run_command("build_ext")
    except Exception as exc:  # a compiler error, no compiler: the server runs pure
        print(f"accelerator not built: {exc}", file=sys.stderr)
        return 1
    finally:
        os.chdir(cwd)
    os.makedirs(COMPILED_DIR, exist_ok=True)
    lines = []
    for extension in compiled:
        module = extension.name
        built = build_dir / "lib" / (module.replace(".", "/") + suffix)
        name = module + suffix
        shutil.copyfile(built, os.path.join(COMPILED_DIR, name + ".tmp"))
        os.replace(os.path.join(COMPILED_DIR, name + ".tmp"), os.path.join(COMPILED_DIR, name))
        lines.append(f"{module} {name} {crcs[module]}\n")
    with open(MANIFEST + ".tmp", "w", encoding="ascii") as f:
        f.writelines(lines)
    os.replace(MANIFEST + ".tmp", MANIFEST)
    print(f"accelerator built: {len(lines)} modules in {COMPILED_DIR}")
    return 0


def clean() -> None:
    shutil.rmtree(COMPILED_DIR, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clean", action="store_true", help="remove the build: everything runs pure")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "accel")
    args = parser.parse_args()
    if args.clean:
        clean()
        return 0
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        print("accelerator not built: no C compiler (cc); the server runs pure Python", file=sys.stderr)
        return 1
    return build(args.jobs, args.build_dir)


if __name__ == "__main__":
    sys.exit(main())
