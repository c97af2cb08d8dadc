"""PyTorch made absent where it is installed: `import torch` fails as if it were not there.

CI proves the tests pass without PyTorch by running `-m oracle` before installing it (.ci/run).
To see the same where PyTorch is installed, put this folder first on the path (Python imports
sitecustomize at start-up, in the processes the tests start too, unless they replace PYTHONPATH):

    PYTHONPATH=tests/without_torch .venv/bin/python -m pytest -m oracle
"""

import sys


class NoTorch:
    """A finder that answers every `torch` import with the error of a missing package."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoTorch())
