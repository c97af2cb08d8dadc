"""A planted stage 4: only its numba_impl is graded."""
