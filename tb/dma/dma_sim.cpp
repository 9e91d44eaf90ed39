#include "tb/dma/dma_sim.h"

#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include "Vnc_dma.h"
#include "model/common/error.h"
#include "tb/common/harness.h"
#include "tb/common/wide.h"
#include "model/common/numerics.h"
#include "tb/hbm/hbm_checker.h"

namespace ncore::tb {
namespace {

using model::DmaDescriptor;
using model::HbmData;


HbmData random_data(model::SplitMix64& rng) {
  return {rng.next(), rng.next(), rng.next(), rng.next()};
}

void drive(Vnc_dma& t, int engine, const DmaDescriptor& d) {
  t.desc_engine_i = static_cast<uint8_t>(engine);
  to_wide(isa::pack_payload(d), t.desc_i);
}

}  // namespace

DmaSimResult run_dma_rtl(const std::vector<DmaList>& lists, const DmaSimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const model::HbmConfig& hc = options.hbm;
  hc.validate();
  const uint64_t hbm_bytes = model::hbm_capacity_bytes(hc.channels);
  int log2 = 0;
  while ((1ull << log2) < hbm_bytes) ++log2;

  // Per engine: its descriptors in order (last set on each list's final one), and the list
  // completions it must report.
  std::vector<std::deque<DmaDescriptor>> pending(kDmaEngines);
  std::vector<std::deque<bool>> expect_done(kDmaEngines);
  model::SplitMix64 rng(options.seed);
  std::unordered_map<uint64_t, HbmData> hbm_ref, sbuf, sbuf_ref;
  std::vector<model::HbmChannel> channels;
  for (int c = 0; c < hc.channels; ++c) channels.emplace_back(hc);
  const auto channel_of = [&](uint64_t addr) {
    return model::hbm_map(addr, hc.channels, hc.xor_hash).channel;
  };
  uint64_t legal_bursts = 0;
  for (const auto& list : lists) {
    if (list.engine < 0 || list.engine >= kDmaEngines || list.descriptors.empty())
      throw Error(fmt::format("DMA list: engine {} (expected 0 to {}) with {} descriptors",
                              list.engine, kDmaEngines - 1, list.descriptors.size()));
    bool refused = false;
    for (size_t i = 0; i < list.descriptors.size(); ++i) {
      DmaDescriptor d = list.descriptors[i];
      d.last = i + 1 == list.descriptors.size();
      std::string why;
      if (!model::dma_fields_fit(d, &why)) throw Error(why);
      pending[static_cast<size_t>(list.engine)].push_back(d);
      if (model::dma_check(d, hbm_bytes) != model::DmaError::kNone) {
        refused = true;
        continue;
      }
      // Sources get random contents; the reference applies the descriptor in order.
      for (const auto& [h, s] : model::dma_bursts(d)) {
        ++legal_bursts;
        if (d.to_hbm) {
          if (!sbuf_ref.count(s)) sbuf_ref[s] = sbuf[s] = random_data(rng);
          hbm_ref[h] = sbuf_ref[s];
        } else {
          if (!hbm_ref.count(h)) {
            hbm_ref[h] = random_data(rng);
            channels[static_cast<size_t>(channel_of(h))].preload(h, hbm_ref[h]);
          }
          sbuf_ref[s] = hbm_ref[h];
        }
      }
    }
    expect_done[static_cast<size_t>(list.engine)].push_back(refused);
  }

  auto context = std::make_unique<VerilatedContext>();
  context->randSeed(static_cast<int>(options.seed & 0x7FFFFFFF));
  if (!options.waves.empty()) context->traceEverOn(true);
  auto top = std::make_unique<Vnc_dma>(context.get(), "dma");
  const CoverageDump coverage(*context, "dma");
  std::unique_ptr<VerilatedFstC> fst;
  if (!options.waves.empty()) fst = open_fst(*top, options.waves);
  Vnc_dma& t = *top;
  t.hbm_bytes_log2_i = static_cast<uint8_t>(log2);
  t.desc_valid_i = 0;
  t.hbm_rsp_valid_i = 0;
  t.upset_stage_full_i = options.fault == DmaFault::kUpsetStageFull;
  hold_in_reset(t);

  DmaSimResult r;
  model::HbmStatsBuilder stats(hc, legal_bursts, 0);
  std::vector<HbmChecker> checkers;
  for (int c = 0; c < hc.channels; ++c) checkers.emplace_back(hc);
  std::deque<model::HbmReadResponse> responses;
  HbmData sbuf_read_data{};
  int offering = -1, next_engine = 0;
  uint64_t cycle = 0, last_progress = 0;
  const auto fail = [&](const std::string& why) {
    if (r.ok) {
      r.ok = false;
      r.failure = fmt::format("cycle {}: {} (seed {})", cycle, why, options.seed);
    }
  };
  for (; r.ok; ++cycle) {
    // Descriptor port: hold a descriptor until taken; start a new one past a random stall.
    if (offering < 0 && !(options.stall > 0 && (rng.next() >> 11) * 0x1.0p-53 < options.stall))
      for (int k = 0; k < kDmaEngines && offering < 0; ++k) {
        const int e = (next_engine + k) % kDmaEngines;
        if (!pending[static_cast<size_t>(e)].empty()) offering = e;
      }
    t.desc_valid_i = offering >= 0;
    if (offering >= 0) drive(t, offering, pending[static_cast<size_t>(offering)].front());
    // HBM: each request goes to its channel's port; a response waits in the interconnect.
    const int rd_ch = channel_of(t.hbm_rd_addr_o % hbm_bytes / 32 * 32);
    const int wr_ch = channel_of(t.hbm_wr_addr_o % hbm_bytes / 32 * 32);
    t.hbm_rd_ready_i = channels[static_cast<size_t>(rd_ch)].ready(false);
    t.hbm_wr_ready_i = channels[static_cast<size_t>(wr_ch)].ready(true);
    t.hbm_rsp_valid_i = !responses.empty();
    if (!responses.empty()) {
      t.hbm_rsp_id_i = responses.front().id;
      to_wide(responses.front().data, t.hbm_rsp_data_i);
    }
    to_wide(sbuf_read_data, t.sbuf_rd_data_i);
    t.clk_i = 0;
    t.eval();
    if (fst) fst->dump(2 * cycle);

    if (offering >= 0 && t.desc_ready_o) {
      pending[static_cast<size_t>(offering)].pop_front();
      next_engine = (offering + 1) % kDmaEngines;
      offering = -1;
      last_progress = cycle;
    }
    if (t.hbm_rd_valid_o && t.hbm_rd_ready_i) {
      model::HbmRequest q;
      q.addr = t.hbm_rd_addr_o;
      q.id = t.hbm_rd_id_o;
      channels[static_cast<size_t>(rd_ch)].offer(q);
    }
    if (t.hbm_wr_valid_o && t.hbm_wr_ready_i) {
      model::HbmRequest q;
      q.write = true;
      q.addr = t.hbm_wr_addr_o;
      q.id = t.hbm_wr_id_o;
      q.data = from_wide<decltype(t.hbm_wr_data_o)>(t.hbm_wr_data_o);
      channels[static_cast<size_t>(wr_ch)].offer(q);
      last_progress = cycle;
    }
    if (t.hbm_rsp_valid_i) responses.pop_front();
    if (t.sbuf_wr_valid_o) {
      const uint64_t a = t.sbuf_wr_addr_o;
      if (!sbuf_ref.count(a)) fail(fmt::format("SBUF write to 0x{:x}, which no descriptor targets", a));
      sbuf[a] = from_wide<decltype(t.sbuf_wr_data_o)>(t.sbuf_wr_data_o);
      last_progress = cycle;
    }
    if (t.sbuf_rd_valid_o) {
      const auto it = sbuf.find(t.sbuf_rd_addr_o);
      sbuf_read_data = it == sbuf.end() ? HbmData{} : it->second;
    }
    if (t.done_valid_o) {
      auto& q = expect_done[t.done_engine_o];
      if (q.empty()) {
        fail(fmt::format("engine {} reported a list done that it was never given", t.done_engine_o));
      } else if (q.front() != static_cast<bool>(t.done_error_o)) {
        fail(fmt::format("engine {} reported a list done with error flag {}, expected {}",
                         t.done_engine_o, t.done_error_o, q.front()));
      } else {
        q.pop_front();
        ++r.lists_done;
      }
    }
    for (size_t c = 0; c < channels.size(); ++c) {
      const auto s = channels[c].step();
      for (const auto* cmd : {&s.row, &s.col}) {
        if (cmd->cmd == model::HbmCmd::kNone) continue;
        stats.command(*cmd);
        checkers[c].observe(*cmd);
      }
      if (s.has_response) responses.push_back(s.response);
    }
    t.clk_i = 1;
    t.eval();
    if (fst) fst->dump(2 * cycle + 1);

    bool all_idle = t.idle_o && responses.empty() && offering < 0;
    for (const auto& p : pending) all_idle = all_idle && p.empty();
    for (const auto& ch : channels) all_idle = all_idle && ch.idle();
    if (all_idle) break;
    if (cycle - last_progress > options.watchdog)
      fail(fmt::format("watchdog: no progress for {} cycles", options.watchdog));
    // A transfer that never ends makes progress every cycle: the burst count stops it.
    if (t.cnt_bursts_o > legal_bursts)
      fail(fmt::format("the engines moved a burst more than the descriptors hold ({}) at cycle {}", legal_bursts,
                       cycle));
  }
  if (fst) fst->close();
  r.cycles = cycle;
  r.bursts = t.cnt_bursts_o;
  r.err_code = t.err_code_o;
  if (r.ok && r.bursts != legal_bursts)
    fail(fmt::format("the engines moved {} bursts, the descriptors hold {}", r.bursts, legal_bursts));
  for (int e = 0; e < kDmaEngines && r.ok; ++e)
    if (!expect_done[static_cast<size_t>(e)].empty())
      fail(fmt::format("engine {}: {} list completions never reported", e,
                       expect_done[static_cast<size_t>(e)].size()));
  for (const auto& [a, v] : sbuf_ref) {
    if (!r.ok) break;
    if (sbuf[a] != v) fail(fmt::format("SBUF 0x{:x} holds {:016x}.., the descriptors say {:016x}..", a, sbuf[a][0], v[0]));
    ++r.sbuf_checked;
  }
  for (const auto& [a, v] : hbm_ref) {
    if (!r.ok) break;
    const HbmData got = channels[static_cast<size_t>(channel_of(a))].peek(a);
    if (got != v) fail(fmt::format("HBM 0x{:x} holds {:016x}.., the descriptors say {:016x}..", a, got[0], v[0]));
    ++r.hbm_checked;
  }
  for (size_t c = 0; c < checkers.size() && r.ok; ++c) {
    checkers[c].finish(cycle);
    if (!checkers[c].ok()) fail(fmt::format("HBM channel {}: timing checker: {}", c, checkers[c].failure()));
  }
  uint64_t age = 0;
  for (const auto& ch : channels) age = std::max(age, ch.max_age());
  r.hbm = stats.finish(cycle, age, 0);
  top->final();
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace ncore::tb
