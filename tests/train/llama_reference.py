#!/usr/bin/python3
"""The PyTorch eager reference of endure's Llama (src/train/model/), used two ways.

--check DIR [--run BIN]
    Compares a dump of endure-model-check (BIN writes it when --run is given: two variants,
    DIR/gqa with grouped-query heads and an untied head, DIR/tied with a tied head) against
    this model in float64: the loss and every parameter's gradient, relative error
    max|ours - torch| / max|torch| per tensor <= 1e-4; then the 50 training steps (AdamW
    with decay on >= 2-D tensors only, cosine schedule with warmup, clipping at 1.0,
    gradient accumulation) on the same tokens, every step's loss within 1e-3 (absolute).
    One line per tensor "OK"/"FAIL"; exits 1 on any failure.

--bench --preset stories15M --batch B --seq T --threads N --steps S
    Times forward + backward + clip + AdamW steps of the same model in eager fp32 on random
    tokens with torch.set_num_threads(N); prints one JSON line with tokens/s. Before torch
    loads, OPENBLAS_NUM_THREADS=N (torch's matmuls run in OpenBLAS's own threads, which
    torch.set_num_threads does not limit) and GOMP_SPINCOUNT=0 (idle OpenMP threads then
    sleep instead of spinning against OpenBLAS's on the same cores: torch's fastest setting
    on 2 cores, about 1.5x its default), unless already set in the environment.

Only Debian's python3-torch is needed: weights come from C++ as raw float32 + a JSON index.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


def _bench_environment():
    """--bench: the threading environment torch must load with (see the docstring)."""
    if "--bench" not in sys.argv:
        return
    threads = str(os.cpu_count())
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            threads = sys.argv[i + 1]
        elif a.startswith("--threads="):
            threads = a.split("=", 1)[1]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", threads)
    os.environ.setdefault("GOMP_SPINCOUNT", "0")


_bench_environment()

import torch  # noqa: E402 (after the environment is set)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GRAD_TOL = 1e-4
LOSS_TOL = 1e-3

PRESETS = {
    "stories15M": dict(dim=288, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32000,
                       seq_len=256, hidden_dim=768, tie_embeddings=True),
    "stories42M": dict(dim=512, n_layers=8, n_heads=8, n_kv_heads=8, vocab_size=32000,
                       seq_len=1024, hidden_dim=1376, tie_embeddings=True),
    "stories110M": dict(dim=768, n_layers=12, n_heads=12, n_kv_heads=12, vocab_size=32000,
                        seq_len=1024, hidden_dim=2048, tie_embeddings=True),
    "tiny": dict(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=97, seq_len=16,
                 hidden_dim=96, tie_embeddings=False),
}


# ---- The model (llama2.c's model.py, without dropout) ----

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim, seq_len, theta):
    # in float64 like endure (then rounded to float32 there)
    i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    freqs = 1.0 / (theta ** (i / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), freqs)
    return torch.cos(angles).float(), torch.sin(angles).float()


def apply_rope(x, cos, sin):
    # x (B,T,H,hd): pairs (2i, 2i+1) rotated by t * freq_i
    xr, xi = x.reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos = cos.view(1, cos.shape[0], 1, cos.shape[1]).to(x.dtype)
    sin = sin.view(1, sin.shape[0], 1, sin.shape[1]).to(x.dtype)
    out = torch.stack([xr * cos - xi * sin, xr * sin + xi * cos], dim=-1)
    return out.flatten(3)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.n_kv_heads = c["n_heads"], c["n_kv_heads"]
        self.head_dim = c["dim"] // c["n_heads"]
        kv = self.n_kv_heads * self.head_dim
        self.wq = nn.Linear(c["dim"], c["dim"], bias=False)
        self.wk = nn.Linear(c["dim"], kv, bias=False)
        self.wv = nn.Linear(c["dim"], kv, bias=False)
        self.wo = nn.Linear(c["dim"], c["dim"], bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = self.n_heads // self.n_kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B,H,T,hd)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        mask = torch.full((T, T), float("-inf"), dtype=x.dtype).triu(1)
        att = F.softmax(scores + mask, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c["dim"], c["hidden_dim"], bias=False)
        self.w2 = nn.Linear(c["hidden_dim"], c["dim"], bias=False)
        self.w3 = nn.Linear(c["dim"], c["hidden_dim"], bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.feed_forward = FeedForward(c)
        self.attention_norm = RMSNorm(c["dim"], c["norm_eps"])
        self.ffn_norm = RMSNorm(c["dim"], c["norm_eps"])

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.tok_embeddings = nn.Embedding(c["vocab_size"], c["dim"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["n_layers"]))
        self.norm = RMSNorm(c["dim"], c["norm_eps"])
        self.output = nn.Linear(c["dim"], c["vocab_size"], bias=False)
        if c["tie_embeddings"]:
            self.output.weight = self.tok_embeddings.weight
        cos, sin = rope_tables(c["dim"] // c["n_heads"], c["seq_len"], c["rope_theta"])
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        # llama2.c's initialisation (as endure's init(): normal 0.02, wo and w3 scaled down)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * c["n_layers"]) if name.endswith(("wo.weight", "w3.weight")) else 0.02
                torch.nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.rope_cos[:T], self.rope_sin[:T])
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1),
                               ignore_index=-1)


def configure_adamw(model, a):
    """AdamW with decay on >= 2-D tensors only (embeddings, matmul weights), as endure."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": a["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=0.0, betas=(a["beta1"], a["beta2"]), eps=a["eps"])


def cosine_lr(step, warmup, total, max_lr, min_lr):
    if step < warmup:
        return max_lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)


