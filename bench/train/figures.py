"""bench/train's figures: one endure-train run's, from its JSON lines, and the report over
every round (a table for people, then one JSON line). Called by run.sh as

    python3 figures.py run TRAIN_JSONL WARMUP
    python3 figures.py report RESULTS_JSONL BATCH THREADS
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from benchlib import median, print_result, read_jsonl, verdict  # noqa: E402


def run_figures(path, warmup):
    """The median tokens/s of the steps after warm-up, the mean checkpoint stall, the mean
    wait for a copy before the optimizer step and the saves to memory alone: one line of
    results.jsonl."""
    lines = read_jsonl(path)
    start = next(l for l in lines if l.get("start"))
    steps = [l for l in lines if "loss" in l][int(warmup):]
    saves = [l for l in lines if "checkpoint" in l]
    stalls = [l["stall_ms"] / 1e3 for l in saves]
    out = {"train_tokens_per_s": median(l["tokens_per_s"] for l in steps),
           "copy_wait_s": statistics.mean(l.get("ckpt_copy_wait_ms", 0) / 1e3 for l in steps),
           "update_s": median(l["update_ms"] / 1e3 for l in steps),
           "saves": len(saves), "saves_memory_only": sum(l.get("tiers") == "memory" for l in saves),
           "train_step_s": median(l["step_ms"] / 1e3 for l in steps),
           "flops_per_token": start["flops_per_token"], "params": start["params"],
           "train_loss_last": steps[-1]["loss"]}
    if stalls:
        out["ckpt_stall_s"] = statistics.mean(stalls)
        # Robust to the few saves a run taking turns is stopped in (interleave.py).
        out["ckpt_stall_median_s"] = median(stalls)
    print(json.dumps(out))


def geomean(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))


def report(path, batch, threads):
    rows = read_jsonl(path)
    batch, threads = int(batch), int(threads)
    sgemm = next(r for r in rows if r["kind"] == "sgemm")["sgemm_gflops"]
    ours = [r for r in rows if r["kind"] == "endure"]
    torch = [r for r in rows if r["kind"] == "torch"]
    med = lambda rs, k: median(r[k] for r in rs)
    ours_tps = med(ours, "train_tokens_per_s")
    torch_tps = med(torch, "tokens_per_s_median")
    fpt = ours[0]["flops_per_token"]
    mfu = ours_tps * fpt / 1e9 / sgemm
    torch_mfu = torch_tps * fpt / 1e9 / sgemm
    stall = med(ours, "ckpt_stall_s") if all("ckpt_stall_s" in r for r in ours) else None
    # A checkpoint every step against none: each round's two pairs of runs taking turns, one
    # with each run started first; the ratios' geometric mean cancels the order's own effect.
    pairs = [r for r in rows if r["kind"] == "turns"]

    # A pair's figure `key` ("{}": a or b) of the run saving every step, and of the other.
    def every_none(r, key):
        a, b = r[key.format("a")], r[key.format("b")]
        return (a, b) if r["every_first"] else (b, a)

    def every_ratio(r):  # tokens/s with a checkpoint every step / without
        every, none = every_none(r, "tokens_per_s_{}")
        return every / none

    round_costs = [1 - geomean([every_ratio(r) for r in pairs if r["round"] == k])
                   for k in sorted({r["round"] for r in pairs})]
    every_cost = 1 - geomean([every_ratio(r) for r in pairs])
    none_tps = geomean([every_none(r, "tokens_per_s_{}")[1] for r in pairs])
    each_tps = none_tps * (1 - every_cost)
    every_rows = [r for r in rows if r["kind"] == "every1"]
    copy_wait = median(r["copy_wait_s"] for r in every_rows)
    every_stall = median(r["ckpt_stall_median_s"] for r in every_rows if "ckpt_stall_s" in r)
    every_step_s = median(r["train_step_s"] for r in every_rows)
    memory_only = sum(r["saves_memory_only"] for r in every_rows)
    # Where a turn's extra time goes: the optimizer step (out of place, checksums taken as it
    # writes), the saves' stalls, and the rest (the forward and backward, the disk's writes).
    none_rows = [r for r in rows if r["kind"] == "every0"]
    turns = [every_none(r, "turn_{}_s") for r in pairs]
    turn_every = median(every for every, _ in turns)
    turn_none = median(none for _, none in turns)
    update_extra = median(e["update_s"] - n["update_s"] for e, n in zip(every_rows, none_rows))
    turn_extra = median(every - none for every, none in turns)
    saves_total = sum(r["saves"] for r in every_rows)
    step_s = med(ours, "train_step_s")
    ratio = ours_tps / torch_tps
    print(f"endure-train vs PyTorch eager: stories15M ({ours[0]['params'] / 1e6:.1f}M parameters), "
          f"batch {batch}, seq 256, {threads} threads, {len(ours)} round(s), medians")
    print(f"{'':24} {'tokens/s':>10} {'GFLOP/s':>9} {'MFU':>7}")
    print(f"{'endure-train':24} {ours_tps:>10.0f} {ours_tps * fpt / 1e9:>9.1f} {mfu:>7.1%}")
    print(f"{'torch eager':24} {torch_tps:>10.0f} {torch_tps * fpt / 1e9:>9.1f} {torch_mfu:>7.1%}")
    print(f"{'sgemm (OpenBLAS 2048^3)':24} {'':>10} {sgemm:>9.1f} {1:>7.0%}")
    print(f"endure-train / torch: {ratio:.2f}x (target >= 1.5x: {verdict(ratio >= 1.5)})")
    if stall is not None:
        print(f"checkpoint stall (weights + AdamW moments, every 2nd step): {stall * 1e3:.1f} ms "
              f"= {stall / step_s:.1%} of a {step_s:.2f} s step")
    print(f"a checkpoint every step (memory tier, the state kept in place): {each_tps:.0f} "
          f"tokens/s against {none_tps:.0f} with none, two runs taking turns a step at a time "
          f"({len(pairs)} pairs of {pairs[0]['turns']} steps each): cost {every_cost:.2%} "
          f"(target <= 1 %: {verdict(every_cost <= 0.01)})")
    print(f"  per save: a stall of {every_stall * 1e3:.1f} ms = {every_stall / every_step_s:.1%} of a step; "
          f"waits for the state's memory before the optimizer step: {copy_wait * 1e3:.2f} ms a step; "
          f"saves to the memory tier alone (the disk writing or resting): {memory_only} of {saves_total}")
    print(f"  a turn (a step and its save) {turn_extra * 1e3:+.1f} ms (median of the pairs; "
          f"{turn_every:.3f} s against {turn_none:.3f} s): optimizer step {update_extra * 1e3:+.1f} ms, "
          f"save stall {every_stall * 1e3:.1f} ms, the rest {(turn_extra - update_extra - every_stall) * 1e3:+.1f} ms")
    print(f"  cost per round: {' '.join(f'{c:+.2%}' for c in round_costs)}; per pair (none started "
          f"first, then second): {' '.join(f'{1 - every_ratio(r):+.2%}' for r in pairs)}")
    print_result({"bench": "train", "preset": "stories15M", "batch": batch, "seq": 256,
                  "threads": threads, "rounds": len(ours), "endure_tokens_per_s": round(ours_tps, 1),
                  "torch_tokens_per_s": round(torch_tps, 1), "ratio_vs_torch": round(ratio, 3),
                  "sgemm_gflops": round(sgemm, 1), "endure_mfu": round(mfu, 4),
                  "torch_mfu": round(torch_mfu, 4), "flops_per_token": fpt,
                  "ckpt_stall_s": stall, "step_s": step_s, "target_met": ratio >= 1.5,
                  "tokens_per_s_ckpt_every_0": round(none_tps, 1),
                  "tokens_per_s_ckpt_every_1": round(each_tps, 1),
                  "ckpt_every_step_cost": round(every_cost, 4),
                  "ckpt_every_step_cost_rounds": [round(c, 4) for c in round_costs],
                  "ckpt_every_step_cost_pairs": [round(1 - every_ratio(r), 4) for r in pairs],
                  "ckpt_every_step_copy_wait_s": round(copy_wait, 5),
                  "ckpt_every_step_stall_s": round(every_stall, 5),
                  "ckpt_every_step_turn_extra_s": round(turn_extra, 5),
                  "ckpt_every_step_update_extra_s": round(update_extra, 5),
                  "ckpt_every_step_saves": saves_total, "ckpt_every_step_saves_memory_only": memory_only,
                  "ckpt_every_step_target_met": every_cost <= 0.01})


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "run":
        run_figures(*args)
    elif command == "report":
        report(*args)
    else:
        sys.exit("figures.py: unknown command: " + command)
