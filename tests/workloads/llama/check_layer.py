#!/usr/bin/python3
"""CTest Llama.*: the decoder layer of layer.py, tensor-parallel over the cores of a chip (8 ranks)
or of each chip of a Trn2 instance (16 groups of 8 ranks, each group its own tokens and cache),
against the float64 reference of reference.py. Every rank's y, k_new and v_new must be within
the tolerance reference.py derives from where the kernel rounds to BF16, element by
element. Inputs are random from a fixed seed (printed;
--seed changes it).

  check_layer.py [--system chip|trn2] [--rtl] [--seed N] [--batch B] [--context T]
  check_layer.py --phase prefill [--system chip|trn2] [--rtl] [--context S]   the layer over a
                                                         prompt of S tokens, causal
  check_layer.py --pieces [--engine cosim] [--size 8]   each piece of the layer alone on one
                                                         core (co-simulated: the RTL bit-exact
                                                         with the golden core), same tolerance
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
import layer  # noqa: E402
from layer import decoder_layer_decode, decoder_layer_prefill, decoder_layers_decode  # noqa: E402

CORES = 8
SIZE = 128  # a system core's partitions


def rounded(values, dtype):
    """Values rounded to dtype (BF16 or FP8, nearest even), as the kernel's input and as float64."""
    f32 = np.asarray(values, np.float32)
    back = ncore_nki.dtypes.from_storage(ncore_nki.dtypes.to_storage(f32, dtype), dtype).astype(np.float64)
    return ncore_nki.typed(f32, dtype), back


def bf16(values):
    return rounded(values, nl.bfloat16)


WEIGHTS = {"bf16": nl.bfloat16, "fp8": nl.float8_e4m3}


def make_model(rng, cfg, weights="bf16"):
    """Random weights scaled by 1/sqrt(fan-in), so every state stays about 1 in size, in BF16 or
    FP8 (E4M3: the model is the rounded values; the gains stay BF16)."""
    h, d, i = cfg.hidden, cfg.head_dim, cfg.intermediate
    w = lambda k, n: rounded(rng.standard_normal((k, n)) / np.sqrt(k), WEIGHTS[weights])  # noqa: E731
    gain = lambda: bf16(1.0 + 0.1 * rng.standard_normal((1, h)))  # noqa: E731
    return {"g_attn": gain(), "w_q": w(h, cfg.heads * d), "w_k": w(h, cfg.kv_heads * d),
            "w_v": w(h, cfg.kv_heads * d), "w_o": w(cfg.heads * d, h), "g_mlp": gain(),
            "w_gate": w(h, i), "w_up": w(h, i), "w_down": w(i, h), "dtype": WEIGHTS[weights]}


def rotary(cfg, positions):
    """cos, sin [len(positions), d] (FP32) at the positions: Llama's theta 500000, halves repeated."""
    d = cfg.head_dim
    angles = np.outer(np.asarray(positions, np.float64), 500000.0 ** (-np.arange(0, d, 2) / d))
    return (np.concatenate([np.cos(angles)] * 2, 1).astype(np.float32),
            np.concatenate([np.sin(angles)] * 2, 1).astype(np.float32))


def make_step(rng, cfg, rows, past):
    """Tokens, their rotary tables at positions past and the KV cache."""
    d = cfg.head_dim
    cos, sin = rotary(cfg, np.full(rows, past))
    return {"x": bf16(rng.standard_normal((rows, cfg.hidden))), "cos": cos, "sin": sin,
            "k_cache": bf16(rng.standard_normal((rows, cfg.kv_heads, d, past))),
            "v_cache": bf16(rng.standard_normal((rows, cfg.kv_heads, past, d)))}


