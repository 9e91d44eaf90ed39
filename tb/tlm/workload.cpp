#include "tb/tlm/workload.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "tb/tlm/system.h"

namespace ncore::tlmsys {

DpStepResult run_dp_step(const SystemConfig& config, const model::Program& program, const DpStepOptions& options) {
  if (options.layers < 1) throw Error(fmt::format("--layers: expected at least 1, found {}", options.layers));
  DpStepResult result;
  const CoreRun core = run_core_backend(program, options.backend, options.rtl_size);
  result.core_cycles = core.cycles;
  result.core_te_utilization = core.te_utilization;
  result.output_checksums = core.output_checksums;
  uint64_t output_bytes = 0;
  for (const auto& [name, bytes] : core.outputs) output_bytes += bytes.size();
  if (output_bytes == 0) throw Error("dp-step: the program declares no output tensor (its gradients)");

  // Compute: every core of every chip runs each layer; a layer is ready when all have written it.
  System::reset_kernel();
  System system(config);
  const uint64_t window = (output_bytes + kStackInterleave - 1) / kStackInterleave * kStackInterleave;
  std::vector<Ps> layer_ready(options.layers, 0);
  for (int c = 0; c < system.chips(); ++c) {
    for (auto& nc : system.chip(c).cores) {
      NeuronCore* raw = nc.get();
      System::spawn([raw, &core, &layer_ready, window, &options] {
        for (int l = 0; l < options.layers; ++l) {
          raw->run(core, (uint64_t(l) * 64 + raw->index()) * window);
          layer_ready[l] = std::max(layer_ready[l], ps_of(sc_core::sc_time_stamp()));
        }
      });
    }
  }
  System::simulate();
  result.layer_compute_us = double(layer_ready[0]) / 1e6;
  result.compute_us = double(layer_ready.back()) / 1e6;

  // One layer's all-reduce on the fabric, real data when it fits.
  CollectiveOptions co;
  co.op = CollectiveOp::kAllReduce;
  co.algo = options.algo;
  const uint64_t granule = collective_granule(config, options.algo);
  const uint64_t wanted = options.gradient_bytes ? options.gradient_bytes : output_bytes * config.chip.cores;
  co.bytes = (wanted + granule - 1) / granule * granule;
  co.data = co.bytes <= (uint64_t{1} << 28) / uint64_t(config.chips());
  const CollectiveResult ar = run_collective(config, co);
  result.gradient_bytes = co.bytes;
  result.allreduce_us = ar.sim_time_us;
  result.gradients_checked = ar.data_checked;

  // The timeline: all-reduces in layer order, each once its layer is ready and the fabric is free.
  double fabric_free = 0;
  for (int l = 0; l < options.layers; ++l) {
    const double start = std::max(double(layer_ready[l]) / 1e6, fabric_free);
    fabric_free = start + ar.sim_time_us;
  }
  result.communication_us = options.layers * ar.sim_time_us;
  result.step_us = fabric_free;
  result.overlap = (result.compute_us + result.communication_us - result.step_us) / result.communication_us;
  return result;
}

nlohmann::json to_json(const DpStepResult& r) {
  nlohmann::json checks = nlohmann::json::object();
  for (const auto& [name, sum] : r.output_checksums) checks[name] = fmt::format("{:016x}", sum);
  return nlohmann::json{{"core_cycles", r.core_cycles},
                        {"core_te_utilization", r.core_te_utilization},
                        {"layer_compute_us", r.layer_compute_us},
                        {"allreduce_us", r.allreduce_us},
                        {"gradient_bytes", r.gradient_bytes},
                        {"gradients_checked", r.gradients_checked},
                        {"compute_us", r.compute_us},
                        {"communication_us", r.communication_us},
                        {"step_us", r.step_us},
                        {"overlap", r.overlap},
                        {"output_checksums", checks}};
}

}  // namespace ncore::tlmsys
