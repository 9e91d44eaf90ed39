#include "tb/core/core_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <iterator>
#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <verilated.h>

#include "core_models.h"
#include "model/core/collective_engine.h"
#include "model/core/engine_timing.h"
#include "model/core/core_isa.h"
#include "model/dma/dma.h"
#include "model/common/error.h"
#include "tb/hbm/hbm_fabric.h"
#include "tb/common/bench.h"
#include "tb/common/wide.h"
#include "tb/core/lockstep.h"

namespace ncore::tb {
namespace {

using model::CoreError;
using model::CoreStatus;
using model::HbmData;

// 16 x 256 MiB: the golden core's 4 GiB window (the golden core's DMA timing models the same)
const int kHbmChannels = model::core_hbm_config().channels;
constexpr int kDmaPorts = 4;       // nc_core's DmaPorts: HBM ports of the DMA
constexpr int kFetchPort = kDmaPorts;  // nc_core's FetchPort: the fetch unit's, after the DMA's
constexpr uint64_t kLine = 32;     // SBUF debug-port and HBM burst bytes
constexpr int kDmaDomain = static_cast<int>(model::ClockDomain::kDma);

// The domain whose clock a queue's sequencer runs on (nc_core's queue_domain).
int queue_domain_index(int q) { return static_cast<int>(model::queue_domain(q)); }

std::string rtl_error_detail(CoreError e, int detail, const model::Program& p) {
  switch (e) {
    case CoreError::kDecode: return std::string(model::decode_error_name(static_cast<model::DecodeError>(detail)));
    case CoreError::kTensorRefused: return std::string(model::te_error_name(static_cast<model::TeError>(detail)));
    case CoreError::kVectorRefused:
    case CoreError::kScalarRefused: return std::string(model::ve_error_name(static_cast<model::VeError>(detail)));
    case CoreError::kDmaRefused: return std::string(model::dma_error_name(static_cast<model::DmaError>(detail)));
    case CoreError::kSemOverflow: return fmt::format("semaphore {} passes {}", p.sem_name(detail), model::kMaxSemValue);
    case CoreError::kFetchRefused: return detail == 0 ? "its stream is not 128-byte aligned" : "its stream leaves HBM";
    default: return "";
  }
}

// Bit i of a Verilated packed vector (an integer up to 64 bits, a VlWide above).
template <class T>
bool bit_of(const T& v, int i) {
  if constexpr (std::is_integral_v<T>) return v >> i & 1;
  else return v[static_cast<size_t>(i / 32)] >> (i % 32) & 1;
}

// The harness's own HBM behind the ports: kHbmChannels pseudo-channels, each with its timing
// checker (tb/hbm/hbm_fabric.h).
class FabricPorts : public CoreMemoryPorts {
 public:
  explicit FabricPorts(const HbmControllerFactory& controllers) : fabric_(config(), kCoreHbmPorts, controllers) {}
  HbmFabric& fabric() { return fabric_; }
  uint64_t capacity() const override { return fabric_.capacity(); }
  void preload(uint64_t addr, const HbmData& data) override { fabric_.preload(addr, data); }
  HbmData peek(uint64_t addr) const override { return fabric_.peek(addr); }
  uint32_t grant(bool write, uint32_t valid, const uint64_t* addrs) override {
    return fabric_.grant(write, valid, addrs);
  }
  void offer(int port, const model::HbmRequest& request) override { fabric_.offer(port, request); }
  std::optional<model::HbmReadResponse> response(int port) const override { return fabric_.response(port); }
  void pop(int port) override { fabric_.pop(port); }
  void step() override { fabric_.step(); }
  bool idle() const override { return fabric_.idle(); }
  bool writes_queued() const override { return fabric_.writes_queued(); }

 private:
  static model::HbmConfig config() { return model::core_hbm_config(); }
  HbmFabric fabric_;
};

// The RTL core and everything around it. run() is run_core_rtl's whole run; the RtlCore
// interface is the same core stepped from outside (host given), with no co-simulation.
template <class V>
class CoreBench : public RtlCore {
 public:
  CoreBench(const model::Program& p, const CoreSimOptions& o, int size, const RtlCoreHost& host = {})
      : prog_(p), opt_(o), size_(size), bench_(opt_, fmt::format("core_{}", size), "core"),
        top_(&bench_.top()), own_hbm_(o.hbm_controllers), hbm_(host.memory ? host.memory : &own_hbm_),
        collectives_(host.collectives) {
    if (o.xprop_seed != 0) throw Error("RTL core: there is no X-propagation build of the core");
    if (host.memory && o.cosim) throw Error("RTL core: co-simulation runs only on the harness's own HBM");
    reproduce_ = opt_.reproduce.empty() ? fmt::format("ncore run {} --engine cosim --size {}", prog_.name, size_)
                                        : opt_.reproduce;
  }

  // The golden core beside this RTL core: the same size and image layout.
  model::CoreConfig golden_config() const {
    model::CoreConfig c = core_config_for_size(size_);
    c.image_top = opt_.image_top;
    c.image_window = opt_.image_window;
    c.stream_bases = opt_.stream_bases;
    c.costs = opt_.costs;
    c.clocks = opt_.clocks;
    return c;
  }

  CoreSimResult run() {
    const WallClock wall;
    V& t = *top_;
    if (opt_.cosim)  // the golden core runs first: the RTL is checked against it as it goes
      lockstep_ = std::make_unique<Lockstep>(prog_, golden_config(), opt_.raw_words, reproduce_);
    begin(32);
    CoreSimResult r;
    const uint64_t total = prog_.instructions();
    uint64_t cycle = 0;
    for (; !t.finished_o && cycle < opt_.max_cycles; ++cycle) {
      if (lockstep_ && lockstep_->failed()) break;  // the first wrong instruction stops the run
      if (opt_.upset_sbuf && opt_.upset_sbuf->first == cycle) upset_sbuf_bit(opt_.upset_sbuf->second);
      step_cycle(cycle, true);
      top_->dbg_sbuf_wr_valid_i = 0;
      if (opt_.progress && opt_.progress_every && cycle % opt_.progress_every == 0) {
        uint64_t issued = 0;
        for (int q = 0; q < isa::kNumQueue; ++q) issued += t.cnt_issued_o[q];
        opt_.progress(cycle, issued, total);
      }
    }
    // Posted HBM writes still queued in the controllers land before anything is read back.
    for (uint64_t drain = 0; !hbm_->idle() && drain < 1'000'000; ++drain) step_cycle(cycle + drain, true);
    const uint64_t run_end = bench_.cycle();
    collect(r);
    if (opt_.inject_sbuf_flip != UINT64_MAX) flip_sbuf_bit(opt_.inject_sbuf_flip);
    if (lockstep_ && lockstep_->failed()) {
      r.message = fmt::format("the lockstep checker stopped the run at cycle {}", lockstep_->failure_cycle());
    } else if (!t.finished_o) {
      r.status = CoreStatus::kWatchdog;
      r.message = fmt::format("the harness stopped the run after {} cycles (--max-cycles); {}", cycle, positions());
    }
    if (opt_.cosim) compare(r, run_end);
    if (const std::string timing = own_hbm_.fabric().finish(); !timing.empty()) fail(r, run_end, timing);
    for (const auto& d : prog_.tensors)
      if (d.output) r.outputs.emplace_back(d.name, tensor_bytes(d));
    r.wall_seconds = wall.seconds();
    return r;
  }

