// DMA descriptor lists in HBM (issue 47): the assembler's compact form, the image layout, the
// in-memory entry format, the golden core walking lists of up to 65,536 entries with outputs
// checked against the bytes they must move, and the bad inputs the core refuses.

#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/core/core_model.h"
#include "model/core/image.h"
#include "model/core/program.h"
#include "tests/dma_list_programs.h"
#include "tests/seed.h"

namespace ncore::model {
namespace {

CoreResult run(CoreModel& core) {
  core.load_tensors();
  return core.run();
}

TEST(DmaLists, AnEntryRoundTripsThroughItsThirtyTwoBytes) {
  SplitMix64 rng(test::test_seed(47));
  for (int trial = 0; trial < 200; ++trial) {
    DmaDescriptor d;
    d.to_hbm = rng.below(2);
    d.hbm_addr = rng.next() & ((uint64_t{1} << 40) - 1);
    d.sbuf_addr = rng.below(1u << 25);
    d.bytes = rng.below(1u << 17);
    d.count1 = rng.below(1u << 12);
    d.count2 = rng.below(1u << 12);
    d.hbm_stride1 = rng.next() & 0xFFFFFFFF;
    d.hbm_stride2 = rng.next() & 0xFFFFFFFF;
    d.sbuf_stride1 = rng.below(1u << 25);
    d.sbuf_stride2 = rng.below(1u << 25);
    d.transpose = rng.below(2);
    d.engine = rng.below(16);
    d.last = rng.below(2);
    const auto bytes = dma_list_entry(d);
    DmaDescriptor back;
    ASSERT_EQ(dma_list_entry_decode(bytes.data(), &back), DmaError::kNone);
    d.engine = d.last = 0;  // an entry has neither
    EXPECT_EQ(back, d) << "trial " << trial;
  }
  // Set engine, last or a bit past the format: malformed.
  DmaDescriptor d;
  auto bytes = dma_list_entry(d);
  DmaDescriptor out;
  std::string why;
  bytes[0] |= 1;  // engine bit 0
  EXPECT_EQ(dma_list_entry_decode(bytes.data(), &out, &why), DmaError::kDescriptor);
  EXPECT_NE(why.find("engine"), std::string::npos) << why;
  bytes = dma_list_entry(d);
  bytes[0] |= 1 << 5;  // last
  EXPECT_EQ(dma_list_entry_decode(bytes.data(), &out, &why), DmaError::kDescriptor);
  bytes = dma_list_entry(d);
  bytes[31] |= 0x80;  // bit 255
  EXPECT_EQ(dma_list_entry_decode(bytes.data(), &out, &why), DmaError::kDescriptor);
  EXPECT_NE(why.find("bit 255"), std::string::npos) << why;
}

// A gather: row r of X (a 16 KiB HBM tensor of 512 rows of 32 bytes) lands in SBUF partition
// r % 8 at byte 32 * (r / 8), in a permuted order, each row an entry; then one store.
constexpr char kGather[] = R"(
.sem done
.tensor X hbm addr=0x10000 dtype=int8 shape=512x32 init=random seed=3
.tensor Y hbm addr=0x80000 dtype=int8 shape=8x2048 output
.list gather
.rept r 512
  descriptor dir=hbm_to_sbuf hbm_addr=X+((r*37)%512)*32 sbuf_addr=(((r*37)%512)%8)*SBUF_PARTITION+(((r*37)%512)/8)*32 bytes=32
.endr
.endlist
.queue sp
dma_list engine=5 list=gather signal=done+=1
dma_copy engine=6 dir=sbuf_to_hbm hbm_addr=Y sbuf_addr=0 bytes=2048 count1=8 hbm_stride1=2048 sbuf_stride1=SBUF_PARTITION wait=done>=1 signal=done+=1
)";

TEST(DmaLists, AGatherListMovesEveryRowWhereItsEntrySays) {
  const Program p = assemble(kGather, "gather.s");
  ASSERT_EQ(p.lists.size(), 1u);
  EXPECT_EQ(p.lists[0].entries.size(), 512u);
  EXPECT_EQ(p.queues[3][0].list_ref, 0);
  CoreModel core(CoreConfig{}, p);
  const ImageLayout& l = core.image();
  ASSERT_EQ(l.list.size(), 1u);
  EXPECT_EQ(l.list[0] % kListAlign, 0u);
  EXPECT_GE(l.list[0], l.stream[3] + 2 * kInstrBytes);  // after the streams
  EXPECT_EQ(l.base + l.bytes, l.list[0] + 512 * kDmaListEntryBytes);
  const CoreResult r = run(core);
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  EXPECT_EQ(r.list_entries, 512u);
  ASSERT_EQ(r.list_bursts.size(), 1u);
  EXPECT_EQ(r.list_bursts[0].second, 512u);
  // The reference: X's rows rearranged by the rule, from X's own initial bytes.
  const std::vector<uint8_t> x = tensor_init_bytes(*p.tensor("X"));
  std::vector<uint8_t> want(8 * 2048);
  for (int row = 0; row < 512; ++row)
    std::memcpy(&want[(row % 8) * 2048 + (row / 8) * 32], &x[row * 32], 32);
  EXPECT_EQ(core.tensor_bytes(*p.tensor("Y")), want);
  // The image in HBM holds the entries the assembler made.
  uint8_t entry[kDmaListEntryBytes];
  core.hbm().read_block(l.list[0] + 7 * kDmaListEntryBytes, entry, sizeof entry);
  DmaDescriptor d;
  ASSERT_EQ(dma_list_entry_decode(entry, &d), DmaError::kNone);
  EXPECT_EQ(d, p.lists[0].entries[7]);
  // Timing only walks the same list in the same cycles.
  CoreConfig t;
  t.timing_only = true;
  CoreModel timing(t, p);
  const CoreResult rt = run(timing);
  EXPECT_EQ(rt.cycles, r.cycles);
  EXPECT_EQ(rt.dma_bytes, r.dma_bytes);
  fmt::print("512-entry gather: {} cycles, {} entries fetched\n", r.cycles, r.list_entries);
}

// 65,536 entries of 32 bytes: HBM -> SBUF one burst each (2 MiB), then back out in one store.
TEST(DmaLists, AListOf65536EntriesRunsOnTheGoldenCore) {
  const Program p = assemble(R"(
.sem done
.tensor X hbm addr=0 dtype=int8 shape=65536x32 init=random seed=9
.tensor Y hbm addr=0x1000000 dtype=int8 shape=128x16384 output
.list all
.rept r 65536
  descriptor dir=hbm_to_sbuf hbm_addr=X+r*32 sbuf_addr=(r%128)*SBUF_PARTITION+(r/128)*32 bytes=32
.endr
.endlist
.queue sp
dma_list engine=3 list=all signal=done+=1
dma_copy engine=4 dir=sbuf_to_hbm hbm_addr=Y sbuf_addr=0 bytes=16384 count1=128 hbm_stride1=16384 sbuf_stride1=SBUF_PARTITION wait=done>=1 signal=done+=1
)", "big.s");
  CoreModel core(CoreConfig{}, p);
  const CoreResult r = run(core);
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  EXPECT_EQ(r.list_entries, 65536u);
  EXPECT_EQ(r.queues[3].instructions, 2u);
  const std::vector<uint8_t> x = tensor_init_bytes(*p.tensor("X"));
  std::vector<uint8_t> want(128 * 16384);
  for (int row = 0; row < 65536; ++row) std::memcpy(&want[(row % 128) * 16384 + (row / 128) * 32], &x[row * 32], 32);
  EXPECT_EQ(core.tensor_bytes(*p.tensor("Y")), want);
  fmt::print("65,536 entries: {} cycles ({:.1f} cycles an entry)\n", r.cycles, r.cycles / 65536.0);
}

// A list the program writes itself: entries as an HBM tensor's data, run by address.
TEST(DmaLists, AListAtAnExplicitAddressRunsWhatHbmHolds) {
  Program p = assemble(R"(
.sem done
.tensor L hbm addr=0x200000 dtype=int8 shape=4x32
.tensor X hbm addr=0x10000 dtype=int8 shape=4x64 init=ramp
.tensor Y hbm addr=0x20000 dtype=int8 shape=4x64 output
.queue sp
dma_list engine=0 list_addr=L count=4 signal=done+=1
dma_copy engine=1 dir=sbuf_to_hbm hbm_addr=Y sbuf_addr=0 bytes=64 count1=4 hbm_stride1=64 sbuf_stride1=SBUF_PARTITION wait=done>=1 signal=done+=1
)", "explicit.s");
  TensorDecl& list = p.tensors[0];
  list.init = TensorInit::kData;
  for (int k = 0; k < 4; ++k) {  // row 3 - k of X into partition k
    DmaDescriptor d;
    d.hbm_addr = 0x10000 + 64 * (3 - k);
    d.sbuf_addr = k * kSbufPartitionStride;
    d.bytes = 64;
    const auto e = dma_list_entry(d);
    list.data.insert(list.data.end(), e.begin(), e.end());
  }
  CoreModel core(CoreConfig{}, p);
  const CoreResult r = run(core);
  ASSERT_EQ(r.status, CoreStatus::kDone) << r.message;
  std::vector<uint8_t> want(256);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 64; ++i) want[k * 64 + i] = static_cast<uint8_t>((3 - k) * 64 + i);
  EXPECT_EQ(core.tensor_bytes(*p.tensor("Y")), want);
}

