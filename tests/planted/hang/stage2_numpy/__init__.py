"""Planted bug: relu never returns, as a kernel stuck in an endless loop would."""

import time

from tests.planted.reference import *  # noqa: F403


def relu(x):
    while True:
        time.sleep(1)
