#include "model/core/core_timing.h"

#include <cmath>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/core/engine_timing.h"

namespace ncore::model {

uint64_t CoreClocks::cycles_in(double ns) const { return static_cast<uint64_t>(std::ceil(ns * base_ghz - 1e-9)); }

namespace {

void check(bool ok, std::string_view key, std::string_view expected, double found) {
  if (!ok) throw Error(fmt::format("key '{}': expected {}, found {}", key, expected, found));
}

}  // namespace

void CoreTiming::validate() const {
  check(launch_overhead_ns >= 0 && launch_overhead_ns <= 1e9, "launch.overhead_ns", "a number in [0, 1e9]",
        launch_overhead_ns);
  check(clocks.base_ghz >= 0.1 && clocks.base_ghz <= 100, "clock.base_ghz", "a number in [0.1, 100]", clocks.base_ghz);
  for (int d = 0; d < kClockDomains; ++d) {
    const int v = clocks.divide[static_cast<size_t>(d)];
    check(v >= 1 && v <= CoreClocks::kMaxDivide, fmt::format("clock.divide.{}", kClockDomainNames[static_cast<size_t>(d)]),
          fmt::format("an integer in [1, {}]", CoreClocks::kMaxDivide), v);
  }
  for (const auto& [name, e] : {std::pair{"scalar", costs.scalar}, std::pair{"vector", costs.vector}}) {
    check(e.min_cycles <= 65'535, fmt::format("{}.min_cycles", name), "an integer in [0, 65535]", static_cast<double>(e.min_cycles));
    check(e.static_cycles <= 65'535, fmt::format("{}.static_cycles", name), "an integer in [0, 65535]",
          static_cast<double>(e.static_cycles));
  }
  check(costs.tensor.ls_columns_per_cycle >= 1 && costs.tensor.ls_columns_per_cycle <= 128, "tensor.ls_columns_per_cycle",
        "an integer in [1, 128]", costs.tensor.ls_columns_per_cycle);
  const DmaCosts& d = costs.dma;
  check(d.engine_bytes_per_ns >= 0 && d.engine_bytes_per_ns <= 1e4, "dma.engine_bytes_per_ns", "a number in [0, 10000]",
        d.engine_bytes_per_ns);
  check(d.element_ns >= 0 && d.element_ns <= 1e6, "dma.element_ns", "a number in [0, 1000000]", d.element_ns);
  check(d.transpose_share > 0 && d.transpose_share <= 1, "dma.transpose_share", "a number in (0, 1]", d.transpose_share);
  check(d.descriptor_ns >= 0 && d.descriptor_ns <= 1e6, "dma.descriptor_ns", "a number in [0, 1000000]", d.descriptor_ns);
  check(d.semaphore_to_start_ns >= 0 && d.semaphore_to_start_ns <= 1e6, "dma.semaphore_to_start_ns",
        "a number in [0, 1000000]", d.semaphore_to_start_ns);
  const ThrottleConfig& t = costs.throttle;
  check(t.start_share > 0 && t.start_share <= 1, "throttle.start_share", "a number in (0, 1]", t.start_share);
  check(t.ramp_ns >= 0 && t.ramp_ns <= 1e9, "throttle.ramp_ns", "a number in [0, 1e9]", t.ramp_ns);
  check(t.window_ns > 0 && t.window_ns <= 1e9, "throttle.window_ns", "a number in (0, 1e9]", t.window_ns);
  check(t.low_use >= 0 && t.low_use <= 1, "throttle.low_use", "a number in [0, 1]", t.low_use);
}

std::string rtl_timing_refusal(const CoreTiming& t) {
  const CoreCosts& c = t.costs;
  const int ls = c.tensor.ls_columns_per_cycle;
  if (ls != 1 && ls != 2 && ls != 4)
    return fmt::format("the RTL core loads 1, 2 or 4 weight columns a cycle (tensor.ls_columns_per_cycle is {})", ls);
  const TeCosts te = te_costs(c, t.clocks);
  if (te.throttle && te.window_cycles > kRtlThrottleWindow)
    return fmt::format("the RTL core's throttle keeps a window of {} tensor cycles at most (throttle.window_ns is {})",
                       kRtlThrottleWindow, te.window_cycles);
  // nc_dma's costs are Q8.24 cycles of the dma domain.
  const double dma_ghz = t.clocks.ghz(ClockDomain::kDma);
  if (c.dma.element_ns * dma_ghz >= kRtlDmaCostCycles)
    return fmt::format("the RTL core's DMA takes under {} dma cycles a row (dma.element_ns is {:.1f} of them)",
                       kRtlDmaCostCycles, c.dma.element_ns * dma_ghz);
  if (c.dma.engine_bytes_per_ns > 0 && dma_ghz / (c.dma.engine_bytes_per_ns * c.dma.transpose_share) >= kRtlDmaCostCycles)
    return fmt::format("the RTL core's DMA takes under {} dma cycles a byte (dma.engine_bytes_per_ns and "
                       "transpose_share give {:.1f} of them)",
                       kRtlDmaCostCycles, dma_ghz / (c.dma.engine_bytes_per_ns * c.dma.transpose_share));
  return "";
}

CoreTiming timing_preset(std::string_view name) {
  CoreTiming t;
  t.preset = std::string(name);
  if (name == "uniform") return t;  // one 2.4 GHz clock, no fixed costs: the RTL core today
  if (name != "trn2" && name != "trn1")
    throw Error(fmt::format("timing preset '{}': expected uniform, trn2 or trn1", name));
  const bool trn2 = name == "trn2";
  // Tensor, Scalar, Vector: base / 2, 4, 5 (see the top of core_timing.h). The DMA engines'
  // clock is not published: ncore keeps them, and the HBM ports, at the Tensor clock, where the
  // HBM controller's timing was calibrated.
  t.clocks.base_ghz = trn2 ? 4.8 : 5.6;
  t.clocks.divide = {2, 4, 5, 2};
  // The nki.isa pages' "Estimated instruction cost" (SDK 2.20-2.26) and the NKI performance
  // guide (hardware.md): a minimum initiation interval of about 64 engine cycles on both
  // engines, and for the Vector engine a static overhead of about 100 cycles between dependent
  // instructions. The Scalar engine's 200 is the performance guide's dependent one-element
  // activations, one every 264 ScalarE cycles on trn1, less the 64 of the interval; no trn2
  // figure is published, so trn2 takes the same cycles.
  // NKI performance guide: with fast LoadStationary an LS is up to 4x faster than a
  // MultiplyMoving of the same free size (its interval about the elements / 4: 32 cycles for
  // 128). MM_INIT_LATENCY (an MM holds the array 64 cycles at least) is in the RTL already.
  t.costs.tensor.ls_columns_per_cycle = 4;
  t.costs.vector = {64, 100};
  t.costs.scalar = {64, 200};
  // Trainium2 architecture guide: the Vector engine's performance mode is NeuronCore-v3's only.
  t.costs.vector.performance_mode = trn2;
  // Trainium/Inferentia2 architecture guide for NKI: on NeuronCore-v2 the Vector and Scalar
  // engines cannot access PSUM in parallel; the Trainium2 guide lifts this on NeuronCore-v3.
  t.costs.psum.vector_scalar_parallel = trn2;
  // NKI DMA bandwidth guide: 23 B/ns per engine on trn2, 17 on trn1.
  t.costs.dma.engine_bytes_per_ns = trn2 ? 23 : 17;
  // hardware.md (DMA bandwidth guide): transfers under 256 B a partition are overhead-bound,
  // 2 KiB and more near peak. ncore's curve: a fixed cost per row equal to moving 256 bytes,
  // so a 256-byte row runs at half the rate, 2 KiB at 89% and 8 KiB at 97%.
  t.costs.dma.element_ns = 256.0 / t.costs.dma.engine_bytes_per_ns;
  // Trainium2 Architecture Guide: DMA transpose up to 90% of a copy's rate HBM to SBUF (the
  // only direction ncore's DMA transposes); no trn1 figure, ncore uses the same.
  t.costs.dma.transpose_share = 0.9;
  // Trainium2 Architecture Guide: a DMA instruction whose descriptors the hardware generates
  // (DGE) costs about 600 ns on NeuronCore-v3; ncore's DMA engines generate a descriptor while
  // the previous one moves. NeuronCore-v2 has no DGE (its descriptors are prepared ahead): 0.
  t.costs.dma.descriptor_ns = trn2 ? 600 : 0;
  // Trainium2 Architecture Guide: about 1,300 ns from a semaphore signal on another engine to
  // the DMA's start. No trn1 figure: the same.
  t.costs.dma.semaphore_to_start_ns = 1300;
  // Neuron Explorer docs: trn2's tensor engine starts near 50% after low use and ramps to full
  // over about 3 us, throttling again after a 3 us window under 50%. Not published for trn1.
  t.costs.throttle.enabled = trn2;
  return t;
}

}  // namespace ncore::model
