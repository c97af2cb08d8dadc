"""Planted bug: transpose returns a view of its input (a.T): writing into the result would change
the caller's array, and the result is not C-contiguous."""

from tests.planted.reference import *  # noqa: F403


def transpose(a):
    return a.T
