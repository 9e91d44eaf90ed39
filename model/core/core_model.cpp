#include "model/core/core_model.h"

#include "model/core/dma_timing.h"
#include "model/core/engine_timing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

#include <fmt/format.h>

namespace ncore::model {

std::string_view core_status_name(CoreStatus s) {
  const auto i = static_cast<size_t>(s);
  return i < isa::kCoreStatusNames.size() ? isa::kCoreStatusNames[i] : "?";
}

std::string_view core_error_name(CoreError e) {
  const auto i = static_cast<size_t>(e);
  return i < isa::kCoreErrorNames.size() ? isa::kCoreErrorNames[i] : "?";
}

std::string_view core_memory_name(CoreMemory m) {
  switch (m) {
    case CoreMemory::kSbuf: return "SBUF";
    case CoreMemory::kPsum: return "PSUM";
    case CoreMemory::kHbm: return "HBM";
  }
  return "?";
}

void InstrEffects::write(CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n;) {  // one map look-up per line touched
    LineWrite& line = writes[{m, (addr + i) / kLineBytes * kLineBytes}];
    for (auto b = static_cast<size_t>((addr + i) % kLineBytes); b < kLineBytes && i < n; ++b, ++i) {
      line.data[b] = bytes[i];
      line.mask |= 1u << b;
    }
  }
}

ClockDomain queue_domain(int queue) {
  switch (static_cast<isa::Queue>(queue)) {
    case isa::Queue::kPe: return ClockDomain::kTensor;
    case isa::Queue::kAct: return ClockDomain::kScalar;
    case isa::Queue::kDve: return ClockDomain::kVector;
    default: return ClockDomain::kDma;
  }
}

double CoreResult::te_utilization(const CoreConfig& c) const {
  const double tensor_cycles = static_cast<double>(cycles) / c.clocks.div(ClockDomain::kTensor);
  return cycles ? static_cast<double>(te_macs) / (tensor_cycles * c.te.rows * c.te.cols) : 0.0;
}

double CoreResult::hbm_gbps(const CoreConfig& c) const {
  return cycles ? static_cast<double>(dma_bytes) / c.clocks.ns(cycles) : 0.0;
}

uint8_t SparseMemory::read(uint64_t addr) const {
  auto it = pages_.find(addr / kPage);
  return it == pages_.end() ? 0 : it->second[addr % kPage];
}

void SparseMemory::write(uint64_t addr, uint8_t v) {
  auto& page = pages_[addr / kPage];
  if (page.empty()) page.assign(kPage, 0);
  page[addr % kPage] = v;
}

void SparseMemory::read_block(uint64_t addr, uint8_t* out, size_t n) const {
  while (n) {  // page by page
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(n, kPage - addr % kPage));
    auto it = pages_.find(addr / kPage);
    if (it == pages_.end()) std::memset(out, 0, piece);
    else std::memcpy(out, it->second.data() + addr % kPage, piece);
    addr += piece, out += piece, n -= piece;
  }
}

void SparseMemory::write_block(uint64_t addr, const uint8_t* in, size_t n) {
  while (n) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(n, kPage - addr % kPage));
    auto& page = pages_[addr / kPage];
    if (page.empty()) page.assign(kPage, 0);
    std::memcpy(page.data() + addr % kPage, in, piece);
    addr += piece, in += piece, n -= piece;
  }
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

