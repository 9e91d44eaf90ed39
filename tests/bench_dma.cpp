// Benchmark (not a test): the HBM bandwidth that the DMA engines' own traffic achieves. Sixteen
// engines (RTL) each move 64 KiB packets between HBM and SBUF through the HBM reference
// controller (cycle-exact with the controller RTL), reorder and FCFS side by side. Cycle counts
// are exact properties of the design.

#include <cstdio>

#include <fmt/format.h>

#include "model/dma/dma.h"
#include "tb/dma/dma_sim.h"

namespace {

using ncore::model::DmaDescriptor;
using ncore::tb::DmaList;

// Engine e moves `packets` packets of 64 KiB from (or to) its own 4 MiB-aligned HBM buffer,
// one list per packet; the last `storing` engines store SBUF -> HBM, the others load.
std::vector<DmaList> workload(int storing, int packets) {
  std::vector<DmaList> lists;
  for (int p = 0; p < packets; ++p)
    for (int e = 0; e < 16; ++e) {
      DmaDescriptor d;
      d.to_hbm = e >= 16 - storing;
      d.hbm_addr = (static_cast<uint64_t>(e) << 22) + static_cast<uint64_t>(p) * 65536;
      d.sbuf_addr = static_cast<uint64_t>(e) * 8 * 229376 + static_cast<uint64_t>(p % 2) * 65536;
      d.bytes = 65536;
      lists.push_back({e, {d}});
    }
  return lists;
}

// `engines` engines each load one [128 rows, 128 columns] BF16 tile (32 KiB) from HBM: as a
// copy (row r into partition r) or transposed (column c into partition c), each engine into its
// own 256 bytes of every partition.
std::vector<DmaList> tiles(int engines, bool transpose) {
  std::vector<DmaList> lists;
  for (int e = 0; e < engines; ++e) {
    DmaDescriptor d;
    d.hbm_addr = static_cast<uint64_t>(e) << 22;
    d.sbuf_addr = static_cast<uint64_t>(e) * 256;
    d.bytes = 256;
    d.count1 = 128;
    d.hbm_stride1 = 256;
    d.sbuf_stride1 = transpose ? 0 : 229376;
    d.transpose = transpose;
    lists.push_back({e, {d}});
  }
  return lists;
}

// DMA transpose against a copy of the same tiles, side by side (rtl/dma/README.md, "Transpose").
int transpose_table() {
  fmt::print("\n| engines loading a 128 x 128 BF16 tile each (4 channels) | copy cycles | transpose cycles "
             "| transpose throughput / copy |\n|---|---|---|---|\n");
  for (int engines : {1, 4, 16}) {
    uint64_t cycles[2] = {0, 0};
    for (int t = 0; t < 2; ++t) {
      ncore::tb::DmaSimOptions o;
      o.hbm.channels = 4;
      const auto r = ncore::tb::run_dma_rtl(tiles(engines, t == 1), o);
      if (!r.ok) {
        fmt::print(stderr, "bench_dma: {}\n", r.failure);
        return 1;
      }
      cycles[t] = r.cycles;
    }
    fmt::print("| {} | {} | {} | {:.3f} |\n", engines, cycles[0], cycles[1],
               static_cast<double>(cycles[0]) / static_cast<double>(cycles[1]));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main() {
  fmt::print("| DMA workload (16 engines, 64 KiB packets) | HBM scheduler | channels | cycles | "
             "HBM utilization | GB/s | row hits |\n|---|---|---|---|---|---|---|\n");
  for (int storing : {0, 4})
    for (int channels : {1, 4})
      for (auto sched : {ncore::model::HbmSched::kReorder, ncore::model::HbmSched::kFcfs}) {
        ncore::tb::DmaSimOptions o;
        o.hbm.channels = channels;
        o.hbm.sched = sched;
        const auto r = ncore::tb::run_dma_rtl(workload(storing, channels == 1 ? 4 : 8), o);
        if (!r.ok) {
          fmt::print(stderr, "bench_dma: {}\n", r.failure);
          return 1;
        }
        fmt::print("| {} | {} | {} | {} | {:.2f}% | {:.1f} | {:.1f}% |\n",
                   storing ? "12 loading, 4 storing" : "16 loading", 
                   sched == ncore::model::HbmSched::kReorder ? "reorder" : "FCFS", channels,
                   r.cycles, 100 * r.hbm.utilization, r.hbm.gbps, 100 * r.hbm.row_hit_rate);
        std::fflush(stdout);
      }
  return transpose_table();
}
