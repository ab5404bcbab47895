"""endure.checkpoint against libendure.so: round trips of every value type a state dict may
hold, loads in place, every refused input named with nothing written, per-rank state, and
the tiers' fallback. Run by CTest (python_checkpoint) with ENDURE_LIBRARY set to the build's
library; `/usr/bin/python3 tests/python/test_checkpoint.py` by hand."""

import math
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

import small_model  # noqa: E402

from endure.checkpoint import (CheckpointError, Checkpointer, StateDictError,  # noqa: E402
                               optimizer_state)

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
          torch.complex128, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.bool]


def every_value():
    """A state dict with one of everything a checkpoint holds."""
    g = torch.Generator().manual_seed(7)
    tensors = {}
    for d in DTYPES:
        t = torch.randn(3, 5, generator=g, dtype=torch.float64) * 100
        tensors[str(d)] = (t > 0) if d == torch.bool else t.to(d)
    return {
        "tensors": tensors,
        "scalar": torch.tensor(2.5),
        "empty": torch.empty(0, 4),
        "rng": torch.get_rng_state(),
        "ints": [0, -1, 2 ** 100, -(2 ** 63)],
        "floats": (0.1, -0.0, math.inf, -math.inf, 5e-324, 1.7976931348623157e308),
        "nan": math.nan,
        "flags": {"yes": True, "no": False},
        "text": ["", "plain", "ünïcödé ✓", "a/b%c"],
        "bytes": [b"", bytes(range(256)) * 3],
        "none": None,
        "": {"empty key": 1, "a/b": 2, "a%2Fb": 3},
        "nested": {"deeper": {"list": [torch.arange(4), ("tuple", 1, [2.0])]}},
    }


def zeroed(state):
    """The same structure with every tensor zeroed in place and plain values changed."""
    def walk(v):
        if isinstance(v, torch.Tensor):
            v.zero_()
            return v
        if isinstance(v, dict):
            for k in v:
                v[k] = walk(v[k])
            return v
        if isinstance(v, list):
            for i in range(len(v)):
                v[i] = walk(v[i])
            return v
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        return type(v)() if v is not None else None
    return walk(state)


def raw(t):
    """A tensor's bytes, whatever its dtype (numpy has no bfloat16)."""
    return bytes(t.reshape(-1).view(torch.uint8).numpy())


