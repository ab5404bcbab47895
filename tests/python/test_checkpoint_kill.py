"""A process saving checkpoints through endure.checkpoint, SIGKILLed at random points (a
seeded schedule): every step that loads afterwards is exactly the state saved as that
step, and one killed mid-save never loads. Run by CTest (python_checkpoint_kill).

The child is this file run with --child DIR: it resumes from the newest step and saves
steps after it until killed, each a state whose every byte depends on its step."""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

from endure.checkpoint import CheckpointError, Checkpointer  # noqa: E402

ELEMENTS = 4 << 20  # 16 MiB of float32 per tensor, so that a save takes a while
ROUNDS = 12
SEED = 47


def state_of(step):
    """The state saved as `step`: every value a function of the step."""
    return {"w": torch.full((ELEMENTS,), float(step)),
            "m": {"v": torch.arange(1000, dtype=torch.int64) * step},
            "step": step,
            "blob": str(step).encode() * 100}


def blank():
    return {"w": torch.zeros(ELEMENTS), "m": {"v": torch.zeros(1000, dtype=torch.int64)},
            "step": -1, "blob": b""}


def child(directory):
    c = Checkpointer(directory, rank=0, world=1, keep_last=4)
    step = (c.latest() or 0) + 1
    print("ready", flush=True)
    while True:
        c.save(state_of(step), step, overlapped=step % 2 == 0)
        c.wait()
        step += 1


class KillTest(unittest.TestCase):
    def test_a_killed_save_never_leaves_a_step_that_loads(self):
        directory = tempfile.mkdtemp(prefix="endure-py-kill-")
        self.addCleanup(shutil.rmtree, directory, True)
        rng = random.Random(SEED)
        loaded_steps = set()
        unloadable = 0  # step folders a kill left without a whole step
        for round_ in range(ROUNDS):
            proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", directory],
                                    stdout=subprocess.PIPE, env=os.environ)
            try:
                self.assertEqual(proc.stdout.readline().strip(), b"ready")
                time.sleep(rng.uniform(0.0, 0.8))  # where the kill lands, not a measurement
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
                proc.stdout.close()
            c = Checkpointer(directory, rank=0, world=1)
            try:
                folders = sorted(int(n[5:]) for n in os.listdir(directory) if n.startswith("step-"))
                for s in folders:
                    state = blank()
                    try:
                        got = c.load(state, step=s)
                    except CheckpointError as e:
                        self.assertIn(e.code, ("ENOTFOUND", "ECORRUPT"), str(e))
                        unloadable += 1
                        continue
                    self.assertEqual(got, s)
                    expected = state_of(s)
                    self.assertTrue(torch.equal(state["w"], expected["w"]),
                                    "round %d step %d" % (round_, s))
                    self.assertTrue(torch.equal(state["m"]["v"], expected["m"]["v"]))
                    self.assertEqual((state["step"], state["blob"]), (s, expected["blob"]))
                    loaded_steps.add(s)
                newest = blank()
                got = c.load(newest)
                if got is not None:
                    self.assertEqual(newest["step"], got)
                    self.assertTrue(torch.equal(newest["w"], state_of(got)["w"]))
            finally:
                c.close()
        print("\n%d rounds: %d steps loaded whole, %d step folders left unloadable by a kill"
              % (ROUNDS, len(loaded_steps), unloadable), file=sys.stderr)
        self.assertTrue(loaded_steps, "no step was ever saved: the kills came too early")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        unittest.main()
