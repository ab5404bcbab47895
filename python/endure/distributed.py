"""torch.distributed's rendezvous for a job under `srun --auto-resume=1`.

Every try of a step meets at the first host of *that try's* step (SLURM_STEP_NODELIST),
named, not at an address worked out before: when the node of rank 0 dies, endure puts a
new node in its place under the same Slurm name (or, for an elastic job, runs the step on
the nodes left), and the re-run step meets there. A MASTER_ADDR inherited from the batch
script is ignored under Slurm for that reason: it was set before the fault. The port is
the job's own and moves with every try (ENDURE_AUTO_RESUME_COUNT, SLURM_RESTART_COUNT and
the step), so a re-run never meets a socket, or a lingering process, of the try it
replaces.
"""

import datetime
import os
import socket

from endure.slurm import Task

__all__ = ["init", "data_parallel", "rendezvous", "PORT_BASE"]

PORT_BASE = 20000
PORTS_PER_JOB = 10  # consecutive tries of a job take turns on these
JOBS = 1200  # PORT_BASE + JOBS * PORTS_PER_JOB stays below Linux's ephemeral ports (32768)


def rendezvous(task=None, port=None):
    """(host, port) where the task's step meets. Under Slurm: the step's first host, and
    PORT_BASE + (job % 1200) * 10 + (step + restarts + auto-resumes) % 10, or, when `port`
    is given, port + restarts + auto-resumes. Outside Slurm: MASTER_ADDR (default
    127.0.0.1) and MASTER_PORT (default 29500), or `port`."""
    task = task or Task()
    tries = task.restart + task.resume
    if not task.hosts:
        host = os.environ.get("MASTER_ADDR") or "127.0.0.1"
        base = port if port is not None else int(os.environ.get("MASTER_PORT") or 29500)
        return host, base + tries
    if port is not None:
        return task.hosts[0], port + tries
    slot = (task.step_id + tries) % PORTS_PER_JOB
    return task.hosts[0], PORT_BASE + (task.job_id % JOBS) * PORTS_PER_JOB + slot


def init(backend="gloo", timeout_s=600.0, port=None):
    """Joins this task to its step's process group and returns its endure.slurm.Task
    (rank, world, local_rank, resume, ...) with master_addr and master_port added.

    backend    torch.distributed's backend: "gloo" (default), "nccl" or "mpi"
    timeout_s  seconds a collective, and the rendezvous, may wait for the other ranks
               (default 600): a rank whose peer died fails in that time rather than hang
    port       the rendezvous port's base (default: chosen per job, see rendezvous())

    Sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK for code that reads
    them. When the rendezvous host is a loopback address (every node on one machine, as an
    endure local cluster) and GLOO_SOCKET_IFNAME is unset, Gloo is told to use "lo". With
    nccl, the task's GPU is its local rank. Raises ValueError naming a bad argument or
    Slurm variable.
    """
    if backend not in ("gloo", "nccl", "mpi"):
        raise ValueError("backend: must be 'gloo', 'nccl' or 'mpi', not %r" % (backend,))
    if not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
        raise ValueError("timeout_s: must be seconds > 0, not %r" % (timeout_s,))
    if port is not None and (type(port) is not int or not 0 < port < 65536):
        raise ValueError("port: must be an int in (0, 65536), not %r" % (port,))
    import torch
    import torch.distributed as dist

    task = Task()
    host, port = rendezvous(task, port)
    if not 0 < port < 65536:
        raise ValueError("port: %d (the base moved by the tries) is not a port" % port)
    task.master_addr, task.master_port = host, port
    os.environ.update(MASTER_ADDR=host, MASTER_PORT=str(port), RANK=str(task.rank),
                      WORLD_SIZE=str(task.world), LOCAL_RANK=str(task.local_rank))
    if backend == "gloo" and "GLOO_SOCKET_IFNAME" not in os.environ and _is_loopback(host):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    if backend == "nccl":
        torch.cuda.set_device(task.local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend, init_method="env://", rank=task.rank,
                                world_size=task.world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    return task


def data_parallel(module, **kwargs):
    """torch's DistributedDataParallel around `module`, with its gradient buckets fixed for
    the whole run, so that a resumed run's steps equal an uninterrupted run's bit for bit.

    DDP lays its buckets out again after the first step, in the order the gradients came.
    An allreduce over three or more ranks adds each value in an order set by its place in
    the bucket, so the first step of every try would round differently from the same step
    of a run that never stopped. find_unused_parameters=True (the default here) keeps the
    first layout; its cost is one walk of the autograd graph per step, and torch logs once
    that it found no unused parameter. Every other keyword goes to DDP unchanged.
    """
    from torch.nn.parallel import DistributedDataParallel

    kwargs.setdefault("find_unused_parameters", True)
    return DistributedDataParallel(module, **kwargs)


def _is_loopback(host):
    try:
        return socket.gethostbyname(host).startswith("127.")
    except OSError:
        return False
