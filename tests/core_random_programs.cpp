#include "tests/core_random_programs.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/core/core_isa.h"
#include "model/tensor/tensor_isa.h"
#include "tb/vector/ve_random.h"

namespace ncore::test {

model::Program random_engine_mix(model::SplitMix64& rng, int size) {
  using namespace model;
  ProgramBuilder b("engine_mix");
  constexpr uint32_t kArena = 65536;                       // per VE queue
  constexpr uint32_t kOperands = 2 * kArena;               // pe operands (read-only), 12 KiB
  constexpr uint32_t kEvictions = kOperands + 32768;       // eviction outputs, 4 KiB each
  constexpr uint32_t kDmaIn = kEvictions + 32768;          // DMA loads, 1 KiB per engine
  const auto sbuf_tensor = [&](const std::string& name, uint32_t addr, uint32_t bytes_per_partition,
                               std::vector<uint8_t> data) {
    TensorDecl t;
    t.name = name;
    t.hbm = false;
    t.addr = addr;
    t.dtype = DType::kInt8;
    t.shape = {size, static_cast<int64_t>(bytes_per_partition)};
    t.init = data.empty() ? TensorInit::kRandom : TensorInit::kData;
    t.seed = rng.next();
    t.data = std::move(data);
    b.tensor(t);
  };
  // Vector and scalar programs with their inputs.
  for (const bool scalar : {false, true}) {
    VeConfig cfg;
    cfg.lanes = size;
    cfg.sbuf_bytes = kArena;
    cfg.scalar_engine = scalar;
    VeMemory mem(cfg);
    tb::VeGenOptions gen;
    gen.psum_share = 0;  // PSUM holds the pe steps' banks
    gen.max_elements = 40;
    std::vector<VeInstruction> program;
    tb::random_ve_program(cfg, mem, rng, 10, gen, program);
    const uint32_t base = scalar ? kArena : 0;
    std::vector<uint8_t> bytes;
    bytes.reserve(static_cast<size_t>(size) * kArena);
    for (int p = 0; p < size; ++p)
      for (uint32_t off = 0; off < kArena; ++off) bytes.push_back(static_cast<uint8_t>(mem.sbuf.read(p, off, 1)));
    sbuf_tensor(scalar ? "act_area" : "dve_area", base, kArena, std::move(bytes));
    for (VeInstruction in : program) {
      for (VeAccess* a : {&in.src0, &in.src1, &in.dst}) a->addr += base;
      if (in.s0_per_partition) in.s0 += base;
      if (in.s1_per_partition) in.s1 += base;
      in.acc_addr += base;
      if (scalar) b.act(in).tag(static_cast<uint8_t>(rng.next()));
      else b.dve(in).tag(static_cast<uint8_t>(rng.next()));
    }
  }
  sbuf_tensor("operands", kOperands, 12288, {});

  // pe steps, each evicted by dve.
  const int pe_done = b.semaphore("pe_done");
  const int steps = 2 + static_cast<int>(rng.below(7));
  const int half = size / 2;
  for (int step = 0; step < steps; ++step) {
    const int kind = static_cast<int>(rng.below(7));
    // Stationaries (and sparse tags, 1 KiB in) in four 2 KiB slots, moving tiles in four 1 KiB slots.
    const uint32_t st = kOperands + 2048 * rng.below(4), mv = kOperands + 8192 + 1024 * rng.below(4);
    const int n = 8 + static_cast<int>(rng.below(4)) * 8;
    std::vector<TeInstruction> pair;
    if (kind <= 1) {  // dense FP32 or BF16
      const DType t = kind == 0 ? DType::kFp32 : DType::kBf16;
      const int bytes = storage_bits(t) / 8;
      pair = {load_stationary(t, size, size, st, bytes), multiply_moving(t, size, n, mv, bytes, step, 0, false)};
    } else if (kind == 2) {  // FP8 double-row: two K rows per partition
      pair = {load_stationary(DType::kE4m3, size, size, st, 1), multiply_moving(DType::kE4m3, size, n, mv, 1, step, 0, false)};
      for (auto& i : pair) i.double_row = true;
    } else if (kind <= 5) {  // sparse 4:8, 4:12, 4:16 (tags from the operand bytes)
      pair = {load_stationary(DType::kBf16, size, size, st, 2), multiply_moving(DType::kBf16, size, n, mv, 2, step, 0, false)};
      for (auto& i : pair) i.sparsity = static_cast<TeSparsity>(kind - 2);
      pair[0].tag_addr = st + 1024;
    } else {  // transpose (FP32: whole words)
      pair = {load_stationary(DType::kFp32, size, size, st, 4), multiply_moving(DType::kFp32, size, n, mv, 4, step, 0, false)};
      for (auto& i : pair) i.transpose = true;
    }
    const bool tiled = kind <= 1 && rng.below(2);
    std::vector<TeInstruction> instrs;
    if (tiled) {  // the two diagonal tiles of a 2x2 tiling, K = M = size / 2 each
      for (int t = 0; t < 2; ++t)
        for (TeInstruction i : pair) {
          i.k = half;
          if (i.opcode == Opcode::kLoadStationary) i.m = half;
          model::set_tiling(i, {1, t, 1, t});
          instrs.push_back(i);
        }
    } else {
      instrs = pair;
    }
    for (size_t i = 0; i < instrs.size(); ++i) {
      auto ref = b.pe(instrs[i]).tag(static_cast<uint8_t>(rng.next()));
      if (i + 1 == instrs.size()) ref.signal(pe_done, 1);
    }
    VeInstruction ev;
    ev.opcode = Opcode::kTensorCopy;
    ev.in0 = ev.in1 = ev.out = DType::kFp32;
    ev.partitions = size;
    ev.src0 = VeAccess{MemSpace::kPsum, static_cast<int>(step * 2048), {static_cast<int>(n), 1, 1, 1}, {1, 0, 0, 0}};
    ev.dst = VeAccess{MemSpace::kSbuf, static_cast<int>(kEvictions + 4096 * static_cast<uint32_t>(step)), {static_cast<int>(n), 1, 1, 1}, {1, 0, 0, 0}};
    b.dve(ev).wait(pe_done, static_cast<uint32_t>(step + 1));
  }

  // DMA on all 16 engines: a load into the engine's slot and a store from the operands.
  TensorDecl hin;
  hin.name = "hbm_in";
  hin.addr = 0x100000 + 0x1000ull * rng.below(0x1000);
  hin.dtype = DType::kInt8;
  hin.shape = {65536};
  hin.init = TensorInit::kRandom;
  hin.seed = rng.next();
  b.tensor(hin);
  const int dma_done = b.semaphore("dma_done");
  for (int e = 0; e < 16; ++e) {
    DmaDescriptor load;
    load.bytes = 32 * (1 + rng.below(32));
    load.count1 = static_cast<uint64_t>(size);
    load.hbm_addr = hin.addr + 32 * rng.below(512);
    load.hbm_stride1 = load.bytes;
    load.sbuf_addr = kDmaIn + 1024 * static_cast<uint64_t>(e);
    load.sbuf_stride1 = kSbufPartitionStride;
    if (rng.below(2)) {  // the same load as a descriptor list, a row an entry
      std::vector<DmaDescriptor> rows;
      for (uint64_t r = 0; r < load.count1; ++r) {
        DmaDescriptor row = load;
        row.count1 = 1;
        row.hbm_addr = load.hbm_addr + r * load.hbm_stride1;
        row.sbuf_addr = load.sbuf_addr + r * load.sbuf_stride1;
        rows.push_back(row);
      }
      b.dma_list(e, b.list(fmt::format("load{}", e), std::move(rows))).signal(dma_done, 1);
    } else {
      b.dma(load, e).signal(dma_done, 1);
    }
    DmaDescriptor store = load;
    store.to_hbm = true;
    store.sbuf_addr = kOperands + 32 * rng.below(256);
    store.hbm_addr = 0x40000000ull + 0x100000ull * static_cast<uint64_t>(e);
    b.dma(store, e).signal(dma_done, 1);
  }
  return b.take();
}

}  // namespace ncore::test