def full_config(c):
    c = dict(c)
    c.setdefault("norm_eps", 1e-5)
    c.setdefault("rope_theta", 10000.0)
    return c


# ---- --check ----

def read_floats(path):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.float32)


def read_ints(path):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.int32).long()


def load_model(d, meta, dtype):
    model = Llama(full_config(meta["config"])).to(dtype)
    flat = read_floats(os.path.join(d, "params.bin"))
    named = dict(model.named_parameters())  # a tied head appears once, as tok_embeddings
    seen = set()
    for p in meta["params"]:
        t = flat[p["offset"]:p["offset"] + math.prod(p["shape"])].view(p["shape"])
        with torch.no_grad():
            named[p["name"]].copy_(t.to(dtype))
        seen.add(p["name"])
    missing = [n for n in named if n not in seen]
    if missing:
        raise SystemExit(f"FAIL: tensors missing from the dump: {missing}")
    return model


def check_dump(d, dtype=torch.float64):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    ok = True
    B, T = meta["batch"], meta["seq"]
    toks = read_ints(os.path.join(d, "tokens.bin")).view(2, B, T)
    model = load_model(d, meta, dtype)
    loss = model(toks[0], toks[1])
    loss.backward()
    rel = abs(meta["loss"] - loss.item()) / abs(loss.item())
    good = rel <= GRAD_TOL
    ok &= good
    print(f"{'OK' if good else 'FAIL'} loss: ours {meta['loss']:.7f} torch {loss.item():.7f} "
          f"rel {rel:.2e}")
    grads = read_floats(os.path.join(d, "grads.bin"))
    named = dict(model.named_parameters())
    worst = 0.0
    for p in meta["params"]:
        ours = grads[p["offset"]:p["offset"] + math.prod(p["shape"])].view(p["shape"]).double()
        ref = named[p["name"]].grad.double()
        scale = ref.abs().max().item()
        err = (ours - ref).abs().max().item() / (scale if scale > 0 else 1.0)
        worst = max(worst, err)
        good = err <= GRAD_TOL
        ok &= good
        print(f"{'OK' if good else 'FAIL'} grad {p['name']} {tuple(p['shape'])} "
              f"rel {err:.2e} (max|g| {scale:.2e})")
    print(f"gradients: worst relative error {worst:.2e} (tolerance {GRAD_TOL:.0e})")

    # training: same initial weights, same tokens, same optimizer, schedule and clipping
    tr = meta["train"]
    model = load_model(d, meta, dtype)
    opt = configure_adamw(model, tr["adamw"])
    mb, micro = tr["micro_batches"], tr["micro_batch"]
    tt = read_ints(os.path.join(d, "train_tokens.bin")).view(tr["steps"], mb, 2, micro, T)
    worst = 0.0
    for step in range(tr["steps"]):
        lr = cosine_lr(step, tr["warmup"], tr["steps"], tr["max_lr"], tr["min_lr"])
        for g in opt.param_groups:
            g["lr"] = lr
        total = 0.0
        for m in range(mb):
            loss = model(tt[step, m, 0], tt[step, m, 1])
            (loss / mb).backward()
            total += loss.item() / mb
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), tr["clip"]).item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ours = tr["losses"][step]
        diff = abs(ours - total)
        worst = max(worst, diff)
        good = diff <= LOSS_TOL and abs(tr["lrs"][step] - lr) <= 1e-6 * max(lr, 1e-12) + 1e-12
        ok &= good
        print(f"{'OK' if good else 'FAIL'} step {step:2d} lr {lr:.6f} loss ours {ours:.6f} "
              f"torch {total:.6f} diff {diff:.1e} grad norm ours {tr['grad_norms'][step]:.4f} "
              f"torch {norm:.4f}")
    print(f"training: worst loss difference {worst:.2e} over {tr['steps']} steps "
          f"(tolerance {LOSS_TOL:.0e})")
    return ok


def run_check(args):
    dirs = []
    if args.run:
        for name, extra in (("gqa", []), ("tied", ["--tie"])):
            d = os.path.join(args.check, name)
            subprocess.run([args.run, "--out", d] + extra, check=True)
            dirs.append(d)
    else:
        dirs = [args.check]
    ok = True
    for d in dirs:
        print(f"== {d}")
        ok &= check_dump(d)
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


# ---- --bench ----

def run_bench(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = full_config(PRESETS[args.preset])
    T = args.seq or c["seq_len"]
    model = Llama(c)
    opt = configure_adamw(model, dict(beta1=0.9, beta2=0.95, eps=1e-5, weight_decay=0.1))
    for g in opt.param_groups:
        g["lr"] = 3e-4
    x = torch.randint(0, c["vocab_size"], (args.batch, T))
    y = torch.randint(0, c["vocab_size"], (args.batch, T))
    times = []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if s >= args.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    mean = sum(times) / len(times)
    tokens = args.batch * T
    print(json.dumps({"impl": "torch-eager", "torch": torch.__version__, "preset": args.preset,
                      "batch": args.batch, "seq": T, "threads": torch.get_num_threads(),
                      "steps": args.steps, "loss": loss.item(), "step_s_median": times[len(times) // 2],
                      "step_s_mean": mean, "tokens_per_s": tokens / mean,
                      "tokens_per_s_median": tokens / times[len(times) // 2],
                      "env": {k: os.environ.get(k) for k in
                              ("OPENBLAS_NUM_THREADS", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--run", metavar="BIN", help="endure-model-check, to write the dumps first")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--preset", default="stories15M", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    if args.check:
        return run_check(args)
    if args.bench:
        return run_bench(args)
    ap.print_usage()
    return 2


if __name__ == "__main__":
    sys.exit(main())
