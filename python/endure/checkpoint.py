"""Checkpoints of a PyTorch job's state through endure's checkpoint engine.

The engine is libendure's (the one endure-train uses): each rank writes its shard in the
background and rank 0 commits a step only once every rank's shard is durable, so a step
exists whole or not at all; every chunk is checksummed and verified on restore; a restore
reads from the fastest tier whose copy verifies (memory, local disk, the shared folder,
S3). A state dict is a dict of CPU tensors and plain values, nested in dicts, lists and
tuples; a load fills the caller's own tensors, allocating none, so a model and its
optimizer are restored where they live:

    ckpt = endure.checkpoint.Checkpointer("/fsx/ckpt", memory="/dev/shm/ckpt-" + job)
    state = {"model": model.state_dict(),
             "optimizer": endure.checkpoint.optimizer_state(optimizer),
             "data": {"position": 0}}
    step = ckpt.load(state)            # None when there is no checkpoint yet
    ...
    ckpt.save(state, step, overlapped=True)   # returns at once
    ...forward and backward read the weights while they are copied...
    ckpt.wait_copied()                 # before the optimizer writes them
    optimizer.step()
    ...
    ckpt.flush()                       # at the end: the last step on disk too

A save copies the state (about memcpy's speed); a job that checkpoints a large model every
step keeps its weights and AdamW state in the engine's memory instead (endure.inplace), so
that a save copies nothing. The checkpoint's layout on disk is the engine's (see
include/endure/checkpoint.h), so `endure ckpt ls|verify|prune` read it too.
"""

import ctypes
import json
import os

from endure import _lib, slurm
from endure.slurm import env_int
from endure._state import FORMAT, TREE, StateDictError, flatten, plan_load

__all__ = ["Checkpointer", "CheckpointError", "StateDictError", "optimizer_state"]

CheckpointError = _lib.CheckpointError

_TARGETS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.POINTER(_lib.Target)),
                               ctypes.POINTER(ctypes.c_size_t))


def _path_or_none(key, value):
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ValueError("%s: must be a folder path (or None: no such tier), not %r" % (key, value))
    return os.fsencode(value)


def _cluster_memory(value):
    """cluster_memory= as endure_ckpt_options' four cluster fields."""
    if value is None or value is False:
        return (None, None, 0, None)
    if value is True:
        node = os.environ.get("SLURMD_NODENAME", "")
        nodes = slurm.rank_nodes()
        if not node or not nodes:
            raise ValueError("cluster_memory: True needs Slurm's SLURMD_NODENAME, "
                             "SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE; outside srun "
                             "give a dict with node and rank_nodes")
        value = {"node": node, "rank_nodes": nodes}
    if not isinstance(value, dict) or set(value) - {"node", "rank_nodes", "replicas", "config_dir"}:
        raise ValueError("cluster_memory: None, True, or a dict of node, rank_nodes, replicas and "
                         "config_dir, not %r" % (value,))
    node, nodes = value.get("node"), value.get("rank_nodes")
    replicas = value.get("replicas", 1)
    if not isinstance(node, str) or not node or not isinstance(nodes, (list, tuple)) or \
            not all(isinstance(n, str) and n and "," not in n for n in nodes):
        raise ValueError("cluster_memory: node must be a node name and rank_nodes a list of "
                         "them, a rank each")
    if type(replicas) is not int or replicas < 0:
        raise ValueError("cluster_memory: replicas must be an int >= 0, not %r" % (replicas,))
    config_dir = value.get("config_dir")
    return (node.encode("utf-8"), ",".join(nodes).encode("utf-8"), replicas if replicas else -1,
            os.fsencode(config_dir) if config_dir else None)