std::vector<uint8_t> tensor_init_bytes(const TensorDecl& t) {
  const int size = storage_bits(t.dtype) / 8;
  if (t.init == TensorInit::kData) {
    if (t.data.size() != t.elements() * size)
      throw Error(fmt::format("tensor {}: expected {} bytes of data for its shape, found {}", t.name,
                              t.elements() * size, t.data.size()));
    return t.data;
  }
  std::vector<uint8_t> out(t.elements() * size, 0);
  if (t.init == TensorInit::kNone || t.init == TensorInit::kZero) return out;
  SplitMix64 rng(t.seed);
  for (uint64_t i = 0; i < t.elements(); ++i) {
    uint32_t bits;
    if (is_float(t.dtype)) {
      const float v = t.init == TensorInit::kRamp
                          ? static_cast<float>(i)
                          : static_cast<float>(rng.next() >> 40) / 8388608.0f - 1.0f;
      bits = from_fp32(float_to_bits(v), t.dtype, CastMode{});
    } else {
      const int64_t v = t.init == TensorInit::kRamp ? static_cast<int64_t>(i)
                                                    : static_cast<int64_t>(rng.next() % 16) - 8;
      bits = static_cast<uint32_t>(v) & storage_mask(t.dtype);
    }
    for (int b = 0; b < size; ++b) out[i * size + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return out;
}

namespace {
constexpr uint64_t kNever = kNoEvent;
constexpr int kDmaFifoDepth = 4;     // descriptors queued per DMA engine, not yet loaded (nc_dma)
constexpr int kDmaTrackerDepth = 8;  // per engine: fired, signal not yet applied (nc_core)
}  // namespace

namespace {

// The core's DMA transfers as the core sees them: in base cycles, and no faster than the DMA
// engines' own limits (CoreCosts::dma). The model inside counts the DMA domain's cycles;
// transfers begin on DMA edges, so each converts exactly. A DMA engine's descriptor moves at
// most engine_bytes_per_ns (transpose_share of it for a DMA transpose) and pays element_ns a row;
// instruction fetch and the list walkers' reads (transfer engines past the DMA engines) do not.
class DmaDomainTransfers : public DmaTransferModel {
 public:
  DmaDomainTransfers(DmaTransferModel* inner, const CoreClocks& clocks, const DmaCosts& costs, int dma_engines,
                     int engines)
      : inner_(inner), clocks_(clocks), costs_(costs), div_(static_cast<uint64_t>(clocks.div(ClockDomain::kDma))),
        dma_engines_(dma_engines), limited_(costs.engine_bytes_per_ns > 0 || costs.element_ns > 0),
        not_before_(static_cast<size_t>(engines), 0) {}
  void begin(int engine, const DmaDescriptor& d, uint64_t now) override {
    inner_->begin(engine, d, now / div_);
    now_ = now;
    if (limited_ && engine < dma_engines_)
      not_before_[static_cast<size_t>(engine)] = clocks_.edge(ClockDomain::kDma, now + least(d));
  }
  bool done(int engine) const override {
    return inner_->done(engine) && now_ >= not_before_[static_cast<size_t>(engine)];
  }
  void retire(int engine) override { inner_->retire(engine); }
  uint64_t next_event(uint64_t now) const override {
    uint64_t at = inner_->next_event(now / div_);
    if (at != kNoEvent) at *= div_;
    if (limited_)
      for (uint64_t t : not_before_)
        if (t > now) at = std::min(at, t);
    return at;
  }
  void advance(uint64_t now, uint64_t to) override {
    if (to / div_ > now / div_) inner_->advance(now / div_, to / div_);
    now_ = to;
  }

 private:
  // The least time the descriptor's engine needs, in base cycles.
  uint64_t least(const DmaDescriptor& d) const {
    const double rows = static_cast<double>(d.count1 * d.count2);
    double ns = rows * costs_.element_ns;
    if (costs_.engine_bytes_per_ns > 0)
      ns += rows * static_cast<double>(d.bytes) / (costs_.engine_bytes_per_ns * (d.transpose ? costs_.transpose_share : 1.0));
    return ns > 0 ? clocks_.cycles_in(ns) : 0;
  }

  DmaTransferModel* inner_;
  CoreClocks clocks_;
  DmaCosts costs_;
  uint64_t div_;
  int dma_engines_;
  bool limited_;  // a rate or a row cost applies
  uint64_t now_ = 0;
  std::vector<uint64_t> not_before_;  // per transfer engine: its transfer ends no earlier
};

}  // namespace

struct CoreModel::Impl {
  struct InFlight {
    uint64_t complete;
    size_t index;
    uint64_t issue, start;
  };
  struct QueueState {
    size_t pc = 0;
    uint64_t ready = 0;          // the engine accepts the next instruction from this cycle
    bool blocked = false;
    uint64_t blocked_since = 0;
    uint64_t wake = 0;           // a satisfied wait issues from this cycle
    uint64_t recheck = kNever;   // blocked: its semaphore changed; look again at this edge
    uint64_t last_complete = 0;  // completion is in order
    std::deque<InFlight> inflight;
    size_t checked = 0;          // instructions [0, checked) passed the sequencer's decode
    // A refusal found at issue (an illegal word, an engine's or the DMA's check). The queue
    // issues nothing more; the error is raised once everything issued before it on this queue
    // has completed, so that an earlier instruction's own error (a refusal at completion, a
    // semaphore overflow) comes first: errors are precise, in program order per queue.
    struct Fault {
      bool set = false;
      CoreError code = CoreError::kNone;
      size_t index = 0;
      std::string why;
    } fault;
  };
  // Reads of a run of items from HBM ahead of their consumer, nc_core_fetch's policy
  // (rtl/core/README.md, "Instruction fetch"): items [consumed, requested) hold slots of a
  // buffer; a request for the next chunk goes out as soon as the chunk fits and one of the
  // streams is free, each request a transfer on a stream of its own, and items become
  // available in order, a chunk at a time, when the chunk has arrived. Instruction fetch (an
  // item an instruction) and the list walkers (an item a list entry) both read this way.
  struct ReadChunk {
    size_t begin, end;  // items
    int engine;         // its stream in the transfer model
    bool arrived = false;
  };
  struct StreamReads {
    size_t requested = 0;  // items requested so far
    size_t arrived = 0;    // items [0, arrived) have arrived (in order)
    std::deque<ReadChunk> chunks;  // in flight or arrived out of order, oldest first
  };
  struct ReadPolicy {
    size_t buffer, chunk, streams;  // items buffered, items a request (to a chunk boundary), requests in flight
    bool first_alone;               // the first request reads item 0 alone
    uint64_t item_bytes;
  };
  struct FetchState {
    StreamReads reads;     // the queue's instructions
    bool stalled = false;  // its next instruction has not arrived
    uint64_t stalled_since = 0;
  };
  // A descriptor from the cycle it enters its engine's queue (sp fires a dma_copy, a list
  // walker hands an entry): queued, loaded (ready_at: its bursts start) or refused,
  // transferring, finished. A dma_copy, and a list's final entry, then become a completion
  // tracker entry that pops (one per cycle over the core, lowest engine first, once its list
  // has finished), applying its instruction's signal and moving its data.
  struct DmaJob {
    size_t index;                // its instruction in the sp queue (dma_copy or dma_list)
    uint64_t issue;
    DmaDescriptor d;
    bool from_list = false;      // an entry of a dma_list
    size_t entry = 0;            // its index in the list
    DmaError malformed = DmaError::kNone;  // kDescriptor: the entry's reserved bits were set
    std::string malformed_why;
    uint64_t ready_at = 0;       // loaded: its transfer begins
    bool started = false;        // at the front of its engine: ready_at is known
    bool transferring = false;   // handed to the transfer model
    uint64_t poppable = kNoEvent;  // its tracker entry may pop from here (its list reported)
    uint64_t not_before = 0;     // descriptor generation, a semaphore's start latency (CoreCosts::dma)
    uint64_t began = 0;          // its data began to move (a list's final entry: the list's first entry's)
    std::vector<DmaDescriptor> ran;  // a list's entry: every entry of the list that ran, in order
  };
  struct DmaEngine {
    std::deque<DmaJob> queue;     // fired, not finished (the front is loaded)
    std::deque<DmaJob> finished;  // finished, tracker entry not popped
    int tracked = 0;              // tracker entries: dma_copy and dma_list not yet popped
    uint64_t free_at = 0;         // may load its next descriptor from here
    // The list being reported: its first refusal, and the entries that ran (with data).
    DmaError list_error = DmaError::kNone;
    std::string list_why;
    std::vector<DmaDescriptor> list_ran;
    uint64_t list_bursts = 0;
    uint64_t list_began = 0;  // the list's first entry began to move
  };
  // A dma_list's walker (nc_core_lists): reads the list's entries through the fetch port and
  // hands them, in order, to its engine's descriptor queue when it has room, one a cycle.
  struct ListWalk {
    bool active = false;   // entries not yet handed
    size_t index = 0;      // the dma_list in sp
    isa::ListFields list;
    StreamReads reads;     // its entries
    size_t handed = 0;
    uint64_t hand_at = 0;  // the next entry may be handed from this cycle
    uint64_t not_before = 0;  // its entries' transfers begin no earlier (a semaphore's start latency)
  };

  Impl(const CoreConfig& c, const Program& p, SparseMemory& h, DmaTransferModel* external,
       CollectiveEngine* collectives)
      : cfg(c), prog(p), hbm(h), te(c.te), ve_cfg(vector_config(c, false)),
        se_cfg(vector_config(c, true)), mem(ve_cfg), dma(c.dma_engines), walk(c.dma_engines),
        port_report_free(static_cast<size_t>(std::max(c.dma_ports, 1)), 0), open_list(c.dma_engines, 0), own_transfers(dma_config(c)),
        domain_transfers(external ? external : &own_transfers, c.clocks, c.costs.dma, c.dma_engines, c.transfer_engines()),
        transfers(&domain_transfers),
        lone(h, c.hbm_bytes, c.cc_latency_cycles * dma_div(c), c.hbm_bytes_per_cycle / dma_div(c), !c.timing_only),
        cc(collectives ? collectives : &lone), te_timing(c.te, te_costs(c.costs, c.clocks)), image(layout_image(p, c.hbm_bytes, c.image_top, c.image_window)) {
    sems = p.sem_init;
    sem_changed_at.fill(kNever);
    if (c.stream_bases) image.stream = *c.stream_bases;
    psum_mm_windows.resize(static_cast<size_t>(std::clamp(c.te.psum_banks, 1, 32)));
  }

  static uint64_t dma_div(const CoreConfig& c) { return static_cast<uint64_t>(c.clocks.div(ClockDomain::kDma)); }
  // One cycle of domain d, in base cycles.
  uint64_t period(ClockDomain d) const { return static_cast<uint64_t>(cfg.clocks.div(d)); }
  uint64_t period(int q) const { return period(queue_domain(q)); }


  static HbmDmaConfig dma_config(const CoreConfig& c) {
    HbmDmaConfig d = c.dma_timing;
    d.engines = c.dma_engines;
    d.ports = c.dma_ports;
    d.fetch_engines = c.transfer_engines() - c.dma_engines;
    return d;
  }

  static VeConfig vector_config(const CoreConfig& c, bool scalar) {
    VeConfig v;
    v.lanes = c.lanes;
    v.sbuf_bytes = static_cast<uint32_t>(kSbufPartitionStride);
    v.psum_bytes = static_cast<uint32_t>(c.te.psum_banks * c.te.bank_elements * 4);
    v.scalar_engine = scalar;
    v.performance_mode = c.costs.vector.performance_mode;
    return v;
  }

  const CoreInstr& instr(int q, size_t i) const { return prog.queues[q][i]; }

  void raise(CoreError e, int q, size_t i, const std::string& why) {
    if (result.status != CoreStatus::kDone) return;
    result.status = CoreStatus::kError;
    result.error = e;
    result.error_queue = q;
    result.error_index = i;
    const CoreInstr& in = instr(q, i);
    std::string text;
    try {
      text = disassemble(in);
    } catch (const Error&) {
      text = fmt::format("opcode 0x{:02x} (fields do not encode)", static_cast<int>(in.opcode));
    }
    result.message = fmt::format("error {} at cycle {}: {} instruction {} at {}: {}: {}", core_error_name(e), now,
                                 queue_name(static_cast<isa::Queue>(q)), i, in.loc.str(), text, why);
  }

  void signal(int q, size_t i) {
    const CoreInstr& in = instr(q, i);
    if (in.sig_op != isa::SigOp::kNone) sem_signalled_by[in.sig_sem] = q;
    if (in.sig_op == isa::SigOp::kIncrement) {
      const uint64_t v = uint64_t{sems[in.sig_sem]} + in.sig_value;
      if (v > kMaxSemValue)
        return raise(CoreError::kSemOverflow, q, i,
                     fmt::format("semaphore {} is {}, +{} passes {}", prog.sem_name(in.sig_sem),
                                 sems[in.sig_sem], in.sig_value, kMaxSemValue));
      remember_semaphore(in.sig_sem);
      sems[in.sig_sem] = static_cast<uint32_t>(v);
    } else if (in.sig_op == isa::SigOp::kSet) {
      remember_semaphore(in.sig_sem);
      sems[in.sig_sem] = in.sig_value;
    }
  }

  // A signal lands at the end of its cycle: a wait sees it from the next cycle on, at the first
  // edge of its own clock after the signal's.
  void remember_semaphore(int sem) {
    if (sem_changed_at[sem] != now) sem_before[sem] = sems[sem];
    sem_changed_at[sem] = now;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      QueueState& s = qs[q];
      if (s.blocked && instr(q, s.pc).wait_sem == sem)
        s.recheck = std::min(s.recheck, cfg.clocks.edge(queue_domain(q), now + 1));
    }
  }
  uint32_t visible(int sem) const { return sem_changed_at[sem] == now ? sem_before[sem] : sems[sem]; }

  // ---- effects ---------------------------------------------------------------------------
  void psum_te_to_ve() {
    for (int b = 0; b < cfg.te.psum_banks; ++b) {
      if (!(te_dirty_banks >> b & 1)) continue;
      for (int p = 0; p < cfg.te.cols; ++p)
        for (int e = 0; e < cfg.te.bank_elements; ++e)
          mem.psum.write(p, static_cast<uint32_t>((b * cfg.te.bank_elements + e) * 4), 4, te.psum(p, b, e));
    }
    te_dirty_banks = 0;
  }
  void psum_ve_to_te() {
    if (!ve_psum_dirty) return;
    for (int b = 0; b < cfg.te.psum_banks; ++b)
      for (int p = 0; p < cfg.te.cols; ++p)
        for (int e = 0; e < cfg.te.bank_elements; ++e)
          te.set_psum(p, b, e, mem.psum.read(p, static_cast<uint32_t>((b * cfg.te.bank_elements + e) * 4), 4));
    ve_psum_dirty = false;
  }

  void execute(int q, size_t i) {
    const CoreInstr& in = instr(q, i);
    if (cfg.timing_only) {  // the tensor engine still knows its stationaries: its errors need them
      if (format_of(in.opcode) != isa::Format::kTe) return;
      const TeError e = te.track(in.te);
      if (e != TeError::kNone) raise(CoreError::kTensorRefused, q, i, std::string(te_error_name(e)));
      return;
    }
    switch (format_of(in.opcode)) {
      case isa::Format::kTe: {
        psum_ve_to_te();
        const TeError e = te.execute(in.te, mem.sbuf);
        if (e != TeError::kNone) return raise(CoreError::kTensorRefused, q, i, std::string(te_error_name(e)));
        if (in.te.opcode == Opcode::kMultiplyMoving) {
          te_dirty_banks |= 1u << in.te.psum_bank;
          if (effects_cb) record_psum_region(te.last_psum_region());
        }
        break;
      }
      case isa::Format::kVe: {
        const VeInstruction& v = in.ve;
        const VeConfig& vc = in.opcode == isa::Opcode::kActivation ? se_cfg : ve_cfg;
        const bool reads_psum = v.src0.space == MemSpace::kPsum || v.src1.space == MemSpace::kPsum;
        if (reads_psum || v.dst.space == MemSpace::kPsum) psum_te_to_ve();
        const std::vector<VeWrite> writes = ve_writes(v, vc, mem);
        ve_apply(writes, v, mem);
        if (effects_cb) record_ve_writes(writes, v);
        if (v.dst.space == MemSpace::kPsum) ve_psum_dirty = true;
        break;
      }
      default: break;
    }
  }

  void execute_dma(const DmaDescriptor& d) {
    result.dma_bytes += d.bytes * d.count1 * d.count2;
    if (cfg.timing_only) return;
    if (d.transpose) return execute_dma_transpose(d);
    uint8_t buf[kDmaBurstBytes];
    for (const auto& [h, s] : dma_bursts(d)) {
      const int part = static_cast<int>(s / kSbufPartitionStride);
      const uint32_t off = static_cast<uint32_t>(s % kSbufPartitionStride);
      if (d.to_hbm) {
        mem.sbuf.read_bytes(part, off, buf, kDmaBurstBytes);
        hbm.write_block(h, buf, kDmaBurstBytes);
        if (effects_cb) effects.write(CoreMemory::kHbm, h, buf, kDmaBurstBytes);
      } else {
        hbm.read_block(h, buf, kDmaBurstBytes);
        mem.sbuf.write_bytes(part, off, buf, kDmaBurstBytes);
        if (effects_cb) effects.write(CoreMemory::kSbuf, s, buf, kDmaBurstBytes);
      }
    }
  }

  // HBM -> SBUF with 2-byte elements transposed, 16 x 16 blocks (dma_bursts' order).
  void execute_dma_transpose(const DmaDescriptor& d) {
    const auto bursts = dma_bursts(d);
    uint8_t in[kDmaTransposeRows][kDmaBurstBytes], out[kDmaTransposeRows][kDmaBurstBytes];
    for (size_t b = 0; b < bursts.size(); b += kDmaTransposeRows) {
      for (int i = 0; i < kDmaTransposeRows; ++i) hbm.read_block(bursts[b + i].first, in[i], kDmaBurstBytes);
      dma_transpose_block(in, out);
      for (int j = 0; j < kDmaTransposeRows; ++j) {
        const uint64_t s = bursts[b + j].second;
        mem.sbuf.write_bytes(static_cast<int>(s / kSbufPartitionStride), static_cast<uint32_t>(s % kSbufPartitionStride),
                             out[j], kDmaBurstBytes);
        if (effects_cb) effects.write(CoreMemory::kSbuf, s, out[j], kDmaBurstBytes);
      }
    }
  }

  // ---- lockstep record ----------------------------------------------------------------------
  void record_hbm(uint64_t addr, uint64_t bytes) {
    uint8_t line[kLineBytes];
    for (uint64_t done = 0; done < bytes;) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(kLineBytes - (addr + done) % kLineBytes, bytes - done));
      hbm.read_block(addr + done, line, n);
      effects.write(CoreMemory::kHbm, addr + done, line, n);
      done += n;
    }
  }
  void begin_effects(int q, size_t i) {
    if (!effects_cb) return;
    effects.queue = q;
    effects.index = i;
    effects.cycle = now;
    effects.writes.clear();
  }
  void end_effects() {
    if (effects_cb && result.status == CoreStatus::kDone) effects_cb(effects);
  }
  void record_ve_writes(const std::vector<VeWrite>& writes, const VeInstruction& v) {
    const uint64_t psum_bytes = static_cast<uint64_t>(cfg.te.psum_banks) * cfg.te.bank_elements * 4;
    for (const VeWrite& w : writes)
      for (int l = v.start_partition; l < v.start_partition + v.partitions; ++l) {
        uint8_t bytes[4];
        for (int b = 0; b < w.bytes; ++b) bytes[b] = static_cast<uint8_t>(w.data[l] >> (8 * b));
        const bool sbuf = w.space == MemSpace::kSbuf;
        effects.write(sbuf ? CoreMemory::kSbuf : CoreMemory::kPsum,
                      static_cast<uint64_t>(l) * (sbuf ? kSbufPartitionStride : psum_bytes) + w.addr, bytes,
                      static_cast<size_t>(w.bytes));
      }
  }
  void record_psum_region(const TensorEngine::PsumRegion& r) {
    const uint64_t bank_bytes = static_cast<uint64_t>(cfg.te.bank_elements) * 4;
    const uint64_t psum_bytes = bank_bytes * cfg.te.psum_banks;
    for (int p = r.partition; p < r.partition + r.partitions; ++p)
      for (uint32_t b = r.byte_begin; b < r.byte_end; b += 2) {
        const uint32_t word = te.psum(p, r.bank, static_cast<int>(b / 4));
        const uint8_t bytes[2] = {static_cast<uint8_t>(word >> (8 * (b % 4))),
                                  static_cast<uint8_t>(word >> (8 * (b % 4 + 1)))};
        effects.write(CoreMemory::kPsum, static_cast<uint64_t>(p) * psum_bytes + r.bank * bank_bytes + b, bytes, 2);
      }
  }

  // ---- issue -------------------------------------------------------------------------------
  bool try_issue(int q) {
    QueueState& s = qs[q];
    if (s.pc >= prog.queues[q].size() || s.fault.set) return false;
    const ClockDomain dom = queue_domain(q);
    const uint64_t cyc = period(dom);
    if (!cfg.clocks.on_edge(dom, now)) {  // a sequencer acts on its own clock's edges only
      if (!s.blocked) s.ready = std::max(s.ready, cfg.clocks.edge(dom, now));
      return false;
    }
    if (s.recheck <= now) s.recheck = kNever;
    if (!fetched(q)) return false;
    const size_t i = s.pc;
    const CoreInstr& in = instr(q, i);
    // A built program has not been through the assembler: check its word as the sequencer's
    // decoder does, before the wait (whose fields an illegal word may not encode).
    if (!issue_checked(q, i)) return false;
    if (in.wait_en) {
      if (visible(in.wait_sem) < in.wait_value) {
        if (!s.blocked) {
          s.blocked = true;
          s.blocked_since = now;
        }
        // Signalled earlier in this cycle: the wait sees it at its next edge.
        if (sem_changed_at[in.wait_sem] == now) s.recheck = std::min(s.recheck, cfg.clocks.edge(dom, now + 1));
        return false;
      }
      if (s.blocked) {
        s.blocked = false;
        result.queues[q].wait_cycles += now - s.blocked_since;
        if (record && now > s.blocked_since) result.sem_waits.push_back({q, i, s.blocked_since, now});
        s.wake = now + cfg.dependency_cycles * cyc;
      }
    }
    if (now < std::max(s.ready, s.wake)) return false;
    const isa::Queue queue = static_cast<isa::Queue>(q);
    uint64_t start = now, complete = now;
    switch (format_of(in.opcode)) {
      case isa::Format::kTe: {
        // The tensor engine's timing counts its own cycles.
        const uint64_t at = te_timing.earliest_fire(now / cyc) * cyc;
        if (at > now) {  // the tensor engine's instruction queue is full
          s.ready = at;
          return false;
        }
        const TensorEngineTiming::Schedule t = te_timing.schedule(in.te, now / cyc);
        start = t.start * cyc;
        if (in.te.opcode == Opcode::kMultiplyMoving)  // its vectors in flight into its bank
          note_psum_writes(in.te.psum_bank, t.start * cyc, t.commit * cyc);
        // The RTL writes PSUM until commit and signals once the engine has drained; the model
        // applies both at the drain (a signal's waiters see nothing earlier either way).
        complete = t.drained * cyc;
        result.queues[q].busy_cycles += t.stream_cycles * cyc;
        s.ready = now + cyc;
        break;
      }
      case isa::Format::kVe: {
        const bool scalar = in.opcode == isa::Opcode::kActivation;
        std::string why;
        const VeError e = ve_check(in.ve, scalar ? se_cfg : ve_cfg, &why);
        if (e != VeError::kNone) {
          defer(scalar ? CoreError::kScalarRefused : CoreError::kVectorRefused, q, i, fmt::format("{}: {}", ve_error_name(e), why));
          return false;
        }
        // It streams for its cost (at least the minimum interval; a reduction's write costs
        // the interval again, as tensor_scalar_reduce's max(MIN_II, N) + MIN_II), then its
        // results land static_cycles later. The engine takes the next instruction when this
        // one stops streaming, unless that one needs results still in the pipeline.
        const EngineCosts& ec = scalar ? cfg.costs.scalar : cfg.costs.vector;
        const uint64_t busy = ve_cost_cycles(in.ve, scalar ? se_cfg : ve_cfg);
        const bool uses_psum = ve_reads_psum(in.ve) || ve_writes_psum(in.ve);
        const bool serial_psum = uses_psum && !cfg.costs.psum.vector_scalar_parallel;
        if (serial_psum) {  // claim PSUM (PsumAccess): neither engine may hold it
          const uint64_t free_from = std::max(psum_free_from[0], psum_free_from[1]);
          if (now < free_from) {
            s.ready = std::max(s.ready, cfg.clocks.edge(dom, free_from));
            return false;
          }
        }
        if (ec.static_cycles) start = std::max(start, results_needed(q, in.ve));
        // The engine is done when it has streamed its elements, no faster than the PSUM port
        // takes them; the next instruction waits for that, and for the minimum interval.
        uint64_t psum_time = uses_psum ? psum_port_time(q, busy * cyc) : busy * cyc;
        if (uses_psum) {
          const uint64_t asked = start;
          start = psum_bank_free(in.ve, start, psum_time);
          if (start > asked) hold_psum_port(q, in.ve, asked, start - 1);
        }
        const uint64_t done = start + psum_time;
        uint64_t streamed = std::max(done, start + std::max(busy, ec.min_cycles) * cyc) +
                            (ec.min_cycles && ve_writes_reduction(in.ve) ? ec.min_cycles * cyc : 0);
        if (serial_psum) {  // held until the engine is done with it; the register clears at that edge
          psum_free_from[q == kActQueue ? 0 : 1] = done + 1;
          psum_last_claim = q;
        }
        else if (uses_psum)
          share_psum_port(q, in.ve, start, streamed);
        complete = streamed + ec.static_cycles * cyc;
        s.ready = streamed;
        result.queues[q].busy_cycles += streamed - start;
        break;
      }
      case isa::Format::kCc: {
        if (cc_collectives >= cfg.cc_outstanding) return false;  // an end frees a slot
        cc->issue(i, in.cc, now);
        cc_pending.push_back({i, true, now, 0});
        ++cc_collectives;
        s.ready = now + cyc;
        ++s.pc;
        ++result.queues[q].instructions;
        return true;
      }
      case isa::Format::kDma: {
        if (in.dma.engine >= static_cast<uint64_t>(cfg.dma_engines)) {
          defer(CoreError::kDmaRefused, q, i, fmt::format("DMA engine {} does not exist (the core has {})", in.dma.engine, cfg.dma_engines));
          return false;
        }
        // Descriptors reaching past this core's partitions are refused like any out of range.
        const DmaError e = dma_check(in.dma, cfg.hbm_bytes, static_cast<uint64_t>(cfg.lanes) * kSbufPartitionStride);
        if (e != DmaError::kNone) {
          defer(CoreError::kDmaRefused, q, i, std::string(dma_error_name(e)));
          return false;
        }
        // A list longer than the engine's completion tracker could never finish: refused.
        if (open_list[in.dma.engine] >= kDmaListDescriptors) {
          defer(CoreError::kDmaRefused, q, i, std::string(dma_error_name(DmaError::kListLength)));
          return false;
        }
        // The program image is what the fetch unit reads: no DMA writes into it.
        const DmaDescriptor& d = in.dma;
        if (d.to_hbm && image.overlaps(d.hbm_addr, dma_hbm_end(d) - d.hbm_addr)) {
          defer(CoreError::kDmaRefused, q, i,
                fmt::format("{}: [0x{:x}, 0x{:x}) meets the image [0x{:x}, 0x{:x})", dma_error_name(DmaError::kImage),
                            d.hbm_addr, dma_hbm_end(d), image.base, image.base + image.bytes));
          return false;
        }
        DmaEngine& eng = dma[in.dma.engine];
        // Room in the engine's descriptor queue and in its completion tracker (the counts as
        // registered: what leaves this cycle makes room from the next); no list walking on it.
        if (!fifo_room(in.dma.engine) || eng.tracked >= kDmaTrackerDepth || walk[in.dma.engine].active)
          return hold_sp(static_cast<int>(in.dma.engine));
        sp_dma_hold = false;
        open_list[in.dma.engine] = in.dma.last ? 0 : open_list[in.dma.engine] + 1;
        ++eng.tracked;
        DmaJob job{i, now};
        job.d = in.dma;
        job.not_before = dma_not_before(in, true);
        eng.queue.push_back(std::move(job));
        start_dma_front(in.dma.engine);
        s.ready = now + cyc;
        ++s.pc;
        ++result.queues[q].instructions;
        return true;
      }
      case isa::Format::kList: {
        const isa::ListFields l = list_of(prog, in, image);
        if (l.engine >= static_cast<uint64_t>(cfg.dma_engines)) {
          defer(CoreError::kDmaRefused, q, i, fmt::format("DMA engine {} does not exist (the core has {})", l.engine, cfg.dma_engines));
          return false;
        }
        // The core's checks before it reads an entry (nc_core's order); a ninth list on an
        // open list of dma_copy's could never be tracked either.
        DmaError e = dma_list_check(l, cfg.hbm_bytes);
        if (e == DmaError::kNone && image.over_streams(l.list_addr, l.count * kDmaListEntryBytes)) e = DmaError::kListImage;
        if (e == DmaError::kNone && open_list[l.engine] >= kDmaListDescriptors) e = DmaError::kListLength;
        if (e != DmaError::kNone) {
          defer(CoreError::kDmaRefused, q, i,
                fmt::format("{}: the list [0x{:x}, +{} entries)", dma_error_name(e), l.list_addr, l.count));
          return false;
        }
        DmaEngine& eng = dma[l.engine];
        ListWalk& w = walk[l.engine];
        if (w.active || eng.tracked >= kDmaTrackerDepth) return hold_sp(static_cast<int>(l.engine));
        sp_dma_hold = false;
        open_list[l.engine] = 0;
        ++eng.tracked;
        w = ListWalk{};
        w.active = true;
        w.index = i;
        w.list = l;
        w.not_before = dma_not_before(in, false);
        w.hand_at = now + cyc;
        s.ready = now + cyc;
        ++s.pc;
        ++result.queues[q].instructions;
        return true;
      }
      default:
        s.ready = now + cyc;
        // A signalling nop on pe, act or dve applies its signal once the engine has drained.
        if (in.sig_op != isa::SigOp::kNone) complete = now + cyc;
        if (queue == isa::Queue::kCc) {  // ends after every collective before it
          // A signalling one is a fence, as on pe, act and dve: it signals a cycle after it
          // issues, or after the last collective before it ends, and the queue issues nothing
          // more until then.
          const bool fence = in.sig_op != isa::SigOp::kNone;
          cc_pending.push_back({i, false, now, fence ? now + cyc : 0});
          if (fence) s.ready = kNever;
          ++s.pc;
          ++result.queues[q].instructions;
          return true;
        }
        if (queue == isa::Queue::kSp) {  // signals at issue
          ++s.pc;
          ++result.queues[q].instructions;
          ++completed;
          last_end = std::max(last_end, now);
          begin_effects(q, i);
          signal(q, i);
          end_effects();
          if (record) result.timeline.push_back({q, i, now, now, now});
          return true;
        }
        break;
    }
    complete = std::max(complete, s.last_complete);
    s.last_complete = complete;
    // A signal on pe, act or dve is a fence: the queue holds until its engine has drained,
    // applies the signal (at `complete`), and fires again the cycle after.
    if (in.sig_op != isa::SigOp::kNone) s.ready = std::max(s.ready, complete + cyc);
    s.inflight.push_back({complete, i, now, start});
    ++s.pc;
    ++result.queues[q].instructions;
    return true;
  }

  // The vector and scalar engines share the tensor engine's PSUM read port and its external
  // PSUM write port, alternating when both ask. An instruction that starts while the other
  // engine's instruction uses the same port shares it until one is done (the fixed cycles of
  // each use no port). The port takes one access a tensor-engine cycle: while both engines
  // together ask for more, each gets at least half of it (more when the other asks for less),
  // and so moves slower by its rate over its share. On one clock, both move at half speed; at
  // trn2's clocks (the Vector and Scalar engines at 0.96 and 1.2 GHz, the port at 2.4) it keeps
  // up with both.

  // A PSUM bank with an MM's vectors in flight into it takes no read or write of the vector or
  // scalar engine (nc_psum: held off until the bank drains): each bank's MM windows [first
  // vector, commit], in base cycles, as the tensor engine scheduled them.
  // A vector or scalar instruction still streaming when such a window opens waits for it to
  // close: its engine (the last instruction its queue issued) finishes that much later.
  void note_psum_writes(int bank, uint64_t from, uint64_t to) {
    auto& w = psum_mm_windows[static_cast<size_t>(bank)];
    while (!w.empty() && w.front().second + 1 < now) w.pop_front();  // long over
    w.emplace_back(from, to);
    for (const int q : {kActQueue, kDveQueue}) {
      const VeInstruction* held =
          stall_streaming(q, from, to, [&](const VeInstruction& v) { return psum_banks_of(v) >> bank & 1; });
      if (held) hold_psum_port(q, *held, std::max(from, qs[q].inflight.back().start), to);
    }
  }
  // The last instruction queue q issued, if it is a vector or scalar one that `affected`
  // picks and it streams while [from, to] holds it, finishes that much later (returned).
  template <class Affected>
  const VeInstruction* stall_streaming(int q, uint64_t from, uint64_t to, Affected affected) {
    QueueState& o = qs[q];
    if (o.inflight.empty()) return nullptr;
    InFlight& f = o.inflight.back();
    if (from > o.ready || to < f.start || o.ready <= now) return nullptr;  // not streaming then
    const CoreInstr& in = instr(q, f.index);
    if (format_of(in.opcode) != isa::Format::kVe || !affected(in.ve)) return nullptr;
    const uint64_t held = to + 1 - std::max(from, f.start);
    f.complete += held;
    o.ready += held;
    o.last_complete = std::max(o.last_complete, f.complete);
    return &in.ve;
  }
  // An access held off by a bank keeps its port (the read port, or the external write port)
  // until it is taken: the other engine's accesses through that port wait as long.
  void hold_psum_port(int q, const VeInstruction& v, uint64_t from, uint64_t to) {
    for (const bool write : {false, true}) {
      if (!(write ? ve_writes_psum(v) : ve_reads_psum(v))) continue;
      psum_port_held[write] = {from, to};
      const int other = q == kActQueue ? kDveQueue : kActQueue;
      stall_streaming(other, from, to,
                      [&](const VeInstruction& x) { return write ? ve_writes_psum(x) : ve_reads_psum(x); });
    }
  }
  uint32_t psum_banks_of(const VeInstruction& v) const {
    const int64_t bank_bytes = static_cast<int64_t>(cfg.te.bank_elements) * 4;
    uint32_t banks = 0;
    const VeFootprint f = ve_footprint(v);
    for (const auto* spans : {&f.reads, &f.writes})
      for (const VeSpan& sp : *spans)
        if (sp.space == MemSpace::kPsum && sp.hi > sp.lo)
          for (int64_t b = std::max<int64_t>(0, sp.lo) / bank_bytes;
               b <= (sp.hi - 1) / bank_bytes && b < static_cast<int64_t>(psum_mm_windows.size()); ++b)
            banks |= 1u << b;
    return banks;
  }
  // The first cycle from `start` at which an instruction streaming `length` base cycles meets
  // no MM window of the PSUM banks it reads or writes.
  uint64_t psum_bank_free(const VeInstruction& v, uint64_t start, uint64_t length) const {
    const uint32_t banks = psum_banks_of(v);
    for (bool moved = true; moved;) {
      moved = false;
      for (const bool write : {false, true}) {
        const auto& [from, to] = psum_port_held[write];
        if ((write ? ve_writes_psum(v) : ve_reads_psum(v)) && to >= from && from <= start + length && to >= start) {
          start = to + 1;
          moved = true;
        }
      }
      for (size_t b = 0; b < psum_mm_windows.size(); ++b) {
        if (!(banks >> b & 1)) continue;
        for (const auto& [from, to] : psum_mm_windows[b])
          if (from <= start + length && to >= start) {
            start = to + 1;
            moved = true;
          }
      }
    }
    return start;
  }

  // How long an engine alone takes to stream `cycles` (base cycles, its fixed ones included)
  // through the PSUM port: one access a tensor-engine cycle, so an engine on a faster clock
  // waits for the port on every access (the RTL's nc_core_bridge).
  uint64_t psum_port_time(int q, uint64_t cycles) const {
    const uint64_t fixed = std::min(kVeFixedCycles * period(q), cycles);
    const double slow = alone_psum_slowdown(q);
    return fixed + static_cast<uint64_t>(std::ceil(static_cast<double>(cycles - fixed) * slow - 1e-9));
  }
  double alone_psum_slowdown(int q) const {
    return std::max(1.0, static_cast<double>(period(ClockDomain::kTensor)) / static_cast<double>(period(q)));
  }

  void share_psum_port(int q, const VeInstruction& v, uint64_t begin, uint64_t& complete) {
    const auto ports = [](const VeInstruction& x) { return (ve_reads_psum(x) ? 1 : 0) | (ve_writes_psum(x) ? 2 : 0); };
    const int other = q == kActQueue ? kDveQueue : kActQueue;
    QueueState& o = qs[other];
    if (o.inflight.empty() || o.inflight.back().complete <= now) return;
    InFlight& busy = o.inflight.back();
    if (!(ports(v) & ports(instr(other, busy.index).ve))) return;
    // Rates in accesses per base cycle; slow_x: how much longer engine x's shared stretch takes.
    const double port = 1.0 / static_cast<double>(period(ClockDomain::kTensor));
    const double rate_mine = 1.0 / static_cast<double>(period(q)), rate_theirs = 1.0 / static_cast<double>(period(other));
    if (rate_mine + rate_theirs <= port) return;
    const auto slowdown = [port](double rate, double other_rate) {
      return rate / std::min(rate, std::max(port / 2, port - other_rate));
    };
    // Relative to each engine alone, which psum_port_time() has counted already.
    const double slow_mine = slowdown(rate_mine, rate_theirs) / alone_psum_slowdown(q),
                 slow_theirs = slowdown(rate_theirs, rate_mine) / alone_psum_slowdown(other);
    const uint64_t fixed = kVeFixedCycles * period(q);
    const uint64_t mine = complete - begin - std::min<uint64_t>(fixed, complete - begin);
    const uint64_t theirs = busy.complete > begin ? busy.complete - begin : 0;
    const uint64_t shared = std::min(mine, theirs);
    const auto longer = [shared](double slow) {  // whole base cycles; exact (shared) on one clock
      return static_cast<uint64_t>(std::ceil(static_cast<double>(shared) * (slow - 1.0) - 1e-9));
    };
    complete = begin + fixed + mine + longer(slow_mine);
    const uint64_t later = busy.complete + longer(slow_theirs);
    busy.complete = later;
    o.last_complete = std::max(o.last_complete, later);
    o.ready = std::max(o.ready, later + (instr(other, busy.index).sig_op != isa::SigOp::kNone ? period(other) : 0));
  }

  // When the results that a vector or scalar instruction reads or overwrites have landed: the
  // completions of the instructions still in its engine's pipeline that write them.
  uint64_t results_needed(int q, const VeInstruction& v) const {
    uint64_t at = now;
    const VeFootprint mine = ve_footprint(v);
    for (const InFlight& f : qs[q].inflight) {
      const CoreInstr& earlier = instr(q, f.index);
      if (f.complete > at && format_of(earlier.opcode) == isa::Format::kVe && ve_footprint(earlier.ve).blocks(mine))
        at = f.complete;
    }
    return at;
  }

  // Each word is decoded once, when its queue first reaches it (a queue only moves forward).
  bool issue_checked(int q, size_t i) {
    if (i < qs[q].checked) return true;
    std::string why;
    DecodeError e;
    try {
      e = decode(encode(instr(q, i)), static_cast<isa::Queue>(q), nullptr, &why);
    } catch (const Error& err) {
      e = DecodeError::kIllegalReserved;  // a field too wide for its bits
      why = err.what();
    }
    if (e == DecodeError::kNone) {
      qs[q].checked = i + 1;
      return true;
    }
    defer(CoreError::kDecode, q, i, fmt::format("{}: {}", decode_error_name(e), why));
    return false;
  }

  void defer(CoreError e, int q, size_t i, std::string why) {
    qs[q].fault = {true, e, i, std::move(why)};
  }
  // Nothing issued from queue q is still to complete (sp: no DMA descriptor either).
  bool drained(int q) const {
    if (!qs[q].inflight.empty()) return false;
    if (q == kSpQueue && dma_owed()) return false;
    if (q == kCcQueue && !cc_pending.empty()) return false;
    return true;
  }
  // Raises the first deferred refusal whose queue has drained; true when one was raised.
  bool raise_drained_faults() {
    for (int q = 0; q < isa::kNumQueue && result.status == CoreStatus::kDone; ++q) {
      const auto& f = qs[q].fault;
      if (f.set && drained(q)) raise(f.code, q, f.index, f.why);
    }
    return result.status != CoreStatus::kDone;
  }

  // The engine loads its next descriptor the cycle after it entered the queue, once the
  // previous one has finished (and, ending a list, been reported).
  void start_dma_front(int e) {
    DmaEngine& eng = dma[e];
    if (eng.queue.empty() || eng.queue.front().started) return;
    DmaJob& j = eng.queue.front();
    j.started = true;
    j.ready_at = std::max({now, j.issue + dma_cycle, eng.free_at, j.not_before});
    j.began = j.ready_at;
    if (j.from_list) {
      if (j.entry == 0) eng.list_began = j.ready_at;
      j.began = eng.list_began;
    }
    dma_changed();
  }

  // A DMA engine finished its front descriptor at `now`. Ending a list, the engine's port
  // reports it (one report per port and cycle) and the list's tracker entries may pop after.
  // A refused entry (refused: its reason) finished without moving anything. A list's entries
  // other than its final one leave no tracker entry; the final one becomes the dma_list's,
  // carrying the entries that ran. A list with a refused entry raises dma_refused when it is
  // reported, naming the engine's oldest tracker entry (nc_core's report).
  void dma_finished(int e, DmaError refused = DmaError::kNone, const std::string& why = "") {
    DmaEngine& eng = dma[e];
    DmaJob j = std::move(eng.queue.front());
    eng.queue.pop_front();
    dma_changed();
    if (refused == DmaError::kNone) transfers->retire(e);
    eng.free_at = now + dma_cycle;
    if (j.from_list) {
      if (refused != DmaError::kNone && eng.list_error == DmaError::kNone) {
        eng.list_error = refused;
        eng.list_why = fmt::format("{}: entry {} of the list ({}){}", dma_error_name(refused), j.entry,
                                   list_entry_where(j), why.empty() ? "" : ": " + why);
      }
      if (refused == DmaError::kNone) {
        eng.list_bursts += dma_burst_count(j.d);
        if (cfg.timing_only) result.dma_bytes += j.d.bytes * j.d.count1 * j.d.count2;
        else eng.list_ran.push_back(j.d);
      }
    }
    if (j.d.last) {
      uint64_t& port = port_report_free[static_cast<size_t>(e % std::max(cfg.dma_ports, 1))];
      const uint64_t report = std::max(now + dma_cycle, port);
      port = report + dma_cycle;
      eng.free_at = report + dma_cycle;
      if (j.from_list) {
        result.list_bursts.emplace_back(j.index, eng.list_bursts);
        eng.list_bursts = 0;
      }
      if (eng.list_error != DmaError::kNone) {
        const size_t named = eng.finished.empty() ? j.index : eng.finished.front().index;
        raise(CoreError::kDmaRefused, kSpQueue, named, eng.list_why);
        return;
      }
      for (DmaJob& f : eng.finished)
        if (f.poppable == kNoEvent) f.poppable = report + dma_cycle;
      j.poppable = report + dma_cycle;
      if (j.from_list) {
        j.ran = std::move(eng.list_ran);
        eng.list_ran.clear();
      }
    }
    if (!j.from_list || j.d.last) eng.finished.push_back(std::move(j));
    start_dma_front(e);
  }

  std::string list_entry_where(const DmaJob& j) const {
    const CoreInstr& in = instr(kSpQueue, j.index);
    if (in.list_ref < 0) return fmt::format("HBM 0x{:x}", list_of(prog, in, image).list_addr + j.entry * kDmaListEntryBytes);
    const DescriptorList& l = prog.lists[static_cast<size_t>(in.list_ref)];
    return fmt::format("'{}' line {}", l.name, j.entry < l.lines.size() ? l.lines[j.entry] : 0);
  }

  // sp holds a DMA instruction for engine e (its queue, tracker or list walker is busy). It
  // would try again every cycle; instead it tries again when a load makes room in the queue
  // (the cycle after it), or as soon as the DMA state changes (dma_changed): the same cycles,
  // without an event a cycle while the engine works.
  bool hold_sp(int e) {
    QueueState& s = qs[kSpQueue];
    sp_dma_hold = true;
    sp_tried = now;
    s.ready = room_at(e);
    return false;
  }
  // When engine e's full descriptor queue may next have room by time alone: a descriptor's load
  // makes room the cycle after it (kNever: none is due to load; one starts when the descriptor
  // before it ends, a transfer's event, and dma_changed() follows).
  uint64_t room_at(int e) const {
    uint64_t at = kNever;
    for (const DmaJob& j : dma[e].queue)
      if (j.started && j.ready_at >= now) at = std::min(at, j.ready_at + dma_cycle);
    return at;
  }
  // A descriptor started, finished or popped, or a walk ended: a held sp tries again now (next
  // cycle if it has tried this one).
  void dma_changed() {
    if (!sp_dma_hold) return;
    QueueState& s = qs[kSpQueue];
    s.ready = std::min(s.ready, sp_tried == now ? now + dma_cycle : cfg.clocks.edge(ClockDomain::kDma, now));
  }

  // When a DMA instruction issued now may begin moving data (CoreCosts::dma): after its
  // descriptors are generated (a dma_copy: the hardware generates them; a dma_list's are in
  // HBM), and, when it waited on a semaphore another engine signalled, the start latency after
  // that signal.
  uint64_t dma_not_before(const CoreInstr& in, bool generated) const {
    const DmaCosts& c = cfg.costs.dma;
    uint64_t t = now + (generated && c.descriptor_ns > 0 ? cfg.clocks.cycles_in(c.descriptor_ns) : 0);
    if (in.wait_en && c.semaphore_to_start_ns > 0 && sem_changed_at[in.wait_sem] != kNever &&
        sem_signalled_by[in.wait_sem] != kSpQueue)
      t = std::max(t, sem_changed_at[in.wait_sem] + cfg.clocks.cycles_in(c.semaphore_to_start_ns));
    return cfg.clocks.edge(ClockDomain::kDma, t);
  }

  // Room in engine e's descriptor queue (the count as registered: a descriptor loaded this
  // cycle makes room from the next).
  bool fifo_room(int e) const {
    size_t unloaded = 0;
    for (const DmaJob& j : dma[e].queue) unloaded += !j.started || j.ready_at >= now;
    return unloaded < kDmaFifoDepth;
  }

  // The earliest cycle a tracker entry may pop (kNoEvent: none owed).
  uint64_t next_pop() const {
    uint64_t at = kNoEvent;
    for (const DmaEngine& eng : dma)
      if (!eng.finished.empty()) at = std::min(at, eng.finished.front().poppable);
    return at == kNoEvent ? at : std::max(at, pop_free);
  }

  // Completes everything due at `now`; true when anything completed.
  bool complete_due() {
    bool any = false;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      auto& s = qs[q];
      while (!s.inflight.empty() && s.inflight.front().complete <= now && result.status == CoreStatus::kDone) {
        const InFlight f = s.inflight.front();
        s.inflight.pop_front();
        begin_effects(q, f.index);
        execute(q, f.index);
        signal(q, f.index);
        end_effects();
        ++completed;
        last_end = std::max(last_end, f.complete);
        if (record) result.timeline.push_back({q, f.index, f.issue, f.start, f.complete});
        any = true;
      }
    }
    while (!cc_pending.empty() && result.status == CoreStatus::kDone) {
      const CcPending p = cc_pending.front();
      if (p.collective && !cc->done(now)) break;
      if (!p.collective && p.not_before > now) break;
      cc_pending.pop_front();
      if (p.collective && !cc_pending.empty() && cc_pending.front().not_before)  // a fence after it
        cc_pending.front().not_before = std::max(cc_pending.front().not_before, now + period(kCcQueue));
      if (!p.collective && p.not_before) qs[kCcQueue].ready = now + period(kCcQueue);
      if (p.collective) {
        --cc_collectives;
        std::string why;
        const isa::CcError e = cc->error(&why);
        if (e != isa::CcError::kNone) {
          raise(CoreError::kCcRefused, kCcQueue, p.index,
                fmt::format("{}: {}", isa::kCcErrorNames[static_cast<size_t>(e)], why));
          break;
        }
      }
      begin_effects(kCcQueue, p.index);
      if (p.collective) {
        const auto [addr, bytes] = cc->written();
        cc->retire();
        if (effects_cb) record_hbm(addr, bytes);
      }
      signal(kCcQueue, p.index);
      end_effects();
      ++completed;
      last_end = std::max(last_end, now);
      if (record) result.timeline.push_back({kCcQueue, p.index, p.issue, p.issue, now});
      any = true;
    }
    begin_due_transfers();
    any |= fetch_arrivals();
    any |= list_arrivals();
    for (int e = 0; e < cfg.dma_engines; ++e) {
      const DmaEngine& eng = dma[e];
      if (!eng.queue.empty() && eng.queue.front().transferring && transfers->done(e) && result.status == CoreStatus::kDone)
        dma_finished(e);
    }
    // One tracker entry pops a cycle: the lowest engine's, applying the dma_copy's signal now
    // (a waiting queue sees it next cycle) and moving its data.
    if (next_pop() <= now && result.status == CoreStatus::kDone) {
      for (int e = 0; e < cfg.dma_engines; ++e) {
        DmaEngine& eng = dma[e];
        if (eng.finished.empty() || eng.finished.front().poppable > now) continue;
        const DmaJob j = std::move(eng.finished.front());
        eng.finished.pop_front();
        --eng.tracked;
        dma_changed();
        pop_free = now + dma_cycle;
        begin_effects(kSpQueue, j.index);
        if (j.from_list)
          for (const DmaDescriptor& d : j.ran) execute_dma(d);
        else
          execute_dma(j.d);
        signal(kSpQueue, j.index);
        end_effects();
        ++completed;
        last_end = std::max(last_end, now + dma_cycle);
        // Its start is when its data began to move.
        if (record) result.timeline.push_back({kSpQueue, j.index, j.issue, j.began, now + dma_cycle});
        any = true;
        break;
      }
    }
    return any;
  }

  // ---- instruction fetch -------------------------------------------------------------------
  // Whether queue q's next instruction is in its buffer; counts the cycles it is not.
  bool fetched(int q) {
    if (!cfg.fetch.enabled) return true;
    FetchState& f = fetch[q];
    if (qs[q].pc >= f.reads.arrived) {
      if (!f.stalled) f.stalled = true, f.stalled_since = now;
      return false;
    }
    if (f.stalled) {
      f.stalled = false;
      result.queues[q].fetch_stall_cycles += now - f.stalled_since;
      if (record && now > f.stalled_since) result.fetch_stalls.push_back({q, qs[q].pc, f.stalled_since, now});
    }
    return true;
  }

  // Requests every chunk of `r` (items [0, length) from `base`, `consumed` taken by their
  // consumer) that fits in the buffer and has a free stream, on engines first_engine and up.
  void request_reads(StreamReads& r, const ReadPolicy& p, uint64_t base, size_t length, size_t consumed,
                     int first_engine) {
    while (r.requested < length && r.chunks.size() < p.streams) {
      // To the next chunk boundary (from item 0), and to the end.
      const size_t end = r.requested == 0 && p.first_alone
                             ? 1
                             : std::min(length, r.requested + p.chunk - r.requested % p.chunk);
      if (end - consumed > p.buffer) break;
      int engine = first_engine;  // the first stream no chunk holds
      while (std::any_of(r.chunks.begin(), r.chunks.end(), [&](const ReadChunk& c) { return c.engine == engine; }))
        ++engine;
      DmaDescriptor d;  // a read of the chunk's items (the transfer model times it like any)
      d.engine = static_cast<uint64_t>(engine);
      d.hbm_addr = base + r.requested * p.item_bytes;
      d.bytes = (end - r.requested) * p.item_bytes;
      transfers->begin(engine, d, now);
      r.chunks.push_back({r.requested, end, engine});
      r.requested = end;
    }
  }

  // Retires the reads of `r` that have ended and returns the items they brought; *advanced says
  // whether items became available (in order).
  size_t collect_reads(StreamReads& r, bool* advanced) {
    size_t items = 0;
    for (ReadChunk& c : r.chunks)
      if (!c.arrived && transfers->done(c.engine)) {
        transfers->retire(c.engine);
        c.arrived = true;
        items += c.end - c.begin;
      }
    while (!r.chunks.empty() && r.chunks.front().arrived) {
      r.arrived = r.chunks.front().end;
      r.chunks.pop_front();
      *advanced = true;
    }
    return items;
  }

  ReadPolicy fetch_policy() const {
    const FetchConfig& fc = cfg.fetch;
    return {static_cast<size_t>(fc.buffer), static_cast<size_t>(fc.chunk), static_cast<size_t>(fc.streams), true,
            kInstrBytes};
  }

  // The fetch unit and the list walkers act on the DMA clock's edges; a call between them marks
  // the next edge as an event (next_event), where it runs again.
  bool on_dma_edge() {
    if (cfg.clocks.on_edge(ClockDomain::kDma, now)) return true;
    dma_edge_due = true;
    return false;
  }

  void request_fetches() {
    if (!cfg.fetch.enabled || !on_dma_edge()) return;
    for (int q = 0; q < isa::kNumQueue; ++q)
      request_reads(fetch[q].reads, fetch_policy(), image.stream[q], prog.queues[q].size(), qs[q].pc,
                    cfg.dma_engines + q * cfg.fetch.streams);
  }

  // Retires the fetch transfers that have ended; true when a queue got instructions.
  bool fetch_arrivals() {
    bool any = false;
    for (int q = 0; q < isa::kNumQueue && cfg.fetch.enabled; ++q) {
      const uint64_t bytes = collect_reads(fetch[q].reads, &any) * kInstrBytes;
      result.queues[q].fetched_bytes += bytes;
      result.fetch_bytes += bytes;
    }
    return any;
  }

  bool fetching() const {
    for (const FetchState& f : fetch)
      if (!f.reads.chunks.empty()) return true;
    return false;
  }

  // A DMA engine's transfer is moving (the sync queue's busy cycles; fetch streams excluded).
  bool dma_transferring() const {
    for (int e = 0; e < cfg.dma_engines; ++e) {
      const auto& fifo = dma[static_cast<size_t>(e)].queue;
      if (!fifo.empty() && fifo.front().transferring && !transfers->done(e)) return true;
    }
    return false;
  }

  // Hands every front descriptor its engine has loaded to the transfer model.
  // A list entry is checked as its engine loads it (nc_dma's order): malformed, then the
  // descriptor checks, then a write into the image; a refused one finishes at once.
  void begin_due_transfers() {
    for (int e = 0; e < cfg.dma_engines && result.status == CoreStatus::kDone; ++e) {
      auto& fifo = dma[e].queue;
      while (!fifo.empty() && fifo.front().started && !fifo.front().transferring && fifo.front().ready_at <= now &&
             result.status == CoreStatus::kDone) {
        DmaJob& j = fifo.front();
        if (j.from_list) {
          DmaError r = j.malformed;
          std::string why = j.malformed_why;
          if (r == DmaError::kNone)
            r = dma_check(j.d, cfg.hbm_bytes, static_cast<uint64_t>(cfg.lanes) * kSbufPartitionStride);
          if (r == DmaError::kNone && j.d.to_hbm && image.overlaps(j.d.hbm_addr, dma_hbm_end(j.d) - j.d.hbm_addr))
            r = DmaError::kImage;
          if (r != DmaError::kNone) {
            dma_finished(e, r, why);
            continue;
          }
        }
        j.transferring = true;
        transfers->begin(e, j.d, now);
        break;
      }
    }
  }

  // ---- descriptor lists ----------------------------------------------------------------------
  int list_stream(int e, int k) const { return cfg.dma_engines + cfg.fetch.engines() + e * cfg.lists.streams + k; }

  // Requests every chunk of every active list that fits in its walker's buffer and has a free
  // stream (nc_core_fetch's policy, one beat an entry, no lone first request).
  void request_list_entries() {
    if (!on_dma_edge()) return;
    const ReadPolicy p{static_cast<size_t>(cfg.lists.buffer), static_cast<size_t>(cfg.lists.chunk),
                       static_cast<size_t>(cfg.lists.streams), false, kDmaListEntryBytes};
    for (int e = 0; e < cfg.dma_engines; ++e)
      if (walk[e].active)
        request_reads(walk[e].reads, p, walk[e].list.list_addr, walk[e].list.count, walk[e].handed, list_stream(e, 0));
  }

  // Retires the list reads that have ended; entries become available in order.
  bool list_arrivals() {
    bool any = false;
    for (ListWalk& w : walk) result.list_entries += collect_reads(w.reads, &any);
    return any;
  }

  // Each walker hands its next arrived entry to its engine's queue when it has room, one a
  // cycle; the final entry carries `last`. Entries are read from HBM as they are handed.
  bool hand_list_entries() {
    bool any = false;
    if (!on_dma_edge()) return false;
    for (int e = 0; e < cfg.dma_engines; ++e) {
      ListWalk& w = walk[e];
      if (!w.active || w.handed >= w.reads.arrived || now < w.hand_at || !fifo_room(e)) continue;
      DmaJob job{w.index, now};
      job.from_list = true;
      job.entry = w.handed;
      job.not_before = w.not_before;
      uint8_t bytes[kDmaListEntryBytes];
      hbm.read_block(w.list.list_addr + w.handed * kDmaListEntryBytes, bytes, kDmaListEntryBytes);
      job.malformed = dma_list_entry_decode(bytes, &job.d, &job.malformed_why);
      if (job.malformed != DmaError::kNone) job.d = isa::unpack_dma(isa::Word{});  // what the engine loads: nothing
      job.d.engine = static_cast<uint64_t>(e);
      job.d.last = w.handed + 1 == w.list.count;
      dma[e].queue.push_back(std::move(job));
      start_dma_front(e);
      ++w.handed;
      w.hand_at = now + dma_cycle;
      w.active = w.handed < w.list.count;
      if (!w.active) dma_changed();
      any = true;
    }
    return any;
  }

  bool listing() const {
    for (const ListWalk& w : walk)
      if (!w.reads.chunks.empty()) return true;
    return false;
  }

  // When a walker that has an entry to hand may next find room (kNever: none waits).
  uint64_t next_hand() const {
    uint64_t at = kNever;
    for (int e = 0; e < cfg.dma_engines; ++e) {
      const ListWalk& w = walk[e];
      if (!w.active || w.handed >= w.reads.arrived) continue;
      uint64_t t = std::max(w.hand_at, cfg.clocks.edge(ClockDomain::kDma, now + 1));
      if (!fifo_room(e)) {
        const uint64_t room = room_at(e);
        if (room == kNever) continue;
        t = std::max(t, room);
      }
      at = std::min(at, t);
    }
    return at;
  }

  uint64_t next_event() const {
    uint64_t next = kNever;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      const auto& s = qs[q];
      if (!s.inflight.empty()) next = std::min(next, std::max(s.inflight.front().complete, now + 1));
      if (s.pc < prog.queues[q].size() && !s.blocked) {
        const uint64_t at = std::max(s.ready, s.wake);
        if (at > now) next = std::min(next, at);
      }
      // A wait on a semaphore signalled this cycle sees the signal at its next edge.
      if (s.blocked && s.recheck != kNever && s.recheck > now) next = std::min(next, s.recheck);
    }
    for (const auto& f : dma) {
      const auto& q = f.queue;
      if (!q.empty() && q.front().started && !q.front().transferring) next = std::min(next, std::max(q.front().ready_at, now + 1));
    }
    next = std::min(next, next_hand());
    if (dma_edge_due) next = std::min(next, cfg.clocks.edge(ClockDomain::kDma, now + 1));
    next = std::min(next, std::max(next_pop(), now + 1));
    if (cc_collectives) next = std::min(next, cc->next_event(now));
    if (!cc_pending.empty() && cc_pending.front().not_before > now) next = std::min(next, cc_pending.front().not_before);
    return std::min(next, transfers->next_event(now));
  }

  // A transfer or a collective is pending (an outside model may end it).
  bool waiting_outside() const {
    if (cc_collectives || fetching() || listing()) return true;
    for (const auto& f : dma)
      if (!f.queue.empty() && f.queue.front().transferring) return true;
    return false;
  }

  // A descriptor is in flight, or a finished list still owes its signals (a list left open by
  // a descriptor without `last` never finishes: it owes nothing).
  bool dma_owed() const {
    for (const ListWalk& w : walk)
      if (w.active) return true;
    for (const auto& f : dma) {
      if (!f.queue.empty()) return true;
      for (const DmaJob& j : f.finished)
        if (j.poppable != kNoEvent) return true;
    }
    return false;
  }

  bool all_done() const {
    for (int q = 0; q < isa::kNumQueue; ++q)
      if (qs[q].pc < prog.queues[q].size() || !qs[q].inflight.empty() || qs[q].fault.set) return false;
    return !dma_owed() && cc_pending.empty();
  }

  std::string deadlock_report() const {
    std::string s = fmt::format("deadlock at cycle {}: nothing is in flight that could signal", now);
    for (int q = 0; q < isa::kNumQueue; ++q) {
      const auto& st = qs[q];
      if (st.pc >= prog.queues[q].size()) continue;
      const CoreInstr& in = instr(q, st.pc);
      s += fmt::format("\n  {} waits at instruction {} ({}: {}) for semaphore {} >= {} (it is {})",
                       queue_name(static_cast<isa::Queue>(q)), st.pc, in.loc.str(),
                       opcode_info(in.opcode)->name, prog.sem_name(in.wait_sem), in.wait_value,
                       sems[in.wait_sem]);
    }
    return s;
  }

  // The streams as the fetch unit takes them at start: each 128-byte aligned and inside HBM
  // (nc_core's check; the lowest queue's error first).
  void check_streams() {
    for (int q = 0; q < isa::kNumQueue; ++q) {
      const uint64_t length = prog.queues[q].size(), base = image.stream[q];
      if (!length) continue;
      if (base % kInstrBytes)
        raise(CoreError::kFetchRefused, q, 0, fmt::format("its stream at 0x{:x} is not {}-byte aligned", base, kInstrBytes));
      else if (base > cfg.hbm_bytes || (cfg.hbm_bytes - base) / kInstrBytes < length)
        raise(CoreError::kFetchRefused, q, 0,
              fmt::format("its stream [0x{:x}, +{} instructions) leaves HBM (0x{:x} bytes)", base, length, cfg.hbm_bytes));
    }
  }

  // Completes and issues everything due at `now`; true when the run has ended (done or error).
  bool settle() {
    if (!streams_checked) {
      streams_checked = true;
      check_streams();
    }
    bool changed = true;
    while (changed && result.status == CoreStatus::kDone) {
      changed = complete_due();
      for (int k = 0; k < isa::kNumQueue && result.status == CoreStatus::kDone; ++k) {
        // Taking turns on PSUM, a tie goes to the engine that did not claim it last: that
        // engine's queue tries first.
        int q = k;
        if (psum_last_claim == kActQueue && (k == kActQueue || k == kDveQueue)) q = k == kActQueue ? kDveQueue : kActQueue;
        while (try_issue(q)) changed = true;
      }
      if (raise_drained_faults()) break;
      changed |= hand_list_entries();
      request_fetches();
      request_list_entries();
    }
    begin_due_transfers();
    return result.status != CoreStatus::kDone || all_done();
  }

  void advance_to(uint64_t to) {
    if (dma_transferring()) result.dma_busy_cycles += to - now;
    dma_edge_due = false;
    transfers->advance(now, to);
    now = to;
    if (progress && now >= next_progress) {
      progress(now, completed, prog.instructions());
      next_progress = now + progress_every;
    }
  }

  // Ends the run at `now` as a deadlock or a watchdog when `next` (the next event) says so.
  bool stalled(uint64_t next) {
    if (next == kNever) {
      result.status = CoreStatus::kDeadlock;
      result.message = deadlock_report();
      return true;
    }
    if (next > cfg.watchdog_cycles) {
      result.status = CoreStatus::kWatchdog;
      result.message = fmt::format("watchdog: no completion before cycle {} ({} of {} instructions done)",
                                   cfg.watchdog_cycles, completed, prog.instructions());
      return true;
    }
    return false;
  }

  CoreResult finish() {
    psum_ve_to_te();  // the tensor engine's PSUM holds every write from here on (tensor_engine())
    // The RTL's cycle counter runs until the cycle after its last completion lands.
    result.cycles = completed ? std::max(last_end + 1, now) : now;
    result.te_macs = te.macs();
    result.semaphores = sems;
    return std::move(result);
  }

  CoreResult run() {
    next_progress = progress_every;
    for (;;) {
      if (settle()) break;
      const uint64_t next = next_event();
      if (stalled(next)) break;
      advance_to(next);
    }
    return finish();
  }

  const CoreConfig cfg;
  const Program& prog;
  SparseMemory& hbm;
  TensorEngine te;
  VeConfig ve_cfg, se_cfg;
  VeMemory mem;
  std::array<uint32_t, kNumSemaphores> sems{};
  std::array<QueueState, isa::kNumQueue> qs{};
  std::vector<DmaEngine> dma;
  std::vector<ListWalk> walk;  // per DMA engine
  bool sp_dma_hold = false;    // sp holds a DMA instruction (hold_sp)
  uint64_t sp_tried = 0;       // the cycle it last tried
  std::vector<uint64_t> port_report_free;  // per DMA port: the next cycle it may report a list
  uint64_t pop_free = 0;                   // the next cycle a tracker entry may pop
  uint64_t last_end = 0;                   // the latest completion so far
  std::vector<int> open_list;  // per DMA engine: descriptors issued since its last `last`
  HbmDmaTransfers own_transfers;
  DmaDomainTransfers domain_transfers;  // own_transfers or the model given, in base cycles
  DmaTransferModel* transfers;          // &domain_transfers
  const uint64_t dma_cycle = dma_div(cfg);  // one DMA clock cycle in base cycles
  bool dma_edge_due = false;                // DMA-clock work waits for the next DMA edge
  LoneCollectives lone;
  CollectiveEngine* cc;         // &lone, or the engine given to the constructor
  struct CcPending {
    size_t index;
    bool collective;  // else a nop, which ends once everything before it has
    uint64_t issue;
    uint64_t not_before;  // a signalling nop (a fence): the cycle it signals at the earliest (else 0)
  };
  std::deque<CcPending> cc_pending;  // the cc queue's instructions not yet ended, in order
  int cc_collectives = 0;            // collectives among them
  uint64_t now = 0;
  size_t completed = 0;
  bool record = false;
  TensorEngineTiming te_timing;
  ImageLayout image;
  bool streams_checked = false;
  std::array<FetchState, isa::kNumQueue> fetch{};
  std::array<uint32_t, kNumSemaphores> sem_before{};  // a semaphore's value before this cycle's signals
  std::array<uint64_t, kNumSemaphores> sem_changed_at{};
  std::array<int, kNumSemaphores> sem_signalled_by{};  // the queue of a semaphore's latest signal
  uint32_t te_dirty_banks = 0;
  bool ve_psum_dirty = false;
  // PsumAccess without parallel access: the base cycle from which the scalar (0) and vector
  // (1) engine's claim on PSUM is over.
  std::array<uint64_t, 2> psum_free_from{0, 0};
  std::vector<std::deque<std::pair<uint64_t, uint64_t>>> psum_mm_windows;  // per PSUM bank
  // The last stretch [from, to] each PSUM port (read, external write) was held by an access a
  // bank held off (to < from: none).
  std::array<std::pair<uint64_t, uint64_t>, 2> psum_port_held{{{1, 0}, {1, 0}}};
  int psum_last_claim = kDveQueue;  // the queue whose claim came last (a first tie goes to act)
  uint64_t progress_every = 0, next_progress = 0;
  std::function<void(uint64_t, size_t, size_t)> progress;
  std::function<void(const InstrEffects&)> effects_cb;
  InstrEffects effects;  // of the instruction completing now
  CoreResult result;
};

