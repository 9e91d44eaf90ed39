// Programs of any size (issue 47): the program image in HBM (layout, placement, bad input) and
// the golden core's instruction fetch (streams many times its buffer, fetch stalls under DMA
// load, the same results with fetch as without).

#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/core/core_model.h"
#include "model/core/image.h"
#include "model/core/program.h"

namespace ncore::model {
namespace {

const std::string kPrograms = NCORE_SOURCE_DIR "/tests/programs/";

// `n` nops on dve, then one copy that signals: a stream of n + 1 instructions.
std::string long_stream(int n, const std::string& extra = "") {
  return fmt::format(
      ".sem s\n{}.tensor a sbuf addr=0 dtype=fp32 shape=8x4 init=random seed=5\n"
      ".tensor b sbuf addr=0x100 dtype=fp32 shape=8x4 output\n.queue dve\n.rept i {}\nnop\n.endr\n"
      "tensor_copy partitions=8 src0=a src0_ap=[[1,4]] dst=b dst_ap=[[1,4]] signal=s+=1\n",
      extra, n);
}

CoreResult run(const Program& p, CoreConfig cfg = {}) {
  CoreModel core(cfg, p);
  core.load_tensors();
  return core.run();
}

TEST(ProgramImage, DefaultLayoutSitsAtTheTopOfHbmOneAlignedStreamPerQueue) {
  const Program p = assemble(".queue pe\nnop\nnop\n.queue sp\nnop\n.queue cc\nnop\nnop\nnop\n", "layout.s");
  const ImageLayout l = layout_image(p, kCoreHbmBytes);
  EXPECT_FALSE(l.placed);
  // Streams in queue order, each on a 4 KiB boundary; empty queues take no space.
  EXPECT_EQ(l.stream[0], l.base);
  EXPECT_EQ(l.stream[3], l.base + kImageAlign);
  EXPECT_EQ(l.stream[4], l.base + 2 * kImageAlign);
  EXPECT_EQ(l.bytes, 2 * kImageAlign + 3 * kInstrBytes);
  EXPECT_EQ(l.base % kImageAlign, 0u);
  EXPECT_LE(l.base + l.bytes, kCoreHbmBytes);
  EXPECT_GT(l.base + l.bytes + kImageAlign, kCoreHbmBytes);  // as high as it fits
  EXPECT_EQ(l.instr_addr(4, 2), l.stream[4] + 2 * kInstrBytes);
  // Below a given top, and within a window of it.
  const ImageLayout low = layout_image(p, kCoreHbmBytes, uint64_t{1} << 30);
  EXPECT_LT(low.base + low.bytes, (uint64_t{1} << 30) + 1);
  EXPECT_THROW(layout_image(p, kCoreHbmBytes, uint64_t{1} << 30, 4096), Error);
}

// The default layout within a window: the image lies in [top - window, top), alignment padding
// included, and one byte less is refused.
TEST(ProgramImage, DefaultLayoutFitsItsWindowToTheByte) {
  const Program p = assemble(".queue dve\nnop\nnop\nnop\n", "window.s");
  const uint64_t top = (uint64_t{1} << 30) + 100;  // not aligned: the image ends below it
  const ImageLayout l = layout_image(p, kCoreHbmBytes, top, top - ((uint64_t{1} << 30) - kImageAlign));
  EXPECT_EQ(l.base, (uint64_t{1} << 30) - kImageAlign);
  EXPECT_EQ(l.bytes, 3 * kInstrBytes);
  EXPECT_THROW(layout_image(p, kCoreHbmBytes, top, top - l.base - 1), Error);
}

TEST(ProgramImage, ImageDirectivePlacesItAndTheImageHoldsTheEncodedWords) {
  const Program p = assemble(".image 0x10000000\n.queue act\nnop\n.queue dve\nnop\nnop\n", "placed.s");
  ASSERT_TRUE(p.image_addr);
  const ImageLayout l = layout_image(p, kCoreHbmBytes);
  EXPECT_TRUE(l.placed);
  EXPECT_EQ(l.stream[1], 0x10000000u);
  EXPECT_EQ(l.stream[2], 0x10000000u + kImageAlign);
  CoreModel core(CoreConfig{}, p);
  core.load_tensors();
  for (int q : {1, 2})
    for (size_t i = 0; i < p.queues[q].size(); ++i) {
      const isa::Word w = encode(p.queues[q][i]);
      uint8_t bytes[kInstrBytes];
      core.hbm().read_block(l.instr_addr(q, i), bytes, kInstrBytes);
      for (size_t b = 0; b < kInstrBytes; ++b)
        ASSERT_EQ(bytes[b], static_cast<uint8_t>(w[b / 8] >> (8 * (b % 8)))) << "queue " << q << " word " << i << " byte " << b;
    }
}

// Bad images, table-driven: each is refused with the file, the line and what was wrong.
TEST(ProgramImage, BadImagesAreRefusedWithTheirLine) {
  struct Case {
    const char* name;
    std::string text;
    std::string expect;  // in the message
  };
  const std::vector<Case> cases = {
      {"misaligned", ".image 0x1001000\n.queue pe\nnop\n", "bad.s:1:8: expected a multiple of 16384"},
      {"outside HBM", ".image 0x100000000\n.queue pe\nnop\n", "bad.s:1:8: expected an HBM address"},
      {"negative", ".image -4096\n.queue pe\nnop\n", "bad.s:1:8: expected an HBM address"},
      {"twice", ".image 0x4000\n.image 0x8000\n.queue pe\nnop\n", "bad.s:2:1: the image is already placed at bad.s:1:1"},
      {"no address", ".image\n", "bad.s:1:1: expected '.image ADDR'"},
      {"past the end", ".image 0xFFFFC000\n.queue pe\n.rept i 200\nnop\n.endr\n", "ends past HBM"},
      {"over a tensor", ".tensor t hbm addr=0x2000 dtype=fp32 shape=64x64\n.image 0x4000\n.queue pe\nnop\n",
       "bad.s:1:1: tensor 't' [0x2000, 0x6000) overlaps the program image [0x4000, 0x4080) placed at bad.s:2:1"},
  };
  for (const Case& c : cases) {
    try {
      const Program p = assemble(c.text, "bad.s");
      FAIL() << c.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << c.name << ": " << e.what();
    }
  }
  // The default layout over a tensor at the top of HBM, and an image larger than HBM.
  const Program top = assemble(".tensor t hbm addr=0xFFFFC000 dtype=fp32 shape=1024\n.queue pe\nnop\n", "top.s");
  try {
    CoreModel core(CoreConfig{}, top);
    FAIL() << "the default layout over a tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top.s:1:1: tensor 't'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("default layout"), std::string::npos) << e.what();
  }
  const Program big = assemble(".queue pe\n.rept i 100\nnop\n.endr\n", "big.s");
  try {
    layout_image(big, 8192);
    FAIL() << "an image larger than HBM was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is larger than HBM (8192 bytes)"), std::string::npos) << e.what();
  }
}

