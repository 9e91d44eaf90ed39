#pragma once
// Parameters of the transaction-level system: a Trainium2 chip, a Trn2 instance (16 chips on a
// 4x4 2D torus) and a Trn2 UltraServer (4 instances; chips at one XY position form a ring, so a
// 4x4x4 torus whose Z links are the slower inter-instance links). Defaults follow
// ../shared/spec/hardware.md; where it is silent the choice is ours and named here.
//
// Links: hardware.md gives 1,024 GB/s of NeuronLink per chip inside an instance and 256 GB/s
// between instances, without the per-link split. ncore's choice: 4 in-instance links (+X, -X,
// +Y, -Y) of 128 GB/s per direction (4 x 2 x 128 = 1,024) and 2 inter-instance links (+Z, -Z)
// of 64 GB/s per direction (2 x 2 x 64 = 256). Hop latency: 1 us (launch material's ~1 us; the
// collectives docs say 1-2 us per ring hop).
//
// Clocks: the per-core figures (79 TFLOPS BF16, 158 FP8, 20 FP32) are a 128x128 array at
// 2.4 GHz (1, 2 and 1/4 MACs per PE per cycle). The per-chip figures are not 8x those: each data
// type's chip figure implies its own clock, which the configuration carries as `rated_clock_ghz`
// (see derive_peaks()).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ncore::tlmsys {

struct LinkConfig {
  double gbps = 128.0;        // per link, per direction
  double hop_latency_us = 1.0;
};

struct ChipConfig {
  int cores = 8;
  int pe_rows = 128, pe_cols = 128;
  double core_clock_ghz = 2.4;          // the clock the cycle-accurate models run at
  // MACs per PE per cycle by input type (double-row FP8 does two; FP32 costs ~4 cycles).
  double macs_fp8 = 2.0, macs_bf16 = 1.0, macs_fp32 = 0.25;
  // The clocks the published per-chip figures imply (derive_peaks() reports both).
  double rated_clock_ghz_fp8 = 2.478, rated_clock_ghz_bf16 = 2.545, rated_clock_ghz_fp32 = 2.762;
  int hbm_stacks = 4;
  int hbm_pseudo_channels_per_stack = 32;  // HBM3: 16 channels x 2 pseudo-channels of 32 bits
  double hbm_pin_gbps = 5.664;             // the 2.9 TB/s figure over 4 x 1,024 pins
  double hbm_stack_gib = 24.0;             // 12-high stack of 16 Gb dies
  // Simulation only, not timing: step every busy pseudo-channel every HBM cycle (the reference)
  // instead of only at its events. Both give the same commands cycle for cycle
  // (SystemRunContention.EventDrivenHbmIsTheCycleByCycleHbm); the default is the faster.
  bool hbm_step_every_cycle = false;
  int dma_engines_per_core = 16;
  double reduce_gbps = 967.0;   // collective reduction: read two operands, write one at 2.9 TB/s
  // A core_barrier (nki.isa.core_barrier: each core of the pair updates a semaphore of the other
  // and waits on its own) ends this long after its last member issued it. ncore's choice: no
  // public page gives the barrier's time, so it takes what the Trainium2 Architecture Guide gives
  // a semaphore signal to reach another engine and start it (about 1,300 ns).
  double core_barrier_ns = 1300.0;
  LinkConfig link;              // each of the 4 in-instance links
  LinkConfig z_link{64.0, 1.0}; // each of the 2 inter-instance links (UltraServer)
};

struct SystemConfig {
  std::string name = "trn2";   // "chip", "trn2" (instance) or "trn2u" (UltraServer)
  int x = 4, y = 4, z = 1;     // torus dimensions (z = instances)
  ChipConfig chip;
  double quantum_ns = 1000.0;  // temporal decoupling quantum (tlm_quantumkeeper)
  // An RTL core runs this many of its cycles between synchronisations with the rest of the
  // system: its HBM requests of a slice leave at the slice's start, responses are seen from the
  // next slice on (1: every cycle, exact).
  int rtl_slice_cycles = 1;
  // Logical NeuronCore degree (LNC, NEURON_LOGICAL_NC_CONFIG): at 2, CORE 2k and 2k + 1 of a chip
  // are one logical core, one rank of the collectives of groups chips, cores and all
  // (tb/tlm/cc_engine.h). 1 (the default): every core is a rank.
  int lnc = 1;

  int chips() const { return x * y * z; }
  void validate() const;       // throws ncore::Error naming the key, the value and the range
};

// Named defaults: "chip" (1x1x1), "trn2" (4x4x1), "trn2u" (4x4x4).
SystemConfig default_system(const std::string& name);

// Reads a JSON configuration: {"system": "trn2"|"trn2u"|"chip", "x":..,"y":..,"z":..,
// "chip": {...ChipConfig keys...,"link": {"gbps":..,"hop_latency_us":..},"z_link":{...}},
// "quantum_ns": .., "rtl_slice_cycles": ..}. Keys not given keep the named system's defaults. An unknown key, a wrong
// type or a value out of range throws ncore::Error naming `source` and the key's JSON path.
SystemConfig parse_system_config(const std::string& text, const std::string& source);
SystemConfig load_system_config(const std::string& path);

// Peak figures derived from the parameters.
struct PeakFigures {
  std::string level;                        // "core", "chip", "instance", "ultraserver"
  int chips = 0, cores = 0;
  double tflops_fp8 = 0, tflops_bf16 = 0, tflops_fp32 = 0;  // at the rated clocks
  double tflops_fp8_core_clock = 0, tflops_bf16_core_clock = 0, tflops_fp32_core_clock = 0;
  double hbm_gib = 0, hbm_tbps = 0;
  double link_gbps_per_chip = 0;            // all in-instance links, both directions
  double z_link_gbps_per_chip = 0;          // all inter-instance links, both directions
};
// core, chip, and the system's own level (instance or UltraServer) when it has several chips.
std::vector<PeakFigures> derive_peaks(const SystemConfig& c);
double hbm_stack_gbps(const ChipConfig& c);
// The chip's HBM clock period in picoseconds: tCK = 4 / pin rate ns (a 32-bit pseudo-channel
// moves a 32-byte burst in two tCK), rounded to the picosecond.
uint64_t hbm_tck_ps(double pin_gbps);

nlohmann::json to_json(const PeakFigures& p);

}  // namespace ncore::tlmsys
