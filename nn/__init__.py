"""The network, written once over the op contract: layers, models, optimizers, schedules, trainer.

`nn` never computes on arrays itself: every layer and optimizer calls the ops of the tier it is
handed (`nn.backend.load_tier(stage)`), so the same model trains on pure Python, NumPy, C or CUDA.
Entry points: `python -m nn.train`, `python -m nn.predict`.

The network is an exercise too (weeks 9 and 10): with `S2C_NN=DIR` in the environment, and DIR
holding `nn/` (a workspace from `make exercises`), every module of `nn` is imported from DIR/nn
instead of this folder; `make train` sets it by the rule of `make grade` (README, "Which code
runs"). `SOURCE` says which copy runs. Only this file of the repository's copy runs then.
"""

import os
from pathlib import Path


def _learners_copy():
    """DIR/nn when S2C_NN names a folder DIR holding nn/ other than this one, else None."""
    folder = os.environ.get("S2C_NN")
    if not folder:
        return None
    copy = (Path(folder) / "nn").resolve()
    if not (copy / "__init__.py").is_file() or copy == Path(__file__).resolve().parent:
        return None
    return copy


_COPY = _learners_copy()
if _COPY is not None:
    # A package's __path__ is where its submodules are looked for: nn.layers, nn.trainer, ...
    __path__ = [str(_COPY)]
SOURCE = str(_COPY.parent) if _COPY is not None else "the reference"
