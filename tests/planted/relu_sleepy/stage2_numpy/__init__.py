"""Planted slowness, no bug: relu is right but every call takes a tenth of a second, as on a machine
far slower or busier than the base time limit of a check expects."""

import time

from tests.planted import reference
from tests.planted.reference import *  # noqa: F403

SECONDS_PER_CALL = 0.1


def relu(x):
    time.sleep(SECONDS_PER_CALL)
    return reference.relu(x)
