// Writes the fuzzers' seed corpora from the example programs:
//   fuzz_seeds OUT_DIR PROGRAM.s...
// OUT_DIR/isa: one file per instruction (queue byte + word); OUT_DIR/core: one file per queue of
// each program (queue byte + its first words); OUT_DIR/asm: the programs' texts;
// OUT_DIR/hbm_trace: a few small traces; OUT_DIR/tlm_config: the named systems' configurations.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "model/core/core_isa.h"
#include "model/core/program.h"
#include "tests/fuzz/fuzz_words.h"

using namespace ncore;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fuzz_seeds OUT_DIR PROGRAM.s...\n";
    return 2;
  }
  const fs::path out = argv[1];
  for (const char* d : {"isa", "core", "asm", "hbm_trace", "tlm_config"}) fs::create_directories(out / d);
  write(out / "hbm_trace" / "mixed", "# cycle dir addr bytes\n0 R 0x0 64\n4 W 1000 128\n4 r 0x2000 32\n9 w 3fe0 32\n");
  write(out / "hbm_trace" / "end", "0 R fffffe0 32\n1 W 0x8000 4096\n");
  write(out / "tlm_config" / "chip", R"({"system": "chip"})");
  write(out / "tlm_config" / "trn2u", R"({"system": "trn2u", "quantum_ns": 500, "chip": {"cores": 8,
    "hbm_stacks": 4, "link": {"gbps": 128, "hop_latency_us": 1.0}, "z_link": {"gbps": 64}}})");
  write(out / "tlm_config" / "torus", R"({"x": 2, "y": 8, "z": 1, "chip": {"reduce_gbps": 500.5}})");
  // dma_list words (no example has one: their lists live in HBM): lists over the fuzzer's data.
  {
    std::string words;
    for (const auto& [addr, count] : {std::pair<uint64_t, uint64_t>{0x100, 8}, {0x20, 3}, {0x1010, 2}}) {
      model::CoreInstr in = model::default_instr(isa::Opcode::kDmaList);
      in.list.list_addr = addr;
      in.list.count = count;
      words += fuzz::word_to_bytes(model::encode(in));
    }
    const std::string sp(1, static_cast<char>(isa::Queue::kSp));
    write(out / "core" / "dma_list", sp + words);
    write(out / "isa" / "dma_list", sp + words.substr(0, fuzz::kWordBytes));
  }
  int files = 0;
  for (int a = 2; a < argc; ++a) {
    const fs::path src = argv[a];
    std::ifstream in(src);
    std::stringstream text;
    text << in.rdbuf();
    write(out / "asm" / src.filename(), text.str());
    const model::Program p = model::assemble_file(src.string());
    for (int q = 0; q < isa::kNumQueue; ++q) {
      const std::string queue_byte(1, static_cast<char>(q));
      std::string words;
      for (size_t i = 0; i < p.queues[q].size(); ++i) {
        const std::string w = fuzz::word_to_bytes(model::encode(p.queues[q][i]));
        write(out / "isa" / fmt::format("{}_{}_{}", src.stem().string(), q, i), queue_byte + w);
        if (i < 6) words += w;
        ++files;
      }
      if (!words.empty()) write(out / "core" / fmt::format("{}_{}", src.stem().string(), q), queue_byte + words);
    }
  }
  std::cout << "fuzz_seeds: " << files << " words from " << argc - 2 << " programs\n";
  return 0;
}
