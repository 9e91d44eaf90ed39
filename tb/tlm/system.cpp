#include "tb/tlm/system.h"

#include <cstdlib>

#include <fmt/format.h>

#include "model/common/error.h"

// libsystemc calls sc_main from its own main(); ncore's programs have their own main() and run
// simulations from it, so this one is never called.
int sc_main(int, char*[]) { return 1; }

namespace ncore::tlmsys {

using sc_core::sc_time;

namespace {

std::vector<std::unique_ptr<HbmStack>> make_stacks(const ChipConfig& k) {
  std::vector<std::unique_ptr<HbmStack>> stacks;
  const uint64_t stack_bytes = static_cast<uint64_t>(k.hbm_stack_gib * double(uint64_t{1} << 30));
  for (int s = 0; s < k.hbm_stacks; ++s)
    stacks.push_back(std::make_unique<HbmStack>(fmt::format("hbm{}", s).c_str(), hbm_stack_gbps(k),
                                                stack_bytes));
  return stacks;
}

std::vector<HbmStack*> pointers(const std::vector<std::unique_ptr<HbmStack>>& stacks) {
  std::vector<HbmStack*> out;
  for (const auto& s : stacks) out.push_back(s.get());
  return out;
}

}  // namespace

Chip::Chip(sc_core::sc_module_name name, const SystemConfig& config, const Topology& topology,
           int rank)
    : sc_module(name),
      bus("bus"),
      stacks(make_stacks(config.chip)),
      router("router", topology, rank),
      endpoint("endpoint", pointers(stacks)),
      to_router("to_router"),
      hbm("hbm", config.chip.hbm_stacks, config.chip.hbm_pseudo_channels_per_stack, config.chip.hbm_pin_gbps,
          config.chip.hbm_step_every_cycle),
      cc_hbm_("cc_hbm"),
      core_clock_ghz_(config.chip.core_clock_ghz),
      rank_(rank) {
  cc_hbm_.register_nb_transport_bw(this, &Chip::cc_hbm_bw);
  cc_hbm_.bind(hbm.socket);
  capacity_ = static_cast<uint64_t>(config.chip.hbm_stack_gib * double(uint64_t{1} << 30)) *
              config.chip.hbm_stacks;
  for (size_t s = 0; s < stacks.size(); ++s) {
    to_stack_.push_back(std::make_unique<tlm_utils::simple_initiator_socket<Chip>>(
        fmt::format("to_hbm{}", s).c_str()));
    to_stack_.back()->bind(stacks[s]->socket);
  }
  bus.register_b_transport(this, &Chip::bus_b_transport);
  bus.register_transport_dbg(this, &Chip::bus_transport_dbg);
  for (int c = 0; c < config.chip.cores; ++c) {
    cores.push_back(std::make_unique<NeuronCore>(fmt::format("core{}", c).c_str(), rank, c, config.chip.core_clock_ghz));
    cores.back()->hbm.bind(hbm.socket);
  }
  to_router.bind(*router.in[Router::kLocal]);
  router.local.bind(endpoint.socket);
}

HbmStack& Chip::stack_of(uint64_t addr, uint64_t* local) {
  const uint64_t n = stacks.size();
  const uint64_t line = addr / kStackInterleave;
  *local = (line / n) * kStackInterleave + addr % kStackInterleave;
  return *stacks[line % n];
}

void Chip::bus_b_transport(int, ::tlm::tlm_generic_payload& t, sc_time& delay) {
  const uint64_t addr = t.get_address(), n = t.get_data_length();
  if (addr + n > capacity_ || (addr % kStackInterleave) + n > kStackInterleave) {
    // Accesses are split at the stack interleave by the initiator (a DMA does so).
    t.set_response_status(::tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  uint64_t local = 0;
  const int s = static_cast<int>((addr / kStackInterleave) % stacks.size());
  stack_of(addr, &local);
  t.set_address(local);
  (*to_stack_[s])->b_transport(t, delay);
  t.set_address(addr);
  if (t.is_response_ok()) bus_transport_dbg(0, t);  // the data, in the chip's memory
}

unsigned int Chip::bus_transport_dbg(int, ::tlm::tlm_generic_payload& t) {
  const uint64_t addr = t.get_address(), n = t.get_data_length();
  uint8_t* data = t.get_data_ptr();
  if (addr + n > capacity_) return 0;
  if (t.is_write())
    memory.write_block(addr, data, n);
  else
    memory.read_block(addr, data, n);
  return static_cast<unsigned int>(n);
}

namespace {
// A batch of the collective engine's HBM transfers: how many are still running.
struct BatchExtension : ::tlm::tlm_extension<BatchExtension> {
  int* outstanding = nullptr;
  sc_core::sc_event* done = nullptr;
  ::tlm::tlm_extension_base* clone() const override { return new BatchExtension(*this); }
  void copy_from(const ::tlm::tlm_extension_base& e) override { *this = static_cast<const BatchExtension&>(e); }
};
constexpr int kCollectiveStreams = 16;
constexpr uint64_t kMaxRow = 65536, kMaxRows = 4095;
}  // namespace

::tlm::tlm_sync_enum Chip::cc_hbm_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase, sc_time&) {
  if (phase == ::tlm::BEGIN_RESP) {
    auto* b = t.get_extension<BatchExtension>();
    if (--*b->outstanding == 0) b->done->notify(sc_core::SC_ZERO_TIME);
  }
  return ::tlm::TLM_COMPLETED;
}

void Chip::hbm_transfers(System& system, const std::vector<HbmTransfer>& transfers) {
  struct Piece {
    ::tlm::tlm_generic_payload payload;
    DmaTransferExtension dma;
    BatchExtension batch;
  };
  std::vector<std::unique_ptr<Piece>> pieces;
  int outstanding = 0;
  sc_core::sc_event done;
  for (const HbmTransfer& x : transfers) {
    Chip& chip = system.chip(x.chip);
    const uint64_t stream = (x.bytes / kCollectiveStreams + model::kHbmBurstBytes - 1) / model::kHbmBurstBytes * model::kHbmBurstBytes;
    for (uint64_t first = 0; first < x.bytes;) {
      // One descriptor: up to kMaxRows rows of up to kMaxRow bytes, inside this stream's share.
      const uint64_t left = std::min(x.bytes - first, std::max<uint64_t>(stream, model::kHbmBurstBytes));
      const uint64_t row = std::min(left, kMaxRow);
      const uint64_t rows = std::min(left / row, kMaxRows);
      auto p = std::make_unique<Piece>();
      p->dma.descriptor.to_hbm = x.write;
      p->dma.descriptor.hbm_addr = x.addr + first;
      p->dma.descriptor.bytes = row;
      p->dma.descriptor.count1 = rows;
      p->dma.descriptor.hbm_stride1 = row;
      p->dma.bytes_per_cycle = chip.dma_bytes_per_cycle_;
      p->dma.core_clock_ghz = chip.core_clock_ghz_;
      p->batch.outstanding = &outstanding;
      p->batch.done = &done;
      p->payload.set_command(x.write ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND);
      p->payload.set_address(x.addr + first);
      p->payload.set_extension(&p->dma);
      p->payload.set_extension(&p->batch);
      ::tlm::tlm_phase phase = ::tlm::BEGIN_REQ;
      sc_time delay = sc_core::SC_ZERO_TIME;
      ++outstanding;
      if (chip.cc_hbm_->nb_transport_fw(p->payload, phase, delay) == ::tlm::TLM_COMPLETED)
        throw Error(fmt::format("chip {}: the HBM refused the collective engine's transfer at {:#x}", x.chip, x.addr + first));
      first += row * rows;
      pieces.push_back(std::move(p));
    }
  }
  if (outstanding) sc_core::wait(done);
  for (auto& p : pieces) {
    p->payload.clear_extension(&p->dma);
    p->payload.clear_extension(&p->batch);
  }
}

void Chip::write_hbm(uint64_t addr, const uint8_t* data, size_t n) {
  ::tlm::tlm_generic_payload t;
  t.set_command(::tlm::TLM_WRITE_COMMAND);
  t.set_address(addr);
  t.set_data_ptr(const_cast<uint8_t*>(data));
  t.set_data_length(static_cast<unsigned int>(n));
  if (bus_transport_dbg(0, t) != n)
    throw Error(fmt::format("chip {}: HBM write of {} bytes at {:#x} is outside its {} bytes", rank_, n,
                            addr, capacity_));
}

void Chip::read_hbm(uint64_t addr, uint8_t* data, size_t n) {
  ::tlm::tlm_generic_payload t;
  t.set_command(::tlm::TLM_READ_COMMAND);
  t.set_address(addr);
  t.set_data_ptr(data);
  t.set_data_length(static_cast<unsigned int>(n));
  if (bus_transport_dbg(0, t) != n)
    throw Error(fmt::format("chip {}: HBM read of {} bytes at {:#x} is outside its {} bytes", rank_, n,
                            addr, capacity_));
}

System::System(const SystemConfig& config)
    : config_(config), topology_(config.x, config.y, config.z) {
  config_.validate();
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  for (int r = 0; r < topology_.chips(); ++r)
    chips_.push_back(std::make_unique<Chip>(fmt::format("chip{}", r).c_str(), config_, topology_, r));
  links_.resize(topology_.chips() * kNumPorts);
  for (int r = 0; r < topology_.chips(); ++r) {
    for (int p = 0; p < kNumPorts; ++p) {
      if (!topology_.has_port(p)) continue;
      const LinkConfig& lc = port_dim(p) == 2 ? config_.chip.z_link : config_.chip.link;
      auto link = std::make_unique<Link>(fmt::format("link_{}_{}", r, p).c_str(), lc);
      (*chips_[r]->router.out[p]).bind(link->in);
      // The link arrives at the neighbour on the opposite port.
      const int back = p ^ 1;
      link->out.bind(*chips_[topology_.neighbor(r, p)]->router.in[back]);
      links_[r * kNumPorts + p] = std::move(link);
    }
  }
}

System::~System() = default;

namespace {
std::string& process_failure() {
  static std::string failure;  // the first exception thrown inside a spawned process
  return failure;
}
}  // namespace

void System::reset_kernel() {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  process_failure().clear();
}

void System::spawn(std::function<void()> body, const std::string& name, const sc_core::sc_spawn_options* options) {
  auto guarded = [body = std::move(body)] {
    try {
      body();
    } catch (const std::exception& e) {
      if (process_failure().empty()) process_failure() = e.what();
      sc_core::sc_stop();
    }
  };
  if (name.empty()) sc_core::sc_spawn(guarded, nullptr, options);
  else sc_core::sc_spawn(guarded, name.c_str(), options);
}

void System::simulate(const sc_core::sc_time* limit) {
  try {
    if (limit) sc_core::sc_start(*limit);
    else sc_core::sc_start();
  } catch (const sc_core::sc_report& r) {
    throw Error(fmt::format("SystemC: {}", r.get_msg()));
  }
  if (!process_failure().empty()) throw Error(process_failure());
}

}  // namespace ncore::tlmsys
