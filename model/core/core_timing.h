#pragma once
// The core's timing (issue 49): its clocks and the fixed costs of its instructions, as presets
// (uniform, trn2, trn1) that a run picks with `ncore run --timing` (model/README.md, "Timing
// presets"). Every constant here sets time, so each names its public source or says that it is
// ncore's own choice.
//
// Clocks: one base clock and an integer divider per clock domain, the way a chip derives its
// engine clocks from one PLL. Every published Trainium engine clock is such a division: trn2's
// Tensor 2.4, Scalar 1.2 and Vector 0.96 GHz are 4.8 GHz / 2, 4 and 5; trn1's 2.8, 1.4 and
// 1.12 GHz are 5.6 GHz / 2, 4 and 5 (../shared/spec/hardware.md, from the "Trainium2
// Architecture Guide for NKI" and the "Trainium/Inferentia2 Architecture Guide for NKI"). The
// base clock itself is ncore's inference from those ratios, not a published figure.
//
// Domains:
//   - tensor: the tensor engine and the pe queue's sequencer;
//   - scalar: the scalar engine and the act queue's sequencer;
//   - vector: the vector engine and the dve queue's sequencer (ncore also runs iota and
//     affine_select there: it has no GpSimd engine);
//   - dma: the 16 DMA engines, the sp and cc queues' sequencers, instruction fetch, the
//     descriptor-list walkers and the HBM ports.
// Each sequencer runs on its engine's clock: hardware.md gives every engine a sequencer of its
// own. A domain's edges fall on every divide-th base edge, from edge 0.
//
// The golden core counts time in base cycles. `uniform` (every domain on one 2.4 GHz clock, no
// fixed costs) is the timing the RTL core implements today, and the default until the RTL core
// has the domains and costs too; `trn2` and `trn1` are the silicon's.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ncore::model {

enum class ClockDomain : int { kTensor = 0, kScalar, kVector, kDma };
inline constexpr int kClockDomains = 4;
inline constexpr std::array<std::string_view, kClockDomains> kClockDomainNames = {"tensor", "scalar", "vector", "dma"};

struct CoreClocks {
  double base_ghz = 2.4;
  std::array<int, kClockDomains> divide{1, 1, 1, 1};
  static constexpr int kMaxDivide = 64;

  int div(ClockDomain d) const { return divide[static_cast<size_t>(d)]; }
  double ghz(ClockDomain d) const { return base_ghz / div(d); }
  // The first edge of domain d at or after base cycle t.
  uint64_t edge(ClockDomain d, uint64_t t) const {
    const auto k = static_cast<uint64_t>(div(d));
    return (t + k - 1) / k * k;
  }
  bool on_edge(ClockDomain d, uint64_t t) const { return t % static_cast<uint64_t>(div(d)) == 0; }
  double ns(uint64_t base_cycles) const { return static_cast<double>(base_cycles) / base_ghz; }
  // Base cycles in `ns` nanoseconds, rounded up.
  uint64_t cycles_in(double ns) const;
  bool operator==(const CoreClocks& o) const { return base_ghz == o.base_ghz && divide == o.divide; }
};

// A vector or scalar engine's fixed costs, in its own cycles. An instruction streams for its
// cost (model/vector: about N cycles for one input of N elements a partition, 2N for two), holds
// the engine for at least `min_cycles`, and its results land `static_cycles` after it stops
// streaming: the next instruction may start as soon as it stops streaming (the engine is
// pipelined), unless it reads or overwrites what an instruction still in the pipeline writes,
// in which case it starts when that one's results have landed.
struct EngineCosts {
  uint64_t min_cycles = 0;     // the minimum initiation interval (MIN_II)
  uint64_t static_cycles = 0;  // the pipeline's latency after streaming
  // The vector engine's performance mode (model::ve_perf_mode: two 16-bit elements a cycle),
  // NeuronCore-v3 only (Trainium2 architecture guide, "Vector performance mode"): off in trn1.
  bool performance_mode = true;
  bool operator==(const EngineCosts& o) const {
    return min_cycles == o.min_cycles && static_cycles == o.static_cycles && performance_mode == o.performance_mode;
  }
};

// The tensor engine's rates beyond the RTL's (its MM already holds the array at least
// MM_INIT_LATENCY, 64 cycles: rtl/tensor).
struct TensorCosts {
  int ls_columns_per_cycle = 1;  // fast LoadStationary: weight columns loaded a cycle
  bool operator==(const TensorCosts& o) const { return ls_columns_per_cycle == o.ls_columns_per_cycle; }
};

