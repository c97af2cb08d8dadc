"""Which week teaches which op in each stage (CONTRACT.md's table of weeks)."""

from .ops import GROUPS, OPS


def _weeks(*weeks):
    """{group: week} from one week per group, in GROUPS order."""
    return dict(zip(GROUPS, weeks, strict=True))


# WEEKS[stage][group]: the week that teaches the group's ops in that stage (CONTRACT.md's table).
WEEKS = {
    1: _weeks(1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 6, 5, 19, 21),
    2: _weeks(7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 19, 21),
    3: _weeks(11, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 19, 22),
    4: _weeks(14, 15, 14, 14, 14, 14, 14, 16, 16, 16, 16, 16, 19, 22),
}
# Ops taught in another week than their group: the numba matmul ladder is week 15's; the head
# split of a transformer (swap_middle_axes) comes with attention.
WEEK_EXCEPTIONS = {
    (4, "matmul"): 15,
    **{(stage, "swap_middle_axes"): WEEKS[stage]["attention"] for stage in WEEKS},
}
# Weeks that grade every op of a stage taught so far: 17 (training end to end on the GPU), 18 (the
# capstone).
WHOLE_STAGE_WEEKS = {17: (4,), 18: (1, 2, 3, 4)}


def week_of(stage, op_name):
    """The week that teaches `op_name` in `stage`."""
    return WEEK_EXCEPTIONS.get((stage, op_name), WEEKS[stage][OPS[op_name].group])


def ops_for_week(stage, week):
    """The ops `--week week` grades in `stage`, in table order (empty if none)."""
    if stage in WHOLE_STAGE_WEEKS.get(week, ()):
        return [name for name in OPS if week_of(stage, name) <= week]
    return [name for name in OPS if week_of(stage, name) == week]