  // Reset, the program, its semaphores and tensors, start: run cycle 0 follows.
  void begin(int hbm_bytes_log2) {
    V& t = *top_;
    t.sem_wr_valid_i = 0;
    t.start_i = 0;
    t.dbg_sbuf_wr_valid_i = 0;
    t.dbg_psum_rd_valid_i = 0;
    static_assert(sizeof(t.hbm_rd_addr_o) == 8 * kCoreHbmPorts, "kCoreHbmPorts must match nc_core's HbmPorts");
    t.cc_req_ready_i = 1;  // the collective engine takes each collective at once
    t.cc_done_valid_i = 0;
    t.hbm_rsp_valid_i = 0;
    t.hbm_rd_ready_i = 0;
    t.hbm_wr_ready_i = 0;
    t.watchdog_cycles_i = static_cast<uint32_t>(std::min<uint64_t>(opt_.watchdog, 0xFFFFFFFFu));
    t.hbm_bytes_log2_i = static_cast<uint8_t>(hbm_bytes_log2);
    t.ve_min_cycles_i[0] = static_cast<uint16_t>(opt_.costs.vector.min_cycles);  // nc_core's Dve
    t.ve_min_cycles_i[1] = static_cast<uint16_t>(opt_.costs.scalar.min_cycles);  // and Act
    t.ve_static_cycles_i[0] = static_cast<uint16_t>(opt_.costs.vector.static_cycles);
    t.ve_static_cycles_i[1] = static_cast<uint16_t>(opt_.costs.scalar.static_cycles);
    t.ve_perf_mode_i = opt_.costs.vector.performance_mode;
    t.ve_psum_serial_i = !opt_.costs.psum.vector_scalar_parallel;
    // What nc_core cannot hold is refused before anything runs (the command line refuses it
    // first, naming its option).
    const model::CoreTiming timing{"", opt_.clocks, opt_.costs};
    timing.validate();
    if (const std::string why = model::rtl_timing_refusal(timing); !why.empty()) throw Error("RTL core: " + why);
    set_dma_costs();
    t.te_ls_columns_i = static_cast<uint8_t>(opt_.costs.tensor.ls_columns_per_cycle);
    set_throttle();
    for (int d = 0; d < model::kClockDomains; ++d)  // 1 .. CoreClocks::kMaxDivide, under nc_core's 127
      t.clk_divide_i[d] = static_cast<uint8_t>(opt_.clocks.divide[static_cast<size_t>(d)]);
    bench_.reset();
    for (int i = 0; !t.ready_o; ++i) {  // the PSUM clears itself after reset
      if (i > 1'000'000) throw Error("the RTL core never became ready after reset");
      tick();
    }
    load();
    t.start_i = 1;
    tick();
    t.start_i = 0;
    for (int q = 0; q < isa::kNumQueue; ++q) issue_cycle_[q].assign(prog_.queues[q].size(), 0);
  }

  // The DMA engines' fixed costs onto nc_core's ports (model::DmaCosts): a descriptor's least
  // time per row and per byte in dma-domain cycles (Q8.24), and descriptor generation and
  // semaphore-to-start in base cycles, rounded as the golden core rounds them.
  void set_dma_costs() {
    V& t = *top_;
    const model::DmaCosts& c = opt_.costs.dma;
    const double dma_ghz = opt_.clocks.ghz(model::ClockDomain::kDma);
    const auto q24 = [](double cycles) { return static_cast<uint32_t>(std::llround(cycles * 16777216.0)); };
    const auto per_byte = [&](double share) {
      return c.engine_bytes_per_ns > 0 ? q24(dma_ghz / (c.engine_bytes_per_ns * share)) : 0u;
    };
    const auto base_cycles = [&](double ns) {
      return ns > 0 ? static_cast<uint32_t>(std::min<uint64_t>(opt_.clocks.cycles_in(ns), UINT32_MAX)) : 0u;
    };
    t.dma_row_cost_i = q24(c.element_ns * dma_ghz);
    t.dma_byte_cost_i = static_cast<uint64_t>(per_byte(c.transpose_share)) << 32 | per_byte(1.0);
    t.dma_descriptor_cycles_i = base_cycles(c.descriptor_ns);
    t.dma_sem_to_start_cycles_i = base_cycles(c.semaphore_to_start_ns);
  }

  // The tensor engine's throttling onto nc_core's ports, in tensor cycles as the golden core
  // counts them (model::te_costs): the share at the ramp's start and gained a cycle (Q0.32),
  // the window, and the streaming cycles a window under which it throttles again.
  void set_throttle() {
    V& t = *top_;
    const model::TeCosts c = model::te_costs(opt_.costs, opt_.clocks);
    t.te_throttle_en_i = c.throttle;
    if (!c.throttle) {
      t.te_throttle_window_i = 1;
      return;
    }
    const double q32 = 4294967296.0;
    t.te_throttle_start_i = static_cast<uint32_t>(std::min(std::llround(c.start_share * q32), 0xFFFFFFFFll));
    t.te_throttle_step_i = c.ramp_cycles ? static_cast<uint32_t>(std::llround((1.0 - c.start_share) / c.ramp_cycles * q32))
                                         : 0xFFFFFFFFu;
    t.te_throttle_window_i = static_cast<uint16_t>(c.window_cycles);
    // used < low_use x window, in whole cycles
    t.te_throttle_low_i = static_cast<uint32_t>(std::ceil(c.low_use * static_cast<double>(c.window_cycles) - 1e-9));
  }

  // ---- RtlCore: stepped from outside ------------------------------------------------------
  void step(bool collectives_may_end) override {
    if (top_->finished_o) return;
    step_cycle(run_cycle_, collectives_may_end);
  }
  uint64_t cycle() const override { return run_cycle_; }
  bool finished() const override { return top_->finished_o; }
  bool parked() const override {
    return collectives_ && !cc_tags_.empty() && quiet_cycles_ >= 16 && !collectives_->done(run_cycle_);
  }
  std::string waiting() const override {
    const V& t = *top_;
    std::string s = "RTL core, " + positions();
    for (int q = 0; q < isa::kNumQueue; ++q) {
      if (!(t.waiting_o >> q & 1) || t.pc_o[q] >= prog_.queues[q].size()) continue;
      const auto& in = prog_.queues[q][t.pc_o[q]];
      s += fmt::format("\n  {}; waits for semaphore {} >= {} (it is {})", describe_instruction(prog_, q, t.pc_o[q]),
                       prog_.sem_name(in.wait_sem), in.wait_value, t.sems_o[in.wait_sem]);
    }
    if (!cc_tags_.empty()) s += fmt::format("\n  its cc queue waits for {} collective(s) to end", cc_tags_.size());
    return s;
  }
  CoreSimResult result() override {
    CoreSimResult r;
    collect(r);
    if (!top_->finished_o) {
      r.status = CoreStatus::kWatchdog;
      r.message = fmt::format("stopped after {} cycles; {}", run_cycle_, positions());
    }
    for (const auto& d : prog_.tensors)
      if (d.output) r.outputs.emplace_back(d.name, tensor_bytes(d));
    return r;
  }
  const std::vector<model::InstrTiming>& timeline() const override { return timeline_; }
  const std::vector<model::FetchStall>& fetch_stalls() const override { return fetch_stalls_.spans; }
  const std::vector<model::SemaphoreWait>& sem_waits() const override { return sem_waits_.spans; }

