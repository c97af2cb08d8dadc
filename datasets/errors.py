"""The package's one exception: a data file or data set that cannot be used, said in one line."""


class DatasetError(RuntimeError):
    """`<subject>: <problem> — <what to do>`, always on one line.

    `subject` is the file (or the data set) at fault, `problem` what is wrong with it and `hint`
    what the user can do about it. The parts stay available as attributes so that a caller that
    knows more (which data set a file belongs to) can re-raise the same problem with a better hint.
    """

    def __init__(self, subject, problem, hint=None):
        self.subject = str(subject)
        self.problem = _one_line(problem)
        self.hint = _one_line(hint) if hint else None
        message = f"{self.subject}: {self.problem}"
        if self.hint:
            message += f" — {self.hint}"
        super().__init__(message)

    def with_hint(self, hint):
        """The same problem with another hint (raise it `from None` to keep the message alone)."""
        return DatasetError(self.subject, self.problem, hint)


def _one_line(text):
    """Messages from gzip or the OS may hold newlines; a DatasetError never does."""
    return " ".join(str(text).split())
