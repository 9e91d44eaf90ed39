#include "tb/hbm/hbm_fabric.h"

#include <algorithm>

#include <fmt/format.h>

namespace ncore::tb {
namespace {

class ReferenceController : public HbmController {
 public:
  explicit ReferenceController(const model::HbmConfig& config) : channel_(config) {}
  bool ready(bool write) const override { return channel_.ready(write); }
  void offer(const model::HbmRequest& r) override { channel_.offer(r); }
  model::HbmChannel::StepResult step() override { return channel_.step(); }
  bool idle() const override { return channel_.idle(); }
  int queued(bool write) const override { return channel_.queued(write); }
  uint64_t max_age() const override { return channel_.max_age(); }
  void preload(uint64_t byte_addr, const model::HbmData& data) override { channel_.preload(byte_addr, data); }
  model::HbmData peek(uint64_t byte_addr) const override { return channel_.peek(byte_addr); }
  std::vector<uint64_t> bursts() const override {
    std::vector<uint64_t> out;
    for (const auto& [addr, data] : channel_.store()) out.push_back(addr);
    return out;
  }

 private:
  model::HbmChannel channel_;
};

}  // namespace

HbmControllerFactory reference_hbm_controllers() {
  return [](const model::HbmConfig& config, int) { return std::make_unique<ReferenceController>(config); };
}

HbmFabric::HbmFabric(const model::HbmConfig& config, int ports, const HbmControllerFactory& controllers)
    : config_(config), capacity_(model::hbm_capacity_bytes(config.channels)),
      responses_(static_cast<size_t>(ports)) {
  config_.validate();
  const HbmControllerFactory make = controllers ? controllers : reference_hbm_controllers();
  for (int c = 0; c < config_.channels; ++c) {
    channels_.push_back(make(config_, c));
    checkers_.emplace_back(config_);
  }
  for (auto& last : last_granted_) last.assign(channels_.size(), ports - 1);
}

bool HbmFabric::writes_queued() const {
  for (const auto& ch : channels_)
    if (ch->queued(true)) return true;
  return false;
}

std::vector<uint64_t> HbmFabric::bursts() const {
  std::vector<uint64_t> out;
  for (const auto& ch : channels_)
    for (uint64_t a : ch->bursts()) out.push_back(a);
  return out;
}

int HbmFabric::channel_of(uint64_t addr) const {
  return model::hbm_map(addr % capacity_ / kBurst * kBurst, config_.channels, config_.xor_hash).channel;
}

void HbmFabric::preload(uint64_t addr, const model::HbmData& data) {
  channels_[static_cast<size_t>(channel_of(addr))]->preload(addr / kBurst * kBurst, data);
}

model::HbmData HbmFabric::peek(uint64_t addr) const {
  return channels_[static_cast<size_t>(channel_of(addr))]->peek(addr / kBurst * kBurst);
}

uint32_t HbmFabric::grant(bool write, uint32_t valid, const uint64_t* addrs) {
  const int ports = static_cast<int>(responses_.size());
  std::vector<int>& last = last_granted_[write ? 1 : 0];
  std::vector<int> chosen(channels_.size(), -1);
  // Each channel takes the asking port that comes first after the one it took last.
  const auto after_last = [&](size_t c, int p) { return (p - last[c] - 1 + 2 * ports) % ports; };
  for (int p = 0; p < ports; ++p) {
    if (!(valid >> p & 1)) continue;
    const auto c = static_cast<size_t>(channel_of(addrs[p]));
    if (!channels_[c]->ready(write)) continue;
    if (chosen[c] < 0 || after_last(c, p) < after_last(c, chosen[c])) chosen[c] = p;
  }
  uint32_t ready = 0;
  for (size_t c = 0; c < channels_.size(); ++c)
    if (chosen[c] >= 0) ready |= 1u << chosen[c], last[c] = chosen[c];
  return ready;
}

void HbmFabric::offer(int port, model::HbmRequest request) {
  const int c = channel_of(request.addr);
  request.id |= static_cast<uint32_t>(port) << kPortShift;
  channels_[static_cast<size_t>(c)]->offer(request);
}

std::optional<model::HbmReadResponse> HbmFabric::response(int port) const {
  const auto& q = responses_[static_cast<size_t>(port)];
  if (q.empty()) return std::nullopt;
  model::HbmReadResponse r = q.front();
  r.id &= (1u << kPortShift) - 1;
  return r;
}

void HbmFabric::step(model::HbmStatsBuilder* stats) {
  for (size_t c = 0; c < channels_.size(); ++c) {
    const auto s = channels_[c]->step();
    for (const auto* cmd : {&s.row, &s.col}) {
      if (cmd->cmd == model::HbmCmd::kNone) continue;
      if (stats) stats->command(*cmd);
      checkers_[c].observe(*cmd);
    }
    if (s.has_response) responses_[s.response.id >> kPortShift].push_back(s.response);
  }
  ++steps_;
}

bool HbmFabric::idle() const {
  for (const auto& ch : channels_)
    if (!ch->idle()) return false;
  for (const auto& q : responses_)
    if (!q.empty()) return false;
  return true;
}

std::string HbmFabric::finish() {
  for (size_t c = 0; c < checkers_.size(); ++c) {
    checkers_[c].finish(steps_ ? steps_ - 1 : 0);
    if (!checkers_[c].ok()) return fmt::format("HBM channel {}: timing checker: {}", c, checkers_[c].failure());
  }
  for (const auto& ch : channels_)
    if (std::string f = ch->failure(); !f.empty()) return f;
  return {};
}

uint64_t HbmFabric::max_age() const {
  uint64_t age = 0;
  for (const auto& ch : channels_) age = std::max(age, ch->max_age());
  return age;
}

}  // namespace ncore::tb
