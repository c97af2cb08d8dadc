"""How a tier's package gets the contract's ops: each imported from its module, by name.

A tier's `__init__.py` ends with

    __all__ = [*export_ops(globals()), "MATMUL_KERNELS", ...]   # then the tier's own extras

which imports every op of the contract from the tier's module that holds it (`.linalg` for
matmul: contract/ops.py, GROUPS), binds it in the package and returns the names the package
exports: the interface's (NAME, from_numpy, ..., which the package defines before the call) and
the ops'. A missing module, op or interface name is an ImportError naming the file and the name.
"""

import importlib
from pathlib import Path

from .ops import INTERFACE, OPS


def export_ops(namespace):
    """Bind every op of the contract in `namespace` (a tier package's globals()), from the module
    of the package that holds it; return the interface's names, then the ops', in order."""
    package, folder = namespace["__name__"], Path(namespace["__file__"]).parent
    missing = [name for name in INTERFACE if name not in namespace]
    if missing:
        raise ImportError(
            f"{folder / '__init__.py'} defines no {', '.join(missing)}: every tier "
            "defines the interface of contract/CONTRACT.md, 'A tier's interface'"
        )
    modules = {}
    for op in OPS.values():
        if op.module not in modules:
            modules[op.module] = _import(package, folder, op.module, op.name)
        try:
            namespace[op.name] = getattr(modules[op.module], op.name)
        except AttributeError:
            raise ImportError(
                f"{folder / op.module}.py defines no {op.name}: every tier defines the "
                f"contract's op {op.name} in its {op.module}.py (contract/ops.py)"
            ) from None
    return [*INTERFACE, *OPS]


def _import(package, folder, module, op_name):
    """The tier's module `module` (e.g. stage1_python.linalg), or an ImportError naming it."""
    try:
        return importlib.import_module(f"{package}.{module}")
    except ModuleNotFoundError as error:
        if error.name != f"{package}.{module}":
            raise  # something the module itself imports is missing: its own error says what
        raise ImportError(
            f"{folder / module}.py is missing: every tier holds the contract's op {op_name} "
            f"(and the rest of its group) in its {module}.py (contract/ops.py)"
        ) from None
