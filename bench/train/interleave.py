#!/usr/bin/env python3
"""Two endure-train runs taking turns, one step each, on the same cores.

A step's time on this machine drifts by several % within a minute (other tenants), more
than a cost of 1 % that whole runs one after the other must resolve. Here both runs live
at once and only one moves at a time: each turn sends SIGCONT to one, reads its stdout to
its next step's line and sends SIGSTOP (every thread stops, its background writes too), so
the two runs' steps alternate within a second and any drift falls on both alike. A turn
holds all of a run's work between two step lines: the step, and for a run that
checkpoints, the save after the last step. The order alternates, A B B A A B ..., so that
neither run always follows the other.

  interleave.py --turns N --warmup W --out-a A.jsonl --out-b B.jsonl \
      -- COMMAND A ... --- COMMAND B ...

Prints one JSON object: each run's mean turn, tokens per second over the turns after the
warm-up, and the cost of B against A (1 - B's tokens/s / A's).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time


class Run:
    def __init__(self, command, out_path):
        self.out = open(out_path, "w")
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.turns = []
        self.tokens_per_step = None

    def read_until(self, key):
        """Copies stdout lines to the run's file up to and including the first with `key`."""
        for line in self.proc.stdout:
            self.out.write(line)
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("start"):
                    self.tokens_per_step = record["tokens_per_step"]
                if key in record:
                    return record
        raise SystemExit(f"interleave.py: {self.proc.args[0]} ended before a line with {key!r} "
                         f"(exit {self.proc.wait()})")

    def stop(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        os.waitpid(self.proc.pid, os.WUNTRACED)  # stopped for certain before the other goes on

    def go(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def finish(self):
        self.go()
        for line in self.proc.stdout:
            self.out.write(line)
        code = self.proc.wait()
        self.out.close()
        if code != 0:
            raise SystemExit(f"interleave.py: {self.proc.args[0]} exited {code}")


def main():
    argv = sys.argv[1:]
    if "--" not in argv or "---" not in argv:
        raise SystemExit("interleave.py: give -- COMMAND A --- COMMAND B")
    own, rest = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    command_a, command_b = rest[:rest.index("---")], rest[rest.index("---") + 1:]
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out-a", required=True)
    parser.add_argument("--out-b", required=True)
    args = parser.parse_args(own)

    runs = []
    try:
        # Each starts alone (loading data, touching its memory) and stops at its first line.
        for command, out in ((command_a, args.out_a), (command_b, args.out_b)):
            run = Run(command, out)
            runs.append(run)
            run.read_until("start")
            run.stop()
        a, b = runs
        for turn in range(args.warmup + args.turns):
            for run in (a, b) if turn % 2 == 0 else (b, a):
                t0 = time.perf_counter()
                run.go()
                run.read_until("loss")
                seconds = time.perf_counter() - t0
                run.stop()
                if turn >= args.warmup:
                    run.turns.append(seconds)
        for run in runs:
            run.finish()
    finally:
        for run in runs:
            if run.proc.poll() is None:
                os.kill(run.proc.pid, signal.SIGKILL)
                run.proc.wait()

    tokens_a = a.tokens_per_step * len(a.turns) / sum(a.turns)
    tokens_b = b.tokens_per_step * len(b.turns) / sum(b.turns)
    print(json.dumps({"turns": args.turns,
                      "turn_a_s": statistics.mean(a.turns), "turn_b_s": statistics.mean(b.turns),
                      "tokens_per_s_a": tokens_a, "tokens_per_s_b": tokens_b,
                      "cost_b": 1 - tokens_b / tokens_a}))


if __name__ == "__main__":
    main()