CoreModel::CoreModel(const CoreConfig& cfg, const Program& program, SparseMemory* hbm, DmaTransferModel* transfers,
                     CollectiveEngine* collectives)
    : impl_(std::make_unique<Impl>(cfg, program, hbm ? *hbm : hbm_, transfers, collectives)), external_hbm_(hbm) {}
CoreModel::~CoreModel() = default;

void CoreModel::on_effects(std::function<void(const InstrEffects&)> f) {
  if (impl_->cfg.timing_only) throw Error("a timing-only core computes no effects to record");
  impl_->effects_cb = std::move(f);
}

void CoreModel::on_progress(uint64_t every, std::function<void(uint64_t, size_t, size_t)> f) {
  impl_->progress_every = every;
  impl_->progress = std::move(f);
}

Sbuf& CoreModel::sbuf() { return impl_->mem.sbuf; }
const TensorEngine& CoreModel::tensor_engine() const { return impl_->te; }

CoreResult CoreModel::run() {
  impl_->record = record_;
  return impl_->run();
}

bool CoreModel::settle() {
  impl_->record = record_;
  return impl_->settle();
}
uint64_t CoreModel::now() const { return impl_->now; }
uint64_t CoreModel::next_event() const { return impl_->next_event(); }
bool CoreModel::waiting_outside() const { return impl_->waiting_outside(); }
void CoreModel::advance_to(uint64_t cycle) { impl_->advance_to(cycle); }
bool CoreModel::stalled(uint64_t next) { return impl_->stalled(next); }
CoreResult CoreModel::finish() { return impl_->finish(); }
std::string CoreModel::waiting_report() const { return impl_->deadlock_report(); }