// The golden core refuses a DMA write into the image at issue (the RTL's test: CoreRtl.
// ADmaWriteIntoTheProgramImageIsRefusedAtIssue).
TEST(ProgramImage, ADmaWriteIntoTheImageIsRefused) {
  const Program p = assemble(".image 0x80000000\n.tensor s sbuf addr=0 dtype=fp32 shape=8x16 init=random seed=3\n.queue sp\n"
      // reading the image is allowed; a store ending where the image begins too
      "dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=0x80000000 sbuf_addr=0x1000 bytes=128\n"
      "dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=0x7FFFFFC0 sbuf_addr=0 bytes=64\n"
      // 32 bytes before the image and 32 bytes of it
      "dma_copy engine=2 dir=sbuf_to_hbm hbm_addr=0x7FFFFFE0 sbuf_addr=0 bytes=64\n", "image_write.s");
  const CoreResult r = run(p);
  EXPECT_EQ(r.status, CoreStatus::kError);
  EXPECT_EQ(r.error, CoreError::kDmaRefused);
  EXPECT_EQ(r.error_queue, static_cast<int>(isa::Queue::kSp));
  EXPECT_EQ(r.error_index, 2u);
  EXPECT_NE(r.message.find("into the program image, which the core fetches its instructions and lists from: [0x7fffffe0, 0x80000020) meets the image [0x80000000, 0x80000180)"), std::string::npos)
      << r.message;
}

