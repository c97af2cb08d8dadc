"""Parse command lines as their modules would, and stop before any work: argparse's dry run.

    python tests/parse_only.py < calls.json

reads a JSON list of [module, [argument, ...] or null] and prints a JSON list of answers: an
error message, "" for a command line its module accepts, null for a module that cannot be asked
without running it. A module is asked through its own parse function when it has one (`parse`
or `parse_args`: they check more than argparse does, e.g. the grader's `--week`); else its `main`
runs with argparse's `parse_args` replaced by one that parses and then stops. A module whose
command line has no argparse parser is not run (its `main` would do the work), nor is one given
null arguments: that only checks that the module imports.
"""

import argparse
import contextlib
import importlib
import inspect
import io
import json
import sys


class Parsed(Exception):
    """Raised once a command line is parsed: nothing after it runs."""


def entry_module(name):
    """The module `python -m name` runs: the package's __main__, or the module itself."""
    module = importlib.import_module(name)
    if hasattr(module, "__path__"):
        module = importlib.import_module(f"{name}.__main__")
    return module


def parse_only(name, argv):
    """The error `python -m name *argv` would stop with before doing anything, "" when it would
    go on, None when the module has no argparse command line (only a run can tell)."""
    try:
        module = entry_module(name)
    except ImportError as error:
        return f"no module {name}: {error}"
    if argv is None:
        return ""
    parse = getattr(module, "parse", None) or getattr(module, "parse_args", None)
    if parse is None and "ArgumentParser" not in inspect.getsource(module):
        return None
    parse_args = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse_args(self, args, namespace)
        raise Parsed

    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            if parse is not None:
                parse(list(argv))
            else:
                argparse.ArgumentParser.parse_args = parse_then_stop
                module.main(list(argv))
    except Parsed:
        pass
    except SystemExit as exit:
        if exit.code not in (0, None):
            return errors.getvalue().strip() or f"exit {exit.code}"
    finally:
        argparse.ArgumentParser.parse_args = parse_args
    return ""


if __name__ == "__main__":
    calls = json.load(sys.stdin)
    print(json.dumps([parse_only(name, argv) for name, argv in calls]))
