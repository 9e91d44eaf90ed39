#include "tb/tlm/neuron_core.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <deque>

#include <fmt/format.h>

#include "model/core/core_model.h"
#include "model/common/error.h"
#include "tb/core/core_sim.h"

namespace ncore::tlmsys {

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
    // dma_engine_bytes_per_cycle counts the DMA domain's cycles.
    e.extension.core_clock_ghz = core_.config_.clocks.ghz(model::ClockDomain::kDma);
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

// The RTL core's HBM ports served by the chip's HBM: each 32-byte burst one TLM transaction (a
// transfer of one burst), at most kBurstsInFlight reads and as many writes unanswered per port.
class NeuronCore::RtlPorts : public tb::CoreMemoryPorts {
 public:
  static constexpr int kPorts = tb::kCoreHbmPorts;  // nc_core's DMA ports and its fetch port
  RtlPorts(NeuronCore& core, model::SparseMemory& memory, uint64_t capacity)
      : core_(core), memory_(memory), capacity_(capacity) {}
  ~RtlPorts() override {
    for (auto& b : bursts_) b.payload.clear_extension(&b.extension);
  }
  uint64_t capacity() const override { return capacity_; }
  void preload(uint64_t addr, const model::HbmData& data) override {
    const auto bytes = model::hbm_bytes(data);
    memory_.write_block(addr / model::kHbmBurstBytes * model::kHbmBurstBytes, bytes.data(), bytes.size());
  }
  model::HbmData peek(uint64_t addr) const override {
    uint8_t bytes[model::kHbmBurstBytes];
    memory_.read_block(addr / model::kHbmBurstBytes * model::kHbmBurstBytes, bytes, sizeof bytes);
    return model::hbm_data(bytes);
  }
  uint32_t grant(bool write, uint32_t valid, const uint64_t*) override {
    uint32_t ready = 0;
    for (int p = 0; p < kPorts; ++p)
      if ((valid >> p & 1) && outstanding_[write][p] < kBurstsInFlight) ready |= 1u << p;
    return ready;
  }
  void offer(int port, const model::HbmRequest& r) override {
    if (r.write) preload(r.addr, r.data);  // posted: the data is the chip's from now on
    uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(bursts_.size());
      bursts_.emplace_back();
      bursts_.back().payload.set_extension(&bursts_.back().extension);
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    Burst& b = bursts_[slot];
    b.port = port;
    b.id = r.id;
    b.write = r.write;
    b.addr = r.addr;
    ++outstanding_[r.write][port];
    model::DmaDescriptor d;
    d.to_hbm = r.write;
    d.hbm_addr = r.addr;
    d.bytes = model::kHbmBurstBytes;
    d.count1 = d.count2 = 1;
    b.extension.descriptor = d;
    b.extension.core = core_.index_;
    b.extension.engine = static_cast<int>(slot);  // a burst has no engine: the slot finds it again
    b.extension.bytes_per_cycle = model::kHbmBurstBytes;  // one burst: it leaves at once
    b.extension.core_clock_ghz = core_.config_.clocks.ghz(model::ClockDomain::kDma);
    b.payload.set_command(r.write ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND);
    b.payload.set_address(r.addr);
    b.payload.set_data_ptr(nullptr);  // timing only: the data is in the chip's memory
    b.payload.set_data_length(model::kHbmBurstBytes);
    b.payload.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
    ::tlm::tlm_phase phase = ::tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (core_.hbm->nb_transport_fw(b.payload, phase, delay) == ::tlm::TLM_COMPLETED)
      throw Error(fmt::format("chip {} core {}: the chip's HBM refused a burst at {:#x}: {}", core_.chip_,
                              core_.index_, r.addr, b.payload.get_response_string()));
  }
  std::optional<model::HbmReadResponse> response(int port) const override {
    const auto& q = responses_[static_cast<size_t>(port)];
    if (q.empty()) return std::nullopt;
    return q.front();
  }
  void pop(int port) override { responses_[static_cast<size_t>(port)].pop_front(); }
  void step() override {}
  bool idle() const override {
    for (int p = 0; p < kPorts; ++p)
      if (outstanding_[0][p] || outstanding_[1][p] || !responses_[static_cast<size_t>(p)].empty()) return false;
    return true;
  }
  bool writes_queued() const override {
    for (int p = 0; p < kPorts; ++p)
      if (outstanding_[1][p]) return true;
    return false;
  }
  // The chip's HBM answered a burst: a read's data is read from the chip's memory now.
  bool finished(::tlm::tlm_generic_payload& t) {
    auto* ext = t.get_extension<DmaTransferExtension>();
    if (!ext || ext->engine < 0 || static_cast<size_t>(ext->engine) >= bursts_.size() ||
        &bursts_[static_cast<size_t>(ext->engine)].payload != &t)
      return false;
    Burst& b = bursts_[static_cast<size_t>(ext->engine)];
    --outstanding_[b.write][b.port];
    if (!b.write) responses_[static_cast<size_t>(b.port)].push_back({0, b.id, peek(b.addr)});
    free_.push_back(static_cast<uint32_t>(ext->engine));
    return true;
  }