// A stream 100 times the buffer runs through it: every word fetched once, the run waiting on
// fetch (nops issue faster than 32-byte bursts arrive), the result the same as without fetch.
TEST(ProgramImage, AStreamManyTimesTheBufferRunsWithTheSameResult) {
  CoreConfig cfg;
  const int n = cfg.fetch.buffer * 100;
  const Program p = assemble(long_stream(n), "long.s");
  const CoreResult with = run(p, cfg);
  ASSERT_EQ(with.status, CoreStatus::kDone) << with.message;
  const auto dve = static_cast<size_t>(isa::Queue::kDve);
  EXPECT_EQ(with.queues[dve].instructions, static_cast<uint64_t>(n + 1));
  EXPECT_EQ(with.queues[dve].fetched_bytes, static_cast<uint64_t>(n + 1) * kInstrBytes);
  EXPECT_EQ(with.fetch_bytes, static_cast<uint64_t>(n + 1) * kInstrBytes);
  EXPECT_EQ(with.semaphores[0], 1u);
  // The fetch port moves a 32-byte burst a cycle at best: 4 cycles an instruction.
  EXPECT_GE(with.cycles, static_cast<uint64_t>(n + 1) * 4);
  EXPECT_GT(with.queues[dve].fetch_stall_cycles, with.cycles / 2);

  CoreConfig off = cfg;
  off.fetch.enabled = false;
  const CoreResult without = run(p, off);
  ASSERT_EQ(without.status, CoreStatus::kDone) << without.message;
  EXPECT_EQ(without.fetch_bytes, 0u);
  EXPECT_EQ(without.queues[dve].fetch_stall_cycles, 0u);
  EXPECT_LT(without.cycles, with.cycles);
  // The same outputs either way.
  CoreModel a(cfg, p), b(off, p);
  a.load_tensors();
  b.load_tensors();
  ASSERT_EQ(a.run().status, CoreStatus::kDone);
  ASSERT_EQ(b.run().status, CoreStatus::kDone);
  EXPECT_EQ(a.tensor_bytes(*p.tensor("b")), b.tensor_bytes(*p.tensor("b")));
}

// Fetch contends with DMA for HBM: streams of DMA reads through the image's pseudo-channels
// make the queue wait longer for its instructions.
TEST(ProgramImage, DmaTrafficOnTheImagesChannelsLengthensFetchStalls) {
  const int n = 400;
  // 16 engines each reading 256 KiB right below the image (its pseudo-channels, all of them).
  std::string dma = ".tensor src hbm addr=0xF0000000 dtype=bf16 shape=2048x1024 init=zero\n";
  std::string sp = ".queue sp\n";
  for (int e = 0; e < 16; ++e)
    sp += fmt::format("dma_copy engine={} hbm_addr=0xF0000000+{}*0x40000 sbuf_addr={}*SBUF_PARTITION bytes=65536 "
                      "count1=4 hbm_stride1=65536\n", e, e, e % 8);
  const Program quiet = assemble(long_stream(n), "quiet.s");
  const Program loaded = assemble(long_stream(n, dma) + sp, "loaded.s");
  const CoreResult a = run(quiet), b = run(loaded);
  ASSERT_EQ(a.status, CoreStatus::kDone) << a.message;
  ASSERT_EQ(b.status, CoreStatus::kDone) << b.message;
  const auto dve = static_cast<size_t>(isa::Queue::kDve);
  EXPECT_GT(b.queues[dve].fetch_stall_cycles, a.queues[dve].fetch_stall_cycles + a.queues[dve].fetch_stall_cycles / 4)
      << "quiet " << a.queues[dve].fetch_stall_cycles << ", under DMA " << b.queues[dve].fetch_stall_cycles;
}

