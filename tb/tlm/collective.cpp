#include "tb/tlm/collective.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "tb/tlm/system.h"  // first: SystemC before the quantum keeper
#include <tlm_utils/tlm_quantumkeeper.h>

namespace ncore::tlmsys {
namespace {

using sc_core::sc_time;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // (first element, count)

// A ring of one phase: a dimension of the torus (0, 1, 2), the 16-chip snake of the caller's
// instance (kInstance), or the snake through every chip (kAll); + or - direction.
constexpr int kInstance = 3, kAll = 4;
struct Phase {
  int ring = 0;
  bool plus = true;
};

// Which group of the phase a chip belongs to: chips with one key share a position of the ring.
int phase_key(const Topology& t, Phase p, int rank) {
  const Coord c = t.coord(rank);
  if (p.ring < 3) return c.c[p.ring];
  if (p.ring == kInstance) return c.c[0] + t.dim(0) * c.c[1];
  return rank;
}

std::vector<int> phase_ring(const Topology& t, Phase p, int me) {
  std::vector<int> ring;
  if (p.ring < 3) {
    ring = t.ring(me, p.ring);
  } else if (p.ring == kInstance) {
    const Topology layer(t.dim(0), t.dim(1), 1);
    const int z = t.coord(me).c[2];
    for (int r : layer.snake()) ring.push_back(r + z * t.dim(0) * t.dim(1));
  } else {
    ring = t.snake();
  }
  if (!p.plus) std::reverse(ring.begin(), ring.end());
  return ring;
}

// The streams (each a list of phases) an algorithm runs on each chip; empty for rhd.
std::vector<std::vector<Phase>> algorithm_streams(const Topology& t, CollectiveAlgo algo) {
  std::vector<Phase> plus, minus;
  switch (algo) {
    case CollectiveAlgo::kRing:
      return {{Phase{kAll, true}}};
    case CollectiveAlgo::kTorus2d:
    case CollectiveAlgo::kTorus2dSplit:
      for (int d : {0, 1, 2})
        if (t.dim(d) > 1) plus.push_back(Phase{d, true});
      if (algo == CollectiveAlgo::kTorus2d) return {plus};
      for (int d : {1, 0, 2})
        if (t.dim(d) > 1) minus.push_back(Phase{d, false});
      return {plus, minus};
    case CollectiveAlgo::kHier:
      return {{Phase{kInstance, true}, Phase{2, true}}, {Phase{kInstance, false}, Phase{2, false}}};
    case CollectiveAlgo::kRhd:
      return {};
    case CollectiveAlgo::kMultiring: {
      // A stream per outgoing port: for each dimension and direction, the dimensions' rings in
      // turn starting with that one. Streams in the same phase use different ports, so every
      // port sends in every phase (on a square torus the phases also end together).
      std::vector<int> dims;
      for (int d : {0, 1, 2})
        if (t.dim(d) > 1) dims.push_back(d);
      std::vector<std::vector<Phase>> streams;
      for (size_t i = 0; i < dims.size(); ++i)
        for (bool dir : {true, false}) {
          std::vector<Phase> phases;
          for (size_t j = 0; j < dims.size(); ++j) phases.push_back(Phase{dims[(i + j) % dims.size()], dir});
          streams.push_back(std::move(phases));
        }
      return streams;
    }
  }
  return {};
}

int stream_count(const Topology& t, CollectiveAlgo algo) {
  return algo == CollectiveAlgo::kRhd ? 1 : static_cast<int>(algorithm_streams(t, algo).size());
}

void check_applicable(const SystemConfig& c, CollectiveAlgo algo) {
  const int n = c.chips();
  if (n < 2) throw Error(fmt::format("collective: the system has {} chip; a collective needs at least 2", n));
  if (algo == CollectiveAlgo::kHier && (c.z < 2 || c.x * c.y < 2))
    throw Error(fmt::format("collective: --algo hier needs an UltraServer (instances along Z, e.g. --chips 64); "
                            "this system is {}x{}x{}", c.x, c.y, c.z));
  if (algo == CollectiveAlgo::kRhd && (n & (n - 1)) != 0)
    throw Error(fmt::format("collective: --algo rhd needs a power-of-two chip count, found {}", n));
  if (algo == CollectiveAlgo::kRhd)
    for (int d : {c.x, c.y, c.z})
      if ((d & (d - 1)) != 0)
        throw Error(fmt::format("collective: --algo rhd needs power-of-two torus dimensions, found {}x{}x{}",
                                c.x, c.y, c.z));
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Input element i of chip r: a small integer, so FP32 sums over 64 chips are exact.
float input_value(uint64_t seed, int r, uint64_t i) {
  return static_cast<float>(static_cast<int>(splitmix(seed * 0x100000001b3ull + r * 0x10001ull + i) % 129) - 64);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// One chip's state in a run.
struct ChipData {
  std::vector<float> buf;  // allreduce/reducescatter/allgather: the working buffer
  std::vector<float> out;  // alltoall: the received blocks
};

class Run;

// One process of one chip (one stream): sends, receives and reduces with its own local time.
class Process {
 public:
  Process(Run& run, int rank, int stream);
  void body();
  bool finished = false;
  Ps finish_ps = 0;
  int waiting_src = -1;
  uint64_t waiting_tag = 0;
  int rank() const { return rank_; }
  int stream() const { return stream_; }
  bool sent_any = false, received_any = false;

 private:
  // Message primitives.
  void send(int dst, uint32_t tag, const Ranges& ranges, const std::vector<float>& from,
            std::vector<uint32_t> labels = {});
  void send_bytes(int dst, uint32_t tag, uint64_t bytes, std::vector<uint8_t> data,
                  std::vector<uint32_t> labels);
  Message recv(int src, uint32_t tag);
  void absorb(const Message& m, const Ranges& ranges, bool reduce);

  // Algorithms.
  void ring_phase(const std::vector<Phase>& phases, size_t index, bool reduce, uint32_t tag_base);
  Ranges chunk(const std::vector<Phase>& phases, size_t index, int position_rank) const;
  void rhd_reduce_scatter(uint32_t tag_base);
  void rhd_all_gather(uint32_t tag_base);
  void relay_all_to_all(const std::vector<Phase>& phases);
  void pairwise_all_to_all();
  Ranges shard_ranges(uint64_t shards_mask) const;

  Run& run_;
  Chip& chip_;
  int rank_, stream_;
  tlm_utils::tlm_quantumkeeper qk_;
};

class Run {
 public:
  // A run on `system`; `instance` keeps its messages apart from concurrent runs' (0: alone).
  Run(System& system, const SystemConfig& config, const CollectiveOptions& options, uint32_t instance = 0)
      : config(config), options(options), system(system), topology(system.topology()), instance(instance) {
    n = topology.chips();
    streams = stream_count(topology, options.algo);
    elements = options.bytes / 4;
    shard = elements / n;
    piece = shard / streams;
  }
  uint64_t key(uint32_t tag) const { return uint64_t{instance} << 32 | tag; }
  const SystemConfig& config;
  const CollectiveOptions& options;
  System& system;
  const Topology& topology;
  uint32_t instance = 0;
  size_t finished = 0;          // processes done
  sc_core::sc_event all_done;   // notified when the last one is
  bool inside_system = false;   // a failure goes to the system run (rethrown), not to `failure`
  int n = 0, streams = 1;
  uint64_t elements = 0, shard = 0, piece = 0;
  std::vector<ChipData> data;
  std::vector<std::unique_ptr<Process>> processes;
  std::string failure;
};

Process::Process(Run& run, int rank, int stream)
    : run_(run), chip_(run.system.chip(rank)), rank_(rank), stream_(stream) {}

void Process::send_bytes(int dst, uint32_t tag, uint64_t bytes, std::vector<uint8_t> data,
                         std::vector<uint32_t> labels) {
  const bool first = !sent_any;
  sent_any = true;
  if (first && rank_ == 0 && stream_ == 0 && run_.options.inject_lost_message) return;
  ::tlm::tlm_generic_payload t;
  MessageExtension ext;
  ext.src = rank_;
  ext.tag = run_.key(tag);
  ext.bytes = bytes;
  ext.tail = ps_of(qk_.get_current_time());
  ext.labels = std::move(labels);
  t.set_command(::tlm::TLM_WRITE_COMMAND);
  t.set_address((uint64_t(dst) << kChipAddressShift) | (uint64_t(stream_) << 36));
  t.set_data_ptr(data.empty() ? nullptr : data.data());
  t.set_data_length(static_cast<unsigned int>(data.size()));
  t.set_streaming_width(static_cast<unsigned int>(data.size()));
  t.set_extension(&ext);
  sc_time delay = qk_.get_local_time();
  chip_.to_router->b_transport(t, delay);  // the sender does not wait for its DMA to land
  t.clear_extension(&ext);
  if (t.get_response_status() != ::tlm::TLM_OK_RESPONSE)
    throw Error(fmt::format("collective: chip {} could not send to chip {}: {}", rank_, dst,
                            t.get_response_string()));
}

void Process::send(int dst, uint32_t tag, const Ranges& ranges, const std::vector<float>& from,
                   std::vector<uint32_t> labels) {
  uint64_t elems = 0;
  for (const auto& [first, count] : ranges) elems += count;
  std::vector<uint8_t> data;
  if (run_.options.data) {
    data.resize(elems * 4);
    uint8_t* p = data.data();
    for (const auto& [first, count] : ranges) {
      std::memcpy(p, from.data() + first, count * 4);
      p += count * 4;
    }
  }
  send_bytes(dst, tag, elems * 4, std::move(data), std::move(labels));
}

Message Process::recv(int src, uint32_t tag) {
  Endpoint& ep = chip_.endpoint;
  const uint64_t key = run_.key(tag);
  waiting_src = src;
  waiting_tag = key;
  while (!ep.has(src, key)) {
    qk_.sync();
    if (!ep.has(src, key)) sc_core::wait(ep.arrived());
  }
  waiting_src = -1;
  Message m = ep.take(src, key);
  if (!received_any && rank_ == 1 && run_.options.inject_corruption && m.data.size() >= 4) {
    float v;
    std::memcpy(&v, m.data.data(), 4);
    v += 1.0f;
    std::memcpy(m.data.data(), &v, 4);
  }
  received_any = true;
  const Ps now = ps_of(qk_.get_current_time());
  if (m.arrival > now) qk_.set(time_of(m.arrival) - sc_core::sc_time_stamp());
  if (qk_.need_sync()) qk_.sync();
  return m;
}

void Process::absorb(const Message& m, const Ranges& ranges, bool reduce) {
  if (reduce) qk_.inc(time_of(transfer_ps(m.bytes, run_.config.chip.reduce_gbps)));
  if (!run_.options.data) return;
  const float* in = reinterpret_cast<const float*>(m.data.data());
  std::vector<float>& buf = run_.data[rank_].buf;
  for (const auto& [first, count] : ranges) {
    if (reduce)
      for (uint64_t i = 0; i < count; ++i) buf[first + i] += in[i];
    else
      std::memcpy(buf.data() + first, in, count * 4);
    in += count;
  }
}

Ranges Process::chunk(const std::vector<Phase>& phases, size_t index, int position_rank) const {
  // The shards whose keys match this chip's in the phases before `index` and position_rank's in
  // phase `index`; this stream's part of each.
  const Topology& t = run_.topology;
  Ranges r;
  for (int s = 0; s < run_.n; ++s) {
    bool in = phase_key(t, phases[index], s) == phase_key(t, phases[index], position_rank);
    for (size_t j = 0; j < index && in; ++j) in = phase_key(t, phases[j], s) == phase_key(t, phases[j], rank_);
    if (!in) continue;
    const uint64_t first = s * run_.shard + stream_ * run_.piece;
    if (!r.empty() && r.back().first + r.back().second == first)
      r.back().second += run_.piece;
    else
      r.emplace_back(first, run_.piece);
  }
  return r;
}

void Process::ring_phase(const std::vector<Phase>& phases, size_t index, bool reduce, uint32_t tag_base) {
  const std::vector<int> ring = phase_ring(run_.topology, phases[index], rank_);
  const int n = static_cast<int>(ring.size());
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), rank_) - ring.begin());
  const int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  // Reduce-scatter: after n-1 steps position p holds the full sum of chunk p. All-gather: each
  // position starts with chunk p and passes chunks on.
  const int lead = reduce ? 1 : 0;
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = ((pos - s - lead) % n + n) % n;
    const int recv_c = ((pos - s - lead - 1) % n + n) % n;
    send(next, tag_base + s, chunk(phases, index, ring[send_c]), run_.data[rank_].buf);
    const Message m = recv(prev, tag_base + s);
    absorb(m, chunk(phases, index, ring[recv_c]), reduce);
  }
}