def shard_args(cfg, tp, rank, model, step):
    """Rank `rank` (of tp)'s arguments, in decoder_layer_decode's order, as BF16 kernel inputs (the
    caches None when the step has none: a prefill)."""
    q_heads, inter = cfg.shard(tp)
    d = cfg.head_dim
    kv = rank * q_heads // (cfg.heads // cfg.kv_heads)
    qs = slice(rank * q_heads * d, (rank + 1) * q_heads * d)
    ks = slice(kv * d, (kv + 1) * d)
    ms = slice(rank * inter, (rank + 1) * inter)
    f32 = lambda a: a[1].astype(np.float32)  # noqa: E731 (a BF16 or FP8 value, exactly)
    w_qkv = np.concatenate([model["w_q"][1][:, qs], model["w_k"][1][:, ks], model["w_v"][1][:, ks]], 1)
    as_bf16 = lambda a: ncore_nki.typed(np.ascontiguousarray(a, np.float32), nl.bfloat16)  # noqa: E731
    as_w = lambda a: ncore_nki.typed(np.ascontiguousarray(a, np.float32), model["dtype"])  # noqa: E731
    tiled = lambda a: as_w(layer.tile_rows(a, SIZE))  # noqa: E731 (K-tiled, as Weights reads it)
    return [step["x"][0], model["g_attn"][0], tiled(w_qkv), step["cos"], step["sin"],
            *((as_bf16(f32(step[c])[:, kv]) if step[c] is not None else None) for c in ("k_cache", "v_cache")),
            as_w(f32(model["w_o"])[qs, :]), model["g_mlp"][0], tiled(f32(model["w_gate"])[:, ms]),
            tiled(f32(model["w_up"])[:, ms]), as_w(f32(model["w_down"])[ms, :])], kv


def compare(name, got, want):
    """got within reference.tolerance of want (a (value, variance) pair): prints a line and
    returns whether it is."""
    ref, bound = want[0], reference.tolerance(want)
    got = np.asarray(got, np.float64)
    err = np.abs(got - ref)
    worst = np.unravel_index(np.argmax(err / (bound + 1e-300)), err.shape)
    ok = bool(np.all(err <= bound))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max |err| {err.max():.3g}, worst at {tuple(int(i) for i in worst)}: "
          f"{float(got[worst]):.6g} against {ref[worst]:.6g} (bound {bound[worst]:.3g}, bound max {bound.max():.3g})")
    return ok


