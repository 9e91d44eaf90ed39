#include "tb/tlm/cc_engine.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/common/numerics.h"
#include "tb/tlm/collective.h"

namespace ncore::tlmsys {

namespace {

const char* op_name(isa::Opcode op) { return isa::opcode_info(op) ? isa::opcode_info(op)->name : "?"; }

std::string describe(const isa::CcInstruction& c) {
  const auto g = static_cast<size_t>(c.group), a = static_cast<size_t>(c.algo);
  const auto d = static_cast<size_t>(c.dtype);
  return fmt::format("{} dtype={} bytes={} group={} algo={}", op_name(c.opcode),
                     d < isa::kDTypeNames.size() ? isa::kDTypeNames[d] : std::string_view("?"), c.bytes,
                     g < isa::kCcGroupNames.size() ? isa::kCcGroupNames[g] : std::string_view("?"),
                     a < isa::kCcAlgoNames.size() ? isa::kCcAlgoNames[a] : std::string_view("?"));
}

CollectiveOp fabric_op(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::kAllReduce: return CollectiveOp::kAllReduce;
    case isa::Opcode::kAllGather: return CollectiveOp::kAllGather;
    case isa::Opcode::kReduceScatter: return CollectiveOp::kReduceScatter;
    default: return CollectiveOp::kAllToAll;
  }
}

}  // namespace

struct SystemCollectives::Instance {
  int id = 0;
  isa::CcGroup group{};
  int group_id = 0;
  uint64_t seq = 0;
  std::vector<std::pair<int, int>> where;  // (chip, core) of each rank
  struct Member {
    Port* port = nullptr;
    size_t index = 0;
    isa::CcInstruction c;
  };
  std::vector<Member> members;  // by rank; port null until it joins
  int joined = 0;
  bool ended = false;
  isa::CcError error = isa::CcError::kNone;
  std::string why;
  Ps start_ps = 0;
  int lanes = 1;  // member cores per rank: 2 at LNC=2 (but in a pair's own collectives)
  int ranks() const { return static_cast<int>(where.size()); }
};

class SystemCollectives::Port : public model::CollectiveEngine {
 public:
  Port(SystemCollectives& owner, int chip, int core, sc_core::sc_event& wake,
       std::function<std::string(size_t)> describe)
      : chip(chip), core(core), wake(wake), describe(std::move(describe)), owner_(owner) {}
  void issue(size_t index, const isa::CcInstruction& c, uint64_t) override {
    pending_.push_back(&owner_.join(*this, index, c));
  }
  bool done(uint64_t) const override { return !pending_.empty() && pending_.front()->ended; }
  isa::CcError error(std::string* why) const override {
    *why = pending_.front()->why;
    return pending_.front()->error;
  }
  std::pair<uint64_t, uint64_t> written() const override {
    const Instance& x = *pending_.front();
    if (x.error != isa::CcError::kNone) return {0, 0};
    for (const auto& m : x.members)
      if (m.port == this) return {m.c.dst, model::cc_receive_bytes(m.c, x.ranks() / x.lanes)};
    return {0, 0};
  }
  void retire() override { pending_.pop_front(); }
  uint64_t next_event(uint64_t) const override { return model::kNoEvent; }

  const int chip, core;
  sc_core::sc_event& wake;
  std::function<std::string(size_t)> describe;
  std::array<uint64_t, isa::kNumCcGroup> seq{};  // collectives issued, per group kind

 private:
  SystemCollectives& owner_;
  std::deque<Instance*> pending_;
};

SystemCollectives::SystemCollectives(System& system, const SystemConfig& config) : system_(system), config_(config) {}
SystemCollectives::~SystemCollectives() = default;

model::CollectiveEngine& SystemCollectives::port(int chip, int core, sc_core::sc_event& wake,
                                                 std::function<std::string(size_t)> describe) {
  ports_.push_back(std::make_unique<Port>(*this, chip, core, wake, std::move(describe)));
  return *ports_.back();
}

