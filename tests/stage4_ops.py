"""What the tests of both stage-4 variants share (test_stage4_numba.py, test_stage4_nvcc.py): a
GPU tier's op run beside stage 2's on the same fresh inputs, its outputs poisoned with NaN
through the tier's allocation hook, and compared within the contract's GPU tolerance."""

import numpy as np

import stage2_numpy as reference
from grader import inputs
from grader.ops import OPS
from grader.poison import poisoned_allocations
from grader.session import split_arguments
from grader.tolerance import tolerance


def host(gpu, value):
    """A result of the GPU tier as NumPy: arrays, DeviceScalar losses, tuples, None."""
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(host(gpu, item) for item in value)
    if isinstance(value, gpu.DeviceScalar):
        return np.float64(float(value))
    return gpu.to_numpy(value)


def device(gpu, args):
    """Arguments for the GPU tier: arrays copied to the device, tuples of arrays item by item."""
    return {
        name: tuple(gpu.from_numpy(v) for v in value)
        if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray)
        else gpu.from_numpy(value.copy()) if isinstance(value, np.ndarray) else value
        for name, value in args.items()
    }


def assert_close(op_name, received, expected, args, where=""):
    """Every element within the contract's GPU tolerance of stage 2; NaN never passes."""
    if expected is None:
        assert received is None, f"{op_name}{where}: expected None"
        return
    if isinstance(expected, tuple):
        for index, (got, want) in enumerate(zip(received, expected, strict=True)):
            assert_close(op_name, got, want, args, f"{where}[{index}]")
        return
    received, expected = np.asarray(received), np.asarray(expected)
    assert received.shape == expected.shape, f"{op_name}{where}: shape {received.shape}"
    if expected.dtype.kind in "iu":
        np.testing.assert_array_equal(received, expected, err_msg=f"{op_name}{where}")
        return
    assert np.isfinite(received).all(), f"{op_name}{where}: NaN or inf (unwritten output?)"
    tol = tolerance(OPS[op_name], 32, 32, args, gpu=True)
    error = np.abs(received.astype(np.float64) - expected)
    limit = tol.atol + tol.rtol * np.abs(expected.astype(np.float64))
    assert (error <= limit).all(), f"{op_name}{where}: max error {error.max():.3g}"


def run_both(gpu, op_name, args, **options):
    """The op on stage 2 and on the GPU (outputs poisoned) -> (gpu result on the host, stage 2's,
    the GPU's in-place arguments on the host)."""
    contract_options = {k: v for k, v in options.items() if k in OPS[op_name].params}
    copies = {k: _copy(v) for k, v in args.items()}
    expected = call(reference, op_name, args, copies, **contract_options)  # no kernel= there
    natives = device(gpu, args)
    with poisoned_allocations(gpu):  # positional: col2im calls the contract's `dy` cols
        received = call(gpu, op_name, args, natives, **options)
    return host(gpu, received), expected, natives


def call(tier, op_name, args, values, **options):
    """`op_name` of `tier` on `values` (`args` or copies of them), as the grader calls it: the
    arguments the case leaves at their default left out, `options` passed by name."""
    positional, keywords = split_arguments(OPS[op_name], args, values, passed_apart=options)
    return getattr(tier, op_name)(*positional, **keywords, **options)


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


FORWARDS = [name for name, op in OPS.items() if op.build is not None]


def backward_args(rng, op_name):
    """Arguments of a backward op built from its forward's first case, as the grader does."""
    op = OPS[op_name]
    forward = OPS[op.forward]
    args = forward.build(rng, forward.cases[0])
    outputs = call(reference, op.forward, args, {k: _copy(v) for k, v in args.items()})
    first = outputs[0] if isinstance(outputs, tuple) else outputs
    named = dict(args)
    if isinstance(outputs, tuple):
        named.update(zip([o if isinstance(o, str) else o[0] for o in forward.outputs], outputs,
                         strict=True))
    elif forward.outputs != ("loss",):
        named[forward.outputs[0]] = outputs
    if not isinstance(first, float):
        named["dy"] = inputs.normal(rng, np.shape(first))
    x = args.get("x", args.get("logits"))
    if x is not None:
        named["x_shape"] = tuple(x.shape)
    return {name: named[name] for name in op.params}


BACKWARDS = [name for name, op in OPS.items() if op.build is None]


def check_forward(gpu, rng, op_name):
    """A forward op (or an in-place step) on the first two cases of the contract's table."""
    op = OPS[op_name]
    for size in op.cases[:2]:
        args = op.build(rng, size)
        received, expected, natives = run_both(gpu, op_name, args)
        if op.inplace:  # the optimizers and batchnorm's running statistics
            reference_args = {k: _copy(v) for k, v in args.items()}
            call(reference, op_name, args, reference_args)
            for name in op.inplace:
                assert_close(op_name, gpu.to_numpy(natives[name]), reference_args[name], args,
                             f" ({name})")
        if op.outputs:
            assert_close(op_name, received, expected, args)


def check_backward(gpu, rng, op_name):
    """A backward op on arguments built from its forward's first case."""
    args = backward_args(rng, op_name)
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args)
