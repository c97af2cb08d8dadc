"""A thin cffi binding to NCCL (libnccl.so.2), as the nvcc library is reached: the few functions
data-parallel training calls, declared from nccl.h, and their status turned into an exception.

The all-reduce itself is NCCL's (ring and tree algorithms over NVLink or PCIe); nothing here sums
anything. The library is found, in order: $S2C_NCCL_LIBRARY, the `nvidia-nccl-cu13` (or -cu12)
wheel's nvidia/nccl/lib/ on sys.path, then the system's loader (`libnccl.so.2`).
"""

import os
import sys
from pathlib import Path

import cffi

ffi = cffi.FFI()
# nccl.h's types as the ABI sees them: enums are ints, a communicator an opaque pointer, a unique
# id 128 bytes passed by value.
ffi.cdef("""
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
int ncclGetVersion(int *version);
int ncclGetUniqueId(ncclUniqueId *uniqueId);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
int ncclCommDestroy(ncclComm_t comm);
int ncclCommAbort(ncclComm_t comm);
int ncclCommGetAsyncError(ncclComm_t comm, int *asyncError);
int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op,
                  ncclComm_t comm, void *stream);
int ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, int datatype, int root,
                  ncclComm_t comm, void *stream);
int ncclGroupStart(void);
int ncclGroupEnd(void);
const char *ncclGetErrorString(int result);
""")

SUCCESS, IN_PROGRESS = 0, 7  # ncclSuccess, ncclInProgress
SUM = 0  # ncclSum
DATATYPES = {"float32": 7, "int64": 4, "float64": 8, "int32": 2}  # ncclFloat32, ncclInt64, ...
ID_BYTES = 128
NOT_FOUND = (
    "no NCCL library found: install the wheel of your CUDA (`pip install nvidia-nccl-cu13`), or "
    "set S2C_NCCL_LIBRARY to the path of libnccl.so.2"
)
_lib = None


def candidates():
    """The paths (or loader names) tried for libnccl.so.2, in order."""
    found = [os.environ["S2C_NCCL_LIBRARY"]] if os.environ.get("S2C_NCCL_LIBRARY") else []
    for folder in sys.path:
        found += [
            str(path) for path in sorted(Path(folder or ".").glob("nvidia/nccl/lib/libnccl.so*"))
        ]
    return [*found, "libnccl.so.2"]


def library():
    """The opened NCCL library; RuntimeError saying how to get one without it."""
    global _lib
    if _lib is None:
        errors = []
        for candidate in candidates():
            try:
                _lib = ffi.dlopen(candidate)
                break
            except OSError as error:
                errors.append(f"{candidate}: {error}")
        else:
            raise RuntimeError(f"{NOT_FOUND} (tried {'; '.join(errors)})")
    return _lib


def check(function, result):
    """RuntimeError naming `function` and NCCL's error for any result but success."""
    if result not in (SUCCESS, IN_PROGRESS):
        message = ffi.string(library().ncclGetErrorString(result)).decode()
        raise RuntimeError(f"NCCL's {function} failed: {message} (error {result})")


def version():
    """NCCL's version as 'major.minor.patch'."""
    code = ffi.new("int *")
    check("ncclGetVersion", library().ncclGetVersion(code))
    major, rest = divmod(code[0], 10000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def unique_id():
    """A new communicator id (128 bytes) for rank 0 to hand to every rank."""
    made = ffi.new("ncclUniqueId *")
    check("ncclGetUniqueId", library().ncclGetUniqueId(made))
    return bytes(ffi.buffer(made.internal, ID_BYTES))


def datatype(array):
    """NCCL's datatype for `array`'s dtype."""
    name = str(array.dtype)
    if name not in DATATYPES:
        raise ValueError(f"NCCL: no datatype for {name} (one of {', '.join(DATATYPES)})")
    return DATATYPES[name]


def device_pointer(array):
    """The device address of `array` (anything with __cuda_array_interface__) as a void *."""
    return ffi.cast("void *", array.__cuda_array_interface__["data"][0])