class Checkpointer:
    """A checkpointer on `directory` (made when missing), shared by every rank of the job.

    directory       the shared tier: a folder every rank sees and that outlives nodes (/fsx)
    memory          the memory tier: a folder on a tmpfs (/dev/shm/...), for this job alone;
                    a save's copy is itself this tier's shard. None (default): no such tier
    local           the local disk tier: a folder on the node's own disk. None (default): none
    s3              the S3 tier, "s3://BUCKET[/PREFIX]", uploaded behind the disk tiers with
                    the AWS environment's configuration. None (default): none
    cluster_memory  the cluster memory tier, on a cluster whose TieredStorageConfig enables
                    it: each save's shard in this node's memory store and a peer's, and a
                    restore from the nearest copy that verifies. True: this node and every
                    rank's from Slurm (SLURMD_NODENAME, the step's nodes and tasks per
                    node, block distribution); or a dict with "node" and "rank_nodes" (a
                    node a rank) and optionally "replicas" (default 1) and "config_dir".
                    None (default): none
    rank, world     this process's rank of how many; None (default): SLURM_PROCID and
                    SLURM_NTASKS, else RANK and WORLD_SIZE, else 0 of 1
    keep_last       the shared tier keeps the newest keep_last steps (default 3; 0: all)...
    keep_every      ...and every step that is a multiple of keep_every (default 0: none)
    commit_timeout  seconds rank 0 waits for the other ranks' shards before it gives a step
                    up (default 600)
    disk_duty       the share of the time the disk tiers may spend writing, in (0, 1]
                    (default 1); see disk_busy()

    Raises ValueError naming the argument for bad input (nothing is made then), and
    CheckpointError when the engine cannot open the folders.
    """

    def __init__(self, directory, memory=None, local=None, s3=None, cluster_memory=None,
                 rank=None, world=None, keep_last=3, keep_every=0, commit_timeout=600.0,
                 disk_duty=1.0):
        cluster = _cluster_memory(cluster_memory)
        self._keep = [_path_or_none("directory", directory), _path_or_none("memory", memory),
                      _path_or_none("local", local)]
        if self._keep[0] is None:
            raise ValueError("directory: required (the shared folder every rank sees)")
        if s3 is not None and not isinstance(s3, str):
            raise ValueError("s3: must be 's3://BUCKET[/PREFIX]' or None, not %r" % (s3,))
        self.rank = env_int(["SLURM_PROCID", "RANK"], 0) if rank is None else rank
        self.world = env_int(["SLURM_NTASKS", "WORLD_SIZE"], 1) if world is None else world
        for key, value, low in (("rank", self.rank, 0), ("world", self.world, 1),
                                ("keep_last", keep_last, 0), ("keep_every", keep_every, 0)):
            if type(value) is not int or value < low:
                raise ValueError("%s: must be an int >= %d, not %r" % (key, low, value))
        if self.rank >= self.world:
            raise ValueError("rank: %d is not below world (%d)" % (self.rank, self.world))
        if not isinstance(commit_timeout, (int, float)) or commit_timeout <= 0:
            raise ValueError("commit_timeout: must be seconds > 0, not %r" % (commit_timeout,))
        if not isinstance(disk_duty, (int, float)) or not 0 < disk_duty <= 1:
            raise ValueError("disk_duty: must be in (0, 1], not %r" % (disk_duty,))
        lib = _lib.lib()
        options = _lib.Options(self._keep[0], self._keep[2], self._keep[1], self.rank, self.world,
                               keep_last, keep_every, float(commit_timeout),
                               s3.encode("utf-8") if s3 else None, float(disk_duty),
                               *cluster)
        handle = ctypes.c_void_p()
        _lib.check(lib.endure_ckpt_open_with(ctypes.byref(options), ctypes.byref(handle)))
        self._lib = lib
        self._handle = handle
        self._copying = None  # the last overlapped save's buffers, held until copied
        self.directory = os.fsdecode(self._keep[0])

    # -- saving -----------------------------------------------------------------------------

    def save(self, state_dict, step, overlapped=False, tiers="all"):
        """Saves state_dict as checkpoint `step` (an int above the last one saved).

        Returns once the state is copied (overlapped=False, the default: the stall is one
        copy of the state in memory), or at once (overlapped=True: the copy runs on a thread
        of its own at idle priority; the caller may read its tensors but not write them, nor
        free them, until wait_copied()). Either way the step is persisted and committed in
        the background; wait() waits for it. tiers="memory" saves to the memory tier alone
        (while disk_busy(), so that the disk falls behind instead of training waiting);
        every rank must save each step to the same tiers.

        Raises StateDictError naming the first key it cannot take (a CUDA or non-contiguous
        tensor, an unsupported dtype, a key that is not a string, a value of another type)
        and CheckpointError("EINVAL") for a step not above the last; nothing is saved then.
        """
        if type(step) is not int or step < 0:
            raise ValueError("step: must be an int >= 0, not %r" % (step,))
        if tiers not in ("all", "memory"):
            raise ValueError("tiers: must be 'all' or 'memory', not %r" % (tiers,))
        if tiers == "memory" and not overlapped:
            raise ValueError("tiers: 'memory' is for overlapped saves (overlapped=True)")
        if overlapped:
            call = (self._lib.endure_ckpt_save_overlapped_memory if tiers == "memory"
                    else self._lib.endure_ckpt_save_overlapped)
        else:
            call = self._lib.endure_ckpt_save
        flat = flatten(state_dict, _lib.Buffer)
        user = json.dumps({TREE: {"format": FORMAT, "tree": flat.tree}}, separators=(",", ":"))
        self._join_copy()
        _lib.check(call(self._handle, step, flat.buffers, len(flat.buffers), user.encode("utf-8")),
                   self._handle)
        if overlapped:
            self._copying = flat

    def wait_copied(self):
        """Returns once the last overlapped save's copy is done (this thread copies what is
        left): the state's tensors may be written after. At once when none runs."""
        self._join_copy()

    def _join_copy(self):
        if self._copying is not None:
            _lib.check(self._lib.endure_ckpt_wait_copied(self._handle), self._handle)
            self._copying = None

    def wait(self):
        """Blocks until every save is durable in every tier (and, on rank 0, committed).
        Raises CheckpointError for the first that failed since the last wait() (ETIMEOUT:
        another rank's shard did not come within commit_timeout)."""
        self._join_copy()
        _lib.check(self._lib.endure_ckpt_wait(self._handle), self._handle)

    def flush(self):
        """What a run ends with: writes the newest save to the disk tiers when it went to the
        memory tier alone, then wait()s."""
        self._join_copy()
        _lib.check(self._lib.endure_ckpt_flush(self._handle), self._handle)

    def disk_busy(self):
        """True while a save's disk tiers are still being written, or rest after their last
        write (disk_duty): a save to every tier now would queue behind it. Ranks must agree
        on a save's tiers, so a job reduces this over its ranks (any rank busy: all busy)."""
        return bool(self._lib.endure_ckpt_disk_busy(self._handle))

    # -- restoring --------------------------------------------------------------------------

    def latest(self):
        """The newest complete, valid step in any tier, or None."""
        step = ctypes.c_int64(-1)
        status = self._lib.endure_ckpt_latest(self._handle, ctypes.byref(step))
        if status == _lib.ENOTFOUND:
            return None
        _lib.check(status, self._handle)
        return step.value

    def load(self, state_dict, step=None):
        """Fills state_dict from checkpoint `step` (None, the default: the newest that
        verifies) and returns the step loaded, or None when step is None and there is no
        checkpoint at all.

        Tensors are filled in place (their data_ptr() stays), from the fastest tier whose
        copy verifies; dicts and lists get the saved plain values in place of theirs, and
        tuples are replaced. Before anything is written, the state dict is matched against
        the step: a key only one side has, or a tensor of another dtype or shape, raises
        StateDictError naming the key, and nothing changes. A step that fails its checksums
        in every tier raises CheckpointError("ECORRUPT") (step=None: older steps are tried
        first); the tensors may then hold part of it.
        """
        if step is not None and (type(step) is not int or step < 0):
            raise ValueError("step: must be an int >= 0 or None, not %r" % (step,))
        if not isinstance(state_dict, dict):
            raise StateDictError([], "a %s; a checkpoint loads into a dict"
                                 % type(state_dict).__name__)
        self._join_copy()
        refused, plan = [], {}

        def targets_for(_ctx, s, user_json, targets, count):
            try:
                user = json.loads(user_json.decode("utf-8"))
                tree = user.get(TREE, {}) if isinstance(user, dict) else {}
                if tree.get("format") != FORMAT:
                    raise StateDictError([], "step %d was not saved by endure.checkpoint "
                                         "(format %r)" % (s, tree.get("format")))
                regions, finish = plan_load(state_dict, tree["tree"], s)
                array = (_lib.Target * len(regions))()
                for i, (name, ptr, size) in enumerate(regions):
                    array[i].name = name.encode("utf-8")
                    array[i].data = ptr
                    array[i].size = size
                plan.update(array=array, finish=finish)
                targets[0] = ctypes.cast(array, ctypes.POINTER(_lib.Target))
                count[0] = len(regions)
                return _lib.OK
            except BaseException as e:  # raised again below, once back from the engine
                refused.append(e)
                return _lib.EINVAL

        callback = _TARGETS_FN(targets_for)
        loaded = ctypes.c_int64(-1)
        status = self._lib.endure_ckpt_load_into(self._handle, -1 if step is None else step,
                                                 callback, None, ctypes.byref(loaded))
        if refused:
            raise refused[-1]
        if status == _lib.ENOTFOUND and step is None and self.latest() is None:
            return None
        _lib.check(status, self._handle)
        plan["finish"]()
        return loaded.value

    # -- a state kept in place (endure.inplace) ----------------------------------------------

    def _next_state(self, names, sizes):
        """The addresses of `names` (bytes) of `sizes` bytes each in a slot free for the next
        state (endure_ckpt_next_state)."""
        count = len(names)
        data = (ctypes.c_void_p * count)()
        _lib.check(self._lib.endure_ckpt_next_state(
            self._handle, (ctypes.c_char_p * count)(*names), (ctypes.c_size_t * count)(*sizes),
            count, data), self._handle)
        return list(data)

    def _save_in_place(self, step, tree, memory_only):
        """The state the last _next_state handed out is checkpoint `step`, `tree` its
        description (endure_ckpt_save_in_place)."""
        user = json.dumps({TREE: {"format": FORMAT, "tree": tree}}, separators=(",", ":"))
        _lib.check(self._lib.endure_ckpt_save_in_place(self._handle, step, user.encode("utf-8"),
                                                       1 if memory_only else 0), self._handle)

    # -- lifetime ---------------------------------------------------------------------------

    def close(self):
        """Waits for a save in flight and frees the engine's handle (its errors are those
        wait() would raise: call wait() or flush() first to see them; a step's commit in the
        cluster memory tier is wait()'s too)."""
        if getattr(self, "_handle", None):
            self._join_copy()
            self._lib.endure_ckpt_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the module may be half torn down
            pass


