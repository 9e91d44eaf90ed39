#include "tb/tlm/neuron_core.h"

#include <fmt/format.h>

#include "model/core/core_model.h"
#include "model/common/error.h"
#include "tb/core/core_sim.h"

namespace ncore::tlmsys {

CoreBackend parse_core_backend(const std::string& name) {
  if (name == "golden") return CoreBackend::kGolden;
  if (name == "rtl") return CoreBackend::kRtl;
  throw Error(fmt::format("--core-engine: expected golden or rtl, found '{}'", name));
}

CoreRun run_core_backend(const model::Program& program, CoreBackend backend, int rtl_size) {
  CoreRun out;
  if (backend == CoreBackend::kGolden) {
    model::CoreConfig config;
    model::CoreModel core(config, program);
    core.load_tensors();
    const model::CoreResult r = core.run();
    if (r.status != model::CoreStatus::kDone)
      throw Error(fmt::format("golden core: {} ({})", model::core_status_name(r.status), r.message));
    out.cycles = r.cycles;
    out.te_utilization = r.te_utilization(config);
    for (const auto& t : program.tensors)
      if (t.output) out.outputs.emplace_back(t.name, core.tensor_bytes(t));
  } else {
    tb::CoreSimOptions options;
    options.size = rtl_size;
    options.cosim = false;
    const tb::CoreSimResult r = tb::run_core_rtl(program, options);
    if (r.status != model::CoreStatus::kDone)
      throw Error(fmt::format("RTL core: {} ({})", model::core_status_name(r.status), r.message));
    out.cycles = r.cycles;
    out.te_utilization = r.te_utilization(rtl_size);
    out.outputs = r.outputs;
  }
  for (const auto& [name, bytes] : out.outputs) out.output_checksums.emplace_back(name, model::fnv1a(bytes));
  return out;
}

NeuronCore::NeuronCore(sc_core::sc_module_name name, int index, double clock_ghz)
    : sc_module(name), bus("bus"), index_(index), clock_ghz_(clock_ghz) {}

void NeuronCore::run(const CoreRun& result, uint64_t hbm_window) {
  // The program's time, at the core clock.
  sc_core::wait(sc_core::sc_time(double(result.cycles) / clock_ghz_, sc_core::SC_NS));
  // Its outputs to the chip's HBM, one 4 KiB piece per transaction (the stack interleave).
  uint64_t addr = hbm_window;
  for (const auto& [name, bytes] : result.outputs) {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    for (uint64_t done = 0; done < bytes.size();) {
      const uint64_t piece = std::min<uint64_t>(bytes.size() - done, kStackInterleave - (addr + done) % kStackInterleave);
      ::tlm::tlm_generic_payload t;
      t.set_command(::tlm::TLM_WRITE_COMMAND);
      t.set_address(addr + done);
      t.set_data_ptr(const_cast<uint8_t*>(bytes.data() + done));
      t.set_data_length(static_cast<unsigned int>(piece));
      t.set_streaming_width(static_cast<unsigned int>(piece));
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      bus->b_transport(t, d);  // pieces stream in parallel over the stacks: keep the longest
      if (t.get_response_status() != ::tlm::TLM_OK_RESPONSE)
        throw Error(fmt::format("core {}: writing output '{}' at {:#x}: {}", index_, name, addr + done,
                                t.get_response_string()));
      delay = std::max(delay, d);
      done += piece;
    }
    sc_core::wait(delay);
    addr += (bytes.size() + kStackInterleave - 1) / kStackInterleave * kStackInterleave;
  }
}

}  // namespace ncore::tlmsys
