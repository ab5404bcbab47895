"""The pieces every bench's Python writes: reading JSON lines, medians and ratios that
tolerate a missing figure, table cells and verdicts for people, and the final JSON line.

A bench prints a table for people and, as its very last line of output, exactly one JSON
object holding every figure and ratio (README and the tests read that line).

Standard library only: it runs under any python3, Debian's with torch included. A bench
finds it through its own file, with no installation:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import benchlib  # noqa: E402
"""
import json
import statistics


def read_jsonl(path):
    """The JSON objects of a file that holds one a line, in order. Lines that are not a
    JSON object (progress text, a torn last line) are skipped; a missing file reads as
    none, so a run that stopped early still gets its report."""
    rows = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except OSError:
        pass
    return rows


def median(values):
    """The median of the values that are not None; None when there are none (a trial that
    measured nothing leaves a gap in the row, not a crash in the report)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def ratio(num, den):
    """num / den; None when either is None or den is 0 (a figure that was not measured)."""
    if num is None or not den:
        return None
    return num / den


def fmt(value, spec):
    """value through the %-format spec ("%.1f"), or "-" for a figure not measured."""
    return "-" if value is None else spec % value


def verdict(ok):
    """A target's word: "met", "not met", or "not measured" when ok is None."""
    return "not measured" if ok is None else ("met" if ok else "not met")


def print_header(line):
    """Prints a table's header line and a rule of its width under it; the rows then use the
    same column widths as the header's format."""
    print(line)
    print("-" * len(line))


def print_result(figures, compact=False):
    """Prints figures (a dict: every figure and ratio of the run) as the bench's very last
    line: one JSON object. compact: no spaces after "," and ":" (the longer reports)."""
    if not isinstance(figures, dict):
        raise TypeError("a bench's last line is one JSON object, not %s" % type(figures).__name__)
    print(json.dumps(figures, separators=(",", ":") if compact else None), flush=True)