Ranges Process::shard_ranges(uint64_t mask) const {
  Ranges r;
  for (int s = 0; s < run_.n; ++s) {
    if (!((mask >> s) & 1)) continue;
    if (!r.empty() && r.back().first + r.back().second == s * run_.shard)
      r.back().second += run_.shard;
    else
      r.emplace_back(s * run_.shard, run_.shard);
  }
  return r;
}

void Process::rhd_reduce_scatter(uint32_t tag_base) {
  const int n = run_.n;
  uint64_t owned = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  for (int m = n / 2, step = 0; m >= 1; m /= 2, ++step) {
    uint64_t keep = 0;
    for (int s = 0; s < n; ++s)
      if (((owned >> s) & 1) && (s & m) == (rank_ & m)) keep |= uint64_t{1} << s;
    const int partner = rank_ ^ m;
    send(partner, tag_base + step, shard_ranges(owned & ~keep), run_.data[rank_].buf);
    absorb(recv(partner, tag_base + step), shard_ranges(keep), true);
    owned = keep;
  }
}

void Process::rhd_all_gather(uint32_t tag_base) {
  const int n = run_.n;
  uint64_t owned = uint64_t{1} << rank_;
  for (int m = 1, step = 0; m < n; m *= 2, ++step) {
    const int partner = rank_ ^ m;
    uint64_t theirs = 0;
    for (int s = 0; s < n; ++s)
      if (((owned >> s) & 1)) theirs |= uint64_t{1} << (s ^ m);
    send(partner, tag_base + step, shard_ranges(owned), run_.data[rank_].buf);
    absorb(recv(partner, tag_base + step), shard_ranges(theirs), false);
    owned |= theirs;
  }
}

