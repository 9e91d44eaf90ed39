"""One Llama decoder layer on ncore's system, and what it costs (issue 51's driver; scripts/llm-layer
is its command line).

    import llm_layer
    r = llm_layer.run_layer(llm_layer.MODELS["llama-3.3-70b"], batch=1, context=10000, tp=8, system="trn2")
    r["layer_us"], r["split"], r["model_ms"]

What is modelled: the decode layer (a step of `batch` tokens over a KV cache of `context`
positions) or the prefill layer (a prompt of `context` tokens, causal) of layer.py on every core
of the system, one tensor-parallel rank per core, the ranks of a group summing their partials
with nki.collectives; its time is the slowest core's; weights in BF16 or FP8 (E4M3); and the
embedding (embedding_kernel) and the LM head (lm_head_kernel, on the last token in prefill) on
the same ranks, each rank holding its slice of the vocabulary; at LNC=2 a rank is a pair of
cores, the kernels launched on both. What is not: everything outside the cores
(host, runtime, launch, sampling).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ncore.nki as ncore_nki  # noqa: E402
from ncore.report import busy_us, union_us  # noqa: E402

ncore_nki.alias_nki()
import nki.collectives as ncc  # noqa: E402
import nki.language as nl  # noqa: E402

import reference  # noqa: E402
from layer import decoder_layer_decode, decoder_layer_prefill, decoder_layers_decode, embedding_kernel, lm_head_kernel, tile_rows  # noqa: E402

CHIP_CORES = 8
CHIPS = ncore_nki.simulate.SYSTEMS  # each system's chips
TORUS = ncore_nki.simulate.TORUS  # and its X x Y x Z
# A NeuronCore-v3's dense BF16 peak: 128 x 128 MACs a cycle of the tensor engine's 2.4 GHz clock,
# 78.6 TFLOPS (../shared/spec/hardware.md: AWS's "79 TFLOPS" BF16 a core). ncore's tensor engine
# takes FP8 weights at the BF16 rate (its FP8 double-row mode is not in ncore.nki), so the bound
# is the same for both.
CORE_PEAK_FLOPS = 128 * 128 * 2 * 2.4e9
# A Trainium2 chip's HBM: 96 GiB (../shared/spec/hardware.md), a core's share an eighth of it.
CHIP_HBM_BYTES = 96 << 30


class Model(reference.Config):
    def __init__(self, name, hidden, heads, kv_heads, head_dim, intermediate, layers, vocab=128256):
        super().__init__(hidden, heads, kv_heads, head_dim, intermediate)
        if layers < 1 or vocab < 1:
            raise ValueError(f"layers {layers}, vocab {vocab}: expected at least 1 of each")
        self.name, self.layers, self.vocab = name, layers, vocab


# The public configurations (each model's config.json on Hugging Face: hidden_size,
# num_attention_heads, num_key_value_heads, head_dim, intermediate_size, num_hidden_layers;
# vocab_size 128256 for all three).
MODELS = {m.name: m for m in (
    Model("llama-3.1-8b", 4096, 32, 8, 128, 14336, 32),
    Model("llama-3.3-70b", 8192, 64, 8, 128, 28672, 80),
    Model("llama-3.1-405b", 16384, 128, 8, 128, 53248, 126),
)}
QUEUES = ("pe", "act", "dve", "sp", "cc")  # tensor, scalar, vector engines; DMA; collectives


def group_torus(tp, system, lnc=1):
    """The chips one tensor-parallel group of tp ranks spans, as a part of the system's torus
    (x, y, z): filled along X, then Y, then Z, so a group of 2 chips is 2 x 1 x 1, of 4 a row of
    an instance's 4 x 4, of 8 two rows. A group must be whole chips."""
    per_chip = CHIP_CORES // lnc
    whole = TORUS[system]
    chips = tp // per_chip
    if tp % per_chip or not 1 <= chips <= CHIPS[system]:
        raise ValueError(f"tp {tp} at LNC={lnc} with one replica on {system}: expected whole chips of {per_chip} ranks "
                         f"each, at most {CHIPS[system]} chips ({per_chip} to {CHIPS[system] * per_chip} ranks in "
                         f"steps of {per_chip})")
    x = min(chips, whole[0])
    y = min(chips // x, whole[1])
    z = chips // (x * y)
    if whole[0] % x or whole[1] % y or whole[2] % z or x * y * z != chips:
        raise ValueError(f"tp {tp} at LNC={lnc}: {chips} chips do not tile the {system}'s "
                         f"{' x '.join(map(str, whole))} torus (a part of a row of {whole[0]}, whole rows, or whole "
                         "planes, each dividing the next)")
    return (x, y, z)


def replica_group(tp, system, lnc=1, one_replica=False):
    """The ranks of each tensor-parallel group: ncore's collective engine runs groups of every
    rank of the system, of each chip, or of each rank position across the chips. A rank is a core,
    or at LNC=2 a pair of cores (a chip's 4 ranks). one_replica: the group alone on the chips it
    spans (group_torus), every rank of them."""
    if one_replica:
        return ncc.ReplicaGroup([list(range(tp))])
    chips = CHIPS[system]
    per_chip = CHIP_CORES // lnc
    ranks = chips * per_chip
    kinds = {ranks: [list(range(ranks))], per_chip: [list(range(c * per_chip, (c + 1) * per_chip))
                                                     for c in range(chips)]}
    if chips > 1:
        kinds.setdefault(chips, [list(range(k, ranks, per_chip)) for k in range(per_chip)])
    if tp not in kinds:
        raise ValueError(f"tp {tp} on {system} at LNC={lnc}: expected one of {sorted(kinds)} (every rank, each "
                         f"chip's {per_chip} ranks, or one rank of each chip), or one replica (--one-replica) of "
                         "whole chips")
    return ncc.ReplicaGroup(kinds[tp])


WEIGHTS = {"bf16": nl.bfloat16, "fp8": nl.float8_e4m3}


def draw(shape, scale, rng):
    """FP32 values of a kernel input: zeros without an rng (a timing-only run, whose time does not
    depend on them), else normal values times scale."""
    return np.zeros(shape, np.float32) if rng is None else (rng.standard_normal(shape) * scale).astype(np.float32)


def layer_inputs(model, tp, batch, context, rng=None, weights="bf16", k_tiled=False, phase="decode"):
    """One rank's arguments (every rank gets the same arrays: the time does not depend on the
    values): decoder_layer_decode's, or with phase prefill decoder_layer_prefill's (a prompt of
    `context` tokens at positions 0 .. context - 1, no cache). rng None: zeros (for a
    timing-only run), else random values of the layer's scale. weights: the projections' type
    (the gains, the activations and the KV cache stay BF16). k_tiled: w_qkv, w_gate and w_up
    K-tiled (layer.tile_rows) instead of as rows."""
    q_heads, inter = model.shard(tp)
    h, d = model.hidden, model.head_dim
    tokens = batch if phase == "decode" else context

    def array(shape, scale=1.0, dtype=nl.bfloat16):
        return ncore_nki.typed(draw(shape, scale, rng), dtype)

    def weight(shape, scale, tiled=False):
        """A projection's weights; tiled: K-tiled for the core's 128 partitions (layer.tile_rows),
        so a narrow slice still moves in DMA rows of several KiB."""
        values = draw(shape, scale, rng)
        return ncore_nki.typed(tile_rows(values, min(shape[0], 128)) if tiled else values, WEIGHTS[weights])
    x, g_attn, w_qkv = array((tokens, h)), array((1, h)), weight((h, (q_heads + 2) * d), h ** -0.5, tiled=k_tiled)
    angles = np.zeros((tokens, d)) if rng is None else rng.uniform(0, 6.3, (tokens, d))
    cache = [array((batch, d, context)), array((batch, context, d))] if phase == "decode" else []
    return [x, g_attn, w_qkv, np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32), *cache,
            weight((q_heads * d, h), (q_heads * d) ** -0.5), array((1, h)), weight((h, inter), h ** -0.5, tiled=k_tiled),
            weight((h, inter), h ** -0.5, tiled=k_tiled), weight((inter, h), inter ** -0.5)]