 private:
  // ---- clocking ----------------------------------------------------------------------------
  // One clock cycle with no HBM traffic (program load, debug-port reads).
  void tick() { bench_.clock(); }

  void inject_fault(uint64_t cycle) {
    V& t = *top_;
    t.dbg_psum_rd_valid_i = 0;
    if (cycle != 8) return;
    if (opt_.fault == CoreFault::kFetchResponseWithoutRead) {  // a stream nothing was requested on
      t.hbm_rsp_valid_i |= 1u << kFetchPort;
      t.hbm_rsp_id_i[kFetchPort] = 0xFF;
    }
    if (opt_.fault == CoreFault::kPsumDebugReadWhileRunning) t.dbg_psum_rd_valid_i = 1;
    if (opt_.fault == CoreFault::kHbmResponseWithoutRead) {
      t.hbm_rsp_valid_i |= 1u;
      t.hbm_rsp_id_i[0] = 0;
    }
  }

  // One base-clock cycle (run cycle `cycle`) with the HBM behind the DMA ports. The HBM and the
  // collective engine sit in the dma domain: they act in the base cycles that end with its
  // edge, and their inputs to the core are idle in the others.
  void step_cycle(uint64_t cycle, bool collectives_may_end) {
    V& t = *top_;
    const unsigned edges = t.clk_en_o;  // the domains whose clocks rise at the end of this cycle
    if (!(edges >> kDmaDomain & 1)) {
      t.hbm_rd_ready_i = 0;
      t.hbm_wr_ready_i = 0;
      t.hbm_rsp_valid_i = 0;
      t.cc_done_valid_i = 0;
      inject_fault(cycle);
      bench_.fall();
      if (lockstep_ && t.running_o) observe(bench_.cycle(), 0);
      if (collectives_ || opt_.timeline) record(cycle, edges, 0, 0);
      bench_.rise();
      run_cycle_ = cycle + 1;
      return;  // parked() counts the dma domain's quiet cycles
    }
    std::array<uint64_t, kCoreHbmPorts> rd_addr{}, wr_addr{};
    for (int p = 0; p < kCoreHbmPorts; ++p) {
      rd_addr[p] = t.hbm_rd_addr_o[p];
      wr_addr[p] = t.hbm_wr_addr_o[p];
    }
    const uint32_t rd_ready = hbm_->grant(false, t.hbm_rd_valid_o, rd_addr.data());
    const uint32_t wr_ready = hbm_->grant(true, t.hbm_wr_valid_o, wr_addr.data());
    t.hbm_rd_ready_i = rd_ready;
    t.hbm_wr_ready_i = wr_ready;
    uint32_t rsp_valid = 0;
    for (int p = 0; p < kCoreHbmPorts; ++p) {
      const auto rsp = hbm_->response(p);
      if (!rsp) continue;
      rsp_valid |= 1u << p;
      t.hbm_rsp_id_i[p] = rsp->id;
      for (int w = 0; w < 4; ++w) {
        t.hbm_rsp_data_i[8 * p + 2 * w] = static_cast<uint32_t>(rsp->data[w]);
        t.hbm_rsp_data_i[8 * p + 2 * w + 1] = static_cast<uint32_t>(rsp->data[w] >> 32);
      }
    }
    t.hbm_rsp_valid_i = rsp_valid;
    const bool cc_done = collectives_ ? outside_collective_ends(cycle, collectives_may_end) : collective_ends(cycle);
    inject_fault(cycle);
    bench_.fall();
    if (lockstep_ && t.running_o) observe(bench_.cycle(), wr_ready);
    if (collectives_ || opt_.timeline) record(cycle, edges, rd_ready, wr_ready);
    if (t.cc_req_valid_o) collectives_ ? issue_outside(cycle) : take_collective(cycle);
    if (cc_done) collectives_ ? collectives_->retire() : cc_jobs_.pop_front();
    const bool quiet = !t.hbm_rd_valid_o && !t.hbm_wr_valid_o && !t.cc_req_valid_o && !rsp_valid && hbm_->idle();
    for (int p = 0; p < kCoreHbmPorts; ++p) {
      if (rd_ready >> p & 1) {
        model::HbmRequest q;
        q.addr = t.hbm_rd_addr_o[p];
        q.id = t.hbm_rd_id_o[p];
        hbm_->offer(p, q);
      }
      if (wr_ready >> p & 1) {
        model::HbmRequest q;
        q.write = true;
        q.addr = t.hbm_wr_addr_o[p];
        q.id = t.hbm_wr_id_o[p];
        for (int w = 0; w < 4; ++w)
          q.data[w] = (static_cast<uint64_t>(t.hbm_wr_data_o[8 * p + 2 * w + 1]) << 32) |
                      t.hbm_wr_data_o[8 * p + 2 * w];
        hbm_->offer(p, q);
      }
      if (rsp_valid >> p & 1) hbm_->pop(p);
    }
    hbm_->step();
    bench_.rise();
    run_cycle_ = cycle + 1;
    if (collectives_) {  // parked(): the same counters and nothing moving, cycle after cycle
      // (the cc queue counts as busy while its collectives are out: that is what parks it)
      const int cc = static_cast<int>(isa::Queue::kCc);
      uint64_t activity = t.cnt_te_stream_o + t.cnt_dma_bursts_o;
      for (int q = 0; q < isa::kNumQueue; ++q) activity += t.cnt_issued_o[q] + (q == cc ? 0 : t.cnt_busy_o[q]);
      for (int q = 0; q < isa::kNumQueue; ++q)
        if (q != cc && t.pc_o[q] < prog_.queues[q].size() && !(t.waiting_o >> q & 1))
          activity = ~activity;  // a queue that neither ended nor waits is never quiet
      quiet_cycles_ = quiet && activity == last_activity_ ? quiet_cycles_ + 1 : 0;
      last_activity_ = activity;
    }
  }

  // ---- the collective engine outside (a system run's): issue, and the ends in issue order ----
  void issue_outside(uint64_t cycle) {
    const isa::CcInstruction c = requested_collective();
    const int cc = static_cast<int>(isa::Queue::kCc);
    cc_tags_.push_back(c.tag);
    collectives_->issue(pc_of_tag(cc, c.tag), c, cycle);
  }
  bool outside_collective_ends(uint64_t cycle, bool may_end) {
    V& t = *top_;
    t.cc_done_valid_i = 0;
    if (!may_end || cc_tags_.empty() || !collectives_->done(cycle)) return false;
    std::string why;
    t.cc_done_valid_i = 1;
    t.cc_done_tag_i = cc_tags_.front();
    t.cc_done_error_i = static_cast<uint8_t>(collectives_->error(&why));
    cc_tags_.pop_front();
    return true;
  }

