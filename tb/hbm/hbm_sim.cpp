#include "tb/hbm/hbm_sim.h"

#include <memory>

#include <fmt/format.h>
#include <verilated.h>

#include "Vnc_hbm.h"
#include "model/common/error.h"
#include "tb/common/bench.h"
#include "tb/hbm/hbm_rtl_channel.h"
#include "model/common/numerics.h"

namespace ncore::tb {

using model::HbmBurst;
using model::HbmCmd;
using model::HbmCommand;
using model::HbmConfig;

HbmSimResult run_hbm_rtl(const std::vector<HbmBurst>& bursts, const HbmConfig& config,
                         const HbmSimOptions& options,
                         std::vector<std::vector<HbmCommand>>* commands) {
  require_hbm_rtl_shape(config);
  if (options.xprop_seed != 0) throw Error("HBM harness: there is no X-propagation build of the controller");
  const WallClock wall;
  auto context = make_context(options);
  const int channels = config.channels;
  std::vector<std::unique_ptr<HbmRtlChannel>> ch;
  std::vector<model::HbmPlayer> players;
  for (int c = 0; c < channels; ++c) {
    ch.push_back(std::make_unique<HbmRtlChannel>(context.get(), config, c, options.check, options.scramble_ids));
    players.emplace_back(bursts, c);
    Vnc_hbm& top = ch.back()->top();
    // A configuration the validator would refuse (tRTW + tCWL < CL + BL), driven past it.
    if (options.fault == HbmFault::kConfigBypassesValidation) top.cfg_rtw_i = 0;
    top.upset_i = options.fault == HbmFault::kUpsetInFlightFull ? 1
                : options.fault == HbmFault::kUpsetRefreshDebt ? 2 : 0;
  }
  const CoverageDump coverage(*context, "hbm");
  Waves waves;
  waves.open(ch[0]->top(), options);
  if (commands) commands->assign(static_cast<size_t>(channels), {});
  auto expected = model::hbm_expected_reads(bursts);
  model::HbmStatsBuilder stats(config, bursts.size(), options.timeline_window);
  model::SplitMix64 rng(options.seed);
  const auto chance = [&] { return (rng.next() >> 11) * 0x1.0p-53; };
  std::vector<std::array<const HbmBurst*, 2>> offering(static_cast<size_t>(channels), {nullptr, nullptr});
  HbmSimResult result;
  Failure fail(result, options);
  HbmBurst changed;            // kRdPayloadChangesWhileStalled: the read, readdressed
  std::vector<bool> rd_stalled(static_cast<size_t>(channels), false);  // not taken last cycle
  size_t done = 0;
  // The cycle is the controllers' own (their commands carry it), from the end of reset.
  uint64_t cycle = 0;
  Watchdog watchdog(options.watchdog);
  for (;; ++cycle) {
    bool all_idle = true;
    for (int c = 0; c < channels && result.ok; ++c) {
      auto& player = players[static_cast<size_t>(c)];
      auto& offer = offering[static_cast<size_t>(c)];
      // A port holds its request until it is taken; a new one waits out a random stall.
      for (bool w : {false, true})
        if (offer[w] == nullptr && !(options.stall > 0 && chance() < options.stall))
          offer[w] = player.head(w, cycle);
      const HbmBurst* rd = offer[0];
      if (options.fault == HbmFault::kRdPayloadChangesWhileStalled && rd &&
          rd_stalled[static_cast<size_t>(c)]) {
        changed = *rd;
        changed.request.addr ^= 32;
        rd = &changed;
      }
      const bool spurious = options.fault == HbmFault::kDramDataWithoutRead && cycle == 3;
      const auto out = ch[static_cast<size_t>(c)]->cycle(cycle, rd ? &rd->request : nullptr,
                                                         offer[1] ? &offer[1]->request : nullptr,
                                                         c == 0 ? &waves : nullptr, spurious);
      rd_stalled[static_cast<size_t>(c)] = rd != nullptr && !out.rd_accepted;
      result.rd_port_stalls += rd_stalled[static_cast<size_t>(c)];
      for (bool w : {false, true})
        if (w ? out.wr_accepted : out.rd_accepted) {
          stats.accepted(offer[w]->request.id, cycle);
          player.accept(w);
          offer[w] = nullptr;
          watchdog.progress(cycle);
        }
      for (const HbmCommand* cmd : {&out.row, &out.col}) {
        if (cmd->cmd == HbmCmd::kNone) continue;
        if (commands) (*commands)[static_cast<size_t>(c)].push_back(*cmd);
        stats.command(*cmd);
        if (options.check) ++result.commands_compared;
        if (cmd->cmd == HbmCmd::kRd || cmd->cmd == HbmCmd::kWr) {
          ++done;
          watchdog.progress(cycle);
        }
      }
      std::string failure = out.failure;
      if (failure.empty() && out.response) {
        failure = model::hbm_check_read(expected, out.response_id, out.response_data);
        stats.response(out.response_id, cycle);
        ++result.responses_checked;
      }
      if (!failure.empty()) fail(cycle, fmt::format("channel {}: {}", c, failure));
      if (!player.done() || offer[0] || offer[1] || !ch[static_cast<size_t>(c)]->idle())
        all_idle = false;
    }
    if (!result.ok) break;
    stats.end_of_cycle(cycle);
    if (all_idle && done == bursts.size()) break;
    if (watchdog.expired(cycle)) {
      fail(cycle, fmt::format("{} ({} of {} bursts served)", watchdog.report(), done, bursts.size()));
      break;
    }
  }
  result.cycles = cycle;
  result.cycles_compared = options.check ? cycle + 1 : 0;
  if (!expected.empty()) fail(cycle, fmt::format("{} reads never returned data", expected.size()));
  uint64_t age = 0, urgent_wait = 0;
  for (int c = 0; c < channels && result.ok && options.check; ++c) {
    const auto mismatch = ch[static_cast<size_t>(c)]->counters_mismatch();
    if (!mismatch.empty()) fail(cycle, fmt::format("channel {}: {}", c, mismatch));
    age = std::max(age, ch[static_cast<size_t>(c)]->reference().max_age());
    urgent_wait = std::max(urgent_wait, ch[static_cast<size_t>(c)]->reference().max_urgent_wait());
  }
  waves.close();
  result.stats = stats.finish(cycle, age, urgent_wait);
  result.wall_seconds = wall.seconds();
  return result;
}

HbmRefusal hbm_rtl_refuse(const HbmConfig& config, bool write, uint64_t addr) {
  require_hbm_rtl_shape(config);
  VerilatedContext context;
  HbmRtlChannel ch(&context, config, 0, false);
  HbmBurst bad;
  bad.request.write = write;
  bad.request.addr = addr;
  bad.request.id = 7;
  HbmBurst good;
  good.request.addr = 0;
  good.request.id = 8;
  HbmRefusal r;
  uint64_t now = 0;
  bool accepted = false;
  for (; now < 8 && !accepted; ++now) {
    const auto out = ch.cycle(now, write ? nullptr : &bad.request, write ? &bad.request : nullptr);
    accepted = out.rd_accepted || out.wr_accepted;
  }
  r.err_code = ch.top().err_code_o;
  bool answered = false;
  bool good_taken = false;
  for (; now < 2000 && !answered; ++now) {
    const auto out = ch.cycle(now, good_taken ? nullptr : &good.request, nullptr);
    good_taken = good_taken || out.rd_accepted;
    answered = out.response && out.response_id == 8;
  }
  for (int i = 0; i < 100 && !ch.idle(); ++i, ++now) ch.cycle(now, nullptr, nullptr);
  r.live = accepted && answered && ch.idle();
  return r;
}

}  // namespace ncore::tb
