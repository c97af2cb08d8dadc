"""The roofline bound of an op on a GPU, its share of that bound, and the physical floor.

An op that moves B bytes and does F FLOPs cannot finish sooner than max(B / bandwidth,
F / flops) on a device with those ceilings (grader/ceilings.py). Measured time over that bound
is the op's share of the roofline: 1.0 means it runs at the speed of light. A share well above
1.0 is not a fast kernel but skipped work: a result cached from an earlier call, replayed by
pointer, or written on another stream (which the timing's events do not wait for: while the busy
kernel of grader/gpu_timing.py holds the default stream, such work runs beside it, so the call is
timed near zero). Graded-kernel platforms have been fooled exactly so.
"""

from dataclasses import dataclass

# A measured time below this fraction of the bound fails: the margin covers ceilings measured a
# little low (a read-mostly kernel can beat a copy's bandwidth by some percent) and timer jitter.
FLOOR_FRACTION = 0.8


@dataclass(frozen=True)
class Roofline:
    """The bound in seconds, which ceiling sets it, and the measured share of it."""

    bound: float
    limited_by: str  # "memory" or "compute"
    share: float

    def as_dict(self):
        return {"bound_s": self.bound, "limited_by": self.limited_by, "roofline_share": self.share}


def roofline(flops, moved, seconds, ceilings):
    """The Roofline of an op doing `flops` (or None) and moving `moved` bytes in `seconds`."""
    memory = moved / ceilings.bandwidth
    compute = (flops or 0) / ceilings.flops
    bound = max(memory, compute)
    return Roofline(bound, "memory" if memory >= compute else "compute", bound / seconds)


def floor_problem(line):
    """A message when the measured time is below what the device allows, else None."""
    if line.share * FLOOR_FRACTION <= 1.0:
        return None
    return (
        f"ran in {line.bound / line.share * 1e6:.1f} us, below the {line.limited_by} bound of "
        f"{line.bound * 1e6:.1f} us on this device ({line.share:.2f}x the speed of light): "
        "work skipped, a cached result, or output written later on another stream"
    )