  // The timeline of a stepped core: an instruction issues when its queue's pc passes it and
  // ends when it commits (a DMA copy: when its transfer completes). A DMA instruction starts
  // when its data begins to move, as on the golden core: with its engine's first HBM request
  // (a read, or for SBUF to HBM a write) once the instruction before it on the engine has made
  // all its bursts.
  void record(uint64_t cycle, unsigned edges, uint32_t rd_ready, uint32_t wr_ready) {
    const V& t = *top_;
    const int sp = static_cast<int>(isa::Queue::kSp);
    for (int q = 0; q < isa::kNumQueue; ++q)
      for (uint64_t pc = last_pc_[q]; pc < t.pc_o[q] && pc < issue_cycle_[q].size(); ++pc) {
        issue_cycle_[q][pc] = cycle;
        const model::CoreInstr& in = prog_.queues[q][pc];
        if (q == sp && in.opcode == isa::Opcode::kDmaCopy && in.dma.engine < kDmaEngines)
          dma_moving_[in.dma.engine].push_back({pc, model::dma_burst_count(in.dma)});
        else if (q == sp && in.opcode == isa::Opcode::kDmaList && in.list.engine < kDmaEngines)
          dma_moving_[in.list.engine].push_back({pc, 0});  // its entries' bursts: until it commits
      }
    for (int q = 0; q < isa::kNumQueue; ++q) last_pc_[q] = t.pc_o[q];
    for (int p = 0; p < kDmaPorts; ++p) {  // nc_dma's ids: {16'd0, 8'(engine), 8'(tag)}
      if (rd_ready >> p & 1) data_moves(static_cast<int>((t.hbm_rd_id_o[p] >> 8) & 0xFF) * kDmaPorts + p, cycle + 1);
      if (wr_ready >> p & 1) data_moves(static_cast<int>((t.hbm_wr_id_o[p] >> 8) & 0xFF) * kDmaPorts + p, cycle + 1);
    }
    // A fetch stall is a stretch of cycles in which the queue's stall counter counts (it
    // counts on the queue's own clock: judged in the cycles after its edges); a semaphore wait
    // one in which the queue's waiting bit is set.
    for (int q = 0; q < isa::kNumQueue; ++q) {
      if (!(last_edges_ >> queue_domain_index(q) & 1)) continue;
      const auto div = static_cast<uint64_t>(queue_divide(q));
      const bool stalled = t.cnt_fetch_stall_o[q] != last_fetch_stall_[q];
      const bool waited = t.cnt_wait_o[q] != last_wait_[q];
      last_fetch_stall_[q] = t.cnt_fetch_stall_o[q];
      last_wait_[q] = t.cnt_wait_o[q];
      fetch_stalls_.see(q, stalled, t.pc_o[q], cycle, div);
      sem_waits_.see(q, waited, t.pc_o[q], cycle, div);
    }
    last_edges_ = edges;
    for (size_t i = 0; i < std::size(t.commit_valid_o); ++i) {
      if (!t.commit_valid_o[i]) continue;
      const int q = t.commit_queue_o[i];
      const uint64_t pc = t.commit_pc_o[i];
      // A nop commits as it issues, at the edge ending this cycle: before its queue's pc has
      // passed it (an issue is stamped with the cycle after its edge, as record() sees the pc).
      const uint64_t issue = pc < issue_cycle_[q].size() && pc < t.pc_o[q] ? issue_cycle_[q][pc] : cycle + 1;
      uint64_t start = issue;
      if (q == sp) {
        if (const auto it = dma_started_.find(pc); it != dma_started_.end()) start = it->second, dma_started_.erase(it);
        for (auto& moving : dma_moving_)  // a list ends when it commits
          if (!moving.empty() && moving.front().pc == pc) moving.pop_front();
      }
      timeline_.push_back({q, static_cast<size_t>(pc), issue, start, cycle});
    }
  }

  // ---- the collective engine: the core alone, so every collective copies src to dst --------
  // (model::LoneCollectives, the golden core's, with the same checks and the same timing)
  struct CcJob {
    isa::CcInstruction c;
    uint64_t end = 0;
    isa::CcError error = isa::CcError::kNone;
  };

  // Base cycles in a dma-domain cycle (the golden core's LoneCollectives count the same), and in
  // a cycle of queue q's clock.
  int dma_divide() const { return opt_.clocks.div(model::ClockDomain::kDma); }
  uint64_t queue_divide(int q) const { return static_cast<uint64_t>(opt_.clocks.div(model::queue_domain(q))); }

  // The collective on the request port.
  isa::CcInstruction requested_collective() const {
    const V& t = *top_;
    std::array<uint64_t, 3> bits{};
    for (int i = 0; i < 5; ++i) bits[static_cast<size_t>(i / 2)] |= static_cast<uint64_t>(t.cc_req_o[i]) << (32 * (i % 2));
    isa::Word w{};  // the payload as it sits in an instruction word, from bit 64
    for (int b = 0; b < isa::kFormats[static_cast<int>(isa::Format::kCc)].bits; b += 64) {
      const int n = std::min(64, isa::kFormats[static_cast<int>(isa::Format::kCc)].bits - b);
      isa::set_bits(w, 64 + b, n, isa::get_bits(bits, b, n));
    }
    isa::CcInstruction c;
    static_cast<isa::CcFields&>(c) = isa::unpack_cc(w);
    c.tag = static_cast<uint8_t>(isa::get_bits(bits, isa::kCcInstrBits - 16, 8));
    c.opcode = static_cast<isa::Opcode>(isa::get_bits(bits, isa::kCcInstrBits - 8, 8));
    return c;
  }

  void take_collective(uint64_t cycle) {
    CcJob j;
    j.c = requested_collective();
    std::string why;
    const model::CoreConfig cfg = core_config_for_size(size_);
    j.error = model::cc_check(j.c, 1, 32, hbm_->capacity(), &why);
    j.end = model::lone_collective_end(j.c, j.error != isa::CcError::kNone, cycle,
                                       cc_jobs_.empty() ? 0 : cc_jobs_.back().end,
                                       cfg.cc_latency_cycles * static_cast<uint64_t>(dma_divide()),
                                       cfg.hbm_bytes_per_cycle / dma_divide());
    cc_jobs_.push_back(j);
  }