// All-to-all by relaying blocks around each phase's ring: a block moves on until it reaches the
// position of its destination's key, then waits for the next phase.
void Process::relay_all_to_all(const std::vector<Phase>& phases) {
  struct Piece {
    int src, dst;
    std::vector<float> values;
  };
  const Topology& t = run_.topology;
  const bool data = run_.options.data;
  std::vector<Piece> held;
  for (int d = 0; d < run_.n; ++d) {
    Piece p{rank_, d, {}};
    if (data) {
      const float* in = run_.data[rank_].buf.data() + d * run_.shard + stream_ * run_.piece;
      p.values.assign(in, in + run_.piece);
    }
    held.push_back(std::move(p));
  }
  for (size_t i = 0; i < phases.size(); ++i) {
    const std::vector<int> ring = phase_ring(t, phases[i], rank_);
    const int n = static_cast<int>(ring.size());
    const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), rank_) - ring.begin());
    const int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
    const int my_key = phase_key(t, phases[i], rank_);
    std::vector<Piece> kept, moving;
    for (auto& p : held) (phase_key(t, phases[i], p.dst) == my_key ? kept : moving).push_back(std::move(p));
    for (int s = 0; s < n - 1; ++s) {
      const uint32_t tag = (uint32_t(stream_) << 28) | (2u << 24) | (uint32_t(i) << 16) | uint32_t(s);
      std::vector<uint8_t> bytes;
      std::vector<uint32_t> labels;
      for (const auto& p : moving) {
        labels.push_back(uint32_t(p.src) << 16 | uint32_t(p.dst));
        if (data) {
          const auto* b = reinterpret_cast<const uint8_t*>(p.values.data());
          bytes.insert(bytes.end(), b, b + p.values.size() * 4);
        }
      }
      send_bytes(next, tag, moving.size() * run_.piece * 4, std::move(bytes), std::move(labels));
      const Message m = recv(prev, tag);
      moving.clear();
      for (size_t k = 0; k < m.labels.size(); ++k) {
        Piece p{int(m.labels[k] >> 16), int(m.labels[k] & 0xffff), {}};
        if (data) {
          const float* v = reinterpret_cast<const float*>(m.data.data()) + k * run_.piece;
          p.values.assign(v, v + run_.piece);
        }
        (phase_key(t, phases[i], p.dst) == my_key ? kept : moving).push_back(std::move(p));
      }
    }
    if (!moving.empty())
      throw Error(fmt::format("collective: chip {} still holds {} blocks after phase {}", rank_, moving.size(), i));
    held = std::move(kept);
  }
  if (held.size() != size_t(run_.n))
    throw Error(fmt::format("collective: chip {} ended the all-to-all with {} blocks, expected {}", rank_,
                            held.size(), run_.n));
  if (!data) return;
  for (const auto& p : held) {
    if (p.dst != rank_)
      throw Error(fmt::format("collective: chip {} ended with a block for chip {}", rank_, p.dst));
    std::memcpy(run_.data[rank_].out.data() + p.src * run_.shard + stream_ * run_.piece, p.values.data(),
                run_.piece * 4);
  }
}

