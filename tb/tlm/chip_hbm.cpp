#include "tb/tlm/chip_hbm.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "model/common/error.h"
#include "tb/tlm/system_config.h"

namespace ncore::tlmsys {

ChipHbmMap::ChipHbmMap(int stacks, int pseudo_channels_per_stack)
    : stacks_(stacks), channels_(stacks * pseudo_channels_per_stack) {}

ChipHbmMap::Place ChipHbmMap::locate(uint64_t chip_addr) const {
  const uint64_t n = static_cast<uint64_t>(channels_);
  const uint64_t stripe = chip_addr / kHbmStripeBytes;
  const uint64_t row = stripe / n;
  const uint64_t hash = (row * 0x9E3779B97F4A7C15ull) >> 40;  // Fibonacci hashing of the row
  Place p;
  p.channel = static_cast<int>((stripe % n + hash) % n);
  p.stack = p.channel % stacks_;
  p.pseudo_channel = p.channel / stacks_;
  p.local = row * kHbmStripeBytes + chip_addr % kHbmStripeBytes;
  return p;
}

ChipHbm::ChipHbm(sc_core::sc_module_name name, int stacks, int pseudo_channels_per_stack, double pin_gbps,
                 bool step_every_cycle)
    : sc_module(name), socket("socket"), map_(stacks, pseudo_channels_per_stack),
      tck_(hbm_tck_ps(pin_gbps)), stacks_(static_cast<size_t>(stacks)), windows_(static_cast<size_t>(stacks)),
      step_every_cycle_(step_every_cycle) {
  config_.channels = 1;
  config_.store_data = false;
  config_.timing = model::HbmDramTiming{}.at(static_cast<double>(tck_) / 1000.0);
  for (int c = 0; c < map_.channels(); ++c) {
    channels_.emplace_back();
    channels_.back().controller = std::make_unique<model::HbmChannel>(config_);
  }
  socket.register_nb_transport_fw(this, &ChipHbm::nb_transport_fw);
  SC_HAS_PROCESS(ChipHbm);
  SC_THREAD(run);
}

double ChipHbm::stack_peak_gbps() const {
  const double per_channel = static_cast<double>(model::kHbmBurstBytes) / (config_.timing.bl * static_cast<double>(tck_) / 1000.0);
  return per_channel * map_.channels() / map_.stacks();
}

::tlm::tlm_sync_enum ChipHbm::nb_transport_fw(int initiator, ::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                              sc_core::sc_time&) {
  if (phase != ::tlm::BEGIN_REQ) return ::tlm::TLM_COMPLETED;  // END_RESP: nothing to do
  auto* ext = t.get_extension<DmaTransferExtension>();
  if (ext == nullptr) {
    t.set_response_status(::tlm::TLM_GENERIC_ERROR_RESPONSE);
    return ::tlm::TLM_COMPLETED;
  }
  uint32_t id;
  if (free_slots_.empty()) {
    id = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    id = free_slots_.back();
    free_slots_.pop_back();
  }
  Transfer& x = slots_[id];
  x = Transfer{};
  x.payload = &t;
  x.initiator = initiator;
  x.d = ext->descriptor;
  x.write = t.is_write();
  x.bursts = x.d.bytes / model::kHbmBurstBytes * x.d.count1 * x.d.count2;
  x.period_ps = model::kHbmBurstBytes / ext->bytes_per_cycle * 1000.0 / ext->core_clock_ghz;
  // The first burst leaves strictly after now: what the process sees cannot depend on whether
  // it ran before or after the initiator in this time step.
  x.next_issue_ps = static_cast<double>(ps_of(sc_core::sc_time_stamp())) + 0.5;
  x.active = true;
  x.begin_ps = ps_of(sc_core::sc_time_stamp());
  x.seq = arrivals_++;
  const auto later = [this](uint32_t a, uint32_t b) {
    const Transfer &p = slots_[a], &q = slots_[b];
    return std::tie(p.begin_ps, p.initiator, p.seq) < std::tie(q.begin_ps, q.initiator, q.seq);
  };
  order_.insert(std::upper_bound(order_.begin(), order_.end(), id, later), id);
  ++active_transfers_;
  ++transfers_;
  work_.notify(sc_core::SC_ZERO_TIME);
  phase = ::tlm::END_REQ;
  return ::tlm::TLM_UPDATED;
}

uint64_t ChipHbm::burst_address(const Transfer& x, uint64_t k) const {
  const uint64_t per_row = x.d.bytes / model::kHbmBurstBytes;
  const uint64_t per_plane = per_row * x.d.count1;
  const uint64_t plane = k / per_plane, row = k % per_plane / per_row, b = k % per_row;
  return x.d.hbm_addr + plane * x.d.hbm_stride2 + row * x.d.hbm_stride1 + b * model::kHbmBurstBytes;
}

void ChipHbm::issue_bursts(Transfer& x, uint32_t id, Ps now) {
  const double t = static_cast<double>(now);
  while (x.issued < x.bursts && x.in_flight < kBurstsInFlight && x.next_issue_ps < t) {
    const ChipHbmMap::Place p = map_.locate(burst_address(x, x.issued));
    Channel& c = channels_[static_cast<size_t>(p.channel)];
    const uint64_t capacity = model::hbm_capacity_bytes(1);
    c.waiting[x.write].push_back({id, p.local % capacity});
    if (!c.listed) {
      c.listed = true;
      c.wake = cycle_;
      busy_.push_back(p.channel);
    }
    ++x.issued;
    ++x.in_flight;
    // One burst per period; a burst held back by the in-flight limit does not bank its slot.
    x.next_issue_ps = std::max(x.next_issue_ps, t - static_cast<double>(tck_)) + x.period_ps;
  }
}

void ChipHbm::on_data_bus(int stack, bool write) {
  HbmStackStats& s = stacks_[static_cast<size_t>(stack)];
  (write ? s.write_bytes : s.read_bytes) += model::kHbmBurstBytes;
  s.data_cycles += static_cast<uint64_t>(config_.timing.bl);
  auto& w = windows_[static_cast<size_t>(stack)];
  const auto window = static_cast<size_t>(cycle_ / kWindowCycles);
  if (w.size() <= window) w.resize(window + 1, 0);
  w[window] += model::kHbmBurstBytes;
}

void ChipHbm::served(uint32_t id) {
  Transfer& x = slots_[id];
  --x.in_flight;
  if (++x.served < x.bursts) return;
  x.active = false;
  --active_transfers_;
  free_slots_.push_back(id);
  order_.erase(std::find(order_.begin(), order_.end(), id));
  ::tlm::tlm_phase phase = ::tlm::BEGIN_RESP;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  x.payload->set_response_status(::tlm::TLM_OK_RESPONSE);
  socket[x.initiator]->nb_transport_bw(*x.payload, phase, delay);
}

void ChipHbm::catch_up(model::HbmChannel& hbm, uint64_t k) const {
  while (hbm.cycle() < k) {
    const uint64_t next = step_every_cycle_ ? hbm.cycle() : hbm.next_activity();
    if (next > hbm.cycle())
      hbm.skip_to(std::min(next, k));
    else
      hbm.step();  // only an idle channel gets here: its refreshes
  }
}

bool ChipHbm::must_step(const Channel& c, uint64_t k) const {
  if (step_every_cycle_ || c.wake <= k) return true;
  for (bool write : {false, true})
    if (!c.waiting[write].empty() && c.controller->ready(write)) return true;
  return false;
}

void ChipHbm::cycle(uint64_t k, Ps now) {
  cycle_ = k;
  for (const uint32_t id : order_) issue_bursts(slots_[id], id, now);
  const int n_stacks = map_.stacks();
  for (size_t i = 0; i < busy_.size();) {
    const int ch = busy_[i];
    Channel& c = channels_[static_cast<size_t>(ch)];
    if (!must_step(c, k)) {
      ++i;
      continue;
    }
    model::HbmChannel& hbm = *c.controller;
    catch_up(hbm, k);
    for (bool write : {false, true}) {
      auto& q = c.waiting[write];
      if (q.empty() || !hbm.ready(write)) continue;
      model::HbmRequest r;
      r.write = write;
      r.addr = q.front().local;
      r.id = q.front().transfer;
      hbm.offer(r);
      q.pop_front();
      if (write) served(r.id);  // posted: the write queue has it
    }
    const auto s = hbm.step();
    ++channel_steps_;
    c.wake = hbm.next_activity();
    const int stack = ch % n_stacks;
    if (s.col.cmd != model::HbmCmd::kNone) on_data_bus(stack, s.col.cmd == model::HbmCmd::kWr);
    if (s.has_response) served(s.response.id);
    if (c.waiting[0].empty() && c.waiting[1].empty() && hbm.idle()) {
      c.listed = false;
      busy_[i] = busy_.back();
      busy_.pop_back();
    } else {
      ++i;
    }
  }
  cycle_ = k + 1;
}

uint64_t ChipHbm::next_cycle(uint64_t k) const {
  uint64_t next = kNever;
  for (const int ch : busy_) {
    const Channel& c = channels_[static_cast<size_t>(ch)];
    if (must_step(c, k)) return k;
    next = std::min(next, c.wake);
  }
  const double tck = static_cast<double>(tck_);
  for (const uint32_t id : order_) {
    const Transfer& x = slots_[id];
    if (x.issued >= x.bursts || x.in_flight >= kBurstsInFlight) continue;
    // The first clock edge strictly after the burst's time (issue_bursts: next_issue_ps < t).
    const auto edge = static_cast<uint64_t>(std::floor(x.next_issue_ps / tck)) + 1;
    next = std::min(next, std::max(edge, k));
    if (next == k) break;
  }
  return next;
}

void ChipHbm::run() {
  for (;;) {
    const Ps now = ps_of(sc_core::sc_time_stamp());
    const uint64_t k = std::max((now + tck_ - 1) / tck_, done_until_);  // the next edge not yet simulated
    const uint64_t next = next_cycle(k);
    if (next == kNever) {
      sc_core::wait(work_);
      continue;
    }
    if (next * tck_ > now) {  // a transfer that begins meanwhile may need an earlier edge
      sc_core::wait(time_of(next * tck_ - now), work_);
      continue;
    }
    cycle(next, now);
    done_until_ = next + 1;
  }
}

}  // namespace ncore::tlmsys