  // Drives the done port for this cycle; true when the oldest collective ends now. Its copy
  // waits until no posted write is left in the controllers (it reads HBM by the back door).
  bool collective_ends(uint64_t cycle) {
    V& t = *top_;
    t.cc_done_valid_i = 0;
    if (cc_jobs_.empty() || cc_jobs_.front().end > cycle || writes_queued()) return false;
    const CcJob& j = cc_jobs_.front();
    t.cc_done_valid_i = 1;
    t.cc_done_tag_i = j.c.tag;
    t.cc_done_error_i = static_cast<uint8_t>(j.error);
    if (j.error != isa::CcError::kNone) return true;
    const int cc = static_cast<int>(isa::Queue::kCc);
    for (uint64_t b = 0; b < j.c.bytes; b += HbmFabric::kBurst) {
      const model::HbmData d = hbm_->peek(j.c.src + b);
      hbm_->preload(j.c.dst + b, d);
      if (lockstep_)
        lockstep_->write(cc, pc_of_tag(cc, j.c.tag), model::CoreMemory::kHbm, j.c.dst + b, model::hbm_bytes(d).data(),
                         kLine);
    }
    return true;
  }

  bool writes_queued() const { return hbm_->writes_queued(); }

  // ---- lockstep ----------------------------------------------------------------------------
  // The index of queue q's instruction with `tag` (its index's low 8 bits): the latest issued
  // one with that tag (an engine holds far fewer than 256).
  uint64_t pc_of_tag(int q, uint8_t tag) const {
    const uint64_t next = top_->pc_o[q];
    if (next == 0) return tag;
    const uint64_t last = next - 1;
    return last - ((last - tag) & 0xFF);
  }

  // This cycle's writes, commits and semaphore signals, to the lockstep checker (nc_core's
  // observation ports, read between the edges).
  void observe(uint64_t cycle, uint32_t wr_ready) {
    V& t = *top_;
    Lockstep& ls = *lockstep_;
    const int pe = static_cast<int>(isa::Queue::kPe);
    const uint64_t bank_bytes = static_cast<uint64_t>(psum_elems_) * 4;
    const uint64_t psum_bytes = bank_bytes * static_cast<uint64_t>(psum_banks_);
    uint8_t bytes[kLine];
    if (t.te_write_any_o) {
      for (int p = 0; p < size_; ++p) {
        if (!t.te_write_valid_o[p]) continue;
        const uint32_t word = t.te_write_data_o[p];
        for (int b = 0; b < 4; ++b) bytes[b] = static_cast<uint8_t>(word >> (8 * b));
        const int half = t.te_write_half_o[p];  // 0 word, 1 low half, 2 high half
        const int first = half == 2 ? 2 : 0;
        ls.write(pe, pc_of_tag(pe, t.te_write_tag_o[p]), model::CoreMemory::kPsum,
                 static_cast<uint64_t>(p) * psum_bytes + t.te_write_bank_o[p] * bank_bytes +
                     static_cast<uint64_t>(t.te_write_elem_o[p]) * 4 + static_cast<uint64_t>(first),
                 bytes + first, half ? 2 : 4);
      }
    }
    for (int c = 0; c < 2; ++c) {  // the vector engine (dve) and the scalar engine (act)
      if (!t.ve_write_valid_o[c]) continue;
      const int q = static_cast<int>(c == 0 ? isa::Queue::kDve : isa::Queue::kAct);
      const uint64_t pc = pc_of_tag(q, t.ve_write_tag_o[c]);
      const bool psum = t.ve_write_psum_o[c];
      const int n = t.ve_write_bytes_o[c];
      for (int l = 0; l < size_; ++l) {
        if (!bit_of(t.ve_write_mask_o[c], l)) continue;
        const uint32_t v = t.ve_write_data_o[c][static_cast<size_t>(l)];
        for (int b = 0; b < n; ++b) bytes[b] = static_cast<uint8_t>(v >> (8 * b));
        ls.write(q, pc, psum ? model::CoreMemory::kPsum : model::CoreMemory::kSbuf,
                 static_cast<uint64_t>(l) * (psum ? psum_bytes : model::kSbufPartitionStride) + t.ve_write_addr_o[c],
                 bytes, static_cast<size_t>(n));
      }
    }
    for (int g = 0; g < kDmaPorts; ++g) {
      if (t.dma_write_valid_o >> g & 1) {
        ls.dma_write(t.dma_write_engine_o[g], model::CoreMemory::kSbuf, t.dma_write_addr_o[g],
                     model::hbm_bytes(from_wide(t.dma_write_data_o[g])).data(), kLine, cycle);
      }
      if (wr_ready >> g & 1) {  // the HBM write the port hands over this cycle
        for (int b = 0; b < static_cast<int>(kLine); ++b)
          bytes[b] = static_cast<uint8_t>(t.hbm_wr_data_o[8 * g + b / 4] >> (8 * (b % 4)));
        // nc_dma's write id: {16'd0, 8'(engine), 8'd0}, the engine within the port
        const int engine = static_cast<int>((t.hbm_wr_id_o[g] >> 8) & 0xFF) * kDmaPorts + g;
        ls.dma_write(engine, model::CoreMemory::kHbm, t.hbm_wr_addr_o[g], bytes, kLine, cycle);
      }
    }
    for (size_t i = 0; i < std::size(t.commit_valid_o); ++i)
      if (t.commit_valid_o[i]) ls.commit(t.commit_queue_o[i], t.commit_pc_o[i], cycle);
    for (size_t i = 0; i < std::size(t.sem_effect_valid_o); ++i)
      if (t.sem_effect_valid_o[i])
        ls.signal(t.sem_effect_queue_o[i], t.sem_effect_pc_o[i], t.sem_effect_op_o[i], t.sem_effect_sem_o[i],
                  t.sem_effect_value_o[i], cycle);
  }

  // Flips bit 0 of an SBUF byte through the debug port, with the coming clock edge.
  void upset_sbuf_bit(uint64_t flat) {
    auto line = sbuf_line(flat / kLine * kLine);
    line[flat % kLine] ^= 1;
    for (int k = 0; k < 8; ++k) {
      uint32_t w = 0;
      for (int b = 0; b < 4; ++b) w |= static_cast<uint32_t>(line[4 * k + b]) << (8 * b);
      top_->dbg_sbuf_wr_data_i[k] = w;
    }
    top_->dbg_sbuf_wr_valid_i = 1;
  }

