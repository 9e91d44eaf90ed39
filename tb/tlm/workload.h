#pragma once
// A data-parallel training step: every core of every chip runs a GEMM program for each of
// `layers` layers (its backward pass), and each layer's gradients are all-reduced across the
// chips while the next layer computes.
//
// The cores run in the TLM system (NeuronCore modules on each chip's bus, their outputs written
// to HBM). The all-reduce of one layer is simulated on the NeuronLink fabric by run_collective
// (real data when it fits); the step's timeline then puts the all-reduces one after another on
// the fabric, each starting when its layer's gradients are ready. The model has no resource that
// compute and links share (gradients leave HBM far faster than a link takes them), so this
// composition is what one simulation of both would give.
// Every core runs the same program on the same data; a back-end is deterministic, so the program
// runs once per back-end and every core replays its cycles and outputs.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/core/program.h"
#include "tb/tlm/collective.h"
#include "tb/tlm/neuron_core.h"
#include "tb/tlm/system_config.h"

namespace ncore::tlmsys {

struct DpStepOptions {
  CoreBackend backend = CoreBackend::kGolden;
  int rtl_size = 8;
  int layers = 4;
  CollectiveAlgo algo = CollectiveAlgo::kTorus2dSplit;
  uint64_t gradient_bytes = 0;  // per layer and chip; 0: the program's output bytes x cores
};

struct DpStepResult {
  uint64_t core_cycles = 0;         // one layer on one core
  double core_te_utilization = 0;
  double layer_compute_us = 0;      // all cores of a chip, outputs written to HBM
  double allreduce_us = 0;          // one layer's gradients across the chips
  uint64_t gradient_bytes = 0;
  bool gradients_checked = false;   // the all-reduce carried real data, checked bit for bit
  double compute_us = 0, communication_us = 0, step_us = 0;
  double overlap = 0;               // share of the communication hidden behind compute
  std::vector<std::pair<std::string, uint64_t>> output_checksums;
};

DpStepResult run_dp_step(const SystemConfig& config, const model::Program& program, const DpStepOptions& options);
nlohmann::json to_json(const DpStepResult& r);

}  // namespace ncore::tlmsys
