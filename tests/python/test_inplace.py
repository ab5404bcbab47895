"""endure.inplace.AdamW: torch.optim.AdamW's arithmetic bit for bit with its state in the
checkpoint engine's slots, a save that copies nothing, a resume that goes on bit for bit,
and what it refuses, named. Run by CTest (python_inplace)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

from endure.checkpoint import Checkpointer, StateDictError  # noqa: E402
from endure.inplace import AdamW  # noqa: E402
from small_model import make, train  # noqa: E402


def same_weights(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


class InPlaceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="endure-py-inplace-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def open(self):
        c = Checkpointer(os.path.join(self.dir, "shared"), memory=os.path.join(self.dir, "memory"),
                         rank=0, world=1)
        self.addCleanup(c.close)
        return c

    def test_each_step_is_torchs_adamw_and_each_save_copies_nothing(self):
        reference, model = make(), make()
        torch_opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.1)
        c = self.open()
        opt = AdamW(c, model.named_parameters(), lr=1e-2, weight_decay=0.1)
        for step in range(1, 6):
            train(reference, torch_opt, step, 1)
            pointers = [p.data_ptr() for p in model.parameters()]
            train(model, opt, step, 1)
            # The step wrote the next slot: the weights moved there, and a save takes them
            # where they are.
            self.assertTrue(all(p.data_ptr() != q for p, q in zip(model.parameters(), pointers)))
            opt.extra["position"] = step
            opt.save(step)
            self.assertTrue(same_weights(reference, model), "step %d" % step)
        c.wait()
        self.assertEqual(c.latest(), 5)

    def test_a_resume_goes_on_bit_for_bit(self):
        reference = make()
        torch_opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.1)
        train(reference, torch_opt, 1, 6)
        c = self.open()
        model = make()
        opt = AdamW(c, model.named_parameters(), lr=1e-2, weight_decay=0.1)

        def save(step):
            opt.extra["position"] = step
            opt.save(step)
        train(model, opt, 1, 4, save)
        c.flush()
        c.close()

        c2 = self.open()
        resumed = make()
        opt2 = AdamW(c2, resumed.named_parameters(), lr=7.0)
        opt2.extra["stale"] = True  # replaced whole by the checkpoint's
        self.assertEqual(opt2.load(), 4)
        self.assertEqual(dict(opt2.extra), {"position": 4})
        self.assertEqual((opt2.lr, opt2.weight_decay), (1e-2, 0.1))
        self.assertTrue(same_weights(model, resumed))
        train(resumed, opt2, 5, 2)
        self.assertTrue(same_weights(reference, resumed))

    def test_a_model_of_another_shape_is_refused_by_name(self):
        c = self.open()
        train_model = make()
        opt = AdamW(c, train_model.named_parameters())
        train(train_model, opt, 1, 1)
        opt.save(1)
        c.wait()
        other = torch.nn.Sequential(torch.nn.Linear(6, 13), torch.nn.Tanh(), torch.nn.Linear(13, 3))
        c2 = self.open()
        opt2 = AdamW(c2, other.named_parameters())
        before = [p.clone() for p in other.parameters()]
        with self.assertRaises(StateDictError) as e:
            opt2.load()
        self.assertIn("['0.weight']", e.exception.key)
        self.assertIn("shape [13, 6] here, [12, 6]", str(e.exception))
        self.assertTrue(all(torch.equal(p, q) for p, q in zip(other.parameters(), before)))

    def test_parameters_it_cannot_take_are_named(self):
        c = self.open()
        with self.assertRaisesRegex(ValueError, "^named_parameters: w: not a float32 tensor"):
            AdamW(c, [("w", torch.zeros(3, dtype=torch.float64))])
        with self.assertRaisesRegex(ValueError, "^named_parameters: 'w' is not a name, or is given twice"):
            AdamW(c, [("w", torch.zeros(3)), ("w", torch.zeros(3))])
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            AdamW(c, [("w", torch.zeros(3, 4).t())])
        with self.assertRaisesRegex(ValueError, "^named_parameters: at least one"):
            AdamW(c, [])


def ddp_rank(kind, directory, out):
    """One rank of test_under_ddp_it_trains_as_torchs_adamw: this file run with --ddp-rank."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = make()
    if kind == "torch":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    else:
        c = Checkpointer(directory, memory=directory + "-memory", rank=rank, world=2)
        opt = AdamW(c, model.named_parameters(), lr=1e-2, weight_decay=0.1)
    ddp = DDP(model)
    for step in range(1, 5):
        g = torch.Generator().manual_seed(10 * step + rank)
        x, y = torch.randn(16, 6, generator=g), torch.randn(16, 3, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if kind == "inplace":
            opt.save(step)
    if kind == "inplace":
        c.flush()
    if rank == 0:
        with open(out, "wb") as f:
            for p in model.parameters():
                f.write(p.detach().numpy().tobytes())
    dist.destroy_process_group()


class DistributedTest(unittest.TestCase):
    def test_under_ddp_it_trains_as_torchs_adamw(self):
        directory = tempfile.mkdtemp(prefix="endure-py-inplace-ddp-")
        self.addCleanup(shutil.rmtree, directory, True)
        self.addCleanup(shutil.rmtree, os.path.join(directory, "ckpt-memory"), True)
        weights = {}
        for port, kind in ((29731 + os.getpid() % 500, "torch"), (30331 + os.getpid() % 500, "inplace")):
            out = os.path.join(directory, kind + ".bin")
            procs = [subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--ddp-rank", kind,
                 os.path.join(directory, "ckpt"), out],
                env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                         MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1"))
                for r in range(2)]
            for p in procs:
                try:
                    self.assertEqual(p.wait(timeout=120), 0, kind)
                finally:
                    p.kill()
            with open(out, "rb") as f:
                weights[kind] = f.read()
        self.assertTrue(weights["torch"])
        self.assertEqual(weights["torch"], weights["inplace"])


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--ddp-rank":
        ddp_rank(*sys.argv[2:])
    else:
        unittest.main()
