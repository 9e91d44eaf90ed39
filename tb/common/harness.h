#pragma once
// What every Verilator harness does the same way: opening an FST dump and resetting the top
// (and, from coverage_dump.h, writing the coverage counters).

#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <verilated_fst_c.h>

#include "model/common/error.h"
#include "tb/common/coverage_dump.h"

namespace ncore::tb {

// Creates the dump's folder, attaches an FST writer to every level of `top` and opens `path`;
// throws ncore::Error when the file cannot be written. The model's VerilatedContext must have
// had traceEverOn(true) before the model was built.
template <class V>
std::unique_ptr<VerilatedFstC> open_fst(V& top, const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  auto fst = std::make_unique<VerilatedFstC>();
  top.trace(fst.get(), 99);
  fst->open(path.c_str());
  if (!fst->isOpen()) throw Error(fmt::format("{}: cannot open the waves file for writing", path));
  return fst;
}

// Holds rst_ni low for `cycles` clock cycles (clk_i ends low), then releases it and settles
// the model. The caller sets the top's inputs to their idle values first.
template <class V>
void hold_in_reset(V& top, int cycles = 4) {
  top.rst_ni = 0;
  top.clk_i = 0;
  for (int i = 0; i < cycles; ++i) {
    top.eval();
    top.clk_i = 1;
    top.eval();
    top.clk_i = 0;
  }
  top.rst_ni = 1;
  top.eval();
}

}  // namespace ncore::tb
