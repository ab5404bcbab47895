"""bench/checkpointless/run.sh's report: medians of put, get and bare TCP, the ratios, and
the target's verdict; the last line is one JSON object."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import benchlib  # noqa: E402


def main():
    rows = benchlib.read_jsonl(sys.argv[1])
    mib, rounds = int(sys.argv[2]), int(sys.argv[3])
    # The first rounds fill the store (fresh pages); from the fourth on, a shard takes the
    # pages of one the store dropped, as every step of a long run does.
    def med(kind, steady=False):
        return benchlib.median([r["gb_per_s"] for r in rows if r["kind"] == kind and (not steady or r["round"] >= 3)])
    put, put_steady, get, tcp = med("put"), med("put", True), med("get"), med("tcp")
    restore_vs_tcp = benchlib.ratio(get, tcp)
    target_ok = None if restore_vs_tcp is None else restore_vs_tcp >= 0.8
    print("memory store data path against bare TCP, %d MiB shard, %d rounds, one machine "
          "(127.0.0.2 serves; loopback)" % (mib, rounds))
    benchlib.print_header("%-34s %10s %12s" % ("", "GB/s", "vs TCP"))
    print("%-34s %10s %12s" % ("bare TCP (sendfile -> recv)", benchlib.fmt(tcp, "%.2f"), "1.00"))
    print("%-34s %10s %12s" % ("restore (get from the store)", benchlib.fmt(get, "%.2f"),
                               benchlib.fmt(restore_vs_tcp, "%.2f")))
    print("%-34s %10s %12s" % ("save (put), every round", benchlib.fmt(put, "%.2f"),
                               benchlib.fmt(benchlib.ratio(put, tcp), "%.2f")))
    print("%-34s %10s %12s" % ("save (put), store full (round 4 on)", benchlib.fmt(put_steady, "%.2f"),
                               benchlib.fmt(benchlib.ratio(put_steady, tcp), "%.2f")))
    print("target: restore >= 0.80 x TCP: %s" % benchlib.verdict(target_ok))
    benchlib.print_result({"mib": mib, "rounds": rounds, "tcp_gb_per_s": tcp, "get_gb_per_s": get,
                           "put_gb_per_s": put, "put_full_store_gb_per_s": put_steady,
                           "restore_vs_tcp": restore_vs_tcp, "restore_target_met": target_ok})


if __name__ == "__main__":
    main()
