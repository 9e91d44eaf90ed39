#!/usr/bin/python3
"""CTest Llama.Driver: scripts/llm-layer on a small configuration on a chip.
  - timing-only and with-data runs take the same time, to the nanosecond (issue 50: timing-only
    keeps the cycles of a run with data);
  - the report adds up: the model's estimate is layers x the layer plus the LM head and the embedding, every
    part of the split is
    within the layer's time, and the run used the system (HBM stacks busy, a collective ran);
  - FP8 weights lower the HBM bound and the DMA time;
  - prefill (a prompt of 160 tokens) likewise: the same time without data, its TTFT estimate adds
    up, and it stays above its compute and HBM bounds;
  - --steady (two layers in a row): the same layer's time, a steady-state time within the two
    layers', and an estimate of the first layer alone and the rest in steady state;
  - --one-replica: tp 8 on a Trn2 instance takes the time of its 16 replicas, to the nanosecond, on
    one chip; tp 16 runs on 2 chips and tp 8 at LNC=2 on 2 chips (the groups no group kind of the
    whole instance spans);
  - LNC=2 (tp 4 on a chip): the layer, the LM head and the embedding take the same time with data
    and without, and the estimate adds up, in decode and in prefill;
  - --sample 3 (prefill's passes run alone, the rest interpolated) is within 2% of the whole run;
  - bad input gets a message naming the option and exit status 1 (a KV cache larger than HBM
    among them, before anything is allocated).
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DRIVER = os.path.join(ROOT, "scripts", "llm-layer")
SMALL = ["--hidden", "512", "--heads", "16", "--kv-heads", "4", "--head-dim", "64", "--intermediate", "1024",
         "--layers", "3", "--vocab", "1000", "--context", "256", "--batch", "2", "--system", "chip", "--tp", "8"]
failures = []


def report(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def driver(*args):
    return subprocess.run([sys.executable, DRIVER, *args], capture_output=True, text=True)


def both_fidelities(what, *args):
    """The driver's JSON report timing-only and with data ({"timing": ..., "data": ...}, those that ran)."""
    runs = {}
    for fidelity in ("timing", "data"):
        p = driver(*args, "--fidelity", fidelity, "--json")
        report(p.returncode == 0, f"llm-layer {what}--fidelity {fidelity} runs (exit {p.returncode}) "
                                  f"{p.stderr.strip()[-300:]}")
        if p.returncode == 0:
            runs[fidelity] = json.loads(p.stdout)
    return runs


runs = both_fidelities("", *SMALL)
if len(runs) == 2:
    t, d = runs["timing"], runs["data"]
    report(t["layer_us"] == d["layer_us"] and t["split_us"] == d["split_us"],
           f"timing-only and with-data layers take the same time: {t['layer_us']} and {d['layer_us']} us")
    report(abs(t["model_ms"] - (3 * t["layer_us"] + t["lm_head_us"] + t["embedding_us"]) / 1e3) < 1e-12 and
           t["lm_head_us"] > 0 and t["embedding_us"] > 0 and t["vocab_per_rank"] == 128 and
           t["lm_head_us"] == d["lm_head_us"] and t["embedding_us"] == d["embedding_us"],
           f"the model's estimate is 3 layers, the LM head ({t['lm_head_us']:.2f} us, 128 of the vocabulary a "
           f"rank) and the embedding ({t['embedding_us']:.2f} us), the same with data: {t['model_ms']} ms")
    report(all(0 <= us <= t["layer_us"] for us in t["split_us"].values()) and t["split_us"]["pe"] > 0 and
           t["split_us"]["hbm_dma"] > 0 and t["split_us"]["collectives"] > 0 and
           t["split_us"]["instruction_fetch"] > 0,
           f"every part of the split within the layer, and compute, HBM, collectives and fetch stalls (system "
           f"runs' fetch_stall_cycles) seen: {t['split_us']}")
    report(t["hbm_bound_us"] < t["layer_us"] and all(s["utilization"] > 0 for s in t["hbm_stacks"]),
           f"the layer is above its HBM bound ({t['hbm_bound_us']:.2f} us) and every stack was used")

