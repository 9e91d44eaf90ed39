#pragma once
// Collectives across the chips of a System, with real data, each chip's part written as a
// SystemC process (or two: the split algorithms run two streams in opposite directions) that
// sends and receives messages through the NeuronLink model.
//
// Operations (nccl-tests conventions; S = --bytes, N = chips, FP32 elements):
//   allreduce      every chip holds S bytes in, S bytes of the sum out
//   reducescatter  S in; chip r ends with shard r (S/N bytes) of the sum
//   allgather      chip r contributes shard r (S/N); every chip ends with all S bytes
//   alltoall       chip r holds N blocks of S/N, block d for chip d; ends with block r of each
// Algorithms:
//   ring           one ring through every chip (Topology::snake), reduce-scatter then all-gather
//   torus2d        dimension-ordered rings: X, then Y (then Z on an UltraServer)
//   torus2d-split  half the data X-first on the + links, half Y-first on the - links: all four
//                  ports busy at once
//   rhd            recursive halving (reduce-scatter) and doubling (all-gather) with partners at
//                  rank distance N/2, N/4, ..., 1; all-to-all: pairwise exchange, partner r^k
//   hier           UltraServer only: a ring through the 16 chips of each instance, then rings
//                  across the 4 instances (Z), split in two opposite streams
//   multiring      one stream per outgoing port (2 x the torus's dimensions: 4 on an instance,
//                  6 on an UltraServer), each a torus2d over its share of the data that starts
//                  with its own port's dimension and direction (+X then +Y, -X then -Y, +Y then
//                  +X, -Y then -X): every port sends in every phase, as NCCL's channels do
// All-to-all on ring / torus2d / torus2d-split / hier relays blocks around the same rings.
//
// Element values are small integers, so every sum is exact in FP32 whatever the order of
// additions and each chip's result is checked bit for bit against the sum computed directly.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tb/tlm/system_config.h"

namespace ncore::tlmsys {

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kAllToAll };
// Numbered as model/isa/ncore.isa's cc_algo.
enum class CollectiveAlgo { kRing, kTorus2d, kTorus2dSplit, kRhd, kHier, kMultiring };
CollectiveOp parse_collective_op(const std::string& name);      // throws Error listing the names
CollectiveAlgo parse_collective_algo(const std::string& name);
const char* collective_op_name(CollectiveOp op);
const char* collective_algo_name(CollectiveAlgo algo);

// Real data is carried for at most this many bytes over all chips (inputs, results and messages
// in flight take a few times that in host memory).
inline constexpr uint64_t kMaxCollectiveDataBytes = uint64_t{4} << 30;

struct CollectiveOptions {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  uint64_t bytes = 1 << 20;
  bool data = true;             // false: timing only (no payload bytes; for sizes that do not fit)
  uint64_t seed = 1;
  double limit_seconds = 100;   // simulated-time watchdog
  // Tests of the checks: chip 1 corrupts the first message it receives (one element + 1), or
  // chip 0 never sends its first message (the run must end naming the waiting processes).
  bool inject_corruption = false;
  bool inject_lost_message = false;
};

struct CollectiveResult {
  double sim_time_us = 0;
  double closed_form_us = 0;
  double algbw_gbps = 0, busbw_gbps = 0;
  bool data_checked = false;
  uint64_t elements_checked = 0;
  uint64_t messages = 0;        // link traversals
  uint64_t link_bytes = 0;      // bytes over all links
  double max_link_busy = 0;     // busiest link's busy time / simulated time
  double wall_seconds = 0;
};

// Throws Error for a combination that does not apply (hier without Z, rhd on a chip count that
// is not a power of two, a size not divisible into shards), for a collective that stops before
// every process finished (naming each waiting process) and for a wrong result (naming the chip,
// the element, and both values).
CollectiveResult run_collective(const SystemConfig& config, const CollectiveOptions& options);

// Runs one collective, timing only (options.data false), among every chip of a running system,
// from a SystemC thread, returning when it has ended. `instance` (> 0) keeps its messages apart
// from other collectives running at the same time. The caller has checked that it applies.
class System;
void run_collective_in(System& system, const SystemConfig& config, const CollectiveOptions& options, uint32_t instance);
void check_collective_applicable(const SystemConfig& config, CollectiveAlgo algo);  // throws Error if not

// The alpha-beta(-gamma) cost of the algorithm with no link shared by two flows: per step, hop
// latency x hops + bytes / link bandwidth (+ bytes / reduce bandwidth when it reduces).
double collective_closed_form_us(const SystemConfig& config, CollectiveOp op, CollectiveAlgo algo,
                                 uint64_t bytes);

// The unit --bytes must be a multiple of (N shards x streams x 4 bytes).
uint64_t collective_granule(const SystemConfig& config, CollectiveAlgo algo);

nlohmann::json to_json(const CollectiveResult& r);

// Point-to-point messages on an otherwise idle fabric (for tests of routing, latency, bandwidth
// and contention): each leaves `src` at `start_us`; returns when its last byte arrived and the
// hops it took.
struct Transfer {
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  double start_us = 0;
};
struct TransferResult {
  double arrival_us = 0;
  int hops = 0;
};
std::vector<TransferResult> run_transfers(const SystemConfig& config, const std::vector<Transfer>& transfers);

}  // namespace ncore::tlmsys
