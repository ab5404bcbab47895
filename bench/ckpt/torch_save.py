"""torch.save of MIB MiB of training state to PATH, fsynced; prints the seconds it took.
Run by bench/ckpt/run.sh under Debian's python3 (python3-torch):

    python3 torch_save.py PATH MIB
"""
import os
import sys
import time

import torch

path, mib = sys.argv[1], int(sys.argv[2])
n = mib << 20
state = {"weights": torch.empty(n // 3, dtype=torch.uint8), "moments": torch.empty(n - n // 3, dtype=torch.uint8)}
for t in state.values():
    t[::4096] = 1  # touched once, as training state is
t0 = time.monotonic()
with open(path, "wb") as f:
    torch.save(state, f)
    f.flush()
    os.fsync(f.fileno())
print(time.monotonic() - t0)