SystemCollectives::Instance& SystemCollectives::join(Port& port, size_t index, const isa::CcInstruction& c) {
  const int chips = config_.chips(), cores = config_.chip.cores;
  const auto kind = static_cast<size_t>(c.group) < port.seq.size() ? static_cast<size_t>(c.group) : 0;
  const uint64_t seq = port.seq[kind]++;
  // A pair needs a partner: on a chip of an odd number of cores the last core has none.
  const bool pair_whole = c.group != isa::CcGroup::kPair || (port.core | 1) < cores;
  const int group_id = c.group == isa::CcGroup::kChips   ? port.core
                       : c.group == isa::CcGroup::kCores ? port.chip
                       : c.group == isa::CcGroup::kPair  ? port.chip * cores + port.core / 2
                                                         : 0;
  Instance* x = nullptr;
  for (auto& i : instances_)
    if (!i->ended && i->joined < i->ranks() && i->group == c.group && i->group_id == group_id && i->seq == seq)
      x = i.get();
  if (static_cast<size_t>(c.group) >= isa::kNumCcGroup || !pair_whole) {  // not a group: refused alone
    instances_.push_back(std::make_unique<Instance>());
    x = instances_.back().get();
    x->id = static_cast<int>(instances_.size() - 1);
    x->group = c.group;
    x->where = {{port.chip, port.core}};
    x->members.resize(1);
  } else if (!x) {
    instances_.push_back(std::make_unique<Instance>());
    x = instances_.back().get();
    x->id = static_cast<int>(instances_.size() - 1);
    x->group = c.group;
    x->group_id = group_id;
    x->seq = seq;
    if (c.group == isa::CcGroup::kChips)
      for (int k = 0; k < chips; ++k) x->where.emplace_back(k, port.core);
    else if (c.group == isa::CcGroup::kCores)
      for (int k = 0; k < cores; ++k) x->where.emplace_back(port.chip, k);
    else if (c.group == isa::CcGroup::kPair)
      for (int k : {port.core & ~1, port.core | 1}) x->where.emplace_back(port.chip, k);
    else
      for (int k = 0; k < chips; ++k)
        for (int j = 0; j < cores; ++j) x->where.emplace_back(k, j);
    x->members.resize(x->where.size());
  }
  const auto rank = static_cast<size_t>(
      std::find(x->where.begin(), x->where.end(), std::pair{port.chip, port.core}) - x->where.begin());
  x->members[rank] = {&port, index, c};
  if (++x->joined == x->ranks()) start(*x);
  return *x;
}

void SystemCollectives::start(Instance& x) {
  sc_core::sc_spawn_options options;
  options.set_stack_size(1 << 20);
  System::spawn([this, &x] { run(x); }, fmt::format("collective{}", x.id), &options);
}

void SystemCollectives::finish(Instance& x, isa::CcError error, const std::string& why) {
  x.ended = true;
  x.error = error;
  x.why = why;
  const isa::CcInstruction& c = x.members[0].c;
  CollectiveRecord rec;
  rec.op = op_name(c.opcode);
  rec.group = static_cast<size_t>(c.group) < isa::kNumCcGroup ? std::string(isa::kCcGroupNames[static_cast<size_t>(c.group)]) : "?";
  rec.algo = static_cast<size_t>(c.algo) < isa::kCcAlgoNames.size() ? std::string(isa::kCcAlgoNames[static_cast<size_t>(c.algo)]) : "?";
  rec.bytes = c.bytes;
  rec.members = x.ranks();
  rec.start_us = static_cast<double>(x.start_ps) / 1e6;
  rec.end_us = sc_core::sc_time_stamp().to_seconds() * 1e6;
  if (error != isa::CcError::kNone) rec.error = fmt::format("{}: {}", isa::kCcErrorNames[static_cast<size_t>(error)], why);
  records_.push_back(rec);
  for (const auto& m : x.members) m.port->wake.notify(sc_core::SC_ZERO_TIME);
}

