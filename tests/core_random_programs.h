#pragma once
// Random NeuronCore programs over every engine operation, shared by the RTL core's tests
// (tests/test_core_rtl.cpp) and the golden-core timing benchmark (tests/bench_core.cpp).

#include "model/common/numerics.h"
#include "model/core/program.h"

namespace ncore::test {

// Random programs over every engine operation, at any core size:
//  - dve and act run random programs of every vector opcode and every activation function
//    (tb/vector/ve_random: every type, ALU operation, rounding, partition range and 1-4-D access
//    pattern, performance-mode layouts included) over their own SBUF areas, their inputs loaded
//    as tensors;
//  - pe runs up to 8 steps of LS + MM in a random mode (dense FP32 or BF16, FP8 double-row,
//    4:8 / 4:12 / 4:16 sparse, transpose, two MMs on the diagonal tiles of a 2x2 tiling), each
//    into a PSUM bank of its own, evicted to SBUF by a dve copy that waits for it;
//  - sp hands loads and stores to all 16 DMA engines, each on regions of its own; half the
//    loads go as descriptor lists in the image, a row an entry.
// Nothing races, so any timing gives the same memory: the RTL must match the golden core.
model::Program random_engine_mix(model::SplitMix64& rng, int size);

}  // namespace ncore::test