void Process::pairwise_all_to_all() {
  std::vector<float>& in = run_.data[rank_].buf;
  std::vector<float>& out = run_.data[rank_].out;
  if (run_.options.data) std::memcpy(out.data() + rank_ * run_.shard, in.data() + rank_ * run_.shard, run_.shard * 4);
  for (int k = 1; k < run_.n; ++k) {
    const int partner = rank_ ^ k;
    const uint32_t tag = (2u << 24) | uint32_t(k);
    send(partner, tag, Ranges{{partner * run_.shard, run_.shard}}, in);
    const Message m = recv(partner, tag);
    if (run_.options.data) std::memcpy(out.data() + partner * run_.shard, m.data.data(), run_.shard * 4);
  }
}

void Process::body() {
  try {
    const auto op = run_.options.op;
    constexpr uint32_t kRs = 0u << 24, kAg = 1u << 24;
    const uint32_t stream_tag = uint32_t(stream_) << 28;
    if (run_.options.algo == CollectiveAlgo::kRhd) {
      if (op == CollectiveOp::kAllToAll) {
        pairwise_all_to_all();
      } else {
        if (op != CollectiveOp::kAllGather) rhd_reduce_scatter(kRs);
        if (op != CollectiveOp::kReduceScatter) rhd_all_gather(kAg);
      }
    } else {
      const auto phases = algorithm_streams(run_.topology, run_.options.algo)[stream_];
      if (op == CollectiveOp::kAllToAll) {
        relay_all_to_all(phases);
      } else {
        if (op != CollectiveOp::kAllGather)
          for (size_t i = 0; i < phases.size(); ++i) ring_phase(phases, i, true, stream_tag | kRs | (i << 16));
        if (op != CollectiveOp::kReduceScatter)
          for (size_t i = phases.size(); i-- > 0;) ring_phase(phases, i, false, stream_tag | kAg | (i << 16));
      }
    }
    finish_ps = ps_of(qk_.get_current_time());
    qk_.sync();  // the last process to get here ends the run, at its time
    finished = true;
    if (++run_.finished == run_.processes.size()) run_.all_done.notify(sc_core::SC_ZERO_TIME);
  } catch (const std::exception& e) {
    if (run_.inside_system) throw;
    if (run_.failure.empty()) run_.failure = e.what();
    sc_core::sc_stop();
  }
}

