#pragma once
// Programs with bad descriptor lists, shared by the golden core's tests (tests/test_dma_lists.cpp)
// and the RTL core's (tests/test_core_rtl.cpp), which run them on both cores.

#include <string>
#include <utility>
#include <vector>

#include "model/core/image.h"
#include "model/core/program.h"

namespace ncore::test {

// Entries the engine refuses as it loads them: the list goes on and completes, and the core
// stops with the first bad entry's code, naming the dma_list and the entry.
inline std::vector<std::pair<std::string, model::Program>> bad_entry_programs() {
  using namespace model;
  std::vector<std::pair<std::string, Program>> out;
  DmaDescriptor good;
  good.hbm_addr = 0x10000;
  good.bytes = 32;
  for (int k = 0; k < 4; ++k) {
    ProgramBuilder b("bad_entry");
    const int sem = b.semaphore("done");
    std::vector<DmaDescriptor> entries(3, good);
    entries[2].sbuf_addr = 64;
    std::string name;
    if (k == 0) { entries[1].count1 = 0; name = "zero"; }
    if (k == 1) { entries[1].hbm_addr = kCoreHbmBytes - 32; entries[1].bytes = 64; name = "hbm_range"; }
    if (k == 2) { entries[1].to_hbm = true; name = "image"; }  // hbm_addr: the image's base, below
    if (k == 3) name = "descriptor";
    b.nop(isa::Queue::kSp);
    if (k < 3) {
      b.dma_list(1, b.list("l", entries)).signal(sem);
    } else {  // engine bits set in HBM: only a list the program writes can hold that
      TensorDecl t;
      t.name = "L";
      t.addr = 0x200000;
      t.dtype = DType::kInt8;
      t.shape = {3 * 32};
      t.init = TensorInit::kData;
      for (const DmaDescriptor& d : entries) {
        const auto e = dma_list_entry(d);
        t.data.insert(t.data.end(), e.begin(), e.end());
      }
      t.data[32] |= 0x3;  // entry 1's engine field
      b.tensor(t);
      CoreInstr in = default_instr(isa::Opcode::kDmaList);
      in.list.engine = 1;
      in.list.list_addr = t.addr;
      in.list.count = 3;
      b.push(isa::Queue::kSp, in).signal(sem);
    }
    Program p = b.take();
    if (k == 2) p.lists[0].entries[1].hbm_addr = layout_image(p, kCoreHbmBytes).base;
    out.emplace_back(name, std::move(p));
  }
  return out;
}


// dma_list instructions the core refuses at issue, each the last instruction of sp: (name,
// program, code).
struct BadList {
  std::string name;
  model::Program program;
  model::DmaError code;
};
inline std::vector<BadList> bad_list_programs() {
  using namespace model;
  const std::string common = R"(
.tensor X hbm addr=0x10000 dtype=int8 shape=64x32 init=random seed=3
.list good
.rept r 64
  descriptor dir=hbm_to_sbuf hbm_addr=X+r*32 sbuf_addr=r*32 bytes=32
.endr
.endlist
.queue sp
nop
)";
  struct Case {
    const char* name;
    uint64_t addr, count;  // a built dma_list (the assembler refuses these itself)
    DmaError code;
  };
  const Case cases[] = {
      {"misaligned", 0x10010, 4, DmaError::kAlign},
      {"past HBM", 0xFFFFFFE0, 2, DmaError::kHbmRange},
      {"zero entries", 0x10000, 0, DmaError::kZero},
      {"over the sp stream", 0, 4, DmaError::kListImage},
      {"a ninth on an open list", 0, 0, DmaError::kListLength},
  };
  std::vector<BadList> out;
  for (const Case& c : cases) {
    Program p;
    if (c.code == DmaError::kListLength) {
      p = assemble(common + ".rept k 8\ndma_copy engine=2 dir=hbm_to_sbuf hbm_addr=X sbuf_addr=0 bytes=32 last=0\n"
                            ".endr\ndma_list engine=2 list=good\n", "bad.s");
    } else {
      p = assemble(common, "bad.s");
      CoreInstr in = default_instr(isa::Opcode::kDmaList);
      in.list.engine = 2;
      in.list.list_addr = c.addr;
      in.list.count = c.count;
      p.queues[3].push_back(in);
      if (c.code == DmaError::kListImage) p.queues[3].back().list.list_addr = layout_image(p, kCoreHbmBytes).stream[3] + 64;
    }
    out.push_back({c.name, std::move(p), c.code});
  }
  return out;
}

}  // namespace ncore::test
