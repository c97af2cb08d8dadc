"""The contract's ops the nvcc variant has no kernels for yet: each raises NotImplementedError
saying so (stage4_cuda/README.md lists what exists). Never a silent fallback to the numba
variant: a graded or trained nvcc run runs nvcc kernels or stops."""


def _not_written(op):
    """A stand-in for `op` that raises NotImplementedError naming it."""

    def not_written(*args, **kwargs):
        raise NotImplementedError(
            f"{op}: not written yet in the nvcc variant (the numba variant has it: --variant numba)"
        )

    not_written.__name__ = not_written.__qualname__ = op
    return not_written


im2col = _not_written("im2col")
col2im = _not_written("col2im")
conv2d_forward = _not_written("conv2d_forward")
conv2d_backward = _not_written("conv2d_backward")
maxpool2d_forward = _not_written("maxpool2d_forward")
maxpool2d_backward = _not_written("maxpool2d_backward")
avgpool2d_forward = _not_written("avgpool2d_forward")
avgpool2d_backward = _not_written("avgpool2d_backward")
batchnorm_forward = _not_written("batchnorm_forward")
batchnorm_backward = _not_written("batchnorm_backward")
dropout_forward = _not_written("dropout_forward")
dropout_backward = _not_written("dropout_backward")
xavier_uniform = _not_written("xavier_uniform")
he_normal = _not_written("he_normal")