def pieces(rng, engine, size):
    """Each piece of the layer as a kernel of its own on one core, at shapes that take at least
    two tiles of every tiled dimension."""
    # (HBM rows are whole 32-byte bursts: q^T's rows hold rows x q_heads BF16 values, a cache row
    # `past` of them. At size 128 the new position shares its block of 128 with cached ones.)
    rows, h, d, q_heads, past, inter = (8, 16, 16, 2, 16, 16) if size == 8 else (8, 256, 32, 2, 144, 320)
    E = reference.exact
    run = lambda kernel, *a: ncore_nki.simulate_kernel(kernel, *a, engine=engine, size=size)  # noqa: E731
    ok = True

    x, xv = bf16(rng.standard_normal((rows, h)))
    g, gv = bf16(1.0 + 0.1 * rng.standard_normal((1, h)))
    ok &= compare("rmsnorm_kernel y", run(layer.rmsnorm_kernel, x, g), reference.to_bf16(reference.rmsnorm(E(xv), E(gv), 1e-5)))

    cos = np.cos(rng.uniform(0, 6.3, (rows, d // 2))).astype(np.float32)
    sin = np.sqrt(1 - cos.astype(np.float64) ** 2).astype(np.float32)
    cos, sin = np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)
    w_qkv, wv = bf16(rng.standard_normal((h, (q_heads + 2) * d)) / np.sqrt(h))
    # q^T's layout (layer.qkv_rope): [dp, q_heads * dt, B], head h's values t * dp + p at
    # partition p of tile h * dt + t; to_heads gives [q_heads, B, d], from_heads the inverse.
    dp, dt = min(d, size), d // min(d, size)
    to_heads = lambda a: np.asarray(a, np.float64).reshape(dp, q_heads, dt, rows).transpose(1, 3, 2, 0).reshape(  # noqa: E731
        q_heads, rows, d)
    from_heads = lambda a: a.reshape(q_heads, rows, dt, dp).transpose(3, 0, 2, 1).reshape(dp, q_heads * dt, rows)  # noqa: E731
    q_t, k_new, v_new = run(layer.qkv_rope_kernel, x, w_qkv, cos, sin)
    q_t = to_heads(q_t)
    qkv = reference.matmul(E(xv), E(wv))
    part = lambda a, i: (a[0][:, i * d:(i + 1) * d], a[1][:, i * d:(i + 1) * d])  # noqa: E731
    c64, s64 = cos.astype(np.float64), sin.astype(np.float64)
    for head in range(q_heads):
        qr = reference.to_bf16(reference.rope(part(qkv, head), c64, s64))
        ok &= compare(f"qkv_rope_kernel q head {head}", q_t[head], qr)
    ok &= compare("qkv_rope_kernel k_new", k_new, reference.to_bf16(reference.rope(part(qkv, q_heads), c64, s64)))
    ok &= compare("qkv_rope_kernel v_new", v_new, reference.to_bf16(part(qkv, q_heads + 1)))

    _, qv = bf16(rng.standard_normal((q_heads, rows, d)))
    q_t = ncore_nki.typed(from_heads(qv).astype(np.float32), nl.bfloat16)
    kn, knv = bf16(rng.standard_normal((rows, d)))
    vn, vnv = bf16(rng.standard_normal((rows, d)))
    kc, kcv = bf16(rng.standard_normal((rows, d, past)))
    vc, vcv = bf16(rng.standard_normal((rows, past, d)))
    w_o, wov = bf16(rng.standard_normal((q_heads * d, h)) / np.sqrt(q_heads * d))
    o_v, o_var = np.zeros((rows, q_heads * d)), np.zeros((rows, q_heads * d))
    for b in range(rows):
        keys = E(np.concatenate([kcv[b], knv[b][:, None]], 1))
        values = E(np.concatenate([vcv[b], vnv[b][None, :]], 0))
        for head in range(q_heads):
            o = reference.to_bf16(reference.attention(E(qv[head, b][None, :]), keys, values, d))
            o_v[b, head * d:(head + 1) * d], o_var[b, head * d:(head + 1) * d] = o[0][0], o[1][0]
    ok &= compare("attention_kernel partial", run(layer.attention_kernel, q_t, kn, vn, kc, vc, w_o),
                  reference.matmul((o_v, o_var), E(wov)))

    # Prefill's causal attention over a prompt of s positions (whole 32-byte rows of k^T; at size
    # 128 the last query block is partly filled).
    s = 40 if size == 8 else 208
    _, qv = bf16(rng.standard_normal((q_heads, s, d)))
    _, kv_ = bf16(rng.standard_normal((s, d)))
    vp, vpv = bf16(rng.standard_normal((s, d)))
    q_pt = ncore_nki.typed(np.ascontiguousarray(
        qv.reshape(q_heads, s, dt, dp).transpose(3, 0, 2, 1).reshape(dp, q_heads * dt, s), np.float32), nl.bfloat16)
    k_pt = ncore_nki.typed(np.ascontiguousarray(kv_.reshape(s, dt, dp).transpose(2, 1, 0), np.float32), nl.bfloat16)
    o_v, o_var = np.zeros((s, q_heads * d)), np.zeros((s, q_heads * d))
    for head in range(q_heads):
        o = reference.to_bf16(reference.causal_attention(E(qv[head]), E(kv_.T), E(vpv), d))
        o_v[:, head * d:(head + 1) * d], o_var[:, head * d:(head + 1) * d] = o
    ok &= compare(f"prefill_attention_kernel partial, {s} positions",
                  run(layer.prefill_attention_kernel, q_pt, k_pt, vp, w_o), reference.matmul((o_v, o_var), E(wov)))

    for name, dtype in WEIGHTS.items():  # the tensor engine takes BF16 rows against FP8 weights too
        # (FP8 rows of 16 bytes are not whole bursts: at size 8 the FP8 case is 32 wide.)
        hw, iw = (32, 32) if dtype.size * min(h, inter) < 32 else (h, inter)
        xw, xwv = (x, xv) if hw == h else bf16(rng.standard_normal((rows, hw)))
        w_gate, wgv = rounded(rng.standard_normal((hw, iw)) / np.sqrt(hw), dtype)
        w_up, wuv = rounded(rng.standard_normal((hw, iw)) / np.sqrt(hw), dtype)
        w_down, wdv = rounded(rng.standard_normal((iw, hw)) / np.sqrt(iw), dtype)
        gate, up = reference.matmul(E(xwv), E(wgv)), reference.matmul(E(xwv), E(wuv))
        product = reference.to_bf16(reference.mul(reference.mul(gate, reference.sigmoid(gate)), up))
        ok &= compare(f"swiglu_kernel partial, {name} weights", run(layer.swiglu_kernel, xw, w_gate, w_up, w_down),
                      reference.matmul(product, E(wdv)))
        if name == "bf16":  # the gate and up weights K-tiled (Weights), the same products
            k_tiled = lambda v: ncore_nki.typed(layer.tile_rows(v, min(hw, size)).astype(np.float32), dtype)  # noqa: E731
            ok &= compare("swiglu_kernel partial, K-tiled bf16 weights",
                          run(layer.swiglu_kernel, xw, k_tiled(wgv), k_tiled(wuv), w_down),
                          reference.matmul(product, E(wdv)))
    table, table_v = bf16(rng.standard_normal((2 * rows, h)))
    for tokens in (rows, size + size // 2):  # a step's tokens; a prompt of more tokens than partitions
        ids = tuple(-1 if b % 3 == 1 else int(i) for b, i in enumerate(rng.integers(0, 2 * rows, tokens)))  # -1: another rank's
        want = np.stack([table_v[i] if i >= 0 else np.zeros(h) for i in ids])
        got = np.asarray(run(layer.embedding_kernel, table, ids), np.float64)
        same = got.shape == want.shape and np.array_equal(got, want)
        print(f"{'ok  ' if same else 'FAIL'} embedding_kernel, {tokens} tokens {ids}: the table's rows (zero for -1), "
              "bit for bit")
        ok &= same
    vocab = 64 if size == 8 else 1008  # a rank's slice of the vocabulary (whole 32-byte rows)
    w_lm, wlv = bf16(rng.standard_normal((h, vocab)) / np.sqrt(h))
    normed = reference.to_bf16(reference.rmsnorm(E(xv), E(gv), 1e-5))
    ok &= compare("lm_head_kernel logits", run(layer.lm_head_kernel, x, g, w_lm), reference.matmul(normed, E(wlv)))
    ok &= refusals(rng, run, size)
    return 0 if ok else 1


def refusals(rng, run, size):
    """Bad inputs to the layer's helpers: each a ValueError naming what it expected."""
    table, _ = bf16(rng.standard_normal((4, 16 * (size // 8))))
    w, _ = bf16(rng.standard_normal((2 * size, 16)))
    x, _ = bf16(rng.standard_normal((2, 2 * size)))
    cases = [("embedding row past the table", lambda: run(layer.embedding_kernel, table, (0, 4)),
              "row 4 of a table of 4 rows (expected -1 .. 3)"),
             ("tile_rows of rows off the partitions", lambda: layer.tile_rows(np.zeros((size + 1, 4)), size),
              f"weights of {size + 1} rows: expected a multiple of {size}"),
             ("K-tiled weights of another partition count",
              lambda: run(layer.swiglu_kernel, x, ncore_nki.typed(np.zeros((size // 2, 4, 16), np.float32), nl.bfloat16),
                          w, w),
              f"expected {size} partitions first")]
    ok = True
    for name, call, needle in cases:
        try:
            call()
            print(f"FAIL {name}: no error")
            ok = False
        except (ValueError, ncore_nki.KernelError) as e:
            good = needle in str(e)
            print(f"{'ok  ' if good else 'FAIL'} {name}: {e}")
            ok &= good
    return ok


def check_embedding(rng, cfg, tp, groups, batch, group, system, lnc=1):
    """embedding_kernel, vocabulary-parallel over each group (tp rows of the vocabulary a rank):
    every rank's x must be its group's tokens' rows of the table, bit for bit."""
    per = 4  # rows a rank holds
    table, table_v = bf16(rng.standard_normal((tp * per, cfg.hidden)))
    shards = [ncore_nki.typed(table_v[k * per:(k + 1) * per].astype(np.float32), nl.bfloat16) for k in range(tp)]
    ids = [rng.integers(0, tp * per, batch) for _ in range(groups)]
    rows = [tuple(int(i) - (r % tp) * per if (r % tp) * per <= i < (r % tp + 1) * per else -1 for i in ids[r // tp])
            for r in range(groups * tp)]
    xs = ncore_nki.simulate_kernel(layer.embedding_kernel, ncore_nki.per_rank([shards[r % tp] for r in range(groups * tp)]),
                                   ncore_nki.per_rank(rows), group, system=system, lnc=lnc)
    same = len(xs) == groups * tp and all(np.array_equal(np.asarray(x, np.float64), table_v[ids[r // tp]])
                                          for r, x in enumerate(xs))
    print(f"{'ok  ' if same else 'FAIL'} embedding_kernel on {groups * tp} ranks (LNC={lnc}): each rank's x the "
          "table's rows of its group's tokens, bit for bit")
    return same


def check_lm_head(rng, cfg, tp, groups, batch, system, lnc):
    """lm_head_kernel on every rank, each its slice of 48 columns of the vocabulary (at LNC=2 three
    groups of 16: program 0 two, program 1 one): every rank's logits against float64."""
    vocab = 48
    g, gv = bf16(1 + 0.1 * rng.standard_normal((1, cfg.hidden)))
    xs = [bf16(rng.standard_normal((batch, cfg.hidden))) for _ in range(groups)]
    ws = [bf16(rng.standard_normal((cfg.hidden, vocab)) / np.sqrt(cfg.hidden)) for _ in range(tp)]
    ranks = range(groups * tp)
    logits = ncore_nki.simulate_kernel(layer.lm_head_kernel, ncore_nki.per_rank([xs[r // tp][0] for r in ranks]), g,
                                       ncore_nki.per_rank([ws[r % tp][0] for r in ranks]), system=system, lnc=lnc)
    E = reference.exact
    ok = len(logits) == groups * tp
    for r, got in enumerate(logits):
        normed = reference.to_bf16(reference.rmsnorm(E(xs[r // tp][1]), E(gv), 1e-5))
        ok &= compare(f"rank {r} lm_head_kernel logits (LNC={lnc})", got, reference.matmul(normed, E(ws[r % tp][1])))
    return ok


def same_outputs(a, b, ranks):
    """Whether two runs gave every one of `ranks` ranks the same three outputs, bit for bit (a run
    that returned fewer compares nothing and fails)."""
    return (len(a) == len(b) == ranks and all(len(x) == len(y) == 3 for x, y in zip(a, b))
            and all(np.array_equal(np.asarray(u, np.float64), np.asarray(v, np.float64))
                    for x, y in zip(a, b) for u, v in zip(x, y)))


def check_prefill(rng, cfg, tp, groups, group, system, weights, prompt, rtl, chunk=None, lnc=1):
    """decoder_layer_prefill over a prompt of `prompt` tokens (each group its own), `chunk` tokens
    a pass (at LNC=2 split between the pair's programs): every rank's y, k_cache and v_cache
    against reference.prefill_layer."""
    model = make_model(rng, cfg, weights)
    cos, sin = rotary(cfg, np.arange(prompt))
    xs = [bf16(rng.standard_normal((prompt, cfg.hidden))) for _ in range(groups)]
    per_rank = []
    for r in range(groups * tp):
        args, kv = shard_args(cfg, tp, r % tp, model, {"x": xs[r // tp], "cos": cos, "sin": sin, "k_cache": None,
                                                        "v_cache": None})
        per_rank.append((args[:5] + args[7:], kv))
    columns = [ncore_nki.per_rank([a[0][k] for a in per_rank]) for k in range(len(per_rank[0][0]))]
    outs = ncore_nki.simulate_kernel(decoder_layer_prefill, *columns, group, system=system, chunk=chunk, lnc=lnc)
    failures = 0
    if rtl:
        again = ncore_nki.simulate_kernel(decoder_layer_prefill, *columns, group, system=system, engine="rtl",
                                          chunk=chunk, lnc=lnc)
        same = same_outputs(outs, again, groups * tp)
        print(f"{'ok  ' if same else 'FAIL'} on RTL cores: every rank's y, k_cache and v_cache the golden cores', "
              "bit for bit")
        failures += not same
    for g in range(groups):
        y, k, v = reference.prefill_layer(cfg, xs[g][1], model["g_attn"][1], model["w_q"][1], model["w_k"][1],
                                          model["w_v"][1], cos.astype(np.float64), sin.astype(np.float64),
                                          model["w_o"][1], model["g_mlp"][1], model["w_gate"][1], model["w_up"][1],
                                          model["w_down"][1])
        for r in range(g * tp, (g + 1) * tp):
            kv = per_rank[r][1]
            for name, got, want in (("y", outs[r][0], y), ("k_cache", outs[r][1], (k[0][:, kv].T, k[1][:, kv].T)),
                                    ("v_cache", outs[r][2], (v[0][:, kv], v[1][:, kv]))):
                failures += not compare(f"rank {r} {name}", got, want)
    passes = -(-prompt // (chunk or 128))
    try:  # passes= beyond the prompt's (llm_layer's sampled prefill gives only passes within it)
        ncore_nki.simulate_kernel(decoder_layer_prefill, *columns, group, system=system, chunk=chunk, lnc=lnc,
                                  passes=(passes, 1))
        print(f"FAIL passes=({passes}, 1) of a prompt of {passes} passes: accepted")
        failures += 1
    except (ValueError, ncore_nki.KernelError) as e:
        good = f"passes ({passes}, 1): expected (first, count) within the prompt's {passes} passes" in str(e)
        print(f"{'ok  ' if good else 'FAIL'} passes=({passes}, 1) refused: {e}")
        failures += not good
    print(f"{groups * tp} ranks (LNC={lnc}), prefill of {prompt} tokens{f', {chunk} a pass' if chunk else ''}: "
          f"{'all within the bound' if not failures else f'{failures} outputs outside it'}")
    return 1 if failures else 0


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--system", choices=["chip", "trn2"], default="chip")
    ap.add_argument("--seed", type=int, default=51)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--context", type=int, default=127, help="earlier positions in the KV cache")
    ap.add_argument("--weights", choices=sorted(WEIGHTS), default="bf16", help="the weights' type")
    ap.add_argument("--rtl", action="store_true",
                    help="also run the layer on RTL cores (the Verilated nc_core, size 128): every rank's outputs "
                         "must be the golden cores' bit for bit")
    ap.add_argument("--phase", choices=["decode", "prefill"], default="decode",
                    help="prefill: the layer over a prompt of --context tokens, causal (decoder_layer_prefill)")
    ap.add_argument("--chunk", type=int, default=None,
                    help="prefill: tokens a pass through the projections (a multiple of 128 up to 512; 128 by default)")
    ap.add_argument("--pieces", action="store_true", help="each piece of the layer alone on one core")
    ap.add_argument("--two-layers", action="store_true",
                    help="decode: also two layers in one kernel (decoder_layers_decode, llm-layer's --steady) against "
                         "the layer run again on the first's y, bit for bit")
    ap.add_argument("--one-head", action="store_true", help="half the heads: a rank of one query head")
    ap.add_argument("--lnc", type=int, choices=[1, 2], default=1,
                    help="2 runs a rank on a pair of cores (tp = the chip's pairs), the layer split over them")
    ap.add_argument("--engine", choices=["golden", "cosim"], default="cosim", help="--pieces: the core")
    ap.add_argument("--size", type=int, choices=[8, 128], default=8, help="--pieces: the core's size")
    args = ap.parse_args()
    if not 1 <= args.batch <= 128 or args.context < 1:
        ap.error(f"--batch {args.batch}, --context {args.context}: expected a batch of 1 to 128 (a token a "
                 "partition) and a context of at least 1")
    if args.two_layers and (args.phase != "decode" or args.pieces):
        ap.error(f"--two-layers with {'--pieces' if args.pieces else f'--phase {args.phase}'}: expected the "
                 "decode layer (two layers in a row are built for decode only)")
    if args.chunk is not None and (args.phase != "prefill" or args.chunk % 128 or not 128 <= args.chunk <= 512):
        ap.error(f"--chunk {args.chunk}: expected, with --phase prefill, a multiple of 128 tokens from 128 to 512")
    if args.pieces:
        print(f"seed {args.seed}: the layer's pieces on the {args.engine} core of size {args.size}")
        return pieces(np.random.default_rng(args.seed), args.engine, args.size)
    cfg = reference.Config(hidden=256, heads=8 // (2 if args.one_head else 1), kv_heads=2, head_dim=32,
                           intermediate=512)
    tp = CORES // args.lnc
    groups = 1 if args.system == "chip" else 16
    print(f"seed {args.seed}: hidden {cfg.hidden}, heads {cfg.heads} (KV {cfg.kv_heads}) of {cfg.head_dim}, "
          f"intermediate {cfg.intermediate}; "
          f"{f'batch {args.batch}, context {args.context}' if args.phase == 'decode' else f'a prompt of {args.context}'}; "
          f"{groups} group(s) of tp {tp} on {args.system}")
    rng = np.random.default_rng(args.seed)
    if args.phase == "prefill":
        if args.context % 16:
            ap.error(f"--context {args.context}: a prompt's k_cache rows are whole 32-byte bursts; expected a "
                     "multiple of 16 tokens")
        return check_prefill(rng, cfg, tp, groups, ncc.ReplicaGroup([list(range(g * tp, (g + 1) * tp))
                                                                  for g in range(groups)]),
                             args.system, args.weights, args.context, args.rtl, args.chunk, args.lnc)
    model = make_model(rng, cfg, args.weights)
    steps = [make_step(rng, cfg, args.batch, args.context) for _ in range(groups)]
    per_rank = [shard_args(cfg, tp, r % tp, model, steps[r // tp]) for r in range(groups * tp)]
    columns = [ncore_nki.per_rank([a[0][k] for a in per_rank]) for k in range(len(per_rank[0][0]))]
    group = ncc.ReplicaGroup([list(range(g * tp, (g + 1) * tp)) for g in range(groups)])
    outs = ncore_nki.simulate_kernel(decoder_layer_decode, *columns, group, system=args.system, lnc=args.lnc)
    failures = 0
    if args.rtl:
        rtl = ncore_nki.simulate_kernel(decoder_layer_decode, *columns, group, system=args.system, engine="rtl",
                                        lnc=args.lnc)
        same = same_outputs(outs, rtl, groups * tp)
        print(f"{'ok  ' if same else 'FAIL'} on RTL cores: every rank's y, k_new and v_new the golden cores', bit for bit")
        failures += not same
    if args.two_layers:
        # The second layer of the kernel reads the first's y from HBM: it must be the layer run
        # again on that y, every output bit for bit (each layer alone is checked against float64).
        two = ncore_nki.simulate_kernel(decoder_layers_decode, *columns, group, system=args.system, lnc=args.lnc)
        again = ncore_nki.simulate_kernel(decoder_layer_decode, ncore_nki.per_rank([np.asarray(o[0]) for o in outs]),
                                          *columns[1:], group, system=args.system, lnc=args.lnc)
        same = same_outputs(two, again, groups * tp)
        print(f"{'ok  ' if same else 'FAIL'} two layers in one kernel: every rank's y, k_new and v_new those of the "
              "layer run again on the first's y, bit for bit")
        failures += not same
    for g, step in enumerate(steps):
        ys, k_new, v_new = reference.decode_layer(
            cfg, step["x"][1], model["g_attn"][1], model["w_q"][1], model["w_k"][1], model["w_v"][1],
            step["cos"].astype(np.float64), step["sin"].astype(np.float64), step["k_cache"][1], step["v_cache"][1],
            model["w_o"][1], model["g_mlp"][1], model["w_gate"][1], model["w_up"][1], model["w_down"][1])
        for r in range(g * tp, (g + 1) * tp):
            kv = per_rank[r][1]
            for name, got, want in (("y", outs[r][0], ys), ("k_new", outs[r][1], (k_new[0][:, kv], k_new[1][:, kv])),
                                    ("v_new", outs[r][2], (v_new[0][:, kv], v_new[1][:, kv]))):
                failures += not compare(f"rank {r} {name}", got, want)
    failures += not check_embedding(rng, cfg, tp, groups, args.batch, group, args.system, args.lnc)
    if args.lnc == 2:
        failures += not check_lm_head(rng, cfg, tp, groups, args.batch, args.system, args.lnc)
    print(f"{groups * tp} ranks: {'all within the bound' if not failures else f'{failures} outputs outside it'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