p = driver(*SMALL, "--weights", "fp8", "--json")
report(p.returncode == 0, f"llm-layer --weights fp8 runs (exit {p.returncode}) {p.stderr.strip()[-300:]}")
if p.returncode == 0 and "timing" in runs:
    f8, b16 = json.loads(p.stdout), runs["timing"]
    report(f8["weights"] == "fp8" and f8["hbm_bound_us"] < b16["hbm_bound_us"] and
           f8["split_us"]["hbm_dma"] < b16["split_us"]["hbm_dma"],
           f"FP8 weights: a lower HBM bound ({f8['hbm_bound_us']:.2f} against {b16['hbm_bound_us']:.2f} us) and less "
           f"DMA time ({f8['split_us']['hbm_dma']:.2f} against {b16['split_us']['hbm_dma']:.2f} us)")

p = driver(*SMALL, "--k-tiled", "--layer-only", "--json")
report(p.returncode == 0, f"llm-layer --k-tiled runs (exit {p.returncode}) {p.stderr.strip()[-300:]}")
if p.returncode == 0 and "timing" in runs:
    kt, rows = json.loads(p.stdout), runs["timing"]
    report(kt["k_tiled"] and not rows["k_tiled"] and kt["model_ms"] is None and kt["layer_us"] > 0 and
           kt["split_us"]["hbm_dma"] != rows["split_us"]["hbm_dma"],
           f"K-tiled weights: another DMA time ({kt['split_us']['hbm_dma']:.2f} against "
           f"{rows['split_us']['hbm_dma']:.2f} us), the layer alone ({kt['layer_us']:.2f} us)")

# Prefill: a prompt of 160 tokens (a block of 128 and a part block), timing-only against with data.
PREFILL = SMALL[:SMALL.index("--context")] + ["--context", "160", "--batch", "1", "--system", "chip", "--tp", "8",
                                              "--phase", "prefill"]
prefill = both_fidelities("--phase prefill ", *PREFILL)
if len(prefill) == 2:
    t, d = prefill["timing"], prefill["data"]
    report(t["phase"] == "prefill" and t["layer_us"] == d["layer_us"] and t["split_us"] == d["split_us"] and
           abs(t["model_ms"] - (3 * t["layer_us"] + t["lm_head_us"] + t["embedding_us"]) / 1e3) < 1e-12,
           f"prefill: timing-only and with-data layers take the same time ({t['layer_us']} and {d['layer_us']} us), "
           f"and the TTFT estimate is 3 layers, the LM head and the embedding: {t['model_ms']} ms")
    report(0 < t["compute_bound_us"] < t["layer_us"] and 0 < t["hbm_bound_us"] < t["layer_us"] and
           "timing" in runs and t["compute_bound_us"] > runs["timing"]["compute_bound_us"],
           f"prefill is above its compute ({t['compute_bound_us']:.2f} us) and HBM ({t['hbm_bound_us']:.2f} us) "
           f"bounds, and has more arithmetic than a decode step of 2 tokens")

p = driver(*SMALL, "--steady", "--json")
report(p.returncode == 0, f"llm-layer --steady runs (exit {p.returncode}) {p.stderr.strip()[-300:]}")
if p.returncode == 0 and "timing" in runs:
    st, one = json.loads(p.stdout), runs["timing"]
    report(st["layer_us"] == one["layer_us"] and 0 < st["steady_layer_us"] <= 2 * st["layer_us"] and
           abs(st["model_ms"] - (st["layer_us"] + 2 * st["steady_layer_us"] + st["lm_head_us"] + st["embedding_us"])
               / 1e3) < 1e-12 and one["steady_layer_us"] is None,
           f"--steady: the layer alone as without it ({st['layer_us']:.2f} us), a second layer in a row "
           f"{st['steady_layer_us']:.2f} us, and the estimate the first layer, 2 in steady state, the LM head and the "
           f"embedding: {st['model_ms']} ms")

