#!/usr/bin/env python3
"""A resumable worker for the auto-resume tests, run by srun on every node of a job.

Rank r of w does the units u = r, r+w, r+2w, ... below --units. After each unit it appends
the unit to done-<r>.log (fsync) and then commits its progress to ckpt-<r>.json (write,
fsync, rename). A run killed between the two redoes that one unit: the checkpoint
semantics allow one unit twice per rank and per fault, never more. Every start is recorded
in starts.log with the auto-resume count and reason srun's supervisor passed in, and
Slurm's restart count (a requeued job's).
"""
import argparse
import json
import os
import socket
import sys
import time


def atomic_write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--units", type=int, required=True)
    p.add_argument("--unit-seconds", type=float, default=0.5)
    p.add_argument("--fail-rank", type=int, default=-1, help="this rank crashes by itself")
    p.add_argument("--fail-at", type=int, default=-1, help="... on reaching this unit")
    p.add_argument("--exit-code", type=int, default=3)
    a = p.parse_args()
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    ckpt = os.path.join(a.dir, "ckpt-%d.json" % rank)
    nxt = rank
    if os.path.exists(ckpt):
        with open(ckpt) as f:
            nxt = json.load(f)["next"]
    count = int(os.environ.get("ENDURE_AUTO_RESUME_COUNT", "-1"))
    append(os.path.join(a.dir, "starts.log"), json.dumps({
        "rank": rank, "world": world, "host": socket.gethostname(),
        "job": os.environ.get("SLURM_JOB_ID"), "count": count,
        "reason": os.environ.get("ENDURE_AUTO_RESUME_REASON", ""), "next": nxt,
        "restart": int(os.environ.get("SLURM_RESTART_COUNT", "0")),
        "time": time.time()}))
    for u in range(nxt, a.units, world):
        if rank == a.fail_rank and u >= a.fail_at:
            print("rank %d: crashing by itself at unit %d" % (rank, u), file=sys.stderr)
            sys.exit(a.exit_code)
        time.sleep(a.unit_seconds)
        append(os.path.join(a.dir, "done-%d.log" % rank), str(u))
        atomic_write(ckpt, json.dumps({"next": u + world}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