 private:
  struct Burst {
    ::tlm::tlm_generic_payload payload;
    DmaTransferExtension extension;
    int port = 0;
    uint32_t id = 0;
    bool write = false;
    uint64_t addr = 0;
  };
  NeuronCore& core_;
  model::SparseMemory& memory_;
  uint64_t capacity_;
  std::deque<Burst> bursts_;  // by slot; a deque keeps payload addresses stable
  std::vector<uint32_t> free_;
  std::array<std::array<int, kPorts>, 2> outstanding_{};  // [write][port]
  std::array<std::deque<model::HbmReadResponse>, kPorts> responses_;
};

NeuronCore::NeuronCore(sc_core::sc_module_name name, int chip, int index, double clock_ghz)
    : sc_module(name), hbm("hbm"), chip_(chip), index_(index), clock_ghz_(clock_ghz) {
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
  clock_ghz_ = config.clocks.base_ghz;  // the golden core counts base-clock cycles
  transfers_ = std::make_unique<ChipTransfers>(*this, config_.transfer_engines());
  core_ = std::make_unique<model::CoreModel>(config_, program, &memory, transfers_.get(), collectives);
  core_->load_tensors();
}

void NeuronCore::load_rtl(const model::Program& program, const model::CoreConfig& config, model::SparseMemory& memory,
                          model::CollectiveEngine* collectives, int slice_cycles, int hbm_bytes_log2,
                          const std::string& waves, tb::PeArith pe_arith) {
  config_ = config;
  clock_ghz_ = config.clocks.base_ghz;  // the RTL core's cycles are base-clock cycles too
  slice_cycles_ = slice_cycles;
  rtl_ports_ = std::make_unique<RtlPorts>(*this, memory, uint64_t{1} << hbm_bytes_log2);
  tb::CoreSimOptions options;
  options.size = config.lanes;
  options.cosim = false;
  options.watchdog = config.watchdog_cycles;
  options.waves = waves;
  options.pe_arith = pe_arith;
  options.reproduce = fmt::format("ncore tlm run ... --rtl-cores {}.{}", chip_, index_);
  options.image_top = config.image_top;
  options.image_window = config.image_window;
  options.costs = config.costs;  // what the RTL core has of them: the engines' minimum interval
  options.clocks = config.clocks;
  rtl_ = tb::make_rtl_core(program, options, {rtl_ports_.get(), collectives}, hbm_bytes_log2);
}

void NeuronCore::record_timeline(bool on) {
  if (core_) core_->record_timeline(on);
}

std::vector<uint8_t> NeuronCore::tensor_bytes(const model::TensorDecl& d) {
  return rtl_ ? rtl_->tensor_bytes(d) : core_->tensor_bytes(d);
}

std::string NeuronCore::waiting() const {
  if (rtl_) return rtl_->waiting();
  if (!core_) return {};
  std::string s = core_->waiting_report();
  if (core_->waiting_outside()) s += "\n  its cc queue waits for a collective to end";
  return s;
}

::tlm::tlm_sync_enum NeuronCore::nb_transport_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                                  sc_core::sc_time&) {
  if (phase == ::tlm::BEGIN_RESP) {
    if (!(rtl_ports_ && rtl_ports_->finished(t))) transfers_->finished(t);
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
  return ::tlm::TLM_COMPLETED;
}

void NeuronCore::run_program() {
  if (rtl_) run_rtl();
  else if (core_) run_golden();
}

void NeuronCore::run_rtl() {
  tb::RtlCore& rtl = *rtl_;
  while (!rtl.finished()) {
    for (int i = 0; i < slice_cycles_ && !rtl.finished(); ++i) rtl.step(true);
    const Ps now = ps_of(sc_core::sc_time_stamp()), next = ps_of_cycle(rtl.cycle());
    if (next > now) sc_core::wait(time_of(next - now));
    if (!rtl.finished() && rtl.parked()) {
      sc_core::wait(wake_);  // a collective of this core has ended
      const uint64_t upto = cycle_of_ps(ps_of(sc_core::sc_time_stamp()));
      while (rtl.cycle() < upto && !rtl.finished()) rtl.step(false);
    }
  }
  const tb::CoreSimResult r = rtl.result();
  result_ = model::CoreResult{};
  result_.status = r.status;
  result_.error = r.error;
  result_.message = r.message;
  result_.error_queue = r.error_queue;
  result_.error_index = r.error_pc;
  result_.cycles = r.cycles;
  for (int q = 0; q < isa::kNumQueue; ++q) {
    result_.queues[q].instructions = r.queues[q].issued;
    result_.queues[q].busy_cycles = r.queues[q].busy_cycles;
    result_.queues[q].wait_cycles = r.queues[q].wait_cycles;
    result_.queues[q].fetch_stall_cycles = r.queues[q].fetch_stall_cycles;
    result_.queues[q].fetched_bytes = r.queues[q].fetched_bytes;
    result_.fetch_bytes += r.queues[q].fetched_bytes;
  }
  result_.te_macs = r.te_macs;
  result_.dma_bytes = r.dma_bursts * model::kHbmBurstBytes;
  result_.dma_busy_cycles = r.queues[model::kSpQueue].busy_cycles;
  result_.semaphores = r.semaphores;
  result_.timeline = rtl.timeline();
  result_.fetch_stalls = rtl.fetch_stalls();
  result_.sem_waits = rtl.sem_waits();
  finished_ = true;
}

void NeuronCore::run_golden() {
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

}  // namespace ncore::tlmsys