TEST(DmaLists, TheAssemblerRefusesBadListsWithTheLineAndField) {
  struct Case {
    const char* text;
    int line;
    const char* expect;
  };
  const Case cases[] = {
      {".queue sp\ndma_list engine=0 list=nowhere\n", 2, "unknown list 'nowhere'"},
      {".list a\n.endlist\n", 2, "no descriptor"},
      {".list a\ndescriptor bytes=32\n", 1, "without a matching '.endlist'"},
      {"descriptor bytes=32\n", 1, "outside '.list"},
      {".endlist\n", 1, "'.endlist' without '.list'"},
      {".list a\ndescriptor bytes=32 engine=2\n.endlist\n", 2, "has no 'engine'"},
      {".list a\ndescriptor bytes=32 last=1\n.endlist\n", 2, "has no 'last'"},
      {".list a\ndescriptor bytes=32 signal=s0+=1\n.endlist\n", 2, "has no 'signal'"},
      {".list a\ndescriptor bytes=33\n.endlist\n", 2, "would refuse this descriptor (misaligned)"},
      {".list a\ndescriptor bytes=32\n.endlist\n.list a\ndescriptor bytes=32\n.endlist\n", 4, "already defined"},
      {".list a\n.list b\n", 2, "inside '.list a'"},
      {".list a\n.queue sp\n", 2, "expected 'descriptor ...' or '.endlist'"},
      {".list a\ndescriptor bytes=32\n.endlist\n.queue sp\ndma_list engine=0 list=a count=2\n", 5,
       "'count' with list="},
      {".queue sp\ndma_list engine=0 list_addr=0x20 count=0\n", 2, "would refuse this list (zero size)"},
      {".queue sp\ndma_list engine=0 list_addr=0x21 count=1\n", 2, "would refuse this list (misaligned)"},
      {".queue sp\ndma_list engine=0 list_addr=0x20 count=0x1000000\n", 2, "field count"},
      {".queue pe\ndma_list engine=0 list_addr=0x20 count=1\n", 2, "cannot go in the pe queue"},
  };
  for (const Case& c : cases) {
    try {
      assemble(c.text, "bad.s");
      ADD_FAILURE() << "assembled: " << c.text;
    } catch (const AsmError& e) {
      EXPECT_EQ(e.line, c.line) << c.text << "\n" << e.what();
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << c.text << "\n" << e.what();
    }
  }
}