  // ---- program and tensors -----------------------------------------------------------------
  // The program image into HBM (the fetch unit reads it from there), the queues' streams and
  // lengths onto the start port, the semaphores, the tensors.
  void load() {
    V& t = *top_;
    const model::ImageLayout image =
        model::layout_image(prog_, hbm_->capacity(), opt_.image_top, opt_.image_window);
    t.image_base_i = image.base;
    t.image_bytes_i = image.bytes;
    for (int q = 0; q < isa::kNumQueue; ++q) {
      t.queue_base_i[q] = opt_.stream_bases ? (*opt_.stream_bases)[q] : image.stream[q];
      t.queue_length_i[q] = static_cast<uint32_t>(prog_.queues[q].size());
      if (prog_.queues[q].size() > UINT32_MAX)
        throw Error(fmt::format("queue {} holds {} instructions; the core counts them in 32 bits",
                                isa::kQueueNames[q], prog_.queues[q].size()));
      for (size_t i = 0; i < prog_.queues[q].size(); ++i) {
        isa::Word w;
        try {
          const auto raw = opt_.raw_words.find({q, i});
          w = raw != opt_.raw_words.end() ? raw->second : model::image_word(prog_, image, q, i);
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}", describe_instruction(prog_, q, i), e.what()));
        }
        for (uint64_t b = 0; b < model::kInstrBytes / kLine; ++b) {  // four bursts a word
          HbmData burst;
          for (size_t k = 0; k < burst.size(); ++k) burst[k] = w[b * burst.size() + k];
          hbm_->preload(image.instr_addr(q, i) + b * kLine, burst);
        }
      }
    }
    model::write_lists(prog_, image, [&](uint64_t addr, const std::array<uint8_t, model::kDmaListEntryBytes>& entry) {
      HbmData burst{};
      for (size_t b = 0; b < entry.size(); ++b) burst[b / 8] |= static_cast<uint64_t>(entry[b]) << (8 * (b % 8));
      hbm_->preload(addr, burst);
    });
    for (int s = 0; s < model::kNumSemaphores; ++s) {
      if (!prog_.sem_init[s]) continue;
      t.sem_wr_valid_i = 1;
      t.sem_wr_index_i = static_cast<uint8_t>(s);
      t.sem_wr_value_i = static_cast<uint16_t>(prog_.sem_init[s]);
      tick();
    }
    t.sem_wr_valid_i = 0;

