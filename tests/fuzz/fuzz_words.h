#pragma once
// Fuzz input as instruction words: 128 little-endian bytes per 1024-bit word, the last one
// zero-padded. fuzz_seeds writes the example programs' words in the same layout.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "model/core/core_isa.h"
#include "model/core/program.h"
#include "tests/fuzz/fuzz_check.h"

namespace ncore::fuzz {

inline constexpr size_t kWordBytes = isa::kWordBits / 8;

inline isa::Word word_from_bytes(const uint8_t* data, size_t size) {
  isa::Word w{};
  uint8_t bytes[kWordBytes] = {};
  std::memcpy(bytes, data, std::min(size, kWordBytes));
  for (int i = 0; i < isa::kWordU64; ++i)
    for (int b = 7; b >= 0; --b) w[i] = (w[i] << 8) | bytes[8 * i + b];
  return w;
}

inline std::string word_to_bytes(const isa::Word& w) {
  std::string s(kWordBytes, '\0');
  for (int i = 0; i < isa::kWordU64; ++i)
    for (int b = 0; b < 8; ++b) s[8 * i + b] = static_cast<char>(w[i] >> (8 * b));
  return s;
}

// Thirty-two semaphore declarations and the queue directive, so that a disassembled line (which
// names semaphores s0..s31) assembles on its own.
inline std::string disassembly_prelude(isa::Queue q) {
  std::string text;
  for (int i = 0; i < model::kNumSemaphores; ++i) text += ".sem x" + std::to_string(i) + "\n";
  return text + ".queue " + std::string(model::queue_name(q)) + "\n";
}

// Checks that the instruction's disassembly assembles (alone in its queue) to `word`.
inline void check_disassembly_round_trip(const model::CoreInstr& in, isa::Queue queue, const isa::Word& word,
                                         const std::string& where) {
  const std::string line = model::disassemble(in);
  model::Program back;
  try {
    back = model::assemble(disassembly_prelude(queue) + line + "\n", "disassembly.s");
  } catch (const model::AsmError& e) {
    fail(where + ": its disassembly does not assemble\n  " + line + "\n  " + e.what());
  }
  const auto& q = back.queues[static_cast<int>(queue)];
  check(q.size() == 1 && model::encode(q[0]) == word, where + ": disassembly assembles to a different word\n  " + line);
}

}  // namespace ncore::fuzz
