"""The messages between the grader and its isolated worker: length-prefixed pickles.

Kept apart from grader/worker.py so that importing the grader never imports the worker's
`__main__` module (python -m grader.worker would then warn about a module imported twice).
"""

import pickle
import struct

HEADER = struct.Struct("<Q")  # each message: its length in bytes, then the pickle


def send(stream, message):
    """Write one message to a binary stream."""
    data = pickle.dumps(message)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream):
    """Read one message from a binary stream; EOFError when the other side has closed it."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError
    return pickle.loads(stream.read(HEADER.unpack(header)[0]))


def decode(data):
    """A message body read by other means (the parent reads with a deadline)."""
    return pickle.loads(data)