def rank_bytes(model, tp, batch, context, phase, weights):
    """A rank's HBM tensors for one layer: its weights, its KV cache (decode reads B x T
    positions of k and v; prefill writes the prompt's), and the tokens' states in and out (x in
    BF16, y in FP32)."""
    q_heads, inter = model.shard(tp)
    h, d = model.hidden, model.head_dim
    w = WEIGHTS[weights].size * (h * (q_heads + 2) * d + q_heads * d * h + 3 * h * inter)
    tokens = batch if phase == "decode" else context
    return w + 2 * 2 * d * batch * context + tokens * h * (2 + 4)


def check_fits(model, tp, batch, context, phase, lnc, weights):
    """Refuses, before anything is allocated, a layer whose rank's tensors (rank_bytes) exceed
    its share of the chip's HBM (a ValueError saying so), or the window of HBM ncore.nki gives a
    rank's tensors in a system run (simulate.RANK_WINDOW a core)."""
    need = rank_bytes(model, tp, batch, context, phase, weights)
    cores = CHIP_CORES // lnc
    share = CHIP_HBM_BYTES // cores
    what = (f"a rank's weights, KV cache ({'batch ' + str(batch) + ' x ' if phase == 'decode' else ''}{context} "
            f"positions) and states need {need / 2 ** 30:.2f} GiB")
    if need > share:
        raise ValueError(f"{what}: larger than its share of HBM, {share / 2 ** 30:.0f} GiB (96 GiB a chip over "
                         f"{cores} ranks)")
    window = ncore_nki.simulate.RANK_WINDOW * lnc
    if need > window:
        raise ValueError(f"{what}: more than the {window >> 20} MiB of HBM a rank's tensors get in ncore.nki's system "
                         "runs (simulate.RANK_WINDOW a core); a smaller batch or context, or a larger tp")