double ring_step_seconds(double alpha_s, double bytes, double gbps) { return alpha_s + bytes / (gbps * 1e9); }

}  // namespace

CollectiveOp parse_collective_op(const std::string& name) {
  if (name == "allreduce") return CollectiveOp::kAllReduce;
  if (name == "reducescatter") return CollectiveOp::kReduceScatter;
  if (name == "allgather") return CollectiveOp::kAllGather;
  if (name == "alltoall") return CollectiveOp::kAllToAll;
  throw Error(fmt::format("--op: expected allreduce, allgather, reducescatter or alltoall, found '{}'", name));
}

CollectiveAlgo parse_collective_algo(const std::string& name) {
  if (name == "ring") return CollectiveAlgo::kRing;
  if (name == "torus2d") return CollectiveAlgo::kTorus2d;
  if (name == "torus2d-split") return CollectiveAlgo::kTorus2dSplit;
  if (name == "rhd") return CollectiveAlgo::kRhd;
  if (name == "hier") return CollectiveAlgo::kHier;
  if (name == "multiring") return CollectiveAlgo::kMultiring;
  throw Error(fmt::format("--algo: expected ring, torus2d, torus2d-split, rhd, hier or multiring, found '{}'", name));
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "allreduce";
    case CollectiveOp::kReduceScatter: return "reducescatter";
    case CollectiveOp::kAllGather: return "allgather";
    case CollectiveOp::kAllToAll: return "alltoall";
  }
  return "?";
}

const char* collective_algo_name(CollectiveAlgo algo) {
  switch (algo) {
    case CollectiveAlgo::kRing: return "ring";
    case CollectiveAlgo::kTorus2d: return "torus2d";
    case CollectiveAlgo::kTorus2dSplit: return "torus2d-split";
    case CollectiveAlgo::kRhd: return "rhd";
    case CollectiveAlgo::kHier: return "hier";
    case CollectiveAlgo::kMultiring: return "multiring";
  }
  return "?";
}

