#include "tb/dma/dma_sim.h"

#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <verilated.h>

#include "Vnc_dma.h"
#include "model/common/error.h"
#include "tb/common/bench.h"
#include "tb/common/wide.h"
#include "model/common/numerics.h"
#include "tb/hbm/hbm_fabric.h"

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
  const WallClock wall;
  if (options.xprop_seed != 0) throw Error("DMA harness: there is no X-propagation build of the DMA engines");
  HbmFabric hbm(options.hbm, 1);
  const uint64_t hbm_bytes = hbm.capacity();
  int log2 = 0;
  while ((1ull << log2) < hbm_bytes) ++log2;

  // Per engine: its descriptors in order (last set on each list's final one), and the list
  // completions it must report.
  std::vector<std::deque<DmaDescriptor>> pending(kDmaEngines);
  std::vector<std::deque<bool>> expect_done(kDmaEngines);
  model::SplitMix64 rng(options.seed);
  std::unordered_map<uint64_t, HbmData> hbm_ref, sbuf, sbuf_ref;
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
      const auto bursts = model::dma_bursts(d);
      if (d.transpose) {
        uint8_t in[model::kDmaTransposeRows][32], out[model::kDmaTransposeRows][32];
        for (size_t b = 0; b < bursts.size(); b += model::kDmaTransposeRows) {
          for (int i = 0; i < model::kDmaTransposeRows; ++i) {
            const uint64_t h = bursts[b + i].first;
            if (!hbm_ref.count(h)) {
              hbm_ref[h] = random_data(rng);
              hbm.preload(h, hbm_ref[h]);
            }
            std::memcpy(in[i], hbm_ref[h].data(), 32);
          }
          model::dma_transpose_block(in, out);
          for (int j = 0; j < model::kDmaTransposeRows; ++j) std::memcpy(sbuf_ref[bursts[b + j].second].data(), out[j], 32);
          legal_bursts += model::kDmaTransposeRows;
        }
        continue;
      }
      for (const auto& [h, s] : bursts) {
        ++legal_bursts;
        if (d.to_hbm) {
          if (!sbuf_ref.count(s)) sbuf_ref[s] = sbuf[s] = random_data(rng);
          hbm_ref[h] = sbuf_ref[s];
        } else {
          if (!hbm_ref.count(h)) {
            hbm_ref[h] = random_data(rng);
            hbm.preload(h, hbm_ref[h]);
          }
          sbuf_ref[s] = hbm_ref[h];
        }
      }
    }
    expect_done[static_cast<size_t>(list.engine)].push_back(refused);
  }

  Bench<Vnc_dma> bench(options, "dma", "dma");
  Vnc_dma& t = bench.top();
  t.hbm_bytes_log2_i = static_cast<uint8_t>(log2);
  t.desc_valid_i = 0;
  t.hbm_rsp_valid_i = 0;
  t.upset_stage_full_i = options.fault == DmaFault::kUpsetStageFull;
  bench.reset();

  DmaSimResult r;
  Failure fail(r, options);
  model::HbmStatsBuilder stats(hbm.config(), legal_bursts, 0);
  HbmData sbuf_read_data{};
  int offering = -1, next_engine = 0;
  Watchdog watchdog(options.watchdog);
  uint64_t cycle = 0;  // from the end of reset
  for (; r.ok; ++cycle) {
    // Descriptor port: hold a descriptor until taken; start a new one past a random stall.
    if (offering < 0 && !(options.stall > 0 && (rng.next() >> 11) * 0x1.0p-53 < options.stall))
      for (int k = 0; k < kDmaEngines && offering < 0; ++k) {
        const int e = (next_engine + k) % kDmaEngines;
        if (!pending[static_cast<size_t>(e)].empty()) offering = e;
      }
    t.desc_valid_i = offering >= 0;
    if (offering >= 0) drive(t, offering, pending[static_cast<size_t>(offering)].front());
    // HBM: each request goes to its channel; a response waits in the interconnect.
    const uint64_t rd_addr = t.hbm_rd_addr_o, wr_addr = t.hbm_wr_addr_o;
    t.hbm_rd_ready_i = hbm.grant(false, t.hbm_rd_valid_o, &rd_addr) & 1;
    t.hbm_wr_ready_i = hbm.grant(true, t.hbm_wr_valid_o, &wr_addr) & 1;
    const auto response = hbm.response(0);
    t.hbm_rsp_valid_i = response.has_value();
    if (response) {
      t.hbm_rsp_id_i = response->id;
      to_wide(response->data, t.hbm_rsp_data_i);
    }
    to_wide(sbuf_read_data, t.sbuf_rd_data_i);
    bench.fall();

    if (offering >= 0 && t.desc_ready_o) {
      pending[static_cast<size_t>(offering)].pop_front();
      next_engine = (offering + 1) % kDmaEngines;
      offering = -1;
      watchdog.progress(cycle);
    }
    if (t.hbm_rd_ready_i) {
      model::HbmRequest q;
      q.addr = t.hbm_rd_addr_o;
      q.id = t.hbm_rd_id_o;
      hbm.offer(0, q);
    }
    if (t.hbm_wr_ready_i) {
      model::HbmRequest q;
      q.write = true;
      q.addr = t.hbm_wr_addr_o;
      q.id = t.hbm_wr_id_o;
      q.data = from_wide<decltype(t.hbm_wr_data_o)>(t.hbm_wr_data_o);
      hbm.offer(0, q);
      watchdog.progress(cycle);
    }
    if (response) hbm.pop(0);
    if (t.sbuf_wr_valid_o) {
      const uint64_t a = t.sbuf_wr_addr_o;
      if (!sbuf_ref.count(a)) fail(bench.cycle(), fmt::format("SBUF write to 0x{:x}, which no descriptor targets", a));
      sbuf[a] = from_wide<decltype(t.sbuf_wr_data_o)>(t.sbuf_wr_data_o);
      watchdog.progress(cycle);
    }
    if (t.sbuf_rd_valid_o) {
      const auto it = sbuf.find(t.sbuf_rd_addr_o);
      sbuf_read_data = it == sbuf.end() ? HbmData{} : it->second;
    }
    if (t.done_valid_o) {
      auto& q = expect_done[t.done_engine_o];
      if (q.empty()) {
        fail(bench.cycle(), fmt::format("engine {} reported a list done that it was never given", t.done_engine_o));
      } else if (q.front() != static_cast<bool>(t.done_error_o)) {
        fail(bench.cycle(), fmt::format("engine {} reported a list done with error flag {}, expected {}",
                                        t.done_engine_o, t.done_error_o, q.front()));
      } else {
        q.pop_front();
        ++r.lists_done;
      }
    }
    hbm.step(&stats);
    bench.rise();

    bool all_idle = t.idle_o && hbm.idle() && offering < 0;
    for (const auto& p : pending) all_idle = all_idle && p.empty();
    if (all_idle) break;
    if (watchdog.expired(cycle)) fail(bench.cycle(), watchdog.report());
    // A transfer that never ends makes progress every cycle: the burst count stops it.
    if (t.cnt_bursts_o > legal_bursts)
      fail(bench.cycle(), fmt::format("the engines moved a burst more than the descriptors hold ({})", legal_bursts));
  }
  r.cycles = cycle;
  r.bursts = t.cnt_bursts_o;
  r.err_code = t.err_code_o;
  const uint64_t end = bench.cycle();
  if (r.bursts != legal_bursts)
    fail(end, fmt::format("the engines moved {} bursts, the descriptors hold {}", r.bursts, legal_bursts));
  for (int e = 0; e < kDmaEngines; ++e)
    if (!expect_done[static_cast<size_t>(e)].empty())
      fail(end, fmt::format("engine {}: {} list completions never reported", e,
                            expect_done[static_cast<size_t>(e)].size()));
  for (const auto& [a, v] : sbuf_ref) {
    if (!r.ok) break;
    if (sbuf[a] != v)
      fail(end, fmt::format("SBUF 0x{:x} holds {:016x}.., the descriptors say {:016x}..", a, sbuf[a][0], v[0]));
    ++r.sbuf_checked;
  }
  for (const auto& [a, v] : hbm_ref) {
    if (!r.ok) break;
    const HbmData got = hbm.peek(a);
    if (got != v) fail(end, fmt::format("HBM 0x{:x} holds {:016x}.., the descriptors say {:016x}..", a, got[0], v[0]));
    ++r.hbm_checked;
  }
  if (const std::string timing = hbm.finish(); !timing.empty()) fail(end, timing);
  r.hbm = stats.finish(cycle, hbm.max_age(), 0);
  r.wall_seconds = wall.seconds();
  return r;
}

}  // namespace ncore::tb
