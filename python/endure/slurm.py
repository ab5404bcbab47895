"""What a task of a Slurm step knows from its environment: its rank, the world, its local
rank, the step's hosts and this try's auto-resume count.

srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_STEP_NODELIST for every task
of a step; endure's auto-resume sets ENDURE_AUTO_RESUME_COUNT (1, 2, ...) when it re-runs
a step after a node fault. Outside Slurm, torchrun's RANK, WORLD_SIZE and LOCAL_RANK stand
in, else one task alone.
"""

import os
import re

__all__ = ["Task", "task", "expand_hostlist"]


def env_int(names, default, env=None):
    """The first of the variables `names` that is set, as an int, else default. Raises
    ValueError naming a variable that is not a number."""
    env = os.environ if env is None else env
    for name in names:
        text = env.get(name, "")
        if text != "":
            try:
                return int(text)
            except ValueError:
                raise ValueError("%s: %r is not a number" % (name, text)) from None
    return default


class Task:
    """This task's place in its step: rank, world, local_rank, job_id (0 outside Slurm),
    step_id, restart (SLURM_RESTART_COUNT: the job's requeues), resume
    (ENDURE_AUTO_RESUME_COUNT: this step's re-runs after a fault), resume_reason and hosts
    (the step's nodes, in order; [] outside Slurm)."""

    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.rank = env_int(["SLURM_PROCID", "RANK"], 0, env)
        self.world = env_int(["SLURM_NTASKS", "WORLD_SIZE"], 1, env)
        self.local_rank = env_int(["SLURM_LOCALID", "LOCAL_RANK"], 0, env)
        self.job_id = env_int(["SLURM_JOB_ID"], 0, env)
        self.step_id = env_int(["SLURM_STEP_ID"], 0, env)
        self.restart = env_int(["SLURM_RESTART_COUNT"], 0, env)
        self.resume = env_int(["ENDURE_AUTO_RESUME_COUNT"], 0, env)
        self.resume_reason = env.get("ENDURE_AUTO_RESUME_REASON", "")
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
        self.hosts = expand_hostlist(nodes) if nodes else []
        if self.world < 1 or not 0 <= self.rank < self.world:
            raise ValueError("SLURM_PROCID/RANK: rank %d is not in [0, %d) (SLURM_NTASKS/"
                             "WORLD_SIZE)" % (self.rank, self.world))


def tasks_per_node(expr):
    """Slurm's SLURM_STEP_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of 3 nodes, then 1)
    as a list of counts, a node each."""
    counts = []
    for part in expr.split(","):
        part = part.strip()
        if not part:
            continue
        if "(x" in part:
            n, times = part.split("(x", 1)
            if not times.endswith(")"):
                raise ValueError("SLURM_STEP_TASKS_PER_NODE: %r is not N or N(xM)" % part)
            counts += [int(n)] * int(times[:-1])
        else:
            counts.append(int(part))
    return counts


def rank_nodes(env=None):
    """The node of every rank of this step, by rank, as Slurm's default (block)
    distribution places them: the step's nodes in order, each with its count of
    SLURM_STEP_TASKS_PER_NODE. [] outside Slurm."""
    env = os.environ if env is None else env
    t = Task(env)
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    if not t.hosts or not per_node:
        return []
    counts = tasks_per_node(per_node)
    if len(counts) != len(t.hosts) or sum(counts) != t.world:
        raise ValueError("SLURM_STEP_TASKS_PER_NODE: %r does not place %d tasks on %d nodes"
                         % (per_node, t.world, len(t.hosts)))
    return [host for host, n in zip(t.hosts, counts) for _ in range(n)]


def task(env=None):
    """This task, from `env` (default: os.environ)."""
    return Task(env)


def _split_top_level(expr):
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("hostlist %r: unbalanced ']'" % expr)
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError("hostlist %r: unbalanced '['" % expr)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_ranges(body):
    out = []
    for item in body.split(","):
        item = item.strip()
        m = re.fullmatch(r"(\d+)-(\d+)", item)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise ValueError("hostlist: descending range %r" % item)
            width = len(m.group(1))  # Slurm pads to the lower bound's width
            out.extend(str(i).zfill(width) for i in range(lo, hi + 1))
        elif re.fullmatch(r"\d+", item):
            out.append(item)
        else:
            raise ValueError("hostlist: bad range %r" % item)
    return out


def _expand_host(pattern):
    m = re.search(r"\[([^\[\]]*)\]", pattern)
    if not m:
        return [pattern]
    head, tail = pattern[:m.start()], pattern[m.end():]
    return [head + v + rest for v in _expand_ranges(m.group(1)) for rest in _expand_host(tail)]


def expand_hostlist(expr):
    """A Slurm hostlist expression's hosts, in order, as `scontrol show hostnames` gives
    them: "worker-[0,2-3],controller-0" -> worker-0 worker-2 worker-3 controller-0;
    "r[1-2]n[01-02]" -> r1n01 r1n02 r2n01 r2n02. Raises ValueError for a malformed one."""
    hosts = []
    for part in _split_top_level(expr):
        hosts.extend(_expand_host(part))
    return hosts
