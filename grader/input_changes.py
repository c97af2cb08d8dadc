"""New contents for an op's inputs between timed calls, in place, as a training loop gives a layer
new activations at every step.

The timing loop calls an op with the same argument objects over and over. Were their contents
unchanged too, an op that remembers its last answer (keyed by the objects' identity, by their
device address, or by a sample of their values) would be timed at the speed of a copy. So before
every timed call of the graded tier, each floating-point array argument is rolled by one element
(flattened, a[i] <- a[i - 1]) in its own memory: a permutation keeps every value in its domain
(a variance stays positive, a probability within [0, 1], a hinge label +-1) and every shape as
it was, while almost every element changes. Integer arrays (labels, argmax indices) keep their
contents: their bounds come from other arguments' shapes. The answer is then re-validated on the
contents its call saw (grader/speed.py), so an answer remembered from earlier contents fails.
"""

import numpy as np


def roll_in_place(native):
    """Roll the floating-point contents of one native value (a NumPy array, a device array, nested
    lists of floats, or a tuple of these) by one element; leave anything else as it is."""
    if isinstance(native, tuple):
        for item in native:
            roll_in_place(item)
    elif isinstance(native, np.ndarray):
        if native.dtype.kind == "f":
            native[...] = np.roll(native, 1)
    elif hasattr(native, "__cuda_array_interface__") or hasattr(native, "copy_to_device"):
        _roll_on_device(native)
    elif isinstance(native, list) and native:
        contents = np.asarray(native)
        if contents.dtype.kind == "f":
            _assign_nested(native, np.roll(contents, 1).tolist())


def _roll_on_device(native):
    """The roll by device-to-device copies through a scratch array (no trip through the host)."""
    from numba import cuda

    array = native if cuda.devicearray.is_cuda_ndarray(native) else cuda.as_cuda_array(native)
    if array.dtype.kind != "f" or array.size < 2:
        return
    flat = array.reshape(array.size)
    rolled = cuda.device_array_like(flat)
    rolled[1:].copy_to_device(flat[:-1])
    rolled[:1].copy_to_device(flat[-1:])
    flat.copy_to_device(rolled)


def _assign_nested(target, source):
    """Write nested lists `source` into nested lists `target` of the same shape, keeping every
    list object (an op may hold on to the outer one, or an inner row)."""
    if target and isinstance(target[0], list):
        for row, values in zip(target, source, strict=True):
            _assign_nested(row, values)
    else:
        target[:] = source
