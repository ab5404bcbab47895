#!/usr/bin/env python3
"""The demo's fault driver: follows endure-train's log on /fsx, stamps each line with the
time the trainer wrote it (its "time"; the host's wall time as the line appears for a log
without one), and injects the planned faults one at a time at random steps, each only
after the step runs again from the previous one. Ends when the run logs "done" (fails when
the job ends first).

  drive.py --log FSX/faulty.jsonl --stamped OUT/faulty.stamped.jsonl --faults OUT/faults.json \
           --seed 42 --steps 600 --nodes worker-1,worker-2,worker-3 --job-out FSX/faulty-1.out

Writes the stamped lines (each the trainer's JSON with "t": seconds since the epoch) and the
faults made: [{kind, node, target_step, step, t}].

--kinds kill,hang,crash makes those faults in that order (else three of crash, hang and a
logged hardware error, shuffled); "kill" is the trainer alone killed with SIGKILL on its
healthy node (--job names the job, whose processes Slurm lists on the node), a failure
srun --auto-resume=1 leaves to the job script to run again.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

POLL_S = 0.05  # a line without its own "time" is stamped this late at most
RECOVERY_TIMEOUT_S = 150


class Follower:
    """Reads the log's new complete lines, stamps them and keeps the run's shape."""

    def __init__(self, path, stamped_path, job_out=None):
        self.path = path
        self.job_out = job_out  # the job's output, whose "srun rc=" line says the job ended
        self.out = open(stamped_path, "a")
        self.offset = 0
        self.partial = b""
        self.tries = 0  # start lines seen
        self.try_steps = 0  # step lines of the newest try
        self.step = 0  # the newest step line's step
        self.resumed_from = 0  # the newest try's checkpoint step
        self.done = False

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        if not data:
            return
        now = time.time()
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()  # a line still being written
        for raw in lines:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if line.get("start"):
                self.tries += 1
                self.try_steps = 0
                self.resumed_from = line.get("resumed_from") or 0
            elif "loss" in line:
                self.try_steps += 1
                self.step = line["step"]
            elif line.get("done"):
                self.done = True
            # endure-train writes the time of each line itself; a log without it is
            # stamped when read (up to a poll late).
            line["t"] = line.get("time", now)
            self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def wait(self, until, timeout, what):
        deadline = time.time() + timeout
        while not until():
            if self.done:
                sys.exit(f"drive: the run ended before {what}")
            if time.time() > deadline:
                sys.exit(f"drive: no {what} after {timeout} s")
            if self.job_ended():
                self.poll()  # the log's last lines
                if not until():
                    sys.exit(f"drive: the job ended before {what}")
                return
            time.sleep(POLL_S)
            self.poll()

    def job_ended(self):
        try:
            with open(self.job_out) as f:
                return "srun rc=" in f.read()
        except (TypeError, FileNotFoundError):
            return False


def plan_faults(rng, steps, nodes, kinds=None):
    """Three faults of different kinds on different nodes, in random order (or `kinds`, in
    its order), each at a random step of its own third of the run (clear of the warmup and
    of the end, so that the run has time to come back before the next)."""
    if not kinds:
        kinds = ["crash", "hang", rng.choice(["xid", "ecc"])]
        rng.shuffle(kinds)
    chosen = rng.sample(nodes, len(kinds))
    third = (steps - 60) // len(kinds)
    plan = []
    for i, (kind, node) in enumerate(zip(kinds, chosen)):
        lo = 30 + i * third
        plan.append({"kind": kind, "node": node, "target_step": rng.randint(lo + 10, lo + third - 20)})
    return plan


# The job's endure-train on the node, by its pid among the processes Slurm lists for the job.
KILL_TRAINER = ('for p in $(scontrol listpids {job} | awk "NR>1{{print \\$1}}"); do '
                '[ "$(cat /proc/$p/comm 2>/dev/null)" = endure-train ] && kill -9 $p && exit 0; done; exit 1')


def inject(endure, cluster, fault, job=None):
    if fault["kind"] == "kill":
        command = [endure, "exec", "--cluster-name", cluster, "--node", fault["node"], "--",
                   "bash", "-c", KILL_TRAINER.format(job=job)]
    else:
        command = [endure, "debug", "inject-fault", "--cluster-name", cluster, "--node",
                   fault["node"], "--kind", fault["kind"]]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"drive: inject-fault {fault['kind']} on {fault['node']} failed: "
                 f"{out.stdout}{out.stderr}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--stamped", required=True)
    p.add_argument("--faults")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--nodes", default="", help="workers the faults may hit, comma separated")
    p.add_argument("--cluster", default="demo")
    p.add_argument("--endure", default="endure")
    p.add_argument("--job-out", help="the job's output file")
    p.add_argument("--job", help="the job's id (for --kinds kill)")
    p.add_argument("--kinds", default="", help="the faults, in order (default: shuffled)")
    p.add_argument("--start-timeout", type=float, default=120)
    a = p.parse_args()

    run = Follower(a.log, a.stamped, a.job_out)
    run.wait(lambda: run.try_steps > 0, a.start_timeout, "first step")
    made = []
    if a.faults:
        kinds = [k for k in a.kinds.split(",") if k]
        plan = plan_faults(random.Random(a.seed), a.steps, a.nodes.split(","), kinds)
        for fault in plan:
            run.wait(lambda: run.step >= fault["target_step"], RECOVERY_TIMEOUT_S,
                     f"step {fault['target_step']}")
            fault["step"] = run.step
            fault["t"] = time.time()
            inject(a.endure, a.cluster, fault, a.job)
            made.append(fault)
            print(f"  step {fault['step']:4d}: {fault['kind']:5s} on {fault['node']}", flush=True)
            tries = run.tries
            run.wait(lambda: run.tries > tries and run.try_steps > 0, RECOVERY_TIMEOUT_S,
                     f"step running again after the {fault['kind']} on {fault['node']}")
            print(f"             running again from step {run.resumed_from}, "
                  f"{time.time() - fault['t']:.1f} s later", flush=True)
        with open(a.faults + ".tmp", "w") as f:
            json.dump(made, f, indent=1)
        os.replace(a.faults + ".tmp", a.faults)
    run.wait(lambda: run.done, 600, "done line")


if __name__ == "__main__":
    main()
