"""endure's training side for PyTorch jobs.

    endure.checkpoint    Checkpointer: asynchronous, atomic, verified checkpoints of a state
                         dict in every tier (memory, local disk, shared folder, S3), loaded
                         in place; optimizer_state(); the engine endure-train uses
    endure.inplace       AdamW whose weights and moments live in the checkpoint engine's
                         memory, so that a checkpoint every step copies nothing
    endure.report()      a step's metrics to endured (the console, get-training-metrics,
                         Prometheus), from rank 0, on a thread of its own
    endure.distributed   init(): torch.distributed's rendezvous from Slurm's environment,
                         surviving the loss of rank 0's node under srun --auto-resume=1
    endure.slurm         this task's rank, world, hosts and auto-resume count

Importing endure does no work: the submodules, torch and libendure.so load on first use.
"""

import importlib

__all__ = ["checkpoint", "distributed", "inplace", "metrics", "slurm", "report"]
__version__ = "0.1.0"

_SUBMODULES = ("checkpoint", "distributed", "inplace", "metrics", "slurm")


def report(step=None, loss=None, tokens=None, **more):
    """Reports a line of training metrics to endured; see endure.metrics.report."""
    from endure.metrics import report as _report
    return _report(step=step, loss=loss, tokens=tokens, **more)


def __getattr__(name):
    # Submodules on first use (PEP 562), so that `import endure` stays free.
    if name in _SUBMODULES:
        return importlib.import_module("endure." + name)
    raise AttributeError("module 'endure' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
