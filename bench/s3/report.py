#!/usr/bin/python3
"""bench/s3's report: the lines endure-s3-give-up-bench wrote (one JSON object each: what,
seconds a round, reference_s, reference), as a table and, last, one JSON object.

    python3 bench/s3/report.py RESULTS.jsonl

Targets: a failure is reported within 10x its retry schedule's longest sleep plus 2 s
(connections refused at once on loopback: the sleeps are nearly all of it), and rank 0
moves past a step another rank skipped within 2 s of its wait() for a step none skipped
(it looks for the newer step once a second).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import benchlib  # noqa: E402


def target_s(row):
    """The most `row`'s median may take, in seconds (the module's docstring says why)."""
    if row["what"] == "rank0_moves_on":
        return row["reference_s"] + 2.0
    return 10.0 * row["reference_s"] + 2.0


def main():
    rows = benchlib.read_jsonl(sys.argv[1])
    if not rows:
        print("report.py: no measurement in " + sys.argv[1], file=sys.stderr)
        return 1
    benchlib.print_header(f"{'what':<18} {'median s':>9} {'max s':>7} {'reference s':>12} "
                          f"{'x ref':>7} {'target s':>9}  verdict")
    figures = {"bench": "s3_give_up", "rows": {}, "targets_met": True}
    for row in rows:
        med = benchlib.median(row["seconds"])
        ratio = benchlib.ratio(med, row["reference_s"])
        ok = med <= target_s(row)
        figures["targets_met"] = figures["targets_met"] and ok
        figures["rows"][row["what"]] = {
            "median_s": med, "max_s": max(row["seconds"]), "rounds": len(row["seconds"]),
            "reference_s": row["reference_s"], "reference": row["reference"],
            "over_reference": ratio, "target_s": target_s(row), "target_met": ok}
        print(f"{row['what']:<18} {med:>9.3f} {max(row['seconds']):>7.3f} "
              f"{row['reference_s']:>12.3f} {benchlib.fmt(ratio, '%.1f'):>7} "
              f"{target_s(row):>9.2f}  {benchlib.verdict(ok)}")
    for row in rows:
        print(f"  {row['what']}: reference is {row['reference']}")
    benchlib.print_result(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