def default_chunk(model, lnc=1):
    """Prefill's tokens a pass when none is given: the most, in whole blocks of 128 up to 512,
    whose FP32 state ([128, H / 128, tokens]) is at most 64 KiB a partition on each core, so that
    a pass's states fit SBUF (ncore's choice, from the fits measured: the 8B at 512, the 70B at
    256, tests/workloads/llama/README.md). At LNC=2 each core holds half the pass's tokens."""
    per_token = model.hidden // 128 * 4 if model.hidden > 128 else 4
    return max(128 * lnc, min(512, lnc * (64 * 1024 // per_token // 128 * 128)))


def layer_flops(model, tokens, context, phase):
    """The layer's arithmetic for the whole model (every head, the whole MLP): the projections'
    2 x weights a token, and attention's q k and p v, 4 heads d a position attended (decode: each
    token over context + 1 positions; prefill: token i over i + 1)."""
    h, d = model.hidden, model.head_dim
    weights = h * (2 * model.heads * d + 2 * model.kv_heads * d + 3 * model.intermediate)
    attended = tokens * (context + 1) if phase == "decode" else context * (context + 1) // 2
    return 2 * weights * tokens + 4 * model.heads * d * attended


def time_split(r):
    """A layer run's time (us, the slowest core's) and its split: the busiest core's busy time
    per engine (tensor, scalar, vector) and DMA (HBM), the time some collective was in flight, and
    the longest time a queue of any core waited for an instruction fetch."""
    run = r["system"]
    cores = run["cores"]
    busiest = {q: max(busy_us(c, q) for c in cores) for q in QUEUES}
    fetch_us = max(max(c["fetch_stall_cycles"].values()) / (c["cycles"] / c["time_ns"]) / 1e3 if c["cycles"] else 0
                   for c in cores)
    return max(c["time_ns"] for c in cores) / 1e3, {
        "pe": busiest["pe"], "act": busiest["act"], "dve": busiest["dve"], "hbm_dma": busiest["sp"],
        "collectives": union_us([(c["start_us"], c["end_us"]) for c in run["collectives"]]),
        "instruction_fetch": fetch_us}


def sampled_passes(n, sample, partial_last, cold_start=True):
    """Which of a prefill's n passes a sampled run takes: `sample` spread evenly over the whole
    passes, from the first to the last whole one, the second (for the cold start's correction,
    unless cold_start is False), and the last pass when it is partial (its own size). A pass's
    cost is its projections' and MLP's, the same every whole pass, plus its attention over every
    position before it, which grows with its index; interpolate takes the passes between samples
    as on the line between them."""
    whole = n - 1 if partial_last else n
    if whole < 1:
        return [0]
    count = min(sample, whole)
    picks = {round(k * (whole - 1) / max(1, count - 1)) for k in range(count)}
    return sorted(picks | ({min(1, n - 1)} if cold_start else set()) | ({n - 1} if partial_last else set()))


def interpolate(values, k, whole):
    """Pass k's figure from the sampled passes' (values: {pass: figure}): a sampled pass's own,
    else on the line between the sampled whole passes (those below `whole`) on either side of it
    (sampled_passes always takes the first and the last whole pass, and a partial last one)."""
    if k in values:
        return values[k]
    lo = max(i for i in values if i < k)
    hi = min(i for i in values if k < i < whole)
    return values[lo] + (values[hi] - values[lo]) * (k - lo) / (hi - lo)


def rng_for(fidelity, seed):
    return None if fidelity == "timing" else np.random.default_rng(seed)


def lm_head_weights(model, vocab_rank, weights, rng, k_tiled=False):
    """The LM head's weights [H, V_r] as rows, or K-tiled (its tokens and final gain are the
    layer's x and gain)."""
    shape = (model.hidden, vocab_rank)
    values = draw(shape, model.hidden ** -0.5, rng)
    return ncore_nki.typed(tile_rows(values, min(model.hidden, 128)) if k_tiled else values, WEIGHTS[weights])


def embedding_table(model, vocab_rank, rng):
    """A rank's slice of the embedding table [V_r, H] (BF16, whatever the projections' type)."""
    shape = (vocab_rank, model.hidden)
    return ncore_nki.typed(draw(shape, 1.0, rng), nl.bfloat16)


def embedding_rows(model, batch, tp, vocab_rank, chips, lnc=1):
    """Each rank's rows for the step's tokens (embedding_kernel's rows: -1 where another rank
    of its group holds the token) on `chips` chips. The tokens are fixed and spread over the
    vocabulary: which rank reads a row changes no rank's time by more than that one row's DMA."""
    tokens = [(b * 7919 + 1) % model.vocab for b in range(batch)]
    ranks = chips * CHIP_CORES // lnc
    return [tuple(t - (r % tp) * vocab_rank if (r % tp) * vocab_rank <= t < (r % tp + 1) * vocab_rank else -1
                  for t in tokens) for r in range(ranks)]


def run_layer(model, batch=1, context=1024, tp=8, system="chip", phase="decode", lnc=1, fidelity="timing",
              timing=None, trace=None, seed=51, weights="bf16", estimate=True, k_tiled=False, chunk=None,
              steady=False, one_replica=False, sample=None, cold_start=True):
    """Runs one layer and returns its time (us), its split, utilizations and the model's estimate.
    fidelity: timing (golden cores without data: the same cycles), data (golden cores with
    data), rtl (every core the Verilated RTL core). timing: a timing preset or JSON file (ncore
    run --timing). trace: a Perfetto trace-event file to write. estimate False: the layer only
    (no embedding, LM head or model estimate: their entries are None), as a sweep of the layer
    wants it. k_tiled: the weights whose rows are the hidden size K-tiled (layer.Weights); off by
    default, since it made both measured layers slower (tests/workloads/llama/README.md).
    chunk: prefill's tokens a pass through the projections (decoder_layer_prefill; by default
    default_chunk(model, lnc)). steady: decode only; also run two layers in a row
    (decoder_layers_decode) and take the second's time, the first's subtracted, as the layer's
    time in steady state (its head under the layer before's tail), which the model's estimate
    then uses for every layer but the first. one_replica: run one tensor-parallel group on the
    chips it spans, a part of the system's torus (group_torus), rather than every replica; the
    replicas share no chip, so each takes the time one alone does, except that a dimension of 2
    chips has two links between them where the instance's torus has one (tb/tlm/topology.h). It
    is how a TP degree of part of the system's chips runs (no group kind of the collective engine
    spans some chips only). sample: prefill, timing-only; run `sample` passes of the prompt
    (sampled_passes), each alone, and take the layer's time and split as the sum over every pass of
    the figures interpolated between them (the report's sampled_passes), less a cold start for
    every pass after the first (a pass alone has no earlier pass's tail to overlap: the first two
    passes alone against the two in one run; cold_start False leaves the correction and its two
    runs out): a long prompt's layer in a few passes' simulation, checked against whole runs
    (tests/workloads/llama/README.md)."""
    if phase not in ("decode", "prefill"):
        raise ValueError(f"phase {phase!r}: expected decode or prefill")
    if chunk is not None and phase != "prefill":
        raise ValueError(f"chunk {chunk} in {phase}: a chunk is prefill's (tokens a pass through the projections)")
    if sample is not None and (phase != "prefill" or fidelity != "timing" or sample < 2):
        raise ValueError(f"sample {sample} in {phase} at fidelity {fidelity}: expected at least 2 sampled passes, "
                         "in prefill, timing-only (a pass run alone computes on keys nothing wrote)")
    if sample is not None and trace:
        raise ValueError(f"trace (--trace {trace}) with sample (--sample {sample}): a sampled layer is several "
                         "runs, no one timeline; trace a pass with a shorter context instead")
    if not cold_start and sample is None:
        raise ValueError("cold_start False (--no-cold-start) without sample (--sample N): the cold start's "
                         "correction is the sampled prefill's")
    if steady and phase != "decode":
        raise ValueError(f"steady in {phase}: the two-layer steady-state run is built for decode only")
    if phase == "prefill" and batch != 1:
        raise ValueError(f"batch {batch} in prefill: expected 1 (a prompt of --context tokens; prompts of a batch "
                         "are separate runs)")
    if lnc not in (1, 2):
        raise ValueError(f"lnc {lnc}: expected 1 (a rank per core) or 2 (a rank per pair of cores)")
    if system not in CHIPS:
        raise ValueError(f"system {system!r}: expected one of {', '.join(CHIPS)}")
    if weights not in WEIGHTS:
        raise ValueError(f"weights {weights!r}: expected one of {', '.join(WEIGHTS)}")
    if fidelity not in ("timing", "data", "rtl"):
        raise ValueError(f"fidelity {fidelity!r}: expected timing, data or rtl")
    if batch < 1 or batch > 128 or context < 16 or context % 16:
        raise ValueError(f"batch {batch}, context {context}: expected batch 1..128 (a token a partition) and a "
                         "context that is a multiple of 16 (a cache row is whole 32-byte bursts)")
    group = replica_group(tp, system, lnc, one_replica)
    torus = group_torus(tp, system, lnc) if one_replica else None
    chips = CHIPS[system] if torus is None else torus[0] * torus[1] * torus[2]  # the chips simulated
    q_heads, inter = model.shard(tp)
    for name, size in (("hidden", model.hidden), ("head_dim", model.head_dim), ("intermediate / tp", inter)):
        if size % 32:  # a row of it in HBM: whole 32-byte bursts in FP8 and in BF16
            raise ValueError(f"{name} {size}: expected a multiple of 32 (ncore's DMA moves whole 32-byte bursts a row)")
    if model.hidden > 128 and model.hidden % 128:  # layer.check_hidden, at NeuronCore-v3's 128 partitions
        raise ValueError(f"hidden {model.hidden}: expected a multiple of 128 (the layer keeps a token's state as "
                         "whole tiles of 128 partitions)")
    check_fits(model, tp, batch, context, phase, lnc, weights)
    kernel = decoder_layer_decode if phase == "decode" else decoder_layer_prefill
    args = layer_inputs(model, tp, batch, context, rng_for(fidelity, seed), weights, k_tiled, phase)
    tokens = batch if phase == "decode" else context  # the tokens the layer processes
    if phase == "prefill" and chunk is None:
        chunk = default_chunk(model, lnc)
    extra = {"chunk": chunk} if chunk else {}
    def layer_run(**more):
        return ncore_nki.benchmark_kernel(kernel, *args, group, system=system, **extra, **more,
                                          engine="rtl" if fidelity == "rtl" else "golden",
                                          timing_only=fidelity == "timing", timing=timing, lnc=lnc, torus=torus)
    samples = None
    if sample is None:
        r = layer_run(trace=trace)
    else:  # prefill's passes, a few of them run alone (sampled_passes)
        n = len(range(0, context, chunk))
        samples = {i: layer_run(passes=(i, 1)) for i in sampled_passes(n, sample, context % chunk != 0, cold_start)}
        r = samples[sorted(samples)[len(samples) // 2]]  # the middle sample's utilizations, stacks and links
        # A pass alone starts cold; in the whole run it follows the one before. The difference,
        # from the first two passes alone and together, is taken from every pass after the first.
        first_two = layer_run(passes=(0, 2)) if n > 1 and cold_start else None
    steady_us = None
    if steady:  # the same layer twice in one kernel: the second's time is the steady state's
        two = ncore_nki.benchmark_kernel(decoder_layers_decode, *args, group, system=system,
                                         engine="rtl" if fidelity == "rtl" else "golden",
                                         timing_only=fidelity == "timing", timing=timing, lnc=lnc, torus=torus)
        steady_us = max(c["time_ns"] for c in two["system"]["cores"]) / 1e3 - max(
            c["time_ns"] for c in r["system"]["cores"]) / 1e3
    # The LM head on the same ranks: each its slice of the vocabulary, padded to whole 32-byte
    # rows (ncore's choice; NxD pads the vocabulary to split it evenly too).
    vocab_rank = -(-model.vocab // tp // 16) * 16
    lm_head_us = embedding_us = None
    if estimate:
        w_lm = lm_head_weights(model, vocab_rank, weights, rng_for(fidelity, seed), k_tiled)
        last = args[0] if phase == "decode" else ncore_nki.typed(draw((1, model.hidden), 1.0, rng_for(fidelity, seed)),
                                                                   nl.bfloat16)  # prefill: the last token's logits
        lm = ncore_nki.benchmark_kernel(lm_head_kernel, last, args[1], w_lm, system=system,
                                        engine="rtl" if fidelity == "rtl" else "golden",
                                        timing_only=fidelity == "timing", timing=timing, lnc=lnc, torus=torus)
        lm_head_us = max(c["time_ns"] for c in lm["system"]["cores"]) / 1e3
        # The embedding on the same ranks, vocabulary-parallel over the same slices: each
        # token's row from the rank that holds it, summed over the group.
        emb = ncore_nki.benchmark_kernel(embedding_kernel, embedding_table(model, vocab_rank, rng_for(fidelity, seed)),
                                         ncore_nki.per_rank(embedding_rows(model, tokens, tp, vocab_rank, chips, lnc)),
                                         group, system=system, engine="rtl" if fidelity == "rtl" else "golden",
                                         timing_only=fidelity == "timing", timing=timing, lnc=lnc, torus=torus)
        embedding_us = max(c["time_ns"] for c in emb["system"]["cores"]) / 1e3
    run = r["system"]
    runs = [r] if samples is None else list(samples.values()) + ([first_two] if first_two else [])
    cores = run["cores"]
    layer_us, split = time_split(r)
    if samples is not None:  # every pass's figures, interpolated between the sampled passes'
        figures = {i: time_split(one) for i, one in samples.items()}
        n = len(range(0, context, chunk))
        cold_us = (figures[0][0] + figures[1][0] - time_split(first_two)[0]) if first_two else 0.0
        whole = n - 1 if context % chunk else n  # the whole passes; a partial last one is sampled alone
        layer_us = sum(interpolate({i: f[0] for i, f in figures.items()}, k, whole) for k in range(n)) - (
            n - 1) * cold_us
        split = {key: sum(interpolate({i: f[1][key] for i, f in figures.items()}, k, whole) for k in range(n))
                 for key in split}
    q_heads, inter = model.shard(tp)
    weight_bytes = WEIGHTS[weights].size * model.hidden * (model.heads * model.head_dim +
                                                           2 * model.kv_heads * model.head_dim +
                                                           model.heads * model.head_dim + 3 * model.intermediate)
    # decode reads the cache; prefill writes the prompt's (both: every KV head on each rank of its group)
    kv = 2 * batch * context * model.kv_heads * model.head_dim * 2 * (tp // min(tp, model.kv_heads))
    replicas = chips * CHIP_CORES // lnc // tp  # the replicas simulated
    hbm_tbps = sum(s["peak_gbps"] for s in run["hbm"]) / 1e3
    return {
        "model": model.name, "phase": phase, "weights": weights, "k_tiled": k_tiled, "chunk": chunk, "batch": batch,
        "context": context, "tp": tp, "lnc": lnc,
        "system": system, "fidelity": fidelity, "replicas": replicas,
        "torus": list(torus) if torus else list(TORUS[system]),  # the chips simulated, X x Y x Z
        "q_heads_per_rank": q_heads,
        "intermediate_per_rank": inter,
        "layer_us": layer_us,
        "split_us": split,
        "sampled_passes": None if samples is None else [
            {"pass": i, "tokens": min(chunk, context - i * chunk), "us": time_split(one)[0],
             "run_seconds": one["run_seconds"]} for i, one in sorted(samples.items())],
        "cold_start_us": None if samples is None or first_two is None else cold_us,
        "utilization": {q: sum(c["busy_cycles"][q] for c in cores) / sum(c["cycles"] for c in cores)
                        for q in QUEUES if q != "cc"},
        "hbm_stacks": [{"chip": s["chip"], "stack": s["stack"], "utilization": s["utilization"]} for s in run["hbm"]],
        "links": [{"from": link["from"], "to": link["to"], "utilization": link["utilization"]} for link in run["links"]],
        "hbm_bound_us": replicas * (weight_bytes + kv) / (hbm_tbps * 1e12) * 1e6,
        "compute_bound_us": replicas * layer_flops(model, tokens, context, phase) / (
            chips * CHIP_CORES * CORE_PEAK_FLOPS) * 1e6,
        "lm_head_us": lm_head_us, "vocab_per_rank": vocab_rank, "embedding_us": embedding_us,
        "steady_layer_us": steady_us,
        "model_ms": (layer_us + (model.layers - 1) * (steady_us if steady else layer_us) + lm_head_us +
                     embedding_us) / 1e3 if estimate else None,
        # the wall time of everything the layer's figures came from (with --steady, both runs)
        "instructions": r["instructions"],
        "compile_seconds": sum(one["compile_seconds"] for one in runs) + (two["compile_seconds"] if steady else 0),
        "run_seconds": sum(one["run_seconds"] for one in runs) + (two["run_seconds"] if steady else 0),
    }