    std::map<uint64_t, HbmData> hbm_lines;
    std::map<uint64_t, std::array<uint8_t, kLine>> sbuf_lines;
    for (const auto& d : prog_.tensors) {
      if (d.init == model::TensorInit::kNone) continue;
      const std::vector<uint8_t> bytes = model::tensor_init_bytes(d);
      if (d.hbm) {
        for (uint64_t i = 0; i < bytes.size(); ++i) {
          const uint64_t a = d.addr + i;
          auto it = hbm_lines.find(a / kLine * kLine);
          if (it == hbm_lines.end()) it = hbm_lines.emplace(a / kLine * kLine, hbm_->peek(a)).first;
          auto& word = it->second[(a % kLine) / 8];
          const int shift = static_cast<int>(a % 8) * 8;
          word = (word & ~(0xFFull << shift)) | (static_cast<uint64_t>(bytes[i]) << shift);
        }
      } else {
        const uint64_t per = d.bytes();
        for (int64_t p = 0; p < d.shape[0]; ++p)
          for (uint64_t b = 0; b < per; ++b) {
            const uint64_t flat = static_cast<uint64_t>(d.partition + p) * model::kSbufPartitionStride + d.addr + b;
            sbuf_lines[flat / kLine * kLine][flat % kLine] = bytes[static_cast<size_t>(p) * per + b];
          }
      }
    }
    for (const auto& [a, v] : hbm_lines) hbm_->preload(a, v);
    for (const auto& [a, bytes] : sbuf_lines) {
      // SBUF starts at zero on both cores (the end-state comparison covers every byte): a line
      // of zeros needs no debug-port cycle.
      if (std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; })) continue;
      t.dbg_sbuf_addr_i = static_cast<uint32_t>(a);
      for (int k = 0; k < 8; ++k) {
        uint32_t w = 0;
        for (int b = 0; b < 4; ++b) w |= static_cast<uint32_t>(bytes[4 * k + b]) << (8 * b);
        t.dbg_sbuf_wr_data_i[k] = w;
      }
      t.dbg_sbuf_wr_valid_i = 1;
      tick();
    }
    t.dbg_sbuf_wr_valid_i = 0;
  }

  // 32 SBUF bytes at a flat address, through the debug port (no clock).
  std::array<uint8_t, kLine> sbuf_line(uint64_t flat) {
    top_->dbg_sbuf_addr_i = static_cast<uint32_t>(flat);
    top_->eval();
    std::array<uint8_t, kLine> out;
    for (int k = 0; k < 8; ++k)
      for (int b = 0; b < 4; ++b) out[4 * k + b] = static_cast<uint8_t>(top_->dbg_sbuf_rd_data_o[k] >> (8 * b));
    return out;
  }
  void flip_sbuf_bit(uint64_t flat) {
    upset_sbuf_bit(flat);
    tick();
    top_->dbg_sbuf_wr_valid_i = 0;
  }
  // Every PSUM word through the debug read port (the core stopped): one request a cycle, its
  // data registered by the clock edge that takes it.
  // words[(bank * BankElems + elem) * size + partition].
  std::vector<uint32_t> psum_words(int banks, int elems) {
    V& t = *top_;
    std::vector<uint32_t> words(static_cast<size_t>(banks) * elems * size_);
    for (int i = 0; i < banks * elems; ++i) {
      t.dbg_psum_rd_valid_i = 1;
      t.dbg_psum_bank_i = static_cast<uint8_t>(i / elems);
      t.dbg_psum_elem_i = static_cast<uint16_t>(i % elems);
      // Held until the tensor engine takes it (it holds reads off while a bank has writes in
      // flight); the data comes with the clock edge that takes it.
      int waited = 0;
      for (tick(), top_->eval(); !t.dbg_psum_rd_rsp_valid_o; tick(), top_->eval())
        if (++waited > 100'000) throw Error(fmt::format("the RTL core's PSUM debug read of bank {} word {} was never "
                                                       "taken", i / elems, i % elems));
      for (int p = 0; p < size_; ++p) words[static_cast<size_t>(i) * size_ + p] = t.dbg_psum_rd_data_o[p];
    }
    t.dbg_psum_rd_valid_i = 0;
    tick();
    return words;
  }
  uint8_t hbm_byte(uint64_t a) const {
    const HbmData d = hbm_->peek(a);
    return static_cast<uint8_t>(d[(a % kLine) / 8] >> ((a % 8) * 8));
  }
  std::vector<uint8_t> tensor_bytes(const model::TensorDecl& d) override {
    std::vector<uint8_t> out;
    if (d.hbm) {
      for (uint64_t i = 0; i < d.bytes(); ++i) out.push_back(hbm_byte(d.addr + i));
      return out;
    }
    for (int64_t p = 0; p < d.shape[0]; ++p)
      for (uint64_t b = 0; b < d.bytes(); ++b) {
        const uint64_t flat = static_cast<uint64_t>(d.partition + p) * model::kSbufPartitionStride + d.addr + b;
        out.push_back(sbuf_line(flat / kLine * kLine)[flat % kLine]);
      }
    return out;
  }

  // ---- results -----------------------------------------------------------------------------
  std::string positions() const {
    const V& t = *top_;
    std::string s = "queues at";
    for (int q = 0; q < isa::kNumQueue; ++q)
      s += fmt::format(" {} {}/{}", isa::kQueueNames[q], t.pc_o[q], prog_.queues[q].size());
    return s;
  }

  void collect(CoreSimResult& r) {
    V& t = *top_;
    r.cycles = t.cnt_cycles_o;
    for (int q = 0; q < isa::kNumQueue; ++q)
      // The sequencer counts its waits and fetch stalls in its own cycles: in base cycles here,
      // as every other count.
      r.queues[q] = {t.cnt_issued_o[q], uint64_t{t.cnt_wait_o[q]} * queue_divide(q), t.cnt_busy_o[q],
                     uint64_t{t.cnt_fetch_stall_o[q]} * queue_divide(q), uint64_t{t.cnt_fetch_bursts_o[q]} * kLine};
    r.te_macs = t.cnt_te_macs_o;
    r.te_stream_cycles = t.cnt_te_stream_o;
    r.dma_bursts = t.cnt_dma_bursts_o;
    r.list_entries = t.cnt_list_entries_o;
    if (opt_.timeline) r.timeline = timeline_;
    if (opt_.timeline) r.fetch_stalls = fetch_stalls_.spans;
    if (opt_.timeline) r.sem_waits = sem_waits_.spans;
    for (int s = 0; s < model::kNumSemaphores; ++s) r.semaphores[s] = t.sems_o[s];
    if (!t.finished_o) return;
    r.status = static_cast<CoreStatus>(t.status_o);
    switch (r.status) {
      case CoreStatus::kDone: break;
      case CoreStatus::kError:
        r.error = static_cast<CoreError>(t.err_code_o);
        r.error_queue = t.err_queue_o;
        r.error_pc = t.err_pc_o;
        r.error_detail = t.err_detail_o;
        r.message = fmt::format("error {} at cycle {}: {}: {}", model::core_error_name(r.error), r.cycles,
                                describe_instruction(prog_, r.error_queue, r.error_pc),
                                rtl_error_detail(r.error, r.error_detail, prog_));
        break;
      case CoreStatus::kDeadlock: {
        r.message = fmt::format("deadlock at cycle {}: nothing in flight, and", r.cycles);
        for (int q = 0; q < isa::kNumQueue; ++q) {
          if (!(t.waiting_o >> q & 1)) continue;
          const auto& in = prog_.queues[q][t.pc_o[q]];
          r.message += fmt::format("\n  {}; waits for semaphore {} >= {} (it is {})",
                                   describe_instruction(prog_, q, t.pc_o[q]),
                                   prog_.sem_name(in.wait_sem), in.wait_value, t.sems_o[in.wait_sem]);
        }
        break;
      }
      case CoreStatus::kWatchdog:
        r.message = fmt::format("watchdog: no progress for {} cycles, at cycle {}; {}", opt_.watchdog, r.cycles,
                                positions());
        break;
    }
  }

  // The first thing found wrong, with the command that reruns the case (the lockstep checker's
  // reports carry their own, with the waves window).
  void fail(CoreSimResult& r, uint64_t cycle, const std::string& what) {
    if (!r.ok) return;
    r.ok = false;
    r.fail_cycle = cycle;
    r.failure = what;
    if (what.find("reproduce") == std::string::npos) r.failure += "\n  reproduce: " + reproduce_;
  }

  void compare(CoreSimResult& r, uint64_t run_end) {
    const auto mismatch = [&](CoreSimResult& res, const std::string& what) { fail(res, run_end, what); };
    model::CoreModel& golden = lockstep_->golden_model();
    r.golden = lockstep_->golden();
    r.compared = true;
    const LockstepStats& ls = lockstep_->stats();
    r.lockstep_instructions = ls.instructions;
    r.lockstep_lines = ls.lines;
    r.lockstep_signals = ls.signals;
    if (lockstep_->failed()) return mismatch(r, lockstep_->failure());
    const model::CoreResult& g = r.golden;
    if (g.status != r.status || g.error != r.error) {
      return mismatch(r, fmt::format("status: RTL {} {}, golden {} {}\n  RTL:    {}\n  golden: {}",
                                     model::core_status_name(r.status), model::core_error_name(r.error),
                                     model::core_status_name(g.status), model::core_error_name(g.error),
                                     r.message.empty() ? "-" : r.message, g.message.empty() ? "-" : g.message));
    }
    if (r.status == CoreStatus::kError &&
        (g.error_queue != r.error_queue || g.error_index != r.error_pc))
      return mismatch(r, fmt::format("error raised by a different instruction: RTL {}, golden {}",
                                     describe_instruction(prog_, r.error_queue, r.error_pc),
                                     describe_instruction(prog_, g.error_queue, g.error_index)));
    if (r.status != CoreStatus::kDone) return;  // the state after a stop depends on timing
    lockstep_->finish(run_end);
    if (lockstep_->failed()) return mismatch(r, lockstep_->failure());
    for (int s = 0; s < model::kNumSemaphores; ++s)
      if (g.semaphores[s] != r.semaphores[s])
        return mismatch(r, fmt::format("semaphore {}: RTL {}, golden {}", prog_.sem_name(s), r.semaphores[s],
                                       g.semaphores[s]));
    // Every SBUF byte.
    model::Sbuf& gs = golden.sbuf();
    for (int p = 0; p < size_ && r.ok; ++p)
      for (uint64_t off = 0; off + kLine <= model::kSbufPartitionStride; off += kLine) {
        const auto line = sbuf_line(static_cast<uint64_t>(p) * model::kSbufPartitionStride + off);
        for (uint64_t b = 0; b < kLine; ++b) {
          const auto want = static_cast<uint8_t>(gs.read(p, static_cast<uint32_t>(off + b), 1));
          if (line[b] != want)
            return mismatch(r, fmt::format("SBUF partition {} byte 0x{:x}{}: RTL 0x{:02x}, golden 0x{:02x}", p,
                                           off + b, locate_tensor_byte(prog_, false, off + b, p), line[b], want));
        }
        r.sbuf_bytes_compared += kLine;
      }
    // Every HBM burst either side wrote (or that was loaded).
    std::set<uint64_t> bursts;
    for (const uint64_t a : own_hbm_.fabric().bursts()) bursts.insert(a);
    for (const auto& in : prog_.queues[static_cast<int>(isa::Queue::kSp)])
      if (in.opcode == isa::Opcode::kDmaCopy && in.dma.to_hbm &&
          model::dma_check(in.dma, model::hbm_capacity_bytes(kHbmChannels),
                           static_cast<uint64_t>(size_) * model::kSbufPartitionStride) == model::DmaError::kNone)
        for (const auto& [h, s] : model::dma_bursts(in.dma)) bursts.insert(h);
    for (const uint64_t a : bursts) {
      uint8_t want[kLine];
      golden.hbm().read_block(a, want, kLine);
      for (uint64_t b = 0; b < kLine; ++b)
        if (hbm_byte(a + b) != want[b])
          return mismatch(r, fmt::format("HBM byte 0x{:x}{}: RTL 0x{:02x}, golden 0x{:02x}", a + b,
                                         locate_tensor_byte(prog_, true, a + b), hbm_byte(a + b), want[b]));
      r.hbm_bytes_compared += kLine;
    }
    // Every PSUM word.
    const model::TensorEngineConfig& tc = golden.tensor_engine().config();
    std::vector<uint32_t> psum = psum_words(tc.psum_banks, tc.bank_elements);
    if (const auto& f = opt_.inject_psum_flip)
      psum[(static_cast<size_t>((*f)[1]) * tc.bank_elements + (*f)[2]) * size_ + (*f)[0]] ^= 1u;
    for (int b = 0; b < tc.psum_banks; ++b)
      for (int e = 0; e < tc.bank_elements; ++e)
        for (int p = 0; p < size_; ++p) {
          const uint32_t rtl = psum[(static_cast<size_t>(b) * tc.bank_elements + e) * size_ + p];
          const uint32_t want = golden.tensor_engine().psum(p, b, e);
          if (rtl != want)
            return mismatch(r, fmt::format("PSUM partition {} bank {} word {}: RTL 0x{:08x}, golden 0x{:08x}", p, b,
                                           e, rtl, want));
          ++r.psum_words_compared;
        }
    if (r.sbuf_bytes_compared + r.hbm_bytes_compared == 0) mismatch(r, "nothing was compared");
  }

  const model::Program& prog_;
  const CoreSimOptions opt_;
  int size_;
  Bench<V> bench_;
  V* top_;
  FabricPorts own_hbm_;   // run_core_rtl's HBM
  CoreMemoryPorts* hbm_;  // own_hbm_, or the host's
  model::CollectiveEngine* collectives_;  // null: the lone engine below (run_core_rtl)
  uint64_t run_cycle_ = 0;
  // Stepped from outside: tags of the collectives issued and not ended; parked() detection;
  // the timeline.
  std::deque<uint8_t> cc_tags_;
  uint64_t quiet_cycles_ = 0, last_activity_ = 0;
  std::array<std::vector<uint64_t>, isa::kNumQueue> issue_cycle_;
  std::array<uint64_t, isa::kNumQueue> last_pc_{};
  std::vector<model::InstrTiming> timeline_;
  // Per queue, the stretches of cycles a condition held, as record() sees them cycle by cycle.
  struct QueueSpans {
    std::array<bool, isa::kNumQueue> open{};
    std::array<size_t, isa::kNumQueue> at{};
    std::vector<model::FetchStall> spans;
    // At the queue's edge: whether the condition held through its cycle just ended (`div` base
    // cycles, ending at `cycle`).
    void see(int q, bool holds, uint64_t pc, uint64_t cycle, uint64_t div) {
      if (holds && !open[q]) {
        open[q] = true;
        spans.push_back({q, pc, cycle - div, cycle});
        at[q] = spans.size() - 1;
      } else if (holds) {
        spans[at[q]].end = cycle;
      } else {
        open[q] = false;
      }
    }
  };
  std::array<uint32_t, isa::kNumQueue> last_fetch_stall_{}, last_wait_{};  // each queue's counters at its last edge
  // Per DMA engine, its issued DMA instructions whose bursts have not all gone out (a list's:
  // until it commits), and when each began to move data.
  static constexpr int kDmaEngines = 16;
  struct DmaMoving {
    uint64_t pc;
    uint64_t bursts;  // 0: a list, whose count the harness does not follow
    uint64_t made = 0;
    bool started = false;
  };
  std::array<std::deque<DmaMoving>, kDmaEngines> dma_moving_;
  std::map<uint64_t, uint64_t> dma_started_;
  void data_moves(int engine, uint64_t cycle) {
    if (engine < 0 || engine >= kDmaEngines || dma_moving_[engine].empty()) return;
    DmaMoving& m = dma_moving_[engine].front();
    if (!m.started) m.started = true, dma_started_[m.pc] = cycle;
    if (m.bursts && ++m.made == m.bursts) dma_moving_[engine].pop_front();
  }
  unsigned last_edges_ = ~0u;  // the domains whose clocks rose at the end of the last cycle
  QueueSpans fetch_stalls_, sem_waits_;
  std::string reproduce_;  // the command that reruns this case
  std::unique_ptr<Lockstep> lockstep_;
  std::deque<CcJob> cc_jobs_;  // collectives taken, oldest first
  int psum_banks_ = model::TensorEngineConfig{}.psum_banks;
  int psum_elems_ = model::TensorEngineConfig{}.bank_elements;
};

}  // namespace