// The DMA engines' costs beyond what the HBM model times.
struct DmaCosts {
  double engine_bytes_per_ns = 0;   // per engine: a descriptor moves no faster (0: no limit)
  double element_ns = 0;            // per contiguous element (a descriptor's row)
  double transpose_share = 1.0;     // a DMA transpose's rate, as a share of a copy's
  double descriptor_ns = 0;         // descriptor generation: from issue to the first byte, per descriptor
  double semaphore_to_start_ns = 0; // a DMA that waited on a semaphore starts no earlier than this after the signal
  bool operator==(const DmaCosts& o) const {
    return engine_bytes_per_ns == o.engine_bytes_per_ns && element_ns == o.element_ns &&
           transpose_share == o.transpose_share && descriptor_ns == o.descriptor_ns &&
           semaphore_to_start_ns == o.semaphore_to_start_ns;
  }
};

// The tensor engine's power throttling: after a stretch of low use the engine streams at
// `start_share` of its rate, ramping linearly to full over `ramp_ns`; it throttles again when,
// `window_ns` or more after the ramp began, its use over the last `window_ns` was under
// `low_use`.
struct ThrottleConfig {
  bool enabled = false;
  double start_share = 0.5;
  double ramp_ns = 3000;
  double window_ns = 3000;
  double low_use = 0.5;
  bool operator==(const ThrottleConfig& o) const {
    return enabled == o.enabled && start_share == o.start_share && ramp_ns == o.ramp_ns && window_ns == o.window_ns &&
           low_use == o.low_use;
  }
};

// Who may use PSUM at once. NeuronCore-v3 lets the Vector and Scalar engines access it in
// parallel; NeuronCore-v2 does not (Trainium/Inferentia2 and Trainium2 architecture guides for
// NKI), where the compiler serializes their PSUM instructions. ncore, which has no compiler,
// serializes them in hardware when `vector_scalar_parallel` is off: an instruction of either
// engine that reads or writes PSUM claims it when neither engine holds it, and holds it until
// its engine is done with it (rtl/core/README.md, "PSUM between the Vector and Scalar engines").
struct PsumAccess {
  bool vector_scalar_parallel = true;
  bool operator==(const PsumAccess& o) const { return vector_scalar_parallel == o.vector_scalar_parallel; }
};

struct CoreCosts {
  TensorCosts tensor;
  EngineCosts scalar, vector;
  DmaCosts dma;
  ThrottleConfig throttle;
  PsumAccess psum;
  bool operator==(const CoreCosts& o) const {
    return tensor == o.tensor && scalar == o.scalar && vector == o.vector && dma == o.dma && throttle == o.throttle &&
           psum == o.psum;
  }
};

struct CoreTiming {
  std::string preset = "uniform";
  CoreClocks clocks;
  CoreCosts costs;
  // What a launch adds outside the kernel's time: nki.benchmark's latency comes from
  // neuron-bench, which times the NEFF's launch and host transfers with it. It is reported beside
  // the kernel's time (ncore run --json `launch_overhead_ns`; nki.benchmark's percentiles add it)
  // and never inside it. No figure is published ("neuron-bench measures not only the device
  // latency", nki.benchmark's page): 0 in every preset, ncore's choice; a timing file sets a
  // measured one (`launch.overhead_ns`).
  double launch_overhead_ns = 0;
  // Throws ncore::Error naming the key ("clock.base_ghz", "clock.divide.vector",
  // "dma.engine_bytes_per_ns") of a value out of range.
  void validate() const;
};

// The presets by name: "uniform", "trn2", "trn1" (throws ncore::Error naming the choices).
CoreTiming timing_preset(std::string_view name);

// What of `t` the RTL core cannot run, naming the key, or "" when it can run all of it. It has the
// clock domains and every fixed cost, within its registers: 1, 2 or 4 weight columns a cycle, a
// throttle window of kRtlThrottleWindow tensor cycles (nc_tensor_engine's ThrottleWindow), and
// DMA costs under kRtlDmaCostCycles dma cycles a row and a byte (nc_dma's Q8.24).
inline constexpr uint64_t kRtlThrottleWindow = 16384;
inline constexpr double kRtlDmaCostCycles = 256;
std::string rtl_timing_refusal(const CoreTiming& t);

}  // namespace ncore::model