void SystemCollectives::run(Instance& x) {
  x.start_ps = ps_of(sc_core::sc_time_stamp());
  const int n = x.ranks();
  const isa::CcInstruction& c = x.members[0].c;
  if (static_cast<size_t>(c.group) >= isa::kNumCcGroup)
    return finish(x, isa::CcError::kAlgo, fmt::format("group {}: expected chips, cores, all or pair", static_cast<int>(c.group)));
  if (c.opcode == isa::Opcode::kCoreBarrier && c.group != isa::CcGroup::kPair)
    return finish(x, isa::CcError::kAlgo, fmt::format("group {}: a core_barrier synchronizes the two cores of a pair "
                                                      "(nki.isa.core_barrier's cores=(0, 1)), expected group pair",
                                                      isa::kCcGroupNames[static_cast<size_t>(c.group)]));
  if (c.group == isa::CcGroup::kPair && n != 2)
    return finish(x, isa::CcError::kAlgo, fmt::format("group pair: core {} of a chip of {} cores has no partner (CORE {})",
                                                      x.where[0].second, config_.chip.cores, x.where[0].second ^ 1));
  // Every member must have issued the same collective.
  for (const auto& m : x.members)
    if (m.c.opcode != c.opcode || m.c.dtype != c.dtype || m.c.bytes != c.bytes || m.c.algo != c.algo) {
      std::string who;
      for (int r = 0; r < n; ++r)
        who += fmt::format("\n  chip {} core {}: {} ({})", x.where[static_cast<size_t>(r)].first,
                           x.where[static_cast<size_t>(r)].second, describe(x.members[static_cast<size_t>(r)].c),
                           x.members[static_cast<size_t>(r)].port->describe(x.members[static_cast<size_t>(r)].index));
      return finish(x, isa::CcError::kMismatch, "the members issued different collectives:" + who);
    }
  std::set<int> chips_in;
  for (const auto& w : x.where) chips_in.insert(w.first);
  const bool fabric = chips_in.size() > 1;
  uint64_t granule = 32;
  if (fabric) {
    try {
      granule = std::lcm(granule, collective_granule(config_, static_cast<CollectiveAlgo>(c.algo)));
      if (static_cast<int>(chips_in.size()) != config_.chips())
        throw Error("the fabric algorithms span every chip of the system");
      if (static_cast<size_t>(c.algo) > static_cast<size_t>(CollectiveAlgo::kMultiring)) throw Error("not an algorithm");
      check_collective_applicable(config_, static_cast<CollectiveAlgo>(c.algo));
    } catch (const Error& e) {
      return finish(x, isa::CcError::kAlgo, fmt::format("algo {}: {}", static_cast<int>(c.algo), e.what()));
    }
  }
  const uint64_t hbm_bytes = static_cast<uint64_t>(config_.chip.hbm_stack_gib * double(uint64_t{1} << 30)) *
                             static_cast<uint64_t>(config_.chip.hbm_stacks);
  // LNC=2 (SystemConfig::lnc): a collective of chips, cores or all has one rank per logical
  // NeuronCore. Both cores of each pair issue it with the same src and dst (their shared HBM), and
  // the engine reads and writes each pair's tensors once, through the even core's instruction.
  const int lanes = config_.lnc == 2 && c.group != isa::CcGroup::kPair ? 2 : 1;
  std::vector<size_t> lead;  // per rank, the member whose instruction it takes
  for (int r = 0; r < n; r += lanes) {
    const auto& a = x.members[static_cast<size_t>(r)];
    const auto& b = x.members[static_cast<size_t>(r + lanes - 1)];
    if (a.c.src != b.c.src || a.c.dst != b.c.dst)
      return finish(x, isa::CcError::kMismatch,
                    fmt::format("at LNC=2 both cores of a logical NeuronCore name its src and dst in their shared "
                                "HBM:\n  chip {} core {}: src {:#x} dst {:#x} ({})\n  chip {} core {}: src {:#x} dst "
                                "{:#x} ({})", x.where[static_cast<size_t>(r)].first, x.where[static_cast<size_t>(r)].second,
                                a.c.src, a.c.dst, a.port->describe(a.index), x.where[static_cast<size_t>(r + 1)].first,
                                x.where[static_cast<size_t>(r + 1)].second, b.c.src, b.c.dst, b.port->describe(b.index)));
    lead.push_back(static_cast<size_t>(r));
  }
  const int ranks = static_cast<int>(lead.size());
  x.lanes = lanes;
  for (int r = 0; r < n; ++r) {
    std::string why;
    const isa::CcError e = model::cc_check(x.members[static_cast<size_t>(r)].c, ranks, granule, hbm_bytes, &why);
    if (e != isa::CcError::kNone)
      return finish(x, e, fmt::format("chip {} core {}: {}", x.where[static_cast<size_t>(r)].first,
                                      x.where[static_cast<size_t>(r)].second, why));
  }

  if (c.opcode == isa::Opcode::kCoreBarrier) {  // every member is here: the semaphores cross, nothing moves
    sc_core::wait(sc_core::sc_time(config_.chip.core_barrier_ns, sc_core::SC_NS));
    return finish(x, isa::CcError::kNone, "");
  }

  // The inputs, as HBM holds them now.
  const uint64_t send = model::cc_send_bytes(c, ranks), receive = model::cc_receive_bytes(c, ranks);
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(ranks), std::vector<uint8_t>(send));
  for (int r = 0; r < ranks; ++r)
    system_.chip(x.where[lead[static_cast<size_t>(r)]].first)
        .memory.read_block(x.members[lead[static_cast<size_t>(r)]].c.src, in[static_cast<size_t>(r)].data(), send);
  // Phase 1: the engine reads every member's src through its chip's HBM.
  std::vector<Chip::HbmTransfer> reads;
  for (int r = 0; r < ranks; ++r)
    reads.push_back({x.where[lead[static_cast<size_t>(r)]].first, false, x.members[lead[static_cast<size_t>(r)]].c.src, send});
  Chip::hbm_transfers(system_, reads);

  // The results, in rank order.
  const int esize = c.dtype == isa::DType::kBf16 ? 2 : 4;
  const auto element = [&](int r, uint64_t i) {  // member r's input element i as FP32
    const uint8_t* p = in[static_cast<size_t>(r)].data() + i * static_cast<uint64_t>(esize);
    uint32_t bits = 0;
    for (int k = esize - 1; k >= 0; --k) bits = bits << 8 | p[k];
    return model::to_float(c.dtype, bits);
  };
  const auto put = [&](std::vector<uint8_t>& out, uint64_t i, float v) {
    const uint32_t b = esize == 4 ? model::float_to_bits(v)  // BF16: the FP32 sum rounded once
                                  : model::from_fp32(model::float_to_bits(v), c.dtype, model::CastMode{});
    for (int k = 0; k < esize; ++k) out[i * static_cast<uint64_t>(esize) + static_cast<uint64_t>(k)] = static_cast<uint8_t>(b >> (8 * k));
  };
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(ranks), std::vector<uint8_t>(receive));
  const uint64_t block = c.bytes / static_cast<uint64_t>(esize);  // elements per block
  for (int k = 0; k < ranks; ++k) {
    auto& o = out[static_cast<size_t>(k)];
    switch (c.opcode) {
      case isa::Opcode::kAllReduce:
      case isa::Opcode::kReduceScatter: {
        const uint64_t first = c.opcode == isa::Opcode::kAllReduce ? 0 : static_cast<uint64_t>(k) * block;
        for (uint64_t i = 0; i < block; ++i) {
          float sum = element(0, first + i);
          for (int r = 1; r < ranks; ++r) sum += element(r, first + i);
          put(o, i, sum);
        }
        break;
      }
      case isa::Opcode::kAllGather:
        for (int r = 0; r < ranks; ++r)
          std::copy(in[static_cast<size_t>(r)].begin(), in[static_cast<size_t>(r)].end(), o.begin() + static_cast<std::ptrdiff_t>(static_cast<uint64_t>(r) * c.bytes));
        break;
      default:  // all_to_all: block k of every member, in rank order
        for (int r = 0; r < ranks; ++r)
          std::copy_n(in[static_cast<size_t>(r)].begin() + static_cast<std::ptrdiff_t>(static_cast<uint64_t>(k) * c.bytes), c.bytes,
                      o.begin() + static_cast<std::ptrdiff_t>(static_cast<uint64_t>(r) * c.bytes));
    }
  }
  in.clear();

  // Phase 2: the chips exchange it over the fabric, one rank per chip (timing only).
  if (fabric) {
    const int per_chip = ranks / config_.chips();
    uint64_t s = c.opcode == isa::Opcode::kAllReduce ? c.bytes : c.bytes * static_cast<uint64_t>(ranks);
    if (c.opcode == isa::Opcode::kAllToAll) s *= static_cast<uint64_t>(per_chip);
    s = (s + granule - 1) / granule * granule;
    CollectiveOptions o;
    o.op = fabric_op(c.opcode);
    o.algo = static_cast<CollectiveAlgo>(c.algo);
    o.bytes = s;
    o.data = false;
    run_collective_in(system_, config_, o, static_cast<uint32_t>(x.id + 1));
  }

  // Phase 3: every member's dst written through its chip's HBM, then the data lands.
  std::vector<Chip::HbmTransfer> writes;
  for (int r = 0; r < ranks; ++r)
    writes.push_back({x.where[lead[static_cast<size_t>(r)]].first, true, x.members[lead[static_cast<size_t>(r)]].c.dst, receive});
  Chip::hbm_transfers(system_, writes);
  for (int r = 0; r < ranks; ++r)
    system_.chip(x.where[lead[static_cast<size_t>(r)]].first)
        .memory.write_block(x.members[lead[static_cast<size_t>(r)]].c.dst, out[static_cast<size_t>(r)].data(), receive);
  finish(x, isa::CcError::kNone, "");
}

std::string SystemCollectives::waiting_report() const {
  std::string s;
  for (const auto& x : instances_) {
    if (x->ended || x->joined == x->ranks()) continue;
    const isa::CcInstruction* c = nullptr;
    std::string joined, missing;
    for (int r = 0; r < x->ranks(); ++r) {
      const auto& m = x->members[static_cast<size_t>(r)];
      const auto [chip, core] = x->where[static_cast<size_t>(r)];
      if (m.port) {
        c = &m.c;
        joined += fmt::format("\n    chip {} core {}: {}", chip, core, m.port->describe(m.index));
      } else {
        missing += fmt::format(" chip {} core {},", chip, core);
      }
    }
    if (!missing.empty()) missing.pop_back();
    s += fmt::format("\n  collective {} (group {}, the {}th of its group) waits for{}; joined:{}", c ? describe(*c) : "?",
                     isa::kCcGroupNames[static_cast<size_t>(x->group)], x->seq + 1, missing, joined);
  }
  return s;
}

}  // namespace ncore::tlmsys
