#!/usr/bin/python3
"""CTest Llama.*: the decoder layer of layer.py, tensor-parallel over the cores of a chip (8 ranks)
or of each chip of a Trn2 instance (16 groups of 8 ranks, each group its own tokens and cache),
against the float64 reference of reference.py. Every rank's y, k_new and v_new must be within
the tolerance reference.py derives from where the kernel rounds to BF16, element by
element. Inputs are random from a fixed seed (printed;
--seed changes it).

  check_layer.py [--system chip|trn2] [--seed N] [--batch B] [--context T]
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as ncore_nki  # noqa: E402
from ncore.tool import ArgumentParser  # noqa: E402

ncore_nki.alias_nki()
import nki.collectives as ncc  # noqa: E402
import nki.language as nl  # noqa: E402

import reference  # noqa: E402
from layer import decoder_layer_decode  # noqa: E402

CORES = 8


def bf16(rng_values):
    """Values rounded to BF16 (nearest even), as float64, and as the kernel's BF16 input."""
    typed = ncore_nki.typed(np.asarray(rng_values, np.float32), nl.bfloat16)
    back = ncore_nki.dtypes.from_storage(ncore_nki.dtypes.to_storage(np.asarray(rng_values, np.float32), nl.bfloat16),
                                         nl.bfloat16).astype(np.float64)
    return typed, back


def make_model(rng, cfg):
    """Random weights scaled by 1/sqrt(fan-in), so every state stays about 1 in size."""
    h, d, i = cfg.hidden, cfg.head_dim, cfg.intermediate
    w = lambda k, n: bf16(rng.standard_normal((k, n)) / np.sqrt(k))  # noqa: E731
    gain = lambda: bf16(1.0 + 0.1 * rng.standard_normal((1, h)))  # noqa: E731
    return {"g_attn": gain(), "w_q": w(h, cfg.heads * d), "w_k": w(h, cfg.kv_heads * d),
            "w_v": w(h, cfg.kv_heads * d), "w_o": w(cfg.heads * d, h), "g_mlp": gain(),
            "w_gate": w(h, i), "w_up": w(h, i), "w_down": w(i, h)}


def make_step(rng, cfg, rows, past):
    """Tokens, their rotary tables at positions past (Llama's theta 500000) and the KV cache."""
    d = cfg.head_dim
    inv = 500000.0 ** (-np.arange(0, d, 2) / d)
    angles = np.outer(np.full(rows, past, np.float64), inv)
    cos = np.concatenate([np.cos(angles)] * 2, 1).astype(np.float32)
    sin = np.concatenate([np.sin(angles)] * 2, 1).astype(np.float32)
    return {"x": bf16(rng.standard_normal((rows, cfg.hidden))), "cos": cos, "sin": sin,
            "k_cache": bf16(rng.standard_normal((rows, cfg.kv_heads, d, past))),
            "v_cache": bf16(rng.standard_normal((rows, cfg.kv_heads, past, d)))}


def shard_args(cfg, tp, rank, model, step):
    """Rank `rank` (of tp)'s arguments, in decoder_layer_decode's order, as BF16 kernel inputs."""
    q_heads, inter = cfg.shard(tp)
    d = cfg.head_dim
    kv = rank * q_heads // (cfg.heads // cfg.kv_heads)
    qs = slice(rank * q_heads * d, (rank + 1) * q_heads * d)
    ks = slice(kv * d, (kv + 1) * d)
    ms = slice(rank * inter, (rank + 1) * inter)
    f32 = lambda a: a[1].astype(np.float32)  # noqa: E731 (a BF16 value, exactly)
    w_qkv = np.concatenate([model["w_q"][1][:, qs], model["w_k"][1][:, ks], model["w_v"][1][:, ks]], 1)
    as_bf16 = lambda a: ncore_nki.typed(np.ascontiguousarray(a, np.float32), nl.bfloat16)  # noqa: E731
    return [step["x"][0], model["g_attn"][0], as_bf16(w_qkv), step["cos"], step["sin"],
            as_bf16(f32(step["k_cache"])[:, kv]), as_bf16(f32(step["v_cache"])[:, kv]),
            as_bf16(f32(model["w_o"])[qs, :]), model["g_mlp"][0], as_bf16(f32(model["w_gate"])[:, ms]),
            as_bf16(f32(model["w_up"])[:, ms]), as_bf16(f32(model["w_down"])[ms, :])], kv


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--system", choices=["chip", "trn2"], default="chip")
    ap.add_argument("--seed", type=int, default=51)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--context", type=int, default=127, help="earlier positions in the KV cache")
    args = ap.parse_args()
    cfg = reference.Config(hidden=256, heads=8, kv_heads=2, head_dim=32, intermediate=512)
    tp = CORES
    groups = 1 if args.system == "chip" else 16
    print(f"seed {args.seed}: hidden {cfg.hidden}, heads {cfg.heads} (KV {cfg.kv_heads}) of {cfg.head_dim}, "
          f"intermediate {cfg.intermediate}; batch {args.batch}, context {args.context}; "
          f"{groups} group(s) of tp {tp} on {args.system}")
    rng = np.random.default_rng(args.seed)
    model = make_model(rng, cfg)
    steps = [make_step(rng, cfg, args.batch, args.context) for _ in range(groups)]
    per_rank = [shard_args(cfg, tp, r % tp, model, steps[r // tp]) for r in range(groups * tp)]
    columns = [ncore_nki.per_rank([a[0][k] for a in per_rank]) for k in range(len(per_rank[0][0]))]
    group = ncc.ReplicaGroup([list(range(g * tp, (g + 1) * tp)) for g in range(groups)])
    outs = ncore_nki.simulate_kernel(decoder_layer_decode, *columns, group, system=args.system)
    failures = 0
    for g, step in enumerate(steps):
        ys, k_new, v_new = reference.decode_layer(
            cfg, step["x"][1], model["g_attn"][1], model["w_q"][1], model["w_k"][1], model["w_v"][1],
            step["cos"].astype(np.float64), step["sin"].astype(np.float64), step["k_cache"][1], step["v_cache"][1],
            model["w_o"][1], model["g_mlp"][1], model["w_gate"][1], model["w_up"][1], model["w_down"][1])
        for r in range(g * tp, (g + 1) * tp):
            kv = per_rank[r][1]
            for name, got, want in (("y", outs[r][0], ys), ("k_new", outs[r][1], (k_new[0][:, kv], k_new[1][:, kv])),
                                    ("v_new", outs[r][2], (v_new[0][:, kv], v_new[1][:, kv]))):
                ref, bound = want[0], reference.tolerance(want)
                err = np.abs(np.asarray(got, np.float64) - ref)
                worst = np.unravel_index(np.argmax(err / (bound + 1e-300)), err.shape)
                ok = bool(np.all(err <= bound))
                failures += not ok
                if not ok or r == 0:
                    print(f"{'ok  ' if ok else 'FAIL'} rank {r} {name}: max |err| {err.max():.3g}, "
                          f"worst at {tuple(int(i) for i in worst)}: {float(np.asarray(got, np.float64)[worst]):.6g} "
                          f"against {ref[worst]:.6g} (bound {bound[worst]:.3g}, bound max {bound.max():.3g})")
    print(f"{groups * tp} ranks: {'all within the bound' if not failures else f'{failures} outputs outside it'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
