// libFuzzer harness: instruction words run on the size-8 RTL NeuronCore in co-simulation with
// the golden core (tb/core/core_sim.h). Input: a queue byte, then up to kMaxWords words of 128
// bytes each (tests/fuzz/fuzz_words.h), all placed in that one queue. One queue, because
// instructions of different queues without semaphores between them race, and the golden core's
// timing is a model: their order may differ and so may the data, without a bug.
// Properties:
//  - the RTL core never hangs: it finishes, raises an error or reports a deadlock by itself
//    (its watchdog counts as a hang unless the golden core agrees);
//  - an illegal word (the model decoder refuses it) raises Decode at that instruction; the RTL
//    gets the raw word, the golden core an instruction it refuses the same way;
//  - everything else matches the golden core bit for bit: status, error code, queue and
//    instruction, semaphores, every SBUF byte and every HBM burst written.
// The words follow kLeadNops nops, more than the queue's fetch buffer holds, so that they are
// fetched from the image into buffer slots already used once (issue 47).
// Inputs whose DMA would move more than kMaxDmaBytes are skipped: the run would be long, not
// interesting. The DMA engine field is set to 0 so that one engine runs the descriptors in order;
// a dma_list gets at most 64 entries, from the random HBM data.

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "model/core/core_isa.h"
#include "model/common/error.h"
#include "model/core/program.h"
#include "tb/core/core_sim.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_words.h"

using namespace ncore;

namespace {

constexpr size_t kMaxWords = 6;
constexpr size_t kLeadNops = 40;  // past the 32-instruction fetch buffer (model::FetchConfig)
constexpr uint64_t kMaxDmaBytes = 256 * 1024;
constexpr uint64_t kMaxCycles = 400'000;

// Data for the instructions to work on: random HBM and SBUF contents.
void add_tensors(model::Program& p) {
  model::TensorDecl h;
  h.name = "hbm_data";
  h.hbm = true;
  h.dtype = model::DType::kBf16;
  h.shape = {32768};
  h.init = model::TensorInit::kRandom;
  h.seed = 11;
  p.tensors.push_back(h);
  model::TensorDecl s;
  s.name = "sbuf_data";
  s.hbm = false;
  s.partition = 0;
  s.dtype = model::DType::kBf16;
  s.shape = {8, 4096};
  s.init = model::TensorInit::kRandom;
  s.seed = 12;
  p.tensors.push_back(s);
}

// An instruction both decoders refuse (a semaphore number too wide to encode): the golden
// core's stand-in for an illegal word.
model::CoreInstr refused_instruction() {
  model::CoreInstr in = model::default_instr(isa::Opcode::kNop);
  in.wait_en = true;
  in.wait_sem = 1 << 20;
  return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + fuzz::kWordBytes / 2) return 0;
  const int q = data[0] % isa::kNumQueue;
  const auto queue = static_cast<isa::Queue>(q);
  model::Program program;
  program.name = "fuzz";
  add_tensors(program);
  tb::CoreSimOptions options;
  options.size = 8;
  options.watchdog = 20'000;
  options.max_cycles = kMaxCycles;

  std::string listing = fmt::format("  ({} nops)\n", kLeadNops);
  program.queues[q].assign(kLeadNops, model::default_instr(isa::Opcode::kNop));
  for (size_t at = 1, i = kLeadNops; at < size && i < kLeadNops + kMaxWords; at += fuzz::kWordBytes, ++i) {
    const isa::Word w = fuzz::word_from_bytes(data + at, size - at);
    model::CoreInstr in;
    if (model::decode(w, queue, &in) != model::DecodeError::kNone) {
      program.queues[q].push_back(refused_instruction());
      options.raw_words[{q, i}] = w;
      listing += "  (illegal word)\n";
      break;  // nothing after it issues
    }
    if (in.opcode == isa::Opcode::kDmaCopy) {
      const model::DmaDescriptor& d = in.dma;
      if (d.bytes * d.count1 * d.count2 > kMaxDmaBytes) return 0;
      in.dma.engine = 0;
    }
    if (in.opcode == isa::Opcode::kDmaList) {  // a short list over the random HBM data (entries
      // mostly malformed or refused; its address keeps its low bits, so misaligned lists too)
      in.list.engine = 0;
      in.list.count = 1 + in.list.count % 64;
      in.list.list_addr %= 65536 - 64 * model::kDmaListEntryBytes;
    }
    listing += "  " + model::disassemble(in) + "\n";
    program.queues[q].push_back(in);
  }

  const tb::CoreSimResult r = tb::run_core_rtl(program, options);
  const std::string what = fmt::format("queue {}:\n{}", model::queue_name(queue), listing);
  if (r.status == model::CoreStatus::kWatchdog && r.cycles >= kMaxCycles) return 0;  // long, not hung
  fuzz::check(r.compared, "nothing compared\n" + what);
  fuzz::check(r.ok, fmt::format("RTL and golden core differ: {}\n{}RTL: {} {}", r.failure, what,
                                   model::core_status_name(r.status), r.message));
  return 0;
}
