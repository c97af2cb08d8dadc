"""Stage 4's device runtime: what both variants (numba_impl/ and nvcc_impl/) use and neither owns.

device.py     device arrays (the currency), the output hook `empty`, scratch, DeviceScalar,
              from_numpy, to_numpy, synchronize
allocator.py  the caching allocator numba's device memory comes from on a GPU
simulator.py  a fix for numba's CUDA simulator (a lock around a block's shared arrays)
launch.py     launching numba kernels: exercise stubs refused, launches told to a recording
checks.py     argcheck's checks over device arrays (the adapter), the range of indices
recording.py  a step recorded once and launched again (record_step, copy_into)
fans.py       the fans of a weight shape, which both variants' initializers scale by
"""