// Each is refused by the golden core with dma_refused, its code and the instruction named;
// tests/test_core_rtl.cpp runs the same table on both cores.
TEST(DmaLists, BadListsAreRefusedByTheGoldenCoreNamingTheDmaList) {
  for (const test::BadList& c : test::bad_list_programs()) {
    const size_t named = c.program.queues[3].size() - 1;
    CoreModel core(CoreConfig{}, c.program);
    const CoreResult r = run(core);
    EXPECT_EQ(r.status, CoreStatus::kError) << c.name;
    EXPECT_EQ(r.error, CoreError::kDmaRefused) << c.name;
    EXPECT_EQ(r.error_queue, 3) << c.name;
    EXPECT_EQ(r.error_index, named) << c.name << ": " << r.message;
    EXPECT_NE(r.message.find(std::string(dma_error_name(c.code))), std::string::npos) << c.name << ": " << r.message;
  }
}

// Entries the engine refuses as it loads them: the list goes on and completes, and the core
// stops with the first bad entry's code, naming the dma_list and the entry.
TEST(DmaLists, ABadEntryIsRefusedWhenItsEngineLoadsItNamingTheEntry) {
  for (const auto& [name, p] : test::bad_entry_programs()) {
    CoreModel core(CoreConfig{}, p);
    const CoreResult r = run(core);
    EXPECT_EQ(r.status, CoreStatus::kError) << name;
    EXPECT_EQ(r.error, CoreError::kDmaRefused) << name;
    EXPECT_EQ(r.error_queue, 3) << name;
    EXPECT_EQ(r.error_index, 1u) << name << ": " << r.message;
    EXPECT_NE(r.message.find("entry 1 of the list"), std::string::npos) << name << ": " << r.message;
    fmt::print("{}: {}\n", name, r.message);
  }
}

}  // namespace
}  // namespace ncore::model