# LNC=2: tp 4 on a chip (a rank a pair of cores), with the model's estimate; timing-only and with data agree.
lnc2 = both_fidelities("--lnc 2 ", *SMALL[:-1], "4", "--lnc", "2")
if len(lnc2) == 2:
    t, d = lnc2["timing"], lnc2["data"]
    report(t["lnc"] == 2 and t["tp"] == 4 and t["replicas"] == 1 and t["layer_us"] == d["layer_us"] > 0 and
           t["vocab_per_rank"] == 256 and t["lm_head_us"] == d["lm_head_us"] > 0 and
           t["embedding_us"] == d["embedding_us"] > 0 and
           abs(t["model_ms"] - (3 * t["layer_us"] + t["lm_head_us"] + t["embedding_us"]) / 1e3) < 1e-12,
           f"--lnc 2: one group of 4 ranks (pairs), the same layer, LM head and embedding with data and without "
           f"({t['layer_us']:.2f} and {d['layer_us']:.2f} us), and the estimate 3 layers, the LM head and the "
           f"embedding: {t['model_ms']} ms")

# Prefill at LNC=2 (tp 4 on a chip, the pass of 160 tokens split over each pair): timing-only equals with data.
prefill2 = both_fidelities("--phase prefill --lnc 2 ", *PREFILL[:-4], "--tp", "4", "--phase", "prefill", "--lnc", "2")
if len(prefill2) == 2:
    t, d = prefill2["timing"], prefill2["data"]
    report(t["lnc"] == 2 and t["chunk"] == 512 and t["layer_us"] == d["layer_us"] > 0 and
           t["embedding_us"] == d["embedding_us"] and
           abs(t["model_ms"] - (3 * t["layer_us"] + t["lm_head_us"] + t["embedding_us"]) / 1e3) < 1e-12,
           f"prefill at LNC=2: a pass of 512 tokens (the prompt of 160 in blocks of 128 and 32), the same layer "
           f"with data and without ({t['layer_us']:.2f} and {d['layer_us']:.2f} us), and the TTFT estimate 3 "
           f"layers, the LM head and the embedding: {t['model_ms']} ms")

# Sampled prefill: 656 tokens in passes of 128 (five whole and one of 16), three of the whole passes
# sampled (and the second, and the partial last): the estimate within 2% of the whole run.
SAMPLED = PREFILL + ["--context", "656", "--chunk", "128", "--layer-only", "--json"]
whole, sampled = driver(*SAMPLED), driver(*SAMPLED, "--sample", "3")
report(whole.returncode == 0 and sampled.returncode == 0,
       f"llm-layer --sample 3 and its whole run (exit {whole.returncode}, {sampled.returncode}) "
       f"{(whole.stderr + sampled.stderr).strip()[-300:]}")
if whole.returncode == 0 and sampled.returncode == 0:
    w, e = json.loads(whole.stdout), json.loads(sampled.stdout)
    passes = [p["pass"] for p in e["sampled_passes"]]
    report(passes == [0, 1, 2, 4, 5] and abs(e["layer_us"] / w["layer_us"] - 1) < 0.02 and e["cold_start_us"] > 0 and
           w["sampled_passes"] is None,
           f"--sample 3: passes {passes} run alone (a cold start of {e['cold_start_us']:.2f} us), the layer "
           f"{e['layer_us']:.2f} us against {w['layer_us']:.2f} us run whole")

# One replica: the replicas share no chip, so one alone takes their time; other TP degrees of whole chips run.
ONE = SMALL[:SMALL.index("--system")] + ["--layer-only", "--json"]
replica = {}
for name, extra in (("all", ["--system", "trn2", "--tp", "8"]),
                    ("one", ["--system", "trn2", "--tp", "8", "--one-replica"]),
                    ("tp16", ["--system", "trn2", "--tp", "16", "--one-replica"]),
                    ("lnc2", ["--system", "trn2", "--tp", "8", "--lnc", "2", "--one-replica"])):
    p = driver(*ONE, *extra)
    report(p.returncode == 0, f"llm-layer {' '.join(extra)} runs (exit {p.returncode}) {p.stderr.strip()[-300:]}")
    if p.returncode == 0:
        replica[name] = json.loads(p.stdout)
