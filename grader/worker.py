"""The isolated worker: `python -m grader.worker`, a child process that runs checks.

It reads messages (grader/protocol.py) on stdin, first a Setup, then Tasks, and answers on its
original stdout: the Session's description, then one Result per Task. Anything the
tiers print goes to stderr instead, so it cannot corrupt the answers. faulthandler prints where a
native crash happened; the parent (grader/isolation.py) reads that to name the place.
"""

import faulthandler
import os

from .protocol import receive, send


def main():
    from .session import Session

    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # tiers read nothing from the grader's pipe
    os.dup2(2, 1)  # and what they print goes to stderr
    faulthandler.enable()
    session = Session(receive(requests))
    send(answers, session.describe())
    while True:
        try:
            task = receive(requests)
        except EOFError:  # the parent is done
            return
        send(answers, session.run(task))


if __name__ == "__main__":
    main()
