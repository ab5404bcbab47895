"""A model's weights and AdamW state kept in the checkpoint engine's own memory, so that a
checkpoint every step copies nothing: what endure-train does (Checkpointer::next_state in
include/endure/checkpoint.h), for a PyTorch model.

Three slots of the engine's take turns (on a memory tier they are its files): the one that
holds the state, the one a disk write still reads, and the one handed out for the next
state. AdamW.step() reads the state's slot and writes the next one, out of place, with the
arithmetic of torch.optim.AdamW (foreach=False, amsgrad=False), bit for bit, and points the
model's parameters at it; save() then takes the slot's checksums and commits it, with no
copy. A Checkpointer used this way takes no save() of its own.

    ckpt = endure.checkpoint.Checkpointer("/fsx/ckpt", memory="/dev/shm/ckpt")
    optimizer = endure.inplace.AdamW(ckpt, model.named_parameters(), lr=3e-4)
    optimizer.load()                    # in place; None when nothing was saved
    for step in range(optimizer.extra.get("step", 0) + 1, steps + 1):
        ...forward, backward...
        optimizer.step()
        optimizer.extra["step"] = step
        optimizer.save(step)            # checksums and commit; the disk tiers behind it
    ckpt.flush()
"""

import ctypes
import math

import torch

from endure import _state

__all__ = ["AdamW"]

_KINDS = ("param", "exp_avg", "exp_avg_sq", "step")


def _view(address, shape, dtype):
    """A tensor over `address`, the engine's memory (no copy)."""
    numel = 1
    for n in shape:
        numel *= n
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=dtype).view(shape)


class AdamW:
    """AdamW over `named_parameters` (name, parameter) pairs, its state in `checkpointer`'s
    slots. lr (default 1e-3), betas ((0.9, 0.999)), eps (1e-8) and weight_decay (1e-2) as
    torch.optim.AdamW's, attributes that may change between steps and that a checkpoint
    keeps. `extra`: a dict of plain values (ints, floats, str, bytes, ...) saved with each
    step, per rank, and restored by load(): a data loader's position, say.

    The parameters must be distinct dense, contiguous float32 CPU tensors; their data moves
    into the checkpointer's memory here (their values kept) and to the next slot at each
    step(). Raises ValueError naming a parameter it cannot take.
    """

    def __init__(self, checkpointer, named_parameters, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        self._ckpt = checkpointer
        self._params = []
        seen = set()
        for name, p in named_parameters:
            if type(name) is not str or name in seen:
                raise ValueError("named_parameters: %r is not a name, or is given twice" % (name,))
            seen.add(name)
            if not isinstance(p, torch.Tensor) or p.dtype != torch.float32:
                raise ValueError("named_parameters: %s: not a float32 tensor" % name)
            _state._check_tensor(p.detach(), [name], _state._dtypes())
            self._params.append((name, p))
        if not self._params:
            raise ValueError("named_parameters: at least one")
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay
        self.extra = _state.PlainValues()
        self._layout = []  # (kind, name, shape, dtype) in slot order
        for name, p in self._params:
            for kind in _KINDS:
                shape = () if kind == "step" else tuple(p.shape)
                dtype = torch.float32 if kind == "step" else p.dtype
                self._layout.append((kind, name, shape, dtype))
        self._names = [_state._buffer_name([kind, name]).encode("utf-8")
                       for kind, name, _, _ in self._layout]
        self._sizes = [_view_bytes(shape, dtype) for _, _, shape, dtype in self._layout]
        self._state = self._next()
        # AdamW's denominator, one parameter at a time, in memory touched once.
        self._scratch = torch.zeros(max(p.numel() for _, p in self._params))
        with torch.no_grad():
            for name, p in self._params:
                self._state["param"][name].copy_(p)
                for kind in ("exp_avg", "exp_avg_sq", "step"):
                    self._state[kind][name].zero_()  # as torch.optim.AdamW's first step makes it
                p.data = self._state["param"][name]

    def _next(self):
        """Tensors over a slot free for the next state: {kind: {name: tensor}}."""
        addresses = self._ckpt._next_state(self._names, self._sizes)
        state = {kind: {} for kind in _KINDS}
        for (kind, name, shape, dtype), address in zip(self._layout, addresses):
            state[kind][name] = _view(address, shape, dtype)
        return state

    def _tree_state(self):
        return dict(self._state, hyper={"lr": self.lr, "betas": self.betas, "eps": self.eps,
                                        "weight_decay": self.weight_decay}, extra=self.extra)

    @torch.no_grad()
    def step(self):
        """One AdamW step from each parameter's .grad (a parameter without one is left as
        it is), written into the next slot; the parameters then point there."""
        old, new = self._state, self._next()
        beta1, beta2 = self.betas
        for name, p in self._params:
            grad = p.grad
            if grad is None:
                for kind in _KINDS:
                    new[kind][name].copy_(old[kind][name])
                continue
            step_t = new["step"][name]
            step_t.copy_(old["step"][name])
            step_t += 1
            # torch.optim.AdamW's _single_tensor_adamw, each in-place op written out of place.
            param = torch.mul(old["param"][name], 1 - self.lr * self.weight_decay,
                              out=new["param"][name])
            exp_avg = torch.mul(old["exp_avg"][name], beta1, out=new["exp_avg"][name])
            exp_avg.add_(grad, alpha=1 - beta1)
            exp_avg_sq = torch.mul(old["exp_avg_sq"][name], beta2, out=new["exp_avg_sq"][name])
            exp_avg_sq.addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = self.lr / bias_correction1
            denom = self._scratch[:grad.numel()].view(grad.shape)  # reused, never allocated
            torch.sqrt(exp_avg_sq, out=denom).div_(math.sqrt(bias_correction2)).add_(self.eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)
        self._state = new
        for name, p in self._params:
            p.data = new["param"][name]

    def zero_grad(self, set_to_none=True):
        """As torch.optim.Optimizer.zero_grad."""
        for _, p in self._params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def save(self, step, memory_only=False):
        """Makes the state the last step() wrote checkpoint `step` (an int above the last
        saved): its checksums taken, the memory tier's copy committed, the disk tiers written
        in the background (memory_only=True: not; a job saving every step passes that while
        any rank's checkpointer.disk_busy()). Raises CheckpointError("EINVAL") for a state
        saved already (step() first) or a step not above the last."""
        if type(step) is not int or step < 0:
            raise ValueError("step: must be an int >= 0, not %r" % (step,))
        flat = _state.flatten(self._tree_state(), _NoBuffer)
        self._ckpt._save_in_place(step, flat.tree, memory_only)

    def load(self, step=None):
        """Fills the state (weights, moments, steps, hyperparameters, extra) from checkpoint
        `step` (None: the newest that verifies) where it is, and returns the step, or None
        when step is None and nothing was saved. Raises StateDictError naming what differs
        from the checkpoint (a parameter's name, dtype or shape), nothing changed then."""
        tree_state = self._tree_state()
        loaded = self._ckpt.load(tree_state, step)
        if loaded is not None:
            hyper = tree_state["hyper"]
            self.lr, self.betas = hyper["lr"], tuple(hyper["betas"])
            self.eps, self.weight_decay = hyper["eps"], hyper["weight_decay"]
        return loaded


class _NoBuffer(ctypes.Structure):
    # flatten()'s buffers are not used by a save in place (the slot is the shard).
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


def _view_bytes(shape, dtype):
    numel = 1
    for n in shape:
        numel *= n
    return numel * torch.empty((), dtype=dtype).element_size()
