"""Checkpoints: one .npz file (no pickle) with the parameters, buffers, optimizer state and a JSON
record of everything else (model, data, recipe, progress, history).

Written atomically: to a temporary file in the same folder, then renamed over the old one, so a
crash or Ctrl-C mid-write leaves the previous checkpoint intact. Only finite values are written: a
diverged model or optimizer never replaces the last good checkpoint. Loading validates the format,
the model name and every array's name and shape, and says what does not match.
"""

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from nn.setting_checks import is_int
from nn.tensor import shape_of

FORMAT = "scratch2cuda-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or does not fit the model it is loaded into."""


class NotFiniteError(CheckpointError):
    """A checkpoint not written because arrays `names` hold NaN or Inf (a diverged run)."""

    def __init__(self, path, names):
        self.names = names
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        super().__init__(f"checkpoint {path} not written: {shown} hold NaN or Inf")


def save_checkpoint(path, model, optimizer, record):
    """Write `model`'s parameters and buffers, `optimizer`'s state and `record` (a JSON-able dict)
    to `path` atomically. `optimizer` may be None (a model alone, e.g. for prediction).

    Raises NotFiniteError, writing nothing, if any parameter, buffer or optimizer state holds NaN
    or Inf: such a checkpoint could never be resumed, and it would replace the last good one."""
    tier = model.tier
    arrays = {f"param/{name}": tier.to_numpy(p.value) for name, p in model.parameters().items()}
    for name, value in model.buffers().items():
        is_counter = isinstance(value, int)
        arrays[f"buffer/{name}"] = np.asarray(value) if is_counter else tier.to_numpy(value)
    meta = {"format": FORMAT, "version": VERSION, "model": model.name, **record}
    if optimizer is not None:
        meta["optimizer_steps"] = optimizer.steps
        for key, value in optimizer.state().items():
            arrays[f"optim/{key}"] = tier.to_numpy(value)
    not_finite = [name for name, array in arrays.items() if not np.all(np.isfinite(array))]
    if not_finite:
        raise NotFiniteError(path, not_finite)
    write_arrays(path, arrays, meta)


def write_arrays(path, arrays, meta):
    """Write {name: array} and the JSON `meta` to `path` as a checkpoint's .npz, atomically."""
    arrays = {**arrays, "meta": np.array(json.dumps(meta))}
    write_atomically(path, lambda file: np.savez(file, **arrays))


def write_atomically(path, write):
    """Call `write(file)` on a temporary file beside `path`, then rename it to `path`: a crash or
    Ctrl-C mid-write leaves whatever `path` held before, never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def read_checkpoint(path):
    """(meta dict, {name: array}) of the checkpoint at `path`; CheckpointError if unreadable."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        meta = json.loads(str(arrays.pop("meta")))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a checkpoint ({type(error).__name__}: {error})"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a {FORMAT!r} file")
    version = meta_field(path, meta, "version", lambda v: is_int(v, 1), "an integer >= 1")
    if version > VERSION:
        raise CheckpointError(f"checkpoint {path} has version {version}, from a newer "
                              f"scratch2cuda: this one reads version {VERSION}")
    if version != VERSION:
        raise CheckpointError(f"checkpoint {path} has version {version}, expected {VERSION}")
    meta_field(path, meta, "model", lambda v: isinstance(v, str), "a model name")
    for name, array in arrays.items():
        if array.dtype.kind not in "fiu":
            raise CheckpointError(f"checkpoint {path}: {name} holds {array.dtype}, not numbers")
    return meta, arrays


def meta_field(path, meta, key, is_valid, expected):
    """`meta[key]` if present and `is_valid`; else a CheckpointError saying it must be `expected`.

    `is_valid` may raise LookupError, TypeError or ValueError on a value of another kind, which is
    refused too.
    """
    value = meta.get(key)
    try:
        valid = key in meta and is_valid(value)
    except (LookupError, TypeError, ValueError):
        valid = False
    if not valid:
        shown = repr(value) if key in meta else "missing"
        raise CheckpointError(f"checkpoint {path}: {key} must be {expected}, got {shown:.100}")
    return value


def restore(path, meta, arrays, model, optimizer=None):
    """Load the arrays of a read checkpoint into `model` (and `optimizer`), checking that every
    name and shape matches; the values become native arrays of the model's tier."""
    if meta["model"] != model.name:
        raise CheckpointError(
            f"checkpoint {path} holds model {meta['model']!r}, not {model.name!r}"
        )
    tier = model.tier
    parameters = model.parameters()
    _check_names(path, "parameters", parameters, arrays, "param/")
    for name, param in parameters.items():
        stored = _checked(path, arrays, f"param/{name}", shape_of(param.value))
        param.value = tier.from_numpy(stored)
    buffers = model.buffers()
    _check_names(path, "buffers", buffers, arrays, "buffer/")
    for name, value in buffers.items():
        if isinstance(value, int):  # a counter or a seed
            stored = _checked(path, arrays, f"buffer/{name}", ())
            if stored.dtype.kind not in "iu" or stored < 0:
                raise CheckpointError(f"checkpoint {path}: buffer/{name} must be an integer >= 0")
            model.load_buffer(name, int(stored))
        else:
            stored = _checked(path, arrays, f"buffer/{name}", shape_of(value))
            model.load_buffer(name, tier.from_numpy(stored))
    if optimizer is not None:
        steps = meta_field(path, meta, "optimizer_steps", is_int, "an integer >= 0")
        state = optimizer.state()
        _check_names(path, "optimizer state", state, arrays, "optim/")
        loaded = {
            key: tier.from_numpy(_checked(path, arrays, f"optim/{key}", shape_of(value)))
            for key, value in state.items()
        }
        optimizer.load_state(loaded, steps)


def _check_names(path, what, expected, arrays, prefix):
    stored = {name[len(prefix):] for name in arrays if name.startswith(prefix)}
    missing, extra = sorted(set(expected) - stored), sorted(stored - set(expected))
    if missing or extra:
        raise CheckpointError(
            f"checkpoint {path} does not fit the model's {what}: missing {missing}, "
            f"unexpected {extra}"
        )


def _checked(path, arrays, key, shape):
    array = arrays[key]
    if tuple(array.shape) != tuple(shape):
        raise CheckpointError(
            f"checkpoint {path}: {key} has shape {tuple(array.shape)}, "
            f"the model needs {tuple(shape)}"
        )
    if not np.all(np.isfinite(array)):
        raise CheckpointError(f"checkpoint {path}: {key} holds NaN or Inf")
    return array