if len(replica) == 4:
    a, o, t16, l2 = replica["all"], replica["one"], replica["tp16"], replica["lnc2"]
    report(a["replicas"] == 16 and a["torus"] == [4, 4, 1] and o["replicas"] == 1 and o["torus"] == [1, 1, 1] and
           a["layer_us"] == o["layer_us"] and a["split_us"] == o["split_us"],
           f"--one-replica: tp 8 on one chip takes the 16 replicas' time ({o['layer_us']} and {a['layer_us']} us)")
    report(t16["torus"] == [2, 1, 1] and t16["replicas"] == 1 and t16["split_us"]["collectives"] > 0 and
           l2["torus"] == [2, 1, 1] and l2["lnc"] == 2 and l2["layer_us"] > 0,
           f"--one-replica: tp 16 and tp 8 at LNC=2 each on 2 x 1 x 1 chips ({t16['layer_us']:.2f} and "
           f"{l2['layer_us']:.2f} us)")

BAD = [(PREFILL + ["--steady"], "steady in prefill"),
       (["--model", "llama-3.1-8b", "--phase", "prefill", "--batch", "2"], "batch 2 in prefill: expected 1"),
       (["--model", "llama-3.1-8b", "--chunk", "256"], "chunk 256 in decode"),
       (PREFILL + ["--chunk", "100"], "chunk 100: expected a multiple of 128 tokens"),
       (["--model", "llama-3.1-8b", "--tp", "3"], "tp 3 on chip"),
       (["--model", "llama-3.1-8b", "--context", "100"], "context 100"),
       (["--model", "llama-3.1-8b", "--context", "4000000", "--batch", "64"],
        "122.12 GiB: larger than its share of HBM, 12 GiB"),
       (["--model", "llama-3.1-8b", "--context", "100000", "--batch", "16"],
        "of HBM a rank's tensors get in ncore.nki"),
       (PREFILL + ["--sample", "1"], "sample 1 in prefill at fidelity timing: expected at least 2"),
       (SMALL + ["--sample", "3"], "sample 3 in decode"),
       (PREFILL + ["--sample", "3", "--fidelity", "data"], "sample 3 in prefill at fidelity data"),
       (PREFILL + ["--sample", "3", "--trace", "/tmp/unwritten.json"], "with sample (--sample 3): a sampled layer"),
       (PREFILL + ["--no-cold-start"], "cold_start False (--no-cold-start) without sample (--sample N)"),
       (["--hidden", "512"], "give --model, or all of"),
       (["--model", "llama-3.1-8b", "--weights", "fp4"], "invalid choice: 'fp4'"),
       (SMALL[:1] + ["500"] + SMALL[2:], "hidden 500: expected a multiple of 32"),
       (SMALL[:1] + ["544"] + SMALL[2:], "hidden 544: expected a multiple of 128"),
       (SMALL[:7] + ["63"] + SMALL[8:], "head_dim 63"),
       (SMALL[:11] + ["-2"] + SMALL[12:], "layers -2"),
       (SMALL + ["--config", "/nonexistent/timing.json"], "--timing /nonexistent/timing.json: expected a preset"),
       (["--model", "llama-3.1-8b", "--tp", "16", "--system", "chip"], "tp 16 on chip"),
       (["--model", "llama-3.1-8b", "--tp", "32", "--system", "trn2"], "or one replica (--one-replica)"),
       (["--model", "llama-3.1-8b", "--tp", "12", "--system", "trn2", "--one-replica"],
        "tp 12 at LNC=1 with one replica on trn2: expected whole chips"),
       (["--model", "llama-3.1-8b", "--tp", "24", "--system", "trn2", "--one-replica"],
        "3 chips do not tile the trn2's 4 x 4 x 1 torus")]
for args, needle in BAD:
    p = driver(*args)
    report(p.returncode == 1 and needle in p.stderr, f"llm-layer {' '.join(args)}: exit {p.returncode}, says "
                                                    f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else '-'!r}")
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
