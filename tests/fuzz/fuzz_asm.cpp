// libFuzzer harness: assembler text. Properties:
//  - the assembler either returns a program or throws AsmError naming fuzz.s, a line and a
//    column within the text (no other exception, no crash, no hang);
//  - every instruction of a program it returns encodes, decodes in its queue without error, and
//    its disassembly assembles to the same word.

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "model/core/core_isa.h"
#include "model/core/program.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_words.h"

using namespace ncore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  model::Program p;
  try {
    p = model::assemble(text, "fuzz.s");
  } catch (const model::AsmError& e) {
    const std::string what = e.what();
    fuzz::check(what.rfind("fuzz.s:", 0) == 0, "error does not start with the file name: " + what);
    // .rept bodies and .if blocks stay within the text, so the line does too.
    fuzz::check(e.line >= 1 && e.line <= lines && e.col >= 1,
                fmt::format("error at line {} col {} of a {}-line text: {}", e.line, e.col, lines, what));
    return 0;
  }
  for (int q = 0; q < isa::kNumQueue; ++q) {
    const auto queue = static_cast<isa::Queue>(q);
    for (size_t i = 0; i < p.queues[q].size(); ++i) {
      const model::CoreInstr& in = p.queues[q][i];
      const std::string where = fmt::format("{}[{}] from {}", model::queue_name(queue), i, in.loc.str());
      isa::Word w;
      try {
        w = model::encode(in);
      } catch (const Error& e) {
        fuzz::fail(where + ": assembled, but does not encode: " + e.what());
      }
      std::string why;
      fuzz::check(model::decode(w, queue, nullptr, &why) == model::DecodeError::kNone,
                  where + ": assembled, but the decoder refuses it: " + why);
      fuzz::check_disassembly_round_trip(in, queue, w, where);
    }
  }
  return 0;
}
