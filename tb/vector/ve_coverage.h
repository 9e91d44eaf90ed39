#pragma once
// The vector and scalar engines' functional coverage: one bin per accepted instruction,
// opcode x output type x partition class ("all", "many": more than a quadrant, "quadrant",
// "few": less than one), e.g. "affine_select bf16 quadrant". Counted by VeSim when
// NCORE_COVERAGE_DIR is set (written there as vector_<lanes>-*.bins or scalar_<lanes>-*.bins;
// scripts/coverage merges and reports them) or when its options ask (count_bins). A refused
// instruction exercised no datapath and hits no bin.

#include <set>
#include <string>

#include "model/vector/vector_engine.h"

namespace ncore::tb {

std::string ve_cross_bin(const model::VeInstruction& in, const model::VeConfig& cfg);
// The bins the engine's rules allow (model::ve_check): transpose and shuffle take whole
// quadrants; bn_stats and bn_aggr write float types; affine_select no int32. scripts/coverage
// (reachable_vector_bins) says the same.
std::set<std::string> ve_reachable_bins(bool scalar_engine);

}  // namespace ncore::tb