def same(a, b):
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and
                raw(a) == raw(b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return type(b) is float and a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def tensors_of(state):
    out = []
    def walk(v):
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
    walk(state)
    return out


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="endure-py-ckpt-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def open(self, sub="shared", **kw):
        kw.setdefault("rank", 0)
        kw.setdefault("world", 1)
        c = Checkpointer(os.path.join(self.dir, sub), **kw)
        self.addCleanup(c.close)
        return c

    def test_every_value_type_comes_back_exactly(self):
        c = self.open()
        saved = every_value()
        c.save(saved, 3)
        c.wait()
        self.assertEqual(c.latest(), 3)
        target = zeroed(every_value())
        self.assertFalse(same(saved, target))
        self.assertEqual(c.load(target), 3)
        self.assertTrue(same(saved, target))

    def test_load_fills_the_tensors_in_place(self):
        c = self.open()
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        c.save({"model": model.state_dict()}, 1)
        c.wait()
        expected = {k: v.clone() for k, v in model.state_dict().items()}
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(3.0)
        pointers = {k: v.data_ptr() for k, v in model.state_dict().items()}
        state = {"model": model.state_dict()}
        objects = [id(t) for t in tensors_of(state)]
        self.assertEqual(c.load(state), 1)
        self.assertEqual({k: v.data_ptr() for k, v in model.state_dict().items()}, pointers)
        self.assertEqual([id(t) for t in tensors_of(state)], objects)
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, expected[k]), k)

    def test_optimizer_state_resumes_bit_for_bit(self):
        def make():
            model = small_model.make()
            return model, torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)

        def train(model, opt, steps, first):
            small_model.train(model, opt, first, steps)

        c = self.open()
        model, opt = make()
        train(model, opt, 3, 0)
        c.save({"model": model.state_dict(), "optimizer": optimizer_state(opt)}, 3)
        c.wait()
        train(model, opt, 2, 3)
        model2, opt2 = make()
        state = {"model": model2.state_dict(), "optimizer": optimizer_state(opt2)}
        for group in opt2.param_groups:
            group["lr"] = 99.0  # a load sets it back in the optimizer
        self.assertEqual(c.load(state), 3)
        self.assertEqual(opt2.param_groups[0]["lr"], 1e-2)
        train(model2, opt2, 2, 3)
        for a, b in zip(model.parameters(), model2.parameters()):
            self.assertTrue(torch.equal(a, b))
        self.assertEqual(opt.state_dict()["state"][0]["step"], opt2.state_dict()["state"][0]["step"])

    def test_a_fresh_adamw_state_is_what_its_first_step_makes(self):
        torch.manual_seed(1)
        a = torch.nn.Linear(4, 4)
        b = torch.nn.Linear(4, 4)
        b.load_state_dict(a.state_dict())
        opt_a, opt_b = torch.optim.AdamW(a.parameters()), torch.optim.AdamW(b.parameters())
        optimizer_state(opt_b)  # made before the first step, as a resume makes it
        for opt, m in ((opt_a, a), (opt_b, b)):
            m(torch.ones(2, 4)).sum().backward()
            opt.step()
        self.assertTrue(torch.equal(a.weight, b.weight))

    def test_an_overlapped_save_is_the_state_at_its_call(self):
        c = self.open()
        t = torch.arange(1000, dtype=torch.float32)
        c.save({"t": t}, 1, overlapped=True)
        c.wait_copied()
        t.fill_(-1)
        c.wait()
        back = {"t": torch.zeros(1000)}
        c.load(back)
        self.assertTrue(torch.equal(back["t"], torch.arange(1000, dtype=torch.float32)))

    def test_no_checkpoint_loads_as_none(self):
        c = self.open()
        self.assertIsNone(c.latest())
        self.assertIsNone(c.load({"t": torch.zeros(2)}))
        with self.assertRaises(CheckpointError) as e:
            c.load({"t": torch.zeros(2)}, step=5)
        self.assertEqual(e.exception.code, "ENOTFOUND")

    def assert_refused_save(self, c, state, key, words):
        before = sorted(os.listdir(c.directory))
        with self.assertRaises(StateDictError) as e:
            c.save(state, 10)
        self.assertEqual(e.exception.key, key)
        self.assertIn(words, str(e.exception))
        c.wait()
        self.assertEqual(sorted(os.listdir(c.directory)), before, "something was written")

    def test_refused_saves_name_the_key_and_write_nothing(self):
        c = self.open()
        ok = torch.zeros(2, 3)
        self.assert_refused_save(c, {"a": {"w": torch.empty(3, device="meta")}},
                                 "state_dict['a']['w']", "only CPU tensors")
        self.assert_refused_save(c, {"w": torch.zeros(3, 4).t()}, "state_dict['w']",
                                 "not contiguous")
        q = torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.quint8)
        self.assert_refused_save(c, {"ok": ok, "q": q}, "state_dict['q']", "dtype torch.quint8")
        self.assert_refused_save(c, {"s": torch.eye(3).to_sparse()}, "state_dict['s']", "dense")
        self.assert_refused_save(c, {"optimizer": {"state": {0: {"x": ok}}}},
                                 "state_dict['optimizer']['state'][0]", "keys must be strings")
        self.assert_refused_save(c, {"l": [1, object()]}, "state_dict['l'][1]", "a object")
        self.assert_refused_save(c, {"size": torch.Size([2])}, "state_dict['size']", "Size")
        self.assert_refused_save(c, {"\udc80": 1}, "state_dict['\\udc80']", "not valid Unicode")
        self.assert_refused_save(c, {"s": "\udc80"}, "state_dict['s']", "not valid Unicode")
        loop = {}
        loop["me"] = loop
        self.assert_refused_save(c, {"loop": loop}, "state_dict['loop']['me']", "contains itself")
        with self.assertRaises(StateDictError) as e:
            c.save([ok], 10)
        self.assertEqual(e.exception.key, "state_dict")
        for bad_step in (-1, 1.0, True, "3"):
            with self.assertRaisesRegex(ValueError, "^step: "):
                c.save({"ok": ok}, bad_step)
        with self.assertRaisesRegex(ValueError, "^tiers: "):
            c.save({"ok": ok}, 10, tiers="disk")
        self.assertIsNone(c.latest())
        c.save({"ok": ok}, 10)
        c.wait()
        with self.assertRaises(CheckpointError) as e:
            c.save({"ok": ok}, 10)  # not above the last
        self.assertEqual(e.exception.code, "EINVAL")
        self.assertIn("step", str(e.exception))

    def test_refused_loads_name_the_key_and_change_nothing(self):
        c = self.open()
        c.save({"m": {"w": torch.ones(2, 3), "b": torch.ones(3)}, "n": 5}, 1)
        c.wait()
        cases = [
            ({"m": {"w": torch.zeros(3, 2), "b": torch.zeros(3)}, "n": 0}, "state_dict['m']['w']",
             "shape [3, 2] here, [2, 3]"),
            ({"m": {"w": torch.zeros(2, 3, dtype=torch.float64), "b": torch.zeros(3)}, "n": 0},
             "state_dict['m']['w']", "dtype float64 here, float32"),
            ({"m": {"w": torch.zeros(2, 3)}, "n": 0}, "state_dict['m']['b']",
             "in the checkpoint, not in the state dict"),
            ({"m": {"w": torch.zeros(2, 3), "b": torch.zeros(3), "c": torch.zeros(1)}, "n": 0},
             "state_dict['m']['c']", "in the state dict, not in the checkpoint"),
            ({"m": {"w": torch.zeros(2, 3), "b": torch.zeros(3)}, "n": torch.zeros(1)},
             "state_dict['n']", "holds a tensor here"),
            ({"m": {"w": torch.zeros(2, 3).t().contiguous().t(), "b": torch.zeros(3)}, "n": 0},
             "state_dict['m']['w']", "not contiguous"),
            ({"m": {"w": torch.zeros(2, 3), "b": torch.zeros(3)}, "n": 0, 1: 2},
             "state_dict[1]", "in the state dict, not in the checkpoint"),
        ]
        for state, key, words in cases:
            with self.subTest(key=key, words=words):
                with self.assertRaises(StateDictError) as e:
                    c.load(state)
                self.assertEqual(e.exception.key, key)
                self.assertIn(words, str(e.exception))
                if not isinstance(state["n"], torch.Tensor):
                    self.assertEqual(state["n"], 0)
                for t in tensors_of(state):
                    self.assertFalse(t.any(), "a tensor was written")

    def test_each_rank_keeps_its_own_values(self):
        ranks = [self.open(rank=r, world=2, commit_timeout=60) for r in (0, 1)]
        for r, c in enumerate(ranks):
            c.save({"rank": r, "rng": bytes([r]) * 5, "w": torch.full((4,), float(r))}, 1)
        for c in ranks:
            c.wait()
        for r, c in enumerate(ranks):
            state = {"rank": -1, "rng": b"", "w": torch.zeros(4)}
            self.assertEqual(c.load(state), 1)
            self.assertEqual(state["rank"], r)
            self.assertEqual(state["rng"], bytes([r]) * 5)
            self.assertTrue(torch.equal(state["w"], torch.full((4,), float(r))))

    def test_a_damaged_tier_falls_back_to_the_next(self):
        tiers = [os.path.join(self.dir, t) for t in ("memory", "local", "shared")]
        c = self.open(memory=tiers[0], local=tiers[1])
        expected = torch.arange(100000, dtype=torch.float32)
        c.save({"w": expected}, 4)
        c.wait()
        for damaged, tier in enumerate(tiers):
            shards = [os.path.join(root, f) for root, _, files in os.walk(tier) for f in files
                      if f.endswith(".shard")]
            self.assertTrue(shards, tier)
            for shard in shards:  # one byte of the data flipped: its chunk fails its checksum
                with open(shard, "r+b") as f:
                    f.seek(5000)
                    byte = f.read(1)
                    f.seek(5000)
                    f.write(bytes([byte[0] ^ 0xFF]))
            state = {"w": torch.zeros(100000)}
            if tier != tiers[-1]:
                self.assertEqual(c.load(state), 4, "with %s damaged" % tier)
                self.assertTrue(torch.equal(state["w"], expected))
            else:
                with self.assertRaises(CheckpointError) as e:
                    c.load(state, step=4)
                self.assertEqual(e.exception.code, "ECORRUPT")

    def test_memory_tier_saves_and_flush(self):
        c = self.open(memory=os.path.join(self.dir, "memory"))
        w = torch.ones(10)
        c.save({"w": w}, 1, overlapped=True, tiers="memory")
        c.wait()
        self.assertFalse(os.path.exists(os.path.join(c.directory, "step-000000000001")))
        c.flush()
        self.assertTrue(os.path.exists(os.path.join(c.directory, "step-000000000001", "MANIFEST.json")))
        with self.assertRaisesRegex(ValueError, "^tiers: "):
            c.save({"w": w}, 2, tiers="memory")

    def test_bad_arguments_name_themselves(self):
        for kw, name in (({"rank": 2, "world": 2}, "rank"), ({"rank": 0, "world": 0}, "world"),
                         ({"keep_last": -1}, "keep_last"), ({"disk_duty": 1.5}, "disk_duty"),
                         ({"cluster_memory": "/dev/shm/x"}, "cluster_memory"),
                         ({"memory": ""}, "memory"), ({"commit_timeout": 0}, "commit_timeout")):
            with self.subTest(name=name):
                kw = dict({"rank": 0, "world": 1}, **kw)
                with self.assertRaisesRegex(ValueError, "^%s: " % name):
                    Checkpointer(os.path.join(self.dir, "bad"), **kw)
                self.assertFalse(os.path.exists(os.path.join(self.dir, "bad")))
        with self.assertRaises(CheckpointError) as e:
            Checkpointer(os.path.join(self.dir, "s3bad"), s3="https://x", rank=0, world=1)
        self.assertEqual(e.exception.code, "EINVAL")
        self.assertIn("s3", str(e.exception))


