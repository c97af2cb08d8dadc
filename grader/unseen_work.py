"""What the CUDA events around a call cannot see: the host's time, and work on other streams.

A GPU op is timed by events on the default stream, with the call launched while a busy kernel
holds that stream (grader/gpu_timing.py), so that the host's launches are not counted as device
time. The hold lasts about twice the call's host time, and two things can hide in it:
- work done by the host: an op that copies its inputs to the host, computes there, and launches
  a copy of the answer is timed at the copy, while each call holds the host for milliseconds;
- work on a stream that does not wait for the default stream (created non-blocking): it runs
  beside the hold and is never between the events.
So two more figures are judged. The host's seconds per call (`Timing.host`) against those of the
repository's own op on the same arguments: a call that holds the host far longer than the
repository's, and longer than the device works, is not a fast kernel. And each call timed on the
host clock up to a device-wide synchronize (`Timing.synchronous`, every stream's work): beyond
the host's time and the events' time it may exceed them only by the latency of a synchronize.
"""

# The host may take this many times the repository's host time per call, plus an allowance for
# a learner's own checks and launches (numba launches cost tens of microseconds each, and a
# learner's op may launch a few more kernels than the repository's).
HOST_FACTOR = 4
HOST_ALLOWANCE_S = 1e-3

# Time a synchronous call may take beyond its host time and its device time: the latency of a
# device-wide synchronize and the host clock's jitter (tens of microseconds), with room for the
# host's time varying by a quarter between calls (a host-heavy op's own variation).
UNSEEN_SLACK_S = 100e-6
UNSEEN_HOST_SHARE = 0.25


def host_problem(timing, repository_host):
    """A message when the call's host time (`timing.host`) dwarfs both its device time
    (`timing.median`) and `repository_host`, the repository's op's host time on the same
    arguments (None: nothing to judge against, as when the repository's op is the one graded)."""
    if timing.host is None or repository_host is None:
        return None
    allowed = HOST_FACTOR * repository_host + HOST_ALLOWANCE_S
    if timing.host <= allowed or timing.host <= HOST_FACTOR * timing.median:
        return None
    return (
        f"each call holds the host for {_us(timing.host)}, against {_us(repository_host)} for "
        f"the repository's op on the same arguments (at most {_us(allowed)} allowed), while the "
        f"device works {_us(timing.median)}: the op's work is done on the host, or waited for "
        "there, not in a kernel on the timed stream"
    )


def other_stream_problem(timing):
    """A message when a call, timed up to a device-wide synchronize, takes longer than its host
    time and its device time allow: work on a stream the timing's events do not see."""
    if timing.synchronous is None or timing.host is None:
        return None
    unseen = timing.synchronous - timing.host - timing.median
    allowed = UNSEEN_SLACK_S + UNSEEN_HOST_SHARE * timing.host + timing.median
    if unseen <= allowed:
        return None
    return (
        f"a call takes {_us(timing.synchronous)} up to a device-wide synchronize, but only "
        f"{_us(timing.host)} on the host and {_us(timing.median)} on the timed stream: "
        f"{_us(unseen)} of work on a stream the timer does not see (one that does not wait for "
        "the default stream): launch the op's work on the default stream"
    )


def _us(seconds):
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"
