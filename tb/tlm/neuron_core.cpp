#include "tb/tlm/neuron_core.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

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

// The golden core's DMA transfers as TLM transactions to the chip's HBM: one payload per engine
// (an engine has one transfer at a time), done when the chip answers BEGIN_RESP.
class NeuronCore::ChipTransfers : public model::DmaTransferModel {
 public:
  ChipTransfers(NeuronCore& core, int engines) : core_(core), engines_(static_cast<size_t>(engines)) {
    for (auto& e : engines_) e.payload.set_extension(&e.extension);
  }
  ~ChipTransfers() override {
    for (auto& e : engines_) e.payload.clear_extension(&e.extension);
  }
  void begin(int engine, const model::DmaDescriptor& d, uint64_t) override {
    Engine& e = engines_[static_cast<size_t>(engine)];
    e.active = true;
    e.done = false;
    e.extension.descriptor = d;
    e.extension.core = core_.index_;
    e.extension.engine = engine;
    e.extension.bytes_per_cycle = core_.config_.dma_engine_bytes_per_cycle;
    e.extension.core_clock_ghz = core_.clock_ghz_;
    e.payload.set_command(d.to_hbm ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND);
    e.payload.set_address(d.hbm_addr);
    e.payload.set_data_ptr(nullptr);  // timing only: the core moves the data when it retires
    e.payload.set_data_length(static_cast<unsigned int>(std::min<uint64_t>(d.bytes * d.count1 * d.count2, UINT32_MAX)));
    e.payload.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
    ::tlm::tlm_phase phase = ::tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    const auto status = core_.hbm->nb_transport_fw(e.payload, phase, delay);
    if (status == ::tlm::TLM_COMPLETED)
      throw Error(fmt::format("chip {} core {}: DMA engine {}: the chip's HBM refused a transfer at {:#x}: {}",
                              core_.chip_, core_.index_, engine, d.hbm_addr, e.payload.get_response_string()));
  }
  bool done(int engine) const override { return engines_[static_cast<size_t>(engine)].done; }
  void retire(int engine) override { engines_[static_cast<size_t>(engine)].active = false; }
  uint64_t next_event(uint64_t) const override { return model::kNoEvent; }
  void advance(uint64_t, uint64_t) override {}
  bool busy() const override {
    for (const auto& e : engines_)
      if (e.active && !e.done) return true;
    return false;
  }
  // The chip answered: the transfer of this payload has ended.
  void finished(const ::tlm::tlm_generic_payload& t) {
    for (auto& e : engines_)
      if (&e.payload == &t) e.done = true;
  }

 private:
  struct Engine {
    ::tlm::tlm_generic_payload payload;
    DmaTransferExtension extension;
    bool active = false, done = false;
  };
  NeuronCore& core_;
  std::vector<Engine> engines_;
};

NeuronCore::NeuronCore(sc_core::sc_module_name name, int chip, int index, double clock_ghz)
    : sc_module(name), bus("bus"), hbm("hbm"), chip_(chip), index_(index), clock_ghz_(clock_ghz) {
  hbm.register_nb_transport_bw(this, &NeuronCore::nb_transport_bw);
}

NeuronCore::~NeuronCore() = default;

Ps NeuronCore::ps_of_cycle(uint64_t cycle) const {
  return static_cast<Ps>(std::ceil(static_cast<double>(cycle) * 1000.0 / clock_ghz_ - 1e-6));
}

uint64_t NeuronCore::cycle_of_ps(Ps ps) const {
  auto c = static_cast<uint64_t>(std::floor(static_cast<double>(ps) * clock_ghz_ / 1000.0));
  while (c > 0 && ps_of_cycle(c - 1) >= ps) --c;
  while (ps_of_cycle(c) < ps) ++c;
  return c;
}

void NeuronCore::load(const model::Program& program, const model::CoreConfig& config, model::SparseMemory& memory,
                      model::CollectiveEngine* collectives) {
  config_ = config;
  config_.clock_ghz = clock_ghz_;
  transfers_ = std::make_unique<ChipTransfers>(*this, config_.dma_engines);
  core_ = std::make_unique<model::CoreModel>(config_, program, &memory, transfers_.get(), collectives);
  core_->load_tensors();
}

std::string NeuronCore::waiting() const { return core_ ? core_->waiting_report() : std::string(); }

::tlm::tlm_sync_enum NeuronCore::nb_transport_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                                  sc_core::sc_time&) {
  if (phase == ::tlm::BEGIN_RESP) {
    transfers_->finished(t);
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
  return ::tlm::TLM_COMPLETED;
}

void NeuronCore::run_program() {
  if (!core_) return;
  model::CoreModel& core = *core_;
  for (;;) {
    if (core.settle()) break;
    const uint64_t next = core.next_event();
    // Nothing of its own is due and no transfer can end: a deadlock (or past the watchdog).
    if (next == model::kNoEvent ? !core.waiting_outside() : next > config_.watchdog_cycles) {
      if (core.stalled(next)) break;
    }
    const Ps now = ps_of(sc_core::sc_time_stamp());
    if (next == model::kNoEvent)
      sc_core::wait(wake_);
    else
      sc_core::wait(time_of(std::max(ps_of_cycle(next), now) - now), wake_);
    core.advance_to(std::min(next, cycle_of_ps(ps_of(sc_core::sc_time_stamp()))));
  }
  result_ = core.finish();
  finished_ = true;
}

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
