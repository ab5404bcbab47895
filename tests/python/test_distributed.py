"""endure.distributed and endure.slurm: where a step's tries meet (the step's first host,
by name; a port of the job's that moves with every try), Slurm's hostlists, refused
arguments named, and two ranks meeting through init() over Gloo on loopback. Run by CTest
(python_distributed)."""

import os
import subprocess
import sys
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

from endure import distributed  # noqa: E402
from endure.slurm import Task, expand_hostlist  # noqa: E402


def slurm(**more):
    env = {"SLURM_JOB_ID": "1234", "SLURM_PROCID": "1", "SLURM_NTASKS": "3",
           "SLURM_LOCALID": "0", "SLURM_STEP_NODELIST": "worker-[1-3]",
           "SLURM_JOB_NODELIST": "worker-[0-3]", "MASTER_ADDR": "127.0.0.9"}
    env.update(more)
    return Task(env)


class RendezvousTest(unittest.TestCase):
    def test_a_step_meets_at_its_own_first_host_by_name(self):
        # Not the job's first node, and not MASTER_ADDR from before the fault.
        host, _ = distributed.rendezvous(slurm())
        self.assertEqual(host, "worker-1")
        host, _ = distributed.rendezvous(slurm(SLURM_STEP_NODELIST="worker-[2-3]"))
        self.assertEqual(host, "worker-2")

    def test_the_port_moves_with_every_try(self):
        ports = [distributed.rendezvous(slurm(ENDURE_AUTO_RESUME_COUNT=str(n)))[1] for n in range(4)]
        self.assertEqual(len(set(ports)), 4)
        self.assertEqual(ports[1], ports[0] + 1)
        requeued = distributed.rendezvous(slurm(SLURM_RESTART_COUNT="1"))[1]
        self.assertNotEqual(requeued, ports[0])
        for job in ("1", "1199", "1200", "999999"):
            for n in range(12):
                port = distributed.rendezvous(slurm(SLURM_JOB_ID=job, ENDURE_AUTO_RESUME_COUNT=str(n)))[1]
                self.assertTrue(distributed.PORT_BASE <= port < 32768, port)
        other_job = distributed.rendezvous(slurm(SLURM_JOB_ID="1235"))[1]
        self.assertNotEqual(other_job, ports[0])
        self.assertEqual(distributed.rendezvous(slurm(ENDURE_AUTO_RESUME_COUNT="2"), port=30000)[1], 30002)

    def test_outside_slurm_torchruns_variables(self):
        task = Task({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
        self.assertEqual((task.rank, task.world, task.local_rank, task.hosts), (1, 2, 1, []))

    def test_bad_variables_and_arguments_are_named(self):
        with self.assertRaisesRegex(ValueError, "^SLURM_PROCID: 'x'"):
            Task({"SLURM_PROCID": "x"})
        with self.assertRaisesRegex(ValueError, "^SLURM_PROCID/RANK: rank 3"):
            Task({"SLURM_PROCID": "3", "SLURM_NTASKS": "3"})
        with self.assertRaisesRegex(ValueError, "^backend: "):
            distributed.init(backend="tcp")
        with self.assertRaisesRegex(ValueError, "^timeout_s: "):
            distributed.init(timeout_s=0)
        with self.assertRaisesRegex(ValueError, "^port: "):
            distributed.init(port=70000)

    def test_hostlists(self):
        cases = {
            "worker-[0-3]": ["worker-0", "worker-1", "worker-2", "worker-3"],
            "worker-[0,2-3],controller-0": ["worker-0", "worker-2", "worker-3", "controller-0"],
            "a1,b[01-03]": ["a1", "b01", "b02", "b03"],
            "n[8-10]": ["n8", "n9", "n10"],
            "n[08-10]": ["n08", "n09", "n10"],
            "r[1-2]n[01-02]": ["r1n01", "r1n02", "r2n01", "r2n02"],
            "x[1],y[2-3,5],z": ["x1", "y2", "y3", "y5", "z"],
        }
        for expr, want in cases.items():
            self.assertEqual(expand_hostlist(expr), want, expr)
        for bad in ("a[1-2", "a]1", "a[3-1]", "a[x]"):
            with self.assertRaisesRegex(ValueError, "^hostlist"):
                expand_hostlist(bad)


def rank_main():
    """One rank of test_two_ranks_meet_and_all_reduce: this file run with --rank."""
    import torch
    import torch.distributed as dist
    task = distributed.init(backend="gloo", timeout_s=60)
    t = torch.tensor([float(task.rank + 1)])
    dist.all_reduce(t)
    print(task.rank, task.world, task.master_addr, task.master_port, int(t.item()))
    dist.destroy_process_group()


class InitTest(unittest.TestCase):
    def test_two_ranks_meet_and_all_reduce(self):
        procs = []
        for rank in range(2):
            env = dict(os.environ, PYTHONPATH=PYTHON_DIR, SLURM_JOB_ID=str(1000 + os.getpid() % 200),
                       SLURM_PROCID=str(rank), SLURM_NTASKS="2", SLURM_STEP_NODELIST="localhost",
                       ENDURE_AUTO_RESUME_COUNT="1", OMP_NUM_THREADS="1")
            env.pop("MASTER_ADDR", None)
            env.pop("GLOO_SOCKET_IFNAME", None)
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank"], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=120)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, err.decode())
            outs.append(out.decode().split())
        self.assertEqual([o[0] for o in outs], ["0", "1"])
        for o in outs:
            self.assertEqual(o[1:3], ["2", "localhost"])
            self.assertEqual(o[4], "3")  # 1 + 2
        self.assertEqual(outs[0][3], outs[1][3])


class ExampleResumeTest(unittest.TestCase):
    """examples/pytorch/train_ddp.py on three ranks, stopped halfway and run again, ends
    with the bytes of a run that never stopped: three ranks, because two add in one order
    whatever DDP's bucket layout (a + b == b + a) and three do not."""

    EXAMPLE = os.path.join(os.path.dirname(PYTHON_DIR), "examples", "pytorch", "train_ddp.py")

    def run_ranks(self, folder, name, steps, port):
        procs = []
        for rank in range(3):
            env = dict(os.environ, PYTHONPATH=PYTHON_DIR, RANK=str(rank), WORLD_SIZE="3",
                       LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       OMP_NUM_THREADS="1")
            for k in [k for k in env if k.startswith("SLURM_")] + ["GLOO_SOCKET_IFNAME"]:
                env.pop(k, None)
            procs.append(subprocess.Popen(
                [sys.executable, self.EXAMPLE, "--ckpt-dir", os.path.join(folder, name + "-ckpt"),
                 "--memory-dir", os.path.join(folder, "%s-memory-%d" % (name, rank)),
                 "--steps", str(steps), "--step-seconds", "0",
                 "--final-state", os.path.join(folder, name + ".state")],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for p in procs:
            try:
                _, err = p.communicate(timeout=240)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, err.decode())

    def test_three_ranks_stopped_and_resumed_end_bit_for_bit(self):
        import tempfile
        port = 29700 + os.getpid() % 200
        with tempfile.TemporaryDirectory() as folder:
            self.run_ranks(folder, "clean", 12, port)
            self.run_ranks(folder, "stopped", 6, port + 1)
            self.run_ranks(folder, "stopped", 12, port + 2)
            with open(os.path.join(folder, "clean.state"), "rb") as f:
                clean = f.read()
            with open(os.path.join(folder, "stopped.state"), "rb") as f:
                stopped = f.read()
            self.assertGreater(len(clean), 0)
            self.assertTrue(clean == stopped, "the resumed run's final state differs")


if __name__ == "__main__":
    if sys.argv[1:] == ["--rank"]:
        rank_main()
    else:
        unittest.main()
