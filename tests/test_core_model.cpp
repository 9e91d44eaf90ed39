// The golden NeuronCore: the example programs against references computed here, element by
// element and bit for bit; deadlock, overflow and refusal reports; random multi-engine
// programs with random semaphore graphs against one-at-a-time execution.

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/vector/activation.h"
#include "model/core/core_model.h"
#include "model/core/dma_timing.h"
#include "model/core/program.h"
#include "tests/seed.h"

namespace ncore::model {
namespace {

const std::string kPrograms = NCORE_SOURCE_DIR "/tests/programs/";

struct Ran {
  Program prog;
  std::unique_ptr<CoreModel> core;
  CoreResult result;
};

Ran run_program(const std::string& name, CoreConfig cfg = {}) {
  Ran r;
  r.prog = assemble_file(kPrograms + name);
  r.core = std::make_unique<CoreModel>(cfg, r.prog);
  r.core->load_tensors();
  r.result = r.core->run();
  return r;
}

uint32_t element(const std::vector<uint8_t>& bytes, DType t, size_t i) {
  const int size = storage_bits(t) / 8;
  uint32_t v = 0;
  for (int b = 0; b < size; ++b) v |= uint32_t{bytes[i * size + b]} << (8 * b);
  return v;
}

uint32_t fp32(DType t, uint32_t bits) { return to_fp32_bits(t, bits); }
uint32_t to_bf16(uint32_t f) { return from_fp32(f, DType::kBf16, CastMode{}); }

TEST(Core, GemmExampleIsBitExact) {
  Ran r = run_program("gemm_bf16_1024.s");
  ASSERT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  const auto a = tensor_init_bytes(*r.prog.tensor("A"));
  const auto b = tensor_init_bytes(*r.prog.tensor("B"));
  const auto c = r.core->tensor_bytes(*r.prog.tensor("C"));
  constexpr int N = 1024;
  std::vector<uint32_t> af(N * N), bf(N * N);
  for (size_t i = 0; i < af.size(); ++i) {
    af[i] = fp32(DType::kBf16, element(a, DType::kBf16, i));
    bf[i] = fp32(DType::kBf16, element(b, DType::kBf16, i));
  }
  // C[m][n] = sum over K tiles (overwrite, then accumulate) of the tile's sum over its 128
  // rows in order, every product and add rounded to FP32; then BF16, nearest even.
  int mismatches = 0;
  std::vector<uint32_t> acc(N);
  for (int m = 0; m < N; ++m) {
    for (int n = 0; n < N; ++n) acc[n] = 0;
    for (int kt = 0; kt < 8; ++kt)
      for (int n = 0; n < N; ++n) {
        uint32_t tile = 0;
        for (int k = kt * 128; k < kt * 128 + 128; ++k)
          tile = fp32_add(tile, fp32_mul(af[k * N + m], bf[k * N + n]));
        acc[n] = kt == 0 ? tile : fp32_add(acc[n], tile);
      }
    for (int n = 0; n < N; ++n) {
      const uint32_t want = to_bf16(acc[n]), got = element(c, DType::kBf16, m * N + n);
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("C[{}][{}]: expected {:04x}, found {:04x}", m, n, want, got);
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(r.result.te_macs, uint64_t{N} * N * N);
  EXPECT_EQ(r.result.dma_bytes, 3ull * N * N * 2);
}

TEST(Core, Fp8DoubleRowGemmExampleIsBitExact) {
  Ran r = run_program("gemm_fp8_double_row.s");
  ASSERT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  const auto a = tensor_init_bytes(*r.prog.tensor("A"));
  const auto b = tensor_init_bytes(*r.prog.tensor("B"));
  const auto c = r.core->tensor_bytes(*r.prog.tensor("C"));
  constexpr int N = 512;
  std::vector<uint32_t> af(N * N), bf(N * N);
  for (size_t i = 0; i < af.size(); ++i) {
    af[i] = fp32(DType::kE4m3, element(a, DType::kE4m3, i));
    bf[i] = fp32(DType::kE4m3, element(b, DType::kE4m3, i));
  }
  // Per K tile of 256 rows: partition p pairs rows p and 128 + p; each PE adds the pair's sum
  // (each add rounded to FP32) to the partial sum, partitions in order; tiles accumulate.
  int mismatches = 0;
  for (int m = 0; m < N; ++m)
    for (int n = 0; n < N; ++n) {
      uint32_t acc = 0;
      for (int kt = 0; kt < 2; ++kt) {
        uint32_t tile = 0;
        for (int p = 0; p < 128; ++p) {
          const int k0 = kt * 256 + p, k1 = k0 + 128;
          const uint32_t pair = fp32_add(fp32_mul(af[k0 * N + m], bf[k0 * N + n]), fp32_mul(af[k1 * N + m], bf[k1 * N + n]));
          tile = fp32_add(tile, pair);
        }
        acc = kt == 0 ? tile : fp32_add(acc, tile);
      }
      const uint32_t want = to_bf16(acc), got = element(c, DType::kBf16, m * N + n);
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("C[{}][{}]: expected {:04x}, found {:04x}", m, n, want, got);
    }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(r.result.te_macs, uint64_t{N} * N * N);
}

TEST(Core, AttentionHeadExampleIsBitExact) {
  Ran r = run_program("attention_head.s");
  ASSERT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  constexpr int N = 128;
  const auto load = [&](const char* name) {
    const auto bytes = tensor_init_bytes(*r.prog.tensor(name));
    std::vector<uint32_t> v(N * N);
    for (size_t i = 0; i < v.size(); ++i) v[i] = fp32(DType::kBf16, element(bytes, DType::kBf16, i));
    return v;
  };
  const auto qt = load("QT"), kt = load("KT"), v = load("V");
  const auto o = r.core->tensor_bytes(*r.prog.tensor("O"));
  const uint32_t scale = 0x3db504f3u, one = float_to_bits(1.0f);
  // E^T[k][q] = bf16(exp(S^T[k][q] * scale)), S^T summed over d (partitions) in order.
  std::vector<uint32_t> et(N * N);
  for (int k = 0; k < N; ++k)
    for (int q = 0; q < N; ++q) {
      uint32_t s = 0;
      for (int d = 0; d < N; ++d) s = fp32_add(s, fp32_mul(kt[d * N + k], qt[d * N + q]));
      et[k * N + q] = fp32(DType::kBf16, to_bf16(act_eval(ActFunc::kExp, fp32_add(fp32_mul(s, scale), 0))));
    }
  int mismatches = 0;
  for (int q = 0; q < N; ++q) {
    std::vector<uint32_t> u(N + 1, 0);
    for (int k = 0; k < N; ++k)
      for (int n = 0; n <= N; ++n) u[n] = fp32_add(u[n], fp32_mul(et[k * N + q], n < N ? v[k * N + n] : one));
    const uint32_t rcp = act_eval(ActFunc::kReciprocal, fp32_add(fp32_mul(u[N], one), 0));
    for (int n = 0; n < N; ++n) {
      const uint32_t want = to_bf16(fp32_mul(u[n], rcp)), got = element(o, DType::kBf16, q * N + n);
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("O[{}][{}]: expected {:04x}, found {:04x}", q, n, want, got);
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(r.result.te_macs, uint64_t{N} * N * N + uint64_t{N} * N * (N + 1));
}

TEST(Core, SoftmaxExampleIsBitExact) {
  Ran r = run_program("softmax.s");
  ASSERT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  const auto x = tensor_init_bytes(*r.prog.tensor("X"));
  const auto y = r.core->tensor_bytes(*r.prog.tensor("Y"));
  int mismatches = 0;
  for (int p = 0; p < 128; ++p) {
    uint32_t mx = fp32(DType::kBf16, element(x, DType::kBf16, p * 512));
    for (int i = 1; i < 512; ++i) mx = ve_alu(AluOp::kMax, mx, fp32(DType::kBf16, element(x, DType::kBf16, p * 512 + i)), false);
    const uint32_t nmx = fp32_mul(mx, float_to_bits(-1.0f));
    std::vector<uint32_t> e(512);
    uint32_t sum = 0;
    for (int i = 0; i < 512; ++i) {
      const uint32_t t = fp32_add(fp32_mul(fp32(DType::kBf16, element(x, DType::kBf16, p * 512 + i)), float_to_bits(1.0f)), nmx);
      e[i] = act_eval(ActFunc::kExp, t);
      sum = i == 0 ? e[i] : fp32_add(sum, e[i]);
    }
    const uint32_t rcp = act_eval(ActFunc::kReciprocal, fp32_add(fp32_mul(sum, float_to_bits(1.0f)), 0));
    for (int i = 0; i < 512; ++i) {
      const uint32_t want = to_bf16(fp32_mul(e[i], rcp)), got = element(y, DType::kBf16, p * 512 + i);
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("y[{}][{}]: expected {:04x}, found {:04x}", p, i, want, got);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Core, RmsNormExampleIsBitExact) {
  Ran r = run_program("rmsnorm.s");
  ASSERT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  const auto x = tensor_init_bytes(*r.prog.tensor("X"));
  const auto g = tensor_init_bytes(*r.prog.tensor("G"));
  const auto y = r.core->tensor_bytes(*r.prog.tensor("Y"));
  int mismatches = 0;
  for (int p = 0; p < 128; ++p) {
    uint32_t ss = 0;
    for (int i = 0; i < 512; ++i) {
      const uint32_t xi = fp32(DType::kBf16, element(x, DType::kBf16, p * 512 + i));
      const uint32_t sq = act_eval(ActFunc::kSquare, fp32_add(fp32_mul(xi, float_to_bits(1.0f)), 0));
      ss = i == 0 ? sq : fp32_add(ss, sq);
    }
    const uint32_t rs = act_eval(ActFunc::kRsqrt, fp32_add(fp32_mul(ss, float_to_bits(0.001953125f)), float_to_bits(1e-6f)));
    for (int i = 0; i < 512; ++i) {
      const uint32_t xn = fp32_mul(fp32(DType::kBf16, element(x, DType::kBf16, p * 512 + i)), rs);
      const uint32_t want = to_bf16(fp32_mul(xn, fp32(DType::kBf16, element(g, DType::kBf16, i))));
      const uint32_t got = element(y, DType::kBf16, p * 512 + i);
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << fmt::format("y[{}][{}]: expected {:04x}, found {:04x}", p, i, want, got);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

CoreResult run_text(const std::string& text) {
  const Program p = assemble(text, "t.s");
  CoreModel core(CoreConfig{}, p);
  return core.run();
}

// The per-instruction record the lockstep comparison uses: one record per instruction, and
// the recorded writes, replayed in completion order over the loaded tensors, give exactly the
// end state of SBUF and HBM (nothing written is left out of a record, nothing recorded that
// did not happen); every matmul's record covers its PSUM rectangle.
TEST(Core, EffectsReplayedInOrderGiveTheEndState) {
  for (const char* name : {"softmax.s", "rmsnorm.s", "attention_head.s", "gemm_fp8_double_row.s"}) {
    SCOPED_TRACE(name);
    const Program prog = assemble_file(kPrograms + name);
    CoreModel core(CoreConfig{}, prog);
    core.load_tensors();
    std::map<std::pair<CoreMemory, uint64_t>, LineWrite> replay;
    size_t records = 0, psum_lines = 0;
    core.on_effects([&](const InstrEffects& e) {
      ++records;
      for (const auto& [key, line] : e.writes) {
        LineWrite& r = replay[key];
        for (int b = 0; b < kLineBytes; ++b)
          if (line.mask >> b & 1) r.data[b] = line.data[b];
        r.mask |= line.mask;
        psum_lines += key.first == CoreMemory::kPsum;
      }
    });
    const CoreResult r = core.run();
    ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
    EXPECT_EQ(records, prog.instructions());
    bool matmuls = false;
    for (const auto& in : prog.queues[static_cast<int>(isa::Queue::kPe)])
      matmuls |= in.opcode == isa::Opcode::kMultiplyMoving;
    EXPECT_EQ(psum_lines > 0, matmuls);
    // Every SBUF and HBM byte a record wrote holds its last recorded value.
    size_t compared = 0;
    for (const auto& [key, line] : replay) {
      for (int b = 0; b < kLineBytes; ++b) {
        if (!(line.mask >> b & 1)) continue;
        const uint64_t a = key.second + static_cast<uint64_t>(b);
        uint8_t now = 0;
        if (key.first == CoreMemory::kSbuf)
          now = static_cast<uint8_t>(core.sbuf().read(static_cast<int>(a / kSbufPartitionStride),
                                                      static_cast<uint32_t>(a % kSbufPartitionStride), 1));
        else if (key.first == CoreMemory::kHbm)
          now = core.hbm().read(a);
        else
          continue;  // PSUM: checked through the evictions that read it
        ASSERT_EQ(now, line.data[b]) << core_memory_name(key.first) << " byte 0x" << std::hex << a;
        ++compared;
      }
    }
    EXPECT_GT(compared, 0u);
    // Every output byte that differs from its initial value was recorded as written.
    for (const auto& t : prog.tensors) {
      if (!t.output) continue;
      const std::vector<uint8_t> now = core.tensor_bytes(t), before = tensor_init_bytes(t);
      for (size_t i = 0; i < now.size(); ++i) {
        if (now[i] == before[i]) continue;
        const uint64_t a = t.hbm ? t.addr + i
                                 : (t.partition + i / t.bytes()) * kSbufPartitionStride + t.addr + i % t.bytes();
        const auto it = replay.find({t.hbm ? CoreMemory::kHbm : CoreMemory::kSbuf, a / kLineBytes * kLineBytes});
        ASSERT_TRUE(it != replay.end() && (it->second.mask >> (a % kLineBytes) & 1))
            << "tensor " << t.name << " byte " << i << " changed but no record wrote it";
      }
    }
  }
}

TEST(Core, DeadlockNamesEveryWaitingQueue) {
  const CoreResult r = run_text(R"(.sem a
.sem b
.sem c
.queue pe
sem_wait a>=1
sem_signal b
.queue dve
sem_wait b>=1
sem_signal a
.queue act
sem_signal c
sem_wait c>=5
)");
  ASSERT_EQ(r.status, CoreStatus::kDeadlock);
  EXPECT_NE(r.message.find("pe waits at instruction 0 (t.s:5:1: nop) for semaphore a >= 1 (it is 0)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("dve waits at instruction 0 (t.s:8:1: nop) for semaphore b >= 1 (it is 0)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("act waits at instruction 1 (t.s:12:1: nop) for semaphore c >= 5 (it is 1)"), std::string::npos) << r.message;
}

TEST(Core, ANopSignalFencesEarlierInstructionsOfItsQueue) {
  // pe: a matmul (its results land in PSUM a pipeline drain after it stops streaming), then a
  // bare sem_signal; dve waits for it and copies the PSUM bank out. The signal may only fire
  // once the matmul's results have landed, so dve must copy them, not the zeros before.
  const Program p = assemble(R"(.sem done
.queue pe
nc_matmul dtype=bf16 k=16 m=16 n=64 stationary=0 moving=0x100 stride=2 psum_bank=3
sem_signal done
.queue dve
tensor_copy partitions=16 src0=psum:3*PSUM_BANK src0_ap=[[1,64]] dst=0x1000 dst_ap=[[1,64]] wait=done>=1
)",
                             "t.s");
  CoreModel core(CoreConfig{}, p);
  for (int part = 0; part < 16; ++part)
    for (uint32_t i = 0; i < 256; ++i)
      core.sbuf().write(part, 2 * i, 2, to_bf16(float_to_bits(static_cast<float>((i + part) % 7 + 1))));
  const CoreResult r = core.run();
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 64; ++n) {
      const uint32_t want = core.tensor_engine().psum(m, 3, n);
      ASSERT_NE(want, 0u);
      ASSERT_EQ(core.sbuf().read(m, 0x1000 + 4 * n, 4), want) << m << " " << n;
    }
}

TEST(Core, AnIllegalBuiltInstructionStopsWithADecodeError) {
  ProgramBuilder b;
  b.nop(isa::Queue::kDve);
  CoreInstr ls;
  ls.opcode = isa::Opcode::kLoadStationary;
  ls.te = load_stationary(DType::kBf16, 8, 8, 0, 2);
  b.push(isa::Queue::kDve, ls);  // a tensor-engine instruction in the vector engine's queue
  const Program p = b.take();
  CoreModel core(CoreConfig{}, p);
  const CoreResult r = core.run();
  ASSERT_EQ(r.status, CoreStatus::kError);
  EXPECT_EQ(r.error, CoreError::kDecode);
  EXPECT_NE(r.message.find("dve instruction 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("wrong_queue: load_stationary may not sit in the dve queue"), std::string::npos) << r.message;

  ProgramBuilder wide;
  VeInstruction v;
  v.start_partition = 200;  // 7 bits
  wide.dve(v);
  const Program pw = wide.take();
  CoreModel core2(CoreConfig{}, pw);
  const CoreResult rw = core2.run();
  ASSERT_EQ(rw.error, CoreError::kDecode);
  EXPECT_NE(rw.message.find("start_partition: 200 does not fit in 7 bits"), std::string::npos) << rw.message;
}

TEST(Core, SemaphoreOverflowStopsWithAnError) {
  const CoreResult r = run_text(".sem a 65535\n.queue dve\nsem_increment a+=1\n");
  ASSERT_EQ(r.status, CoreStatus::kError);
  EXPECT_EQ(r.error, CoreError::kSemOverflow);
  EXPECT_NE(r.message.find("t.s:3:1"), std::string::npos) << r.message;
}

TEST(Core, EngineRefusalStopsWithAnErrorNamingTheInstruction) {
  // A multiply_moving before any load_stationary: only the engine's state can tell.
  const CoreResult r = run_text(R"(.queue pe
start:
  nop
  multiply_moving k=8 n=64 sbuf_stride=2
  nop
)");
  ASSERT_EQ(r.status, CoreStatus::kError);
  EXPECT_EQ(r.error, CoreError::kTensorRefused);
  EXPECT_NE(r.message.find("t.s:4:3 (start+1)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("no stationary loaded"), std::string::npos) << r.message;
}

// ---- random programs with random semaphore graphs ------------------------------------------

// Instruction i writes its own SBUF region (partitions 0..31, 64 FP32 words at 256 * (i + 1))
// and reads regions of instructions it depends on (directly or through its queue's order), or
// the initial region 0. Each queue's semaphore counts its completed instructions; instruction
// i waits for one random earlier instruction. Execution one at a time in program order must
// give the same memory as the core, whatever its timing.
struct RandomProgram {
  Program prog;
  std::vector<std::pair<int, size_t>> order;  // (queue, index) in global order
};

constexpr int kRegionParts = 32, kRegionWords = 64;
uint32_t region(int i) { return static_cast<uint32_t>(256 * (i + 1)); }

RandomProgram random_program(SplitMix64& rng, int n) {
  RandomProgram rp;
  ProgramBuilder b("random");
  const int sem[3] = {b.semaphore("dve_done"), b.semaphore("act_done"), b.semaphore("sp_done")};
  const isa::Queue queues[3] = {isa::Queue::kDve, isa::Queue::kAct, isa::Queue::kSp};
  std::vector<int> queue_of(n);
  std::vector<size_t> index_of(n);
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));  // before[i][j]: j done before i starts
  size_t count[3] = {0, 0, 0};
  std::vector<int> last_in_queue(3, -1);
  for (int i = 0; i < n; ++i) {
    const int q = static_cast<int>(rng.next() % 3);
    queue_of[i] = q;
    index_of[i] = count[q]++;
    const int dep = i > 0 && rng.next() % 4 ? static_cast<int>(rng.next() % i) : -1;
    for (int src : {dep, last_in_queue[q]}) {
      if (src < 0) continue;
      before[i][src] = true;
      for (int k = 0; k < n; ++k)
        if (before[src][k]) before[i][k] = true;
    }
    last_in_queue[q] = i;
    // Sources: regions of instructions surely done, or the initial region (-1).
    std::vector<int> done{-1};
    for (int k = 0; k < i; ++k)
      if (before[i][k]) done.push_back(k);
    const int s0 = done[rng.next() % done.size()], s1 = done[rng.next() % done.size()];
    auto access = [](int r) {
      return VeAccess{MemSpace::kSbuf, static_cast<int>(r < 0 ? 0u : region(r)), {kRegionWords, 1, 1, 1}, {1, 0, 0, 0}};
    };
    ProgramBuilder::Ref ref = [&]() {
      if (q == 2) {
        DmaDescriptor d;
        d.hbm_addr = (rng.next() % 4) * 8192;
        d.sbuf_addr = region(i);
        d.bytes = kRegionWords * 4;
        d.count1 = kRegionParts;
        d.hbm_stride1 = 256;
        d.sbuf_stride1 = kSbufPartitionStride;
        return b.dma(d, 0);  // one DMA engine: completions in order, so sp_done counts them
      }
      VeInstruction v;
      v.partitions = kRegionParts;
      v.src0 = access(s0);
      v.src1 = access(s1);
      v.dst = access(i);
      if (q == 1) {
        v.act_func = static_cast<ActFunc>(rng.next() % ncore::isa::kNumActFunc);
        v.s0 = float_to_bits(0.25f);
        return b.act(v);
      }
      const int kind = static_cast<int>(rng.next() % 3);
      v.opcode = kind == 0 ? Opcode::kTensorTensor : kind == 1 ? Opcode::kTensorScalar : Opcode::kTensorCopy;
      v.op0 = kind == 0 ? (rng.next() % 2 ? AluOp::kAdd : AluOp::kMax) : AluOp::kMultiply;
      v.s0 = float_to_bits(0.5f);
      return b.dve(v);
    }();
    ref.signal(sem[q]);
    if (dep >= 0) ref.wait(sem[queue_of[dep]], static_cast<uint32_t>(index_of[dep] + 1));
    rp.order.push_back({static_cast<int>(queues[q]), index_of[i]});
  }
  rp.prog = b.take();
  return rp;
}

void fill_inputs(CoreModel& core, Sbuf& ref_sbuf, SparseMemory& ref_hbm, uint64_t seed) {
  SplitMix64 rng(seed);
  for (int p = 0; p < kRegionParts; ++p)
    for (int w = 0; w < kRegionWords; ++w) {
      const uint32_t v = float_to_bits(static_cast<float>(rng.next() >> 40) / 4194304.0f - 2.0f);
      core.sbuf().write(p, 4 * w, 4, v);
      ref_sbuf.write(p, 4 * w, 4, v);
    }
  for (uint64_t a = 0; a < 4 * 8192 + 8192; ++a) {
    const uint8_t v = static_cast<uint8_t>(rng.next() >> 56) & 0x3F;  // small positive floats
    core.hbm().write(a, v);
    ref_hbm.write(a, v);
  }
}

TEST(Core, RandomSemaphoreGraphsMatchOneAtATimeExecution) {
  const uint64_t seed = test::test_seed(7);
  for (int trial = 0; trial < 40; ++trial) {
    SplitMix64 rng(seed + trial);
    const RandomProgram rp = random_program(rng, 30);
    // The reference: one instruction at a time in program order, on the engines' models.
    VeConfig vcfg, scfg;
    scfg.scalar_engine = true;
    CoreConfig other;  // other DMA timing: a narrow window, long tails
    other.dependency_cycles = 3;
    other.dma_timing.window = 4;
    other.dma_timing.read_tail_cycles = 200;
    other.dma_timing.write_tail_cycles = 100;
    for (const CoreConfig& cfg : {CoreConfig{}, other}) {
      CoreModel core(cfg, rp.prog);
      VeMemory r2(vcfg);
      SparseMemory h2;
      fill_inputs(core, r2.sbuf, h2, seed + trial);
      const CoreResult res = core.run();
      ASSERT_EQ(res.status, CoreStatus::kDone) << "trial " << trial << ": " << res.message;
      for (const auto& [q, i] : rp.order) {
        const CoreInstr& in = rp.prog.queues[q][i];
        if (in.opcode == isa::Opcode::kDmaCopy) {
          for (const auto& [h, s] : dma_bursts(in.dma))
            for (int k = 0; k < kDmaBurstBytes; ++k)
              r2.sbuf.write(static_cast<int>(s / kSbufPartitionStride), static_cast<uint32_t>(s % kSbufPartitionStride) + k, 1, h2.read(h + k));
        } else {
          const VeConfig& c = in.opcode == isa::Opcode::kActivation ? scfg : vcfg;
          ve_apply(ve_writes(in.ve, c, r2), in.ve, r2);
        }
      }
      for (int p = 0; p < kRegionParts; ++p)
        for (uint32_t a = 0; a < region(30); a += 4)
          ASSERT_EQ(core.sbuf().read(p, a, 4), r2.sbuf.read(p, a, 4))
              << fmt::format("trial {} (NCORE_SEED={} reproduces trial 0 as {}): partition {} byte {:#x}", trial, seed, seed + trial, p, a);
    }
  }
}

// ---- timing only (ncore run --no-data) -------------------------------------------------------

// Everything a run reports but data: status and error, cycles, per-queue statistics, MACs,
// DMA bytes, semaphores and every instruction's issue, start and complete cycle.
void expect_same_timing(const CoreResult& data, const CoreResult& timing, const std::string& what) {
  EXPECT_EQ(data.status, timing.status) << what;
  EXPECT_EQ(data.error, timing.error) << what;
  EXPECT_EQ(data.message, timing.message) << what;
  EXPECT_EQ(data.cycles, timing.cycles) << what;
  for (int q = 0; q < isa::kNumQueue; ++q) {
    EXPECT_EQ(data.queues[q].instructions, timing.queues[q].instructions) << what << " queue " << q;
    EXPECT_EQ(data.queues[q].busy_cycles, timing.queues[q].busy_cycles) << what << " queue " << q;
    EXPECT_EQ(data.queues[q].wait_cycles, timing.queues[q].wait_cycles) << what << " queue " << q;
  }
  EXPECT_EQ(data.te_macs, timing.te_macs) << what;
  EXPECT_EQ(data.dma_bytes, timing.dma_bytes) << what;
  EXPECT_EQ(data.dma_busy_cycles, timing.dma_busy_cycles) << what;
  EXPECT_EQ(data.semaphores, timing.semaphores) << what;
  ASSERT_EQ(data.timeline.size(), timing.timeline.size()) << what;
  for (size_t i = 0; i < data.timeline.size(); ++i) {
    const InstrTiming &a = data.timeline[i], &b = timing.timeline[i];
    EXPECT_TRUE(a.queue == b.queue && a.index == b.index && a.issue == b.issue && a.start == b.start &&
                a.complete == b.complete)
        << what << ": timeline entry " << i;
  }
}

struct TwoRuns {
  CoreResult data, timing;
  bool timing_output_zero = true;  // every output byte of the timing-only run is 0
  bool data_output_nonzero = false;
};

TwoRuns run_both_ways(const Program& p, CoreConfig cfg) {
  TwoRuns r;
  for (bool timing_only : {false, true}) {
    cfg.timing_only = timing_only;
    CoreModel core(cfg, p);
    core.load_tensors();
    core.record_timeline(true);
    (timing_only ? r.timing : r.data) = core.run();
    for (const auto& t : p.tensors) {
      if (!t.output) continue;
      for (uint8_t byte : core.tensor_bytes(t)) (timing_only ? r.timing_output_zero : r.data_output_nonzero) =
          timing_only ? r.timing_output_zero && byte == 0 : r.data_output_nonzero || byte != 0;
    }
  }
  return r;
}

// Every example, at full size and at size 8 (where the big ones stop with the same error).
TEST(Core, TimingOnlyRunsTakeTheSameCyclesOnEveryExample) {
  std::vector<std::string> files;
  for (const char* dir : {"", "small/", "system/", "gaps/"})
    for (const auto& f : std::filesystem::directory_iterator(kPrograms + dir))
      if (f.path().extension() == ".s") files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 14u);
  int computed = 0;
  for (const std::string& file : files) {
    // The system examples are SPMD programs for the 8 cores of a chip: core 0's, run alone.
    const bool spmd = file.find("/system/") != std::string::npos;
    const Program p = assemble_file(file, spmd_symbols(0, 0, 1, spmd ? 8 : 1));
    for (int size : {128, 8}) {
      CoreConfig cfg;
      cfg.te.rows = cfg.te.cols = cfg.lanes = size;
      const TwoRuns r = run_both_ways(p, cfg);
      const std::string what = fmt::format("{} at size {}", file, size);
      expect_same_timing(r.data, r.timing, what);
      EXPECT_TRUE(r.timing_output_zero) << what << ": a timing-only run computed an output";
      computed += r.data_output_nonzero;
    }
  }
  EXPECT_GE(computed, 10) << "the runs with data should compute outputs";
}

TEST(Core, TimingOnlyRunsTakeTheSameCyclesOnRandomPrograms) {
  const uint64_t seed = test::test_seed(29);
  for (int trial = 0; trial < 20; ++trial) {
    SplitMix64 rng(seed + trial);
    const TwoRuns r = run_both_ways(random_program(rng, 30).prog, CoreConfig{});
    expect_same_timing(r.data, r.timing, fmt::format("trial {} (NCORE_SEED={} reproduces it as trial 0)", trial, seed + trial));
  }
}

TEST(Core, TimingOnlyRunsRaiseTheSameRefusals) {
  // The tensor engine refuses a multiply_moving without a stationary: its state, not its data.
  const Program p = assemble(R"(.queue pe
  load_stationary k=8 m=8 sbuf_stride=2 row_split=1 row_tile=0
  multiply_moving k=8 n=64 sbuf_stride=2
)", "t.s");
  const TwoRuns r = run_both_ways(p, CoreConfig{});
  ASSERT_EQ(r.data.status, CoreStatus::kError);
  EXPECT_EQ(r.data.error, CoreError::kTensorRefused);
  expect_same_timing(r.data, r.timing, "refusal");
}

TEST(Core, TimingOnlyCoreRecordsNoEffects) {
  CoreConfig cfg;
  cfg.timing_only = true;
  const Program p = assemble(".queue pe\n  nop\n", "t.s");
  CoreModel core(cfg, p);
  EXPECT_THROW(core.on_effects([](const InstrEffects&) {}), Error);
}

// Steps the DMA timing model from `now` until it is idle (or cycle 100,000), event by event:
// the cycle each of `engines` was first seen done (absent: never).
std::map<int, uint64_t> run_until_idle(model::HbmDmaTransfers& dma, uint64_t now, const std::vector<int>& engines) {
  std::map<int, uint64_t> end;
  while (dma.busy() && now < 100'000) {
    const uint64_t next = dma.next_event(now);
    EXPECT_NE(next, model::kNoEvent) << "busy with no next event at cycle " << now;
    if (next == model::kNoEvent) break;
    dma.advance(now, next);
    now = next;
    for (const int e : engines)
      if (!end.count(e) && dma.done(e)) end[e] = now;
  }
  return end;
}

// The core's DMA timing model shares a pseudo-channel's reads fairly, as the RTL's round-robin
// ports and interconnect and its oldest-first scheduler do: two engines on two ports reading
// 1 KiB each from two banks of one bank group (one burst every tCCD_L = 4 cycles between them)
// finish together, after the group has served all 64 bursts. Served oldest first, the first
// engine would finish in half the time. They begin once the refreshes pulled in after reset
// (each holding a bank for tRFCpb) are over.
TEST(Core, DmaTimingSharesAChannelsReadsFairly) {
  model::HbmDmaTransfers dma{model::HbmDmaConfig{}};
  const model::HbmConfig hbm = model::core_hbm_config();
  constexpr uint64_t kStart = 1000;
  std::array<uint64_t, 2> addr{0, 4 * 1024};  // banks 0 and 4 of channel 0: both in group 0
  for (const uint64_t a : addr) {
    const model::HbmAddress m = model::hbm_map(a, hbm.channels, hbm.xor_hash);
    ASSERT_EQ(m.channel, 0);
    ASSERT_EQ(m.bank % model::kHbmBankGroups, 0);
  }
  for (int e = 0; e < 2; ++e) {
    model::DmaDescriptor d;
    d.engine = static_cast<uint64_t>(e);
    d.hbm_addr = addr[static_cast<size_t>(e)];
    d.bytes = 1024;
    dma.begin(e, d, kStart);
  }
  const std::map<int, uint64_t> ends = run_until_idle(dma, kStart, {0, 1});
  ASSERT_EQ(ends.size(), 2u);
  const std::array<uint64_t, 2> end{ends.at(0), ends.at(1)};
  EXPECT_LE(std::max(end[0], end[1]) - std::min(end[0], end[1]), 1u) << end[0] << " " << end[1];
  EXPECT_GE(std::min(end[0], end[1]), kStart + 64u * static_cast<uint64_t>(hbm.timing.ccd_l));
}

// Head-of-line blocking at a DMA port (issue 50), as the RTL core's ports hold a request until
// its channel takes it: while engines 0 and 1 (ports 0 and 1) fill channel 0's read queue
// between them, port 0 waits for its turn there, and its engine 4, reading 8 KiB alone in
// channel 4, moves only as fast as port 0's share of channel 0. Engine 6 does the same on port 2
// and is not held. With engine 0 alone in channel 0, its own port's share holds nothing back
// (engine 4 then only shares port 0's burst a cycle with it).
TEST(Core, DmaTimingHoldsAPortBehindAFullReadQueue) {
  const model::HbmConfig hbm = model::core_hbm_config();
  const auto run = [&](std::vector<std::pair<int, uint64_t>> reads) {  // (engine, address) of 8 KiB each
    model::HbmDmaTransfers dma{model::HbmDmaConfig{}};
    constexpr uint64_t kStart = 1000;
    for (const auto& [e, addr] : reads) {
      model::DmaDescriptor d;
      d.engine = static_cast<uint64_t>(e);
      d.hbm_addr = addr;
      d.bytes = 8 * 1024;
      dma.begin(e, d, kStart);
    }
    std::vector<int> engines;
    for (const auto& [e, addr] : reads) engines.push_back(e);
    std::map<int, uint64_t> took = run_until_idle(dma, kStart, engines);
    for (auto& [e, at] : took) at -= kStart;
    return took;
  };
  const uint64_t ch0 = 0, ch0_upper = 8 * 1024, ch4 = 4 * 16 * 1024, ch6 = 6 * 16 * 1024;
  for (const uint64_t a : {ch0, ch0_upper, ch4, ch6})
    ASSERT_EQ(model::hbm_map(a, hbm.channels, hbm.xor_hash).channel, static_cast<int>(a / (16 * 1024)));
  const auto held = run({{0, ch0}, {1, ch0_upper}, {4, ch4}, {6, ch6}});
  const auto alone = run({{0, ch0}, {4, ch4}, {6, ch6}});
  fmt::print("8 KiB in cycles: engine 4 {} held, {} not; engine 6 {} and {}\n", held.at(4), alone.at(4),
             held.at(6), alone.at(6));
  EXPECT_GT(held.at(4), held.at(6) * 3 / 2);  // port 0 waits on channel 0 at half its rate
  EXPECT_EQ(held.at(6), alone.at(6));
  EXPECT_LE(alone.at(4), alone.at(6) * 21 / 20);  // port 0's one burst a cycle, shared with engine 0
}

// A crowded bank group behind a full read queue serves its reads oldest first (issue 50): four
// engines on four ports, begun 40 cycles apart, each read 4 KiB from banks 0 and 4 of channel 0
// (both in bank group 0), far more than the 64-entry queue holds. The first begun ends well
// before the last, as the RTL's engines keep the stagger they entered with; in equal shares they
// would all end within a few of those 40-cycle steps of each other.
TEST(Core, DmaTimingServesACrowdedGroupBehindAFullQueueOldestFirst) {
  model::HbmDmaTransfers dma{model::HbmDmaConfig{}};
  constexpr uint64_t kStart = 1000, kStep = 40;
  std::array<uint64_t, 4> end{};
  uint64_t now = kStart;
  for (int e = 0; e < 4; ++e) {
    model::DmaDescriptor d;
    d.engine = static_cast<uint64_t>(e);
    d.hbm_addr = (e % 2) * 4 * 1024;  // bank 0 or bank 4 of channel 0
    d.bytes = 1024;
    d.count1 = 4;
    d.hbm_stride1 = 0;  // the same 1 KiB row four times
    if (e) {
      dma.advance(now, now + kStep);
      now += kStep;
    }
    dma.begin(e, d, now);
  }
  for (const auto& [e, at] : run_until_idle(dma, now, {0, 1, 2, 3})) end[static_cast<size_t>(e)] = at;
  fmt::print("ends: {} {} {} {}\n", end[0], end[1], end[2], end[3]);
  for (const uint64_t t : end) ASSERT_GT(t, 0u);
  EXPECT_LT(end[0], end[1]);
  EXPECT_LT(end[1], end[2]);
  EXPECT_LT(end[2], end[3]);
  EXPECT_GT(end[3] - end[0], 4 * 128u);  // at least the 128 bursts of one engine at tCCD_L = 4 apart
}

TEST(Core, TimingParametersChangeCyclesNotResults) {
  CoreConfig slow;
  slow.dependency_cycles = 400;
  slow.dma_timing.window = 8;
  Ran a = run_program("softmax.s"), b = run_program("softmax.s", slow);
  ASSERT_EQ(a.result.status, CoreStatus::kDone);
  ASSERT_EQ(b.result.status, CoreStatus::kDone);
  EXPECT_GT(b.result.cycles, a.result.cycles);
  EXPECT_EQ(a.core->tensor_bytes(*a.prog.tensor("Y")), b.core->tensor_bytes(*b.prog.tensor("Y")));
}

}  // namespace
}  // namespace ncore::model


namespace ncore::model {
namespace {

// The cc queue of a lone core (model::LoneCollectives): one member in every group, so each
// collective copies src to dst; it ends cc_latency_cycles plus its bytes read and written at
// the core's HBM rate after it starts, in order; a bad one stops the core naming it.
TEST(Core, LoneCoreCollectivesCopyInOrderAndRefuseBadOnes) {
  const Program p = assemble(R"(
.tensor X hbm addr=0 dtype=fp32 shape=64 init=random seed=3
.tensor Y hbm addr=0x1000 dtype=fp32 shape=64 output
.tensor Z hbm addr=0x2000 dtype=fp32 shape=64 output
.sem done
.queue cc
  all_reduce src=X dst=Y bytes=256 signal=done+=1
  all_gather src=Y dst=Z bytes=256 algo=ring signal=done+=1
)", "cc.s");
  CoreConfig cfg;
  CoreModel core(cfg, p);
  core.load_tensors();
  core.record_timeline(true);
  const CoreResult r = core.run();
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  EXPECT_EQ(core.tensor_bytes(*p.tensor("Y")), tensor_init_bytes(*p.tensor("X")));
  EXPECT_EQ(core.tensor_bytes(*p.tensor("Z")), tensor_init_bytes(*p.tensor("X")));
  EXPECT_EQ(r.semaphores[0], 2u);
  const auto move = static_cast<uint64_t>(std::ceil(2.0 * 256 / cfg.hbm_bytes_per_cycle));
  // The second starts when the first ends; the run's count includes the cycle the last signal
  // lands in (as the RTL core's cycle counter does).
  // The first issues once the cc queue's first instructions have arrived from the image.
  ASSERT_FALSE(r.timeline.empty());
  EXPECT_GT(r.timeline.front().issue, 0u);
  EXPECT_EQ(r.cycles, r.timeline.front().issue + 2 * (cfg.cc_latency_cycles + move) + 1);
  EXPECT_EQ(r.queues[static_cast<int>(isa::Queue::kCc)].instructions, 2u);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"all_reduce dtype=int8 src=0 dst=0x100 bytes=64", "dtype: dtype int8: a collective takes fp32 or bf16"},
      {"all_to_all src=0 dst=0x100 bytes=48", "size: bytes 48: expected a positive multiple of 32"},
      {"reduce_scatter src=0 dst=0xFFFFFFE0 bytes=64", "range: src 0x0 + 64 bytes or dst 0xffffffe0 + 64 bytes"},
  };
  for (const auto& [line, why] : bad) {
    const Program b = assemble(".queue cc\n  all_reduce src=0 dst=0x100 bytes=32\n  " + line + "\n", "bad.s");
    CoreModel c(cfg, b);
    const CoreResult e = c.run();
    EXPECT_EQ(e.status, CoreStatus::kError) << line;
    EXPECT_EQ(e.error, CoreError::kCcRefused) << line;
    EXPECT_EQ(e.error_queue, static_cast<int>(isa::Queue::kCc));
    EXPECT_EQ(e.error_index, 1u);
    EXPECT_NE(e.message.find(why), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("bad.s:3"), std::string::npos) << e.message;
  }
}

}  // namespace
}  // namespace ncore::model
