// libFuzzer harness: one instruction word in one queue. Input: a queue byte, then the word's
// 128 bytes (tests/fuzz/fuzz_words.h). Properties:
//  - the RTL decoder (rtl/core/nc_isa_decode.sv) gives the model decoder's verdict and header;
//  - a word the decoder accepts has no bit it ignores: re-encoding the decoded instruction gives
//    the word back;
//  - its disassembly assembles to the same word, unless an engine refuses it without looking at
//    any state (then the assembler, stricter than the decoder by design, refuses it too, and the
//    core raises the engine's error at run time: fuzz_core checks that).

#include <memory>

#include <fmt/format.h>

#include "Vnc_isa_decode.h"
#include "model/core/collective_engine.h"
#include "model/core/core_isa.h"
#include "model/core/program.h"
#include "model/tensor/tensor_engine.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_words.h"

using namespace ncore;

namespace {

std::string hex(const isa::Word& w) {
  std::string s;
  for (int i = isa::kWordU64 - 1; i >= 0; --i) s += fmt::format("{:016x}", w[i]);
  return s;
}

// Whether the instruction's engine refuses it whatever its state (the assembler's check).
bool engine_refuses(const model::CoreInstr& in) {
  switch (model::format_of(in.opcode)) {
    case isa::Format::kVe: {
      model::VeConfig cfg;
      cfg.scalar_engine = in.opcode == isa::Opcode::kActivation;
      return model::ve_check(in.ve, cfg, nullptr) != model::VeError::kNone;
    }
    case isa::Format::kTe: {
      static const model::TensorEngine te;
      const model::TeError e = te.check(in.te);
      return e != model::TeError::kNone && e != model::TeError::kNoStationary && e != model::TeError::kKMismatch &&
             e != model::TeError::kModeMismatch;
    }
    case isa::Format::kDma: return model::dma_check(in.dma, uint64_t{1} << 32) != model::DmaError::kNone;
    case isa::Format::kList: return model::dma_list_check(in.list, uint64_t{1} << 32) != model::DmaError::kNone;
    case isa::Format::kCc: {
      std::string why;
      return model::cc_check(in.cc, 1, 32, uint64_t{1} << 40, &why) != isa::CcError::kNone;
    }
    default: return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto queue = static_cast<isa::Queue>(data[0] % isa::kNumQueue);
  const isa::Word word = fuzz::word_from_bytes(data + 1, size - 1);

  static auto dut = std::make_unique<Vnc_isa_decode>();
  for (int i = 0; i < isa::kWordU64; ++i) {
    dut->instr_i[2 * i] = static_cast<uint32_t>(word[i]);
    dut->instr_i[2 * i + 1] = static_cast<uint32_t>(word[i] >> 32);
  }
  dut->queue_i = static_cast<uint8_t>(queue);
  dut->eval();

  model::CoreInstr in;
  std::string why;
  const model::DecodeError verdict = model::decode(word, queue, &in, &why);
  const std::string where = fmt::format("queue {} word {}", model::queue_name(queue), hex(word));
  fuzz::check(dut->err_o == static_cast<int>(verdict),
              fmt::format("{}: RTL decoder verdict {}, model {} ({})", where, dut->err_o,
                          static_cast<int>(verdict), why));
  fuzz::check(dut->header_o == isa::get_bits(word, 0, isa::kFormats[0].bits),
              fmt::format("{}: RTL header differs", where));
  if (verdict != model::DecodeError::kNone) return 0;

  const isa::Word again = model::encode(in);
  fuzz::check(again == word, fmt::format("{}: accepted, but re-encodes as {}: a bit is ignored", where, hex(again)));

  if (engine_refuses(in)) return 0;
  fuzz::check_disassembly_round_trip(in, queue, word, where);
  return 0;
}