std::vector<int> core_rtl_sizes() {
  std::vector<int> s;
#define NC_SIZE(n, cls) s.push_back(n);
  NC_CORE_MODELS(NC_SIZE)
#undef NC_SIZE
  return s;
}

model::CoreConfig core_config_for_size(int size) {
  model::CoreConfig c;
  c.te.rows = size;
  c.te.cols = size;
  c.lanes = size;
  c.hbm_bytes = model::hbm_capacity_bytes(kHbmChannels);
  return c;
}

double CoreSimResult::te_utilization(int size, const model::CoreClocks& clocks) const {
  const double tensor_cycles = static_cast<double>(cycles) / clocks.div(model::ClockDomain::kTensor);
  return cycles ? static_cast<double>(te_macs) / (tensor_cycles * size * size) : 0.0;
}

std::vector<int> core_rtl_fast_sizes() {
  std::vector<int> s;
#define NC_SIZE(n, cls) s.push_back(n);
  NC_CORE_FAST_MODELS(NC_SIZE)
#undef NC_SIZE
  return s;
}

namespace {
Error not_built(const CoreSimOptions& options) {
  std::string built;
  if (options.pe_arith == PeArith::kHostFpu) {
    for (int s : core_rtl_fast_sizes()) built += fmt::format(" {}", s);
    return Error(fmt::format("no fast-PE (host FPU) RTL core of size {} is built (built:{}; every size "
                             "needs -DNCORE_FAST_PE=ON)", options.size, built));
  }
  for (int s : core_rtl_sizes()) built += fmt::format(" {}", s);
  return Error(fmt::format("no RTL core of size {} is built (built:{}; the 128 one needs NCORE_RTL_FULL_SIZE=ON)",
                           options.size, built));
}
}  // namespace

std::unique_ptr<RtlCore> make_rtl_core(const model::Program& program, const CoreSimOptions& options,
                                       const RtlCoreHost& host, int hbm_bytes_log2) {
  if (!host.memory || !host.collectives) throw Error("RTL core: a stepped core needs its memory and collective engine");
  if (options.cosim) throw Error("RTL core: a stepped core runs without co-simulation");
#define NC_MAKE(n, cls)                                                    \
  if (options.size == n) {                                                 \
    auto core = std::make_unique<CoreBench<cls>>(program, options, n, host); \
    core->begin(hbm_bytes_log2);                                           \
    return core;                                                           \
  }
  if (options.pe_arith == PeArith::kHostFpu) {
    NC_CORE_FAST_MODELS(NC_MAKE)
  } else {
    NC_CORE_MODELS(NC_MAKE)
  }
#undef NC_MAKE
  throw not_built(options);
}

CoreSimResult run_core_rtl(const model::Program& program, const CoreSimOptions& options) {
#define NC_RUN(n, cls) \
  if (options.size == n) return CoreBench<cls>(program, options, n).run();
  if (options.pe_arith == PeArith::kHostFpu) {
    NC_CORE_FAST_MODELS(NC_RUN)
  } else {
    NC_CORE_MODELS(NC_RUN)
  }
#undef NC_RUN
  throw not_built(options);
}

}  // namespace ncore::tb
