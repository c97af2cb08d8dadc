"""The roofline bound of an op on a GPU, its share of that bound, and the physical floor.

An op that moves B bytes and does F FLOPs cannot finish sooner than max(B / bandwidth,
F / flops) on a device with those ceilings (grader/ceilings.py). Measured time over that bound
is the op's share of the roofline: 1.0 means it runs at the speed of light. A share well above
1.0 is not a fast kernel but skipped work: a result cached from an earlier call, replayed by
pointer, or written on another stream (which the timing's events do not wait for: while the busy
kernel of grader/gpu_timing.py holds the default stream, such work runs beside it, so the call is
timed near zero). Graded-kernel platforms have been fooled exactly so.

The physical floor is the larger of the bound and the time of an empty kernel
(grader/ceilings.py), measured as an op is: at small sizes the bound is far below what any launch
takes (matmul 256^3: a bound of 0.6 us, where a kernel that does nothing takes a few), so a floor
of the bound alone would pass an op that launched nothing at all; the empty kernel is the least a
call that does any work on the device can take there. The larger of the two, not their sum: a
kernel's own launch overlaps its first loads, so a sum is no bound.
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


def roofline(flops, moved, seconds, ceilings, integer=False):
    """The Roofline of an op doing `flops` (or None) and moving `moved` bytes in `seconds`;
    `integer`: its operations are int8 multiply-adds, bounded by the int8 ceiling (none measured:
    by the bytes alone)."""
    memory = moved / ceilings.bandwidth
    if integer:
        compute = (flops or 0) / ceilings.int8_ops if ceilings.int8_ops else 0.0
    else:
        compute = (flops or 0) / ceilings.flops
    bound = max(memory, compute)
    return Roofline(bound, "memory" if memory >= compute else "compute", bound / seconds)


def floor_problem(line, launch):
    """A message when the measured time is below what the device allows (FLOOR_FRACTION of the
    larger of the bound and `launch`, an empty kernel's seconds), else None."""
    seconds = line.bound / line.share
    if seconds >= FLOOR_FRACTION * max(line.bound, launch):
        return None
    if line.bound >= launch:
        floor = (
            f"the {line.limited_by} bound of {line.bound * 1e6:.1f} us on this device "
            f"({line.share:.2f}x the speed of light)"
        )
    else:
        floor = f"the {launch * 1e6:.1f} us of an empty kernel's launch on this device"
    return (
        f"ran in {seconds * 1e6:.1f} us, below {floor}: work skipped, a cached result, or output "
        "written later on another stream"
    )