class _GroupView(dict):
    """An optimizer's param group without its "params": what is set here (a load) is set
    in the optimizer's group too."""

    def __init__(self, group):
        super().__init__((k, v) for k, v in group.items() if k != "params")
        self._group = group

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self._group[key] = value


def optimizer_state(optimizer):
    """A state dict of `optimizer` that a Checkpointer saves and loads in place:
    {"state": {"0": {"exp_avg": tensor, ...}, "1": ...}, "param_groups": [{"lr": ..., ...}]}.

    Keys are the parameters' positions across the param groups (as in
    optimizer.state_dict()), as strings; the tensors are the optimizer's own, and a load
    sets the groups' values (lr, betas, ...) in the optimizer too. For Adam and AdamW, state
    not made yet (before the first step) is made here exactly as their first step would
    make it, so a state dict taken at start can be loaded into; for other optimizers a
    parameter without state yet has no entry (take a step first)."""
    import torch
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if type(optimizer) in (torch.optim.Adam, torch.optim.AdamW):
        capturable = optimizer.defaults.get("capturable", False)
        for group in optimizer.param_groups:
            for p in group["params"]:
                state = optimizer.state[p]
                if len(state) == 0:
                    # As Adam's and AdamW's step() makes it (torch 1.13).
                    state["step"] = (torch.zeros((1,), dtype=torch.float, device=p.device)
                                     if capturable else torch.tensor(0.))
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if group.get("amsgrad"):
                        state["max_exp_avg_sq"] = torch.zeros_like(
                            p, memory_format=torch.preserve_format)
    state = {str(i): optimizer.state[p] for i, p in enumerate(params) if p in optimizer.state}
    return {"state": state, "param_groups": [_GroupView(g) for g in optimizer.param_groups]}