std::vector<uint8_t> CoreModel::tensor_bytes(const TensorDecl& t) {
  std::vector<uint8_t> out;
  if (t.hbm) {
    out.resize(t.bytes());
    hbm().read_block(t.addr, out.data(), out.size());
    return out;
  }
  const uint64_t per = t.bytes();
  out.resize(per * static_cast<uint64_t>(t.shape[0]));
  for (int64_t p = 0; p < t.shape[0]; ++p)
    sbuf().read_bytes(t.partition + static_cast<int>(p), static_cast<uint32_t>(t.addr), out.data() + p * per, per);
  return out;
}

void CoreModel::write_tensor(const TensorDecl& t, const std::vector<uint8_t>& bytes) {
  if (t.hbm) return hbm().write_block(t.addr, bytes.data(), bytes.size());
  const uint64_t per = t.bytes();
  for (int64_t p = 0; p < t.shape[0]; ++p)
    sbuf().write_bytes(t.partition + static_cast<int>(p), static_cast<uint32_t>(t.addr), bytes.data() + p * per, per);
}

const ImageLayout& CoreModel::image() const { return impl_->image; }

void CoreModel::load_tensors() {
  // The lists' entries are what the walkers read, so they are loaded even when timing only
  // (a list a program writes at run time is data: timing only reads it as zeros).
  write_lists(impl_->prog, impl_->image, [this](uint64_t addr, const std::array<uint8_t, kDmaListEntryBytes>& e) {
    hbm().write_block(addr, e.data(), e.size());
  });
  if (impl_->cfg.timing_only) return;
  // A built instruction whose fields do not fit their bits has no word: its place holds zeros
  // (the core refuses it at issue as an illegal word all the same).
  write_image(impl_->prog, impl_->image, [this](uint64_t addr, const isa::Word& w) {
    const auto bytes = word_bytes(w);
    hbm().write_block(addr, bytes.data(), bytes.size());
  });
  for (const auto& t : impl_->prog.tensors)
    if (t.init != TensorInit::kNone) write_tensor(t, tensor_init_bytes(t));
}

}  // namespace ncore::model
