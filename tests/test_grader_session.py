"""The grader's Session: which repository tiers it calls on to judge a graded tier."""

import pytest

import tiers
from grader.ops import OPS
from grader.records import Setup
from grader.session import Session


def test_sizes_past_the_reference_are_judged_by_blas_for_floats_and_by_c_for_integers():
    """NumPy hands a float product to BLAS, but its integer `@` is a loop of its own (a 4096^3
    int8 product takes it half a minute), so the big sizes of an int8 op are validated on the C
    tier and those of a float op on NumPy."""
    for stage in (2, 3):
        if not tiers.load(tiers.find(stage)).ok:
            pytest.skip(f"stage {stage}: {tiers.load(tiers.find(stage)).reason}")
    session = Session(Setup(4, "numba"))
    assert OPS["int8_linear"].integer_work and not OPS["linear_forward"].integer_work
    assert session.fast_reference(OPS["int8_linear"]).tier.stage == 3
    assert session.fast_reference(OPS["linear_forward"]).tier.stage == 2


def test_the_fast_reference_is_never_the_code_being_graded():
    session = Session(Setup(3))
    reference = session.fast_reference(OPS["int8_linear"])
    assert reference is None or reference.tier.stage == 2