class ClusterMemoryTest(unittest.TestCase):
    """The cluster memory tier through the package: a real endure-memstore (this build's)
    on a loopback address, a save to the memory tiers alone, and a restore from the store
    with nothing on disk."""

    def setUp(self):
        import json
        import socket
        import subprocess
        import time
        self.dir = tempfile.mkdtemp(prefix="endure-py-cluster-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        library = os.environ.get("ENDURE_LIBRARY", "")
        memstore = os.path.join(os.path.dirname(library), "bin", "endure-memstore")
        if not os.access(memstore, os.X_OK):
            self.fail("no endure-memstore beside ENDURE_LIBRARY (%s)" % library)
        self.config = os.path.join(self.dir, "config")
        os.makedirs(self.config)
        address = "127.0.0.21"
        # A port free on the address, the data path's next to it.
        for port in range(23000 + os.getpid() % 5000, 30000, 7):
            try:
                for p in (port, port + 1):
                    with socket.socket() as s:
                        s.bind((address, p))
                break
            except OSError:
                continue
        with open(os.path.join(self.config, "memory_store.json"), "w") as f:
            json.dump({"ClusterName": "py", "InstanceMemoryAllocationPercentage": 10, "Port": port,
                       "Token": "py-token"}, f)
        with open(os.path.join(self.config, "resource_config.json"), "w") as f:
            json.dump({"InstanceGroups": [{"Name": "workers", "Instances": [
                {"InstanceName": "n1", "CustomerIpAddress": address}]}]}, f)
        store = subprocess.Popen([memstore, "--config", os.path.join(self.config, "memory_store.json"),
                                  "--address", address, "--arena", os.path.join(self.dir, "arena"),
                                  "--capacity-bytes", str(64 << 20)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(store.wait)
        self.addCleanup(store.terminate)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection((address, port + 1), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)

    def open(self):
        c = Checkpointer(os.path.join(self.dir, "shared"), rank=0, world=1,
                         cluster_memory={"node": "n1", "rank_nodes": ["n1"], "replicas": 0,
                                         "config_dir": self.config})
        self.addCleanup(c.close)
        return c

    def test_a_save_to_memory_alone_restores_from_the_store(self):
        c = self.open()
        saved = {"w": torch.arange(100000, dtype=torch.float32), "step": 7}
        c.save(saved, 7, overlapped=True, tiers="memory")
        c.wait()
        self.assertEqual(c.latest(), 7)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "shared", "step-000000000007")))
        target = {"w": torch.zeros(100000, dtype=torch.float32), "step": 0}
        self.assertEqual(self.open().load(target), 7)
        self.assertTrue(torch.equal(target["w"], saved["w"]))
        self.assertEqual(target["step"], 7)

    def test_bad_cluster_memory_names_itself(self):
        for value in ("/dev/shm/x", {"node": "n1"}, {"node": "n1", "rank_nodes": ["n1"], "replicas": -1},
                      {"node": "n1", "rank_nodes": ["n1"], "extra": 1}):
            with self.subTest(value=value):
                with self.assertRaisesRegex(ValueError, "^cluster_memory: "):
                    Checkpointer(os.path.join(self.dir, "bad"), rank=0, world=1, cluster_memory=value)
        with self.assertRaises(CheckpointError) as e:
            Checkpointer(os.path.join(self.dir, "bad"), rank=0, world=1,
                         cluster_memory={"node": "n1", "rank_nodes": ["n1"],
                                         "config_dir": os.path.join(self.dir, "none")})
        self.assertEqual(e.exception.code, "EINVAL")
        self.assertIn("memory_store.json", str(e.exception))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bad")))

    def test_rank_nodes_from_slurm(self):
        from endure import slurm
        self.assertEqual(slurm.tasks_per_node("2(x3),1"), [2, 2, 2, 1])
        env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "5", "SLURM_STEP_NODELIST": "w-[1-3]",
               "SLURM_STEP_TASKS_PER_NODE": "2(x2),1"}
        self.assertEqual(slurm.rank_nodes(env), ["w-1", "w-1", "w-2", "w-2", "w-3"])
        env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)"
        with self.assertRaisesRegex(ValueError, "^SLURM_STEP_TASKS_PER_NODE: "):
            slurm.rank_nodes(env)
        self.assertEqual(slurm.rank_nodes({}), [])


if __name__ == "__main__":
    unittest.main()
