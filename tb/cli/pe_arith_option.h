#pragma once
// --pe-arith logic|host-fpu: which PE arithmetic the RTL tensor engine runs (tb::PeArith;
// rtl/common/README.md, "The fast PE build"), the same option on every command that runs it.

#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "tb/common/bench_options.h"

namespace ncore::cli {

inline void add_pe_arith_option(CLI::App* cmd, tb::PeArith& o) {
  const std::map<std::string, tb::PeArith> names{{"logic", tb::PeArith::kLogic},
                                                {"host-fpu", tb::PeArith::kHostFpu}};
  cmd->add_option("--pe-arith", o,
                  "RTL: the PE array's multiply and add: logic (synthesizable) or host-fpu (the fast PE "
                  "build, proven equal; every size with -DNCORE_FAST_PE=ON)")
      ->transform(CLI::CheckedTransformer(names))
      ->default_str(tb::pe_arith_name(tb::kBuildPeArith));
}

}  // namespace ncore::cli