uint64_t collective_granule(const SystemConfig& config, CollectiveAlgo algo) {
  const Topology t(config.x, config.y, config.z);
  return uint64_t(t.chips()) * stream_count(t, algo) * 4;
}

double collective_closed_form_us(const SystemConfig& config, CollectiveOp op, CollectiveAlgo algo,
                                 uint64_t bytes) {
  check_applicable(config, algo);
  const Topology t(config.x, config.y, config.z);
  const ChipConfig& k = config.chip;
  const int n = t.chips();
  const double S = static_cast<double>(bytes), R = k.reduce_gbps * 1e9;
  auto link_of_dim = [&](int d) -> const LinkConfig& { return d == 2 ? k.z_link : k.link; };
  double seconds = 0;

  if (algo == CollectiveAlgo::kRhd) {
    // Partners at rank distance m differ in one dimension's coordinate.
    auto step = [&](int m, double b, bool reduce) {
      const auto route = t.route(0, m);
      double gbps = 1e30, alpha = 0;
      for (int p : route) {
        gbps = std::min(gbps, link_of_dim(port_dim(p)).gbps);
        alpha += link_of_dim(port_dim(p)).hop_latency_us * 1e-6;
      }
      return ring_step_seconds(alpha, b, gbps) + (reduce ? b / R : 0);
    };
    if (op == CollectiveOp::kAllToAll) {
      for (int m = 1; m < n; ++m) seconds += step(m, S / n, false);
    } else {
      if (op != CollectiveOp::kAllGather)
        for (int m = n / 2; m >= 1; m /= 2) seconds += step(m, S * m / n, true);
      if (op != CollectiveOp::kReduceScatter)
        for (int m = 1; m < n; m *= 2) seconds += step(m, S * m / n, false);
    }
    return seconds * 1e6;
  }

  // Ring phases: each stream moves its share D of the data through its rings; a stream's phases
  // run one after another, the streams side by side on disjoint links.
  const auto streams = algorithm_streams(t, algo);
  for (const auto& phases : streams) {
    const double D = S / streams.size();
    double stream_s = 0, entering = D;
    for (const Phase& p : phases) {
      const auto ring = phase_ring(t, p, 0);
      const int ring_n = static_cast<int>(ring.size());
      double gbps = 1e30, alpha = 0;
      for (int i = 0; i < ring_n; ++i) {
        double a = 0;
        for (int port : t.route(ring[i], ring[(i + 1) % ring_n])) {
          gbps = std::min(gbps, link_of_dim(port_dim(port)).gbps);
          a += link_of_dim(port_dim(port)).hop_latency_us * 1e-6;
        }
        alpha = std::max(alpha, a);
      }
      const double chunk = entering / ring_n;
      if (op == CollectiveOp::kAllToAll) {
        stream_s += (ring_n - 1) * alpha + (ring_n - 1) * D / 2 / (gbps * 1e9);
      } else {
        if (op != CollectiveOp::kAllGather) stream_s += (ring_n - 1) * (ring_step_seconds(alpha, chunk, gbps) + chunk / R);
        if (op != CollectiveOp::kReduceScatter) stream_s += (ring_n - 1) * ring_step_seconds(alpha, chunk, gbps);
      }
      entering = chunk;
    }
    seconds = std::max(seconds, stream_s);
  }
  return seconds * 1e6;
}

