"""Exit statuses of nn's commands (train, predict, evaluate, export, import_onnx): one per kind of
failure, each reported in one line.

Scripts can tell a bad command (fix the arguments) from missing data (fetch it), a bad checkpoint
(choose another), a broken ONNX file from one outside nn's op set, a tier that cannot run, a run
that diverged and one that was interrupted.
"""

import sys

from datasets import DatasetError
from nn.backend import TierError
from nn.checkpoint import CheckpointError
from nn.onnx_format import OnnxFileError, UnsupportedNodeError

DONE = 0
DIVERGED = 1  # the loss, the weights or the optimizer state became NaN or Inf
USAGE = 2  # bad arguments, as argparse's own errors
DATA = 3
CHECKPOINT = 4
TIER = 5
ONNX_FILE = 6
UNSUPPORTED_NODE = 7
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C

EPILOG = (
    f"exit status: {DONE} done; {DIVERGED} training diverged (the last good checkpoint is kept); "
    f"{USAGE} bad arguments; {DATA} data not found or unreadable; {CHECKPOINT} a checkpoint "
    f"missing, corrupt or not fitting; {TIER} a tier that cannot run (not built, or an exercise "
    f"still to write); {ONNX_FILE} an ONNX file missing, truncated or inconsistent; "
    f"{UNSUPPORTED_NODE} an ONNX node nn has no layer for; {INTERRUPTED} interrupted by Ctrl-C "
    f"(resumable with --resume)"
)

# Checked in order: CheckpointError is a ValueError, and other ValueErrors are bad arguments.
STATUS_OF = (
    (CheckpointError, CHECKPOINT),
    (UnsupportedNodeError, UNSUPPORTED_NODE),
    (OnnxFileError, ONNX_FILE),
    (DatasetError, DATA),
    (TierError, TIER),
    (NotImplementedError, TIER),
    (ValueError, USAGE),
)
REPORTED = tuple(kind for kind, _ in STATUS_OF)  # what the commands catch and print in one line


def exit_status(error):
    """The exit status for `error`, an instance of one of REPORTED."""
    return next(status for kind, status in STATUS_OF if isinstance(error, kind))


def reporting(command):
    """`command()` (a command's body, returning its exit status), with a REPORTED error or Ctrl-C
    turned into one line on stderr and the exit status of its kind."""
    try:
        return command()
    except REPORTED as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_status(error)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return INTERRUPTED
