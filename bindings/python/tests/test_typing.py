"""The package is typed: `py.typed` ships, and the stub of the native module names exactly
what the module defines."""

from __future__ import annotations

import ast
import pathlib

import resumable_kernel
from resumable_kernel import _native

PACKAGE = pathlib.Path(resumable_kernel.__file__).parent


def test_the_package_ships_py_typed_and_the_stub() -> None:
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "_native.pyi").exists()


def test_the_stub_names_exactly_what_the_native_module_defines() -> None:
    tree = ast.parse((PACKAGE / "_native.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    defined = {name for name in vars(_native) if not name.startswith("_")}
    assert stubbed == defined


def test_everything_exported_exists() -> None:
    for name in resumable_kernel.__all__:
        assert hasattr(resumable_kernel, name), name