CollectiveResult run_collective(const SystemConfig& config, const CollectiveOptions& options) {
  check_applicable(config, options.algo);
  const uint64_t granule = collective_granule(config, options.algo);
  if (options.bytes == 0 || options.bytes % granule != 0)
    throw Error(fmt::format("collective: --bytes {} must be a positive multiple of {} ({} chips x {} streams "
                            "x 4-byte elements)", options.bytes, granule, config.chips(),
                            granule / config.chips() / 4));
  // The buffer lives in each chip's HBM; real data is held in host memory on every chip at once.
  const uint64_t hbm_bytes = static_cast<uint64_t>(config.chip.hbm_stacks * config.chip.hbm_stack_gib * (1ull << 30));
  if (options.bytes > hbm_bytes)
    throw Error(fmt::format("collective: --bytes: expected a buffer that fits one chip's HBM ({} bytes), found {}",
                            hbm_bytes, options.bytes));
  if (options.data && options.bytes > kMaxCollectiveDataBytes / uint64_t(config.chips()))
    throw Error(fmt::format("collective: --bytes: with real data expected at most {} bytes per chip ({} GiB over {} "
                            "chips), found {}; --data off runs it timing only", kMaxCollectiveDataBytes / config.chips(),
                            kMaxCollectiveDataBytes >> 30, config.chips(), options.bytes));
  const auto wall_start = std::chrono::steady_clock::now();
  System::reset_kernel();
  System system(config);
  auto run = std::make_unique<Run>(system, config, options);
  const int n = run->n;
  const uint64_t E = run->elements;
  const auto op = options.op;

  // Inputs, written to each chip's HBM and read back into the collective engine's buffer.
  run->data.resize(n);
  if (options.data) {
    for (int r = 0; r < n; ++r) {
      std::vector<float> in(E, 0.0f);
      for (uint64_t i = 0; i < E; ++i) {
        const bool own = op != CollectiveOp::kAllGather || i / run->shard == uint64_t(r);
        if (own) in[i] = input_value(options.seed, r, i);
      }
      Chip& chip = run->system.chip(r);
      chip.write_hbm(0, reinterpret_cast<const uint8_t*>(in.data()), E * 4);
      run->data[r].buf.resize(E);
      chip.read_hbm(0, reinterpret_cast<uint8_t*>(run->data[r].buf.data()), E * 4);
      if (op == CollectiveOp::kAllToAll) run->data[r].out.assign(E, 0.0f);
    }
  }

  ::tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_time(config.quantum_ns, sc_core::SC_NS));
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < run->streams; ++s) run->processes.push_back(std::make_unique<Process>(*run, r, s));
  sc_core::sc_spawn_options spawn;
  spawn.set_stack_size(1 << 20);
  for (auto& p : run->processes) {
    Process* raw = p.get();
    System::spawn([raw] { raw->body(); }, fmt::format("chip{}_stream{}", raw->rank(), raw->stream()), &spawn);
  }
  const sc_time limit(options.limit_seconds, sc_core::SC_SEC);
  System::simulate(&limit);
  if (!run->failure.empty()) throw Error(run->failure);

  std::string waiting;
  Ps end = 0;
  for (const auto& p : run->processes) {
    if (!p->finished)
      waiting += fmt::format("\n  chip {} stream {} waits for tag {:#x} from chip {}", p->rank(), p->stream(),
                             p->waiting_tag, p->waiting_src);
    end = std::max(end, p->finish_ps);
  }
  if (!waiting.empty())
    throw Error(fmt::format("collective {} {} did not finish by {} s of simulated time:{}", collective_op_name(op),
                            collective_algo_name(options.algo), sc_core::sc_time_stamp().to_seconds(), waiting));

  CollectiveResult result;
  result.sim_time_us = double(end) / 1e6;
  result.closed_form_us = collective_closed_form_us(config, op, options.algo, options.bytes);
  result.algbw_gbps = double(options.bytes) / (result.sim_time_us * 1e-6) / 1e9;
  const double factor = op == CollectiveOp::kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
  result.busbw_gbps = result.algbw_gbps * factor;
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < kNumPorts; ++p) {
      if (Link* l = run->system.link(r, p)) {
        result.messages += l->messages();
        result.link_bytes += l->bytes();
        result.max_link_busy = std::max(result.max_link_busy, double(l->busy_ps()) / double(end));
      }
    }
  }

  if (options.data) {
    // Results to HBM, read back, and checked against sums computed directly.
    std::vector<float> expected(E, 0.0f), got(E);
    if (op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter) {
      for (int r = 0; r < n; ++r)
        for (uint64_t i = 0; i < E; ++i) expected[i] += input_value(options.seed, r, i);
    } else if (op == CollectiveOp::kAllGather) {
      for (uint64_t i = 0; i < E; ++i) expected[i] = input_value(options.seed, int(i / run->shard), i);
    }
    for (int r = 0; r < n; ++r) {
      Chip& chip = run->system.chip(r);
      const std::vector<float>& result_buf = op == CollectiveOp::kAllToAll ? run->data[r].out : run->data[r].buf;
      const uint64_t out_addr = uint64_t{1} << 32;
      chip.write_hbm(out_addr, reinterpret_cast<const uint8_t*>(result_buf.data()), E * 4);
      chip.read_hbm(out_addr, reinterpret_cast<uint8_t*>(got.data()), E * 4);
      uint64_t first = 0, last = E;
      if (op == CollectiveOp::kReduceScatter) {
        first = r * run->shard;
        last = first + run->shard;
      }
      for (uint64_t i = first; i < last; ++i) {
        float want = expected[i];
        if (op == CollectiveOp::kAllToAll) want = input_value(options.seed, int(i / run->shard), r * run->shard + i % run->shard);
        if (bits(got[i]) != bits(want))
          throw Error(fmt::format("collective {} {}: chip {} element {}: expected {} ({:#010x}), found {} ({:#010x})",
                                  collective_op_name(op), collective_algo_name(options.algo), r, i, want,
                                  bits(want), got[i], bits(got[i])));
        result.elements_checked++;
      }
    }
    result.data_checked = true;
  }
  run.reset();
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

