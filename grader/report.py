"""What the grader prints and writes: a terminal table, a failure recap, the summary line, JSON.

The last line printed is always `N passed, N failed` (`, N skipped` when some were skipped).
"""

import json
from dataclasses import asdict
from pathlib import Path

from .records import FAILED, PASSED, SKIPPED

COLUMNS = "{op:<29} {check:<8} {result:<7} {time:>9} {rate:>15} {speedup:>10} {library:>9}  {size}"


def format_seconds(seconds):
    """3.2e-05 -> '32.0 us'."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_ratio(ratio):
    """3360.2 -> '3,360x', 0.512 -> '0.512x'."""
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def print_header(out):
    print(
        COLUMNS.format(
            op="op",
            check="check",
            result="result",
            time="time",
            rate="rate",
            speedup="speedup",
            library="vs lib",
            size="size / notes",
        ),
        file=out,
    )


def print_row(result, out):
    """One result as a table row; a failure's message on the line below."""
    timing = result.timing
    rate = speedup = library = time = ""
    if timing.get("median"):
        time = format_seconds(timing["median"])
        rate = (
            f"{timing['gflops']:.3g} GFLOP/s"
            if timing.get("gflops")
            else f"{timing['gbps']:.3g} GB/s"
            if timing.get("gbps")
            else ""
        )
        speedup = format_ratio(timing["speedup"]) if timing.get("speedup") else ""
        library = f"{timing['library_fraction']:.0%}" if timing.get("library_fraction") else ""
    notes = result.size or (result.message if result.status == PASSED else "")
    if timing.get("one_thread"):
        notes += f" [one thread: {_one_thread_figures(timing['one_thread'])}]"
    print(
        COLUMNS.format(
            op=result.op,
            check=result.check,
            result=result.status,
            time=time,
            rate=rate,
            speedup=speedup,
            library=library,
            size=notes,
        ).rstrip(),
        file=out,
        flush=True,
    )
    if result.status != PASSED and result.message:
        print(f"    {result.message}", file=out, flush=True)


def _one_thread_figures(one):
    """'0.93x, 97% of lib': the speedup and library share on one thread (grader/speed.py)."""
    figures = format_ratio(one["speedup"])
    if one.get("library_fraction"):
        figures += f", {one['library_fraction']:.0%} of lib"
    return figures


def counts(results):
    return {
        status: sum(r.status == status for r in results) for status in (PASSED, FAILED, SKIPPED)
    }


def summary_line(results):
    """'12 passed, 1 failed' (', 3 skipped' when some were skipped)."""
    n = counts(results)
    line = f"{n[PASSED]} passed, {n[FAILED]} failed"
    return line + (f", {n[SKIPPED]} skipped" if n[SKIPPED] else "")


def print_recap(results, out):
    """The failures again, one line each, just above the summary line."""
    failed = [r for r in results if r.status == FAILED]
    if failed:
        print(f"\n{len(failed)} failed:", file=out)
        for result in failed:
            which = f" ({result.size})" if result.size else ""  # a ladder's rung, a size
            print(f"  FAILED {result.op} {result.check}{which}: {result.message}", file=out)


def write_json(path, record):
    """Write `record` (results as dataclasses or dicts) to `path`, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=_plain) + "\n")
    return path


def _plain(value):
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, tuple | set):
        return list(value)
    return str(value)