// Every example program gives the same outputs with fetch as without, every word fetched once.
TEST(ProgramImage, ExamplesGiveTheSameOutputsWithFetch) {
  for (const char* name : {"softmax.s", "attention_head.s", "rmsnorm.s", "small/gemm_8.s", "small/softmax_8.s"}) {
    const Program p = assemble_file(kPrograms + name);
    CoreConfig on, off;
    if (std::string(name).rfind("small/", 0) == 0) {
      on.te.rows = on.te.cols = on.lanes = 8;
    }
    off = on;
    off.fetch.enabled = false;
    CoreModel a(on, p), b(off, p);
    a.load_tensors();
    b.load_tensors();
    const CoreResult ra = a.run(), rb = b.run();
    ASSERT_EQ(ra.status, CoreStatus::kDone) << name << ": " << ra.message;
    ASSERT_EQ(rb.status, CoreStatus::kDone) << name << ": " << rb.message;
    // (Cycles may go either way: starting later can meet less contention, attention_head.s.)
    EXPECT_EQ(ra.fetch_bytes, p.instructions() * kInstrBytes) << name;
    for (const TensorDecl& t : p.tensors)
      if (t.output) EXPECT_EQ(a.tensor_bytes(t), b.tensor_bytes(t)) << name << " tensor " << t.name;
  }
}

// A program far past any instruction memory: the 4096^3 BF16 GEMM tests/gen_gemm.py writes
// (18,930 instructions), on the golden core, every element of C against a reference computed
// here with the host's IEEE FP32 arithmetic in the tensor engine's order: per K tile the 128
// products summed in row order from +0, K tiles added in order, rounded once to BF16.
TEST(ProgramImage, Gemm4096FromTheGeneratorIsExactOnTheGoldenCore) {
  const Program p = assemble_file(NCORE_GEMM_4096);
  constexpr int K = 4096, M = 4096, N = 4096;
  // The pe queue alone is over eight times what a queue's instruction memory held before.
  EXPECT_EQ(p.queues[static_cast<int>(isa::Queue::kPe)].size(), 16958u);
  CoreModel core(CoreConfig{}, p);
  core.load_tensors();
  const CoreResult r = core.run();
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  EXPECT_EQ(r.te_macs, uint64_t{K} * M * N);
  EXPECT_EQ(r.fetch_bytes, p.instructions() * kInstrBytes);
  const auto a = tensor_init_bytes(*p.tensor("A")), b = tensor_init_bytes(*p.tensor("B"));
  const auto c = core.tensor_bytes(*p.tensor("C"));
  const auto bf16 = [](const std::vector<uint8_t>& v, size_t i) {
    const uint32_t bits = uint32_t{v[2 * i]} << 16 | uint32_t{v[2 * i + 1]} << 24;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  std::vector<float> af(size_t{K} * M), bf(size_t{K} * N);
  for (size_t i = 0; i < af.size(); ++i) af[i] = bf16(a, i);
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = bf16(b, i);
  std::vector<float> acc(N), tile(N);
  int mismatches = 0;
  for (int m = 0; m < M; ++m) {
    for (int kt = 0; kt < K / 128; ++kt) {
      std::fill(tile.begin(), tile.end(), 0.0f);
      for (int k = kt * 128; k < kt * 128 + 128; ++k) {
        const float x = af[static_cast<size_t>(k) * M + m];
        const float* row = &bf[static_cast<size_t>(k) * N];
        for (int n = 0; n < N; ++n) tile[n] += x * row[n];  // each product exact, each add rounded
      }
      for (int n = 0; n < N; ++n) acc[n] = kt == 0 ? tile[n] : acc[n] + tile[n];
    }
    for (int n = 0; n < N; ++n) {
      uint32_t bits;
      std::memcpy(&bits, &acc[n], 4);
      const uint32_t want = (bits + 0x7FFF + (bits >> 16 & 1)) >> 16;  // nearest even (finite values)
      const uint32_t got = uint32_t{c[2 * (static_cast<size_t>(m) * N + n)]} | uint32_t{c[2 * (static_cast<size_t>(m) * N + n) + 1]} << 8;
      if (want != got && mismatches++ < 5) ADD_FAILURE() << fmt::format("C[{}][{}]: expected {:04x}, found {:04x}", m, n, want, got);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace ncore::model