void check_collective_applicable(const SystemConfig& config, CollectiveAlgo algo) { check_applicable(config, algo); }

void run_collective_in(System& system, const SystemConfig& config, const CollectiveOptions& options, uint32_t instance) {
  Run run(system, config, options, instance);
  run.inside_system = true;
  for (int r = 0; r < run.n; ++r)
    for (int s = 0; s < run.streams; ++s) run.processes.push_back(std::make_unique<Process>(run, r, s));
  sc_core::sc_spawn_options spawn;
  spawn.set_stack_size(1 << 20);
  for (auto& p : run.processes) {
    Process* raw = p.get();
    System::spawn([raw] { raw->body(); }, fmt::format("collective{}_chip{}_stream{}", instance, raw->rank(), raw->stream()), &spawn);
  }
  sc_core::wait(run.all_done);
}

std::vector<TransferResult> run_transfers(const SystemConfig& config, const std::vector<Transfer>& transfers) {
  System::reset_kernel();
  System system(config);
  std::vector<TransferResult> results(transfers.size());
  std::vector<bool> done(transfers.size(), false);
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer tr = transfers[i];
    if (tr.src < 0 || tr.src >= system.chips() || tr.dst < 0 || tr.dst >= system.chips() || tr.src == tr.dst)
      throw Error(fmt::format("transfer {}: chips {} -> {} (the system has {})", i, tr.src, tr.dst, system.chips()));
    System::spawn([&system, tr, i] {
      sc_core::wait(sc_time(tr.start_us, sc_core::SC_US));
      ::tlm::tlm_generic_payload t;
      MessageExtension ext;
      ext.src = tr.src;
      ext.tag = static_cast<uint32_t>(i);
      ext.bytes = tr.bytes;
      ext.tail = ps_of(sc_core::sc_time_stamp());
      t.set_command(::tlm::TLM_WRITE_COMMAND);
      t.set_address(uint64_t(tr.dst) << kChipAddressShift);
      t.set_extension(&ext);
      sc_time delay = sc_core::SC_ZERO_TIME;
      system.chip(tr.src).to_router->b_transport(t, delay);
      t.clear_extension(&ext);
    });
    System::spawn([&system, &results, &done, tr, i] {
      Endpoint& ep = system.chip(tr.dst).endpoint;
      while (!ep.has(tr.src, static_cast<uint32_t>(i))) sc_core::wait(ep.arrived());
      const Message m = ep.take(tr.src, static_cast<uint32_t>(i));
      results[i] = TransferResult{double(m.arrival) / 1e6, m.hops};
      done[i] = true;
    });
  }
  System::simulate();
  for (size_t i = 0; i < transfers.size(); ++i)
    if (!done[i]) throw Error(fmt::format("transfer {} ({} -> {}) never arrived", i, transfers[i].src, transfers[i].dst));
  return results;
}

nlohmann::json to_json(const CollectiveResult& r) {
  return nlohmann::json{{"sim_time_us", r.sim_time_us},     {"algbw_gbps", r.algbw_gbps},
                        {"busbw_gbps", r.busbw_gbps},       {"closed_form_us", r.closed_form_us},
                        {"data_checked", r.data_checked},   {"elements_checked", r.elements_checked},
                        {"link_messages", r.messages},      {"link_bytes", r.link_bytes},
                        {"max_link_busy", r.max_link_busy}, {"wall_seconds", r.wall_seconds}};
}

}  // namespace ncore::tlmsys
