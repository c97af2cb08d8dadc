"""The records a grading passes around: what to grade (Setup), one check (Task), its outcome
(Result), and the errors a check can end in. Small and picklable: they cross to the isolated worker.
"""

from dataclasses import dataclass, field

from .ladders import Named

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Setup:
    """What to grade: sent once to a worker. `against` lists reference stages, best first;
    `against_impl`, a learner's folder whose copy of the first is compared too (`agree`)."""

    stage: int
    variant: str | None = None
    impl: str | None = None
    against: tuple = ()
    seed: int = 0
    quick: bool = False
    bench: bool = False
    against_impl: str | None = None


@dataclass(frozen=True)
class Task:
    """One check: kind is correct, agree, nan, grad, dist, determinism, speed, kernel or blas."""

    kind: str
    op: str
    size: Named | None = None
    kernel: str | None = None
    threads: int | None = None

    @property
    def label(self):
        """What the report's size column shows: the size, or for a correct check of one kernel
        of a ladder, that kernel (so that a rung that crashes or hangs is named too)."""
        if self.kind == "correct" and self.kernel:
            return f"kernel {self.kernel}"
        return (self.size.label or str(self.size.size)) if self.size else ""


@dataclass
class Result:
    """The outcome of one Task, as the report shows it."""

    op: str
    check: str
    status: str
    message: str = ""
    size: str = ""
    seconds: float = 0.0
    timing: dict = field(default_factory=dict)


class TierError(Exception):
    """A tier raised while the grader called it; `role` says which (graded, reference, oracle,
    own: the learner's earlier tier of --against-impl)."""

    def __init__(self, role, op, error):
        super().__init__(f"{role} {op}: {error!r}")
        self.role, self.op, self.error = role, op, error
        self.case = ""  # the correctness case it happened in, when a check knows it


class CheckTimeout(BaseException):
    """Raised in-process when a check runs past its time limit (BaseException: tiers' `except
    Exception` cannot swallow it)."""
