"""Planted bug: matmul crashes the process, as a C kernel reading a null pointer would."""

import ctypes

from tests.planted.reference import *  # noqa: F403


def matmul(a, b):
    ctypes.string_at(0)  # reads address 0: SIGSEGV
