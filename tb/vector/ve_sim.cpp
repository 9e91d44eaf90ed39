#include "tb/vector/ve_sim.h"

#include <atomic>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <type_traits>

#include <unistd.h>

#include <fmt/format.h>
#include <verilated.h>

#include "model/common/error.h"
#include "tb/common/bench.h"
#include "tb/common/wide.h"
#include "tb/vector/ve_coverage.h"
#include "ve_models.h"

namespace ncore::tb {
namespace {

using model::VeInstruction;

bool chance(model::SplitMix64& rng, double p) {
  return p > 0 && static_cast<double>(rng.next() >> 11) * 0x1.0p-53 < p;
}


// A value for a mismatch report: hex and, for a float type, the number.
std::string show(model::DType t, uint32_t bits) {
  if (!model::is_float(t)) return fmt::format("0x{:08x} ({})", bits, static_cast<int32_t>(bits));
  return fmt::format("0x{:08x} ({})", bits, model::to_float(t, bits));
}

std::string describe(const VeInstruction& in) {
  const std::string ops =
      in.opcode == isa::Opcode::kActivation
          ? fmt::format("func {}", model::act_func_name(in.act_func))
          : fmt::format("op0 {} op1 {}", model::alu_op_name(in.op0), model::alu_op_name(in.op1));
  return fmt::format("{} {}->{} {} partitions [{}, {}) src0 {}@0x{:x} dst {}@0x{:x}",
                     model::ve_opcode_name(in.opcode), model::dtype_name(in.in0),
                     model::dtype_name(in.out), ops, in.start_partition,
                     in.start_partition + in.partitions,
                     in.src0.space == model::MemSpace::kSbuf ? "sbuf" : "psum", in.src0.addr,
                     in.dst.space == model::MemSpace::kSbuf ? "sbuf" : "psum", in.dst.addr);
}

template <class V>
void drive(V& t, const VeInstruction& in) {
  to_wide(isa::pack_instr(in), t.cmd_i);
}

// Bit i of a Verilated port: an integer up to 64 bits, or a VlWide array of 32-bit words.
template <class T>
bool port_bit(const T& v, int i) {
  if constexpr (std::is_integral_v<T>) {
    return (static_cast<uint64_t>(v) >> i) & 1u;
  } else {
    return (v[i / 32] >> (i % 32)) & 1u;
  }
}

struct PendingRead {
  uint64_t due;
  std::vector<uint32_t> data;
};

// The functional-coverage bins of a run, next to Verilator's coverage (scripts/coverage).
void write_bins(const char* dir, const model::VeConfig& cfg, const std::map<std::string, uint64_t>& bins) {
  static std::atomic<int> count{0};
  std::filesystem::create_directories(dir);
  std::ofstream out(fmt::format("{}/{}_{}-{}-{}.bins", dir, cfg.scalar_engine ? "scalar" : "vector",
                                cfg.lanes, getpid(), count++));
  for (const auto& [bin, hits] : bins) out << bin << ' ' << hits << '\n';
}

template <class V>
VeSimResult run_model(const model::VeConfig& cfg, const VeSimOptions& opt, model::VeMemory& mem,
                      const std::vector<VeInstruction>& program) {
  const int lanes = cfg.lanes;
  model::SplitMix64 rng(opt.seed ^ 0x5EC0DE5EEDull);
  model::VeMemory golden = mem;
  VeSimResult r;
  const char* coverage_dir = std::getenv("NCORE_COVERAGE_DIR");
  const bool count_bins = opt.count_bins || coverage_dir;

  const WallClock wall;
  Bench<V> bench(opt, fmt::format("{}_{}", cfg.scalar_engine ? "scalar" : "vector", lanes), "ve");
  V& t = bench.top();
  t.cmd_valid_i = 0;
  t.rd_rsp_valid_i = 0;
  t.upset_i = opt.fault == VeFault::kUpsetStateIdle ? 1 : opt.fault == VeFault::kUpsetProduced ? 2 : 0;
  bench.reset();
  for (int l = 0; l < lanes; ++l)
    r.powerup_signature = (r.powerup_signature ^ t.wr_data_o[l]) * 0x100000001B3ull;

  uint64_t cycle = 0, accepted_at = 0;  // cycle: from the end of reset
  Watchdog watchdog(opt.watchdog);
  size_t next = 0;          // next instruction to offer
  bool offering = false;
  int running = -1;         // instruction in the engine
  model::VeError expect_error = model::VeError::kNone;
  std::deque<model::VeWrite> expect;
  uint32_t expect_index = 0;  // element of the running instruction's writes
  std::deque<PendingRead> reads;
  uint64_t last_due = 0;
  bool fault_done = false;
  bool held_off = false;  // the instruction offered last cycle was not taken

  Failure failure(r, opt, fmt::format("{} lanes", lanes));
  const auto fail = [&](const std::string& why) { failure(bench.cycle(), why); };

  for (; r.ok; ++cycle) {
    if (!offering && next < program.size() && !chance(rng, opt.cmd_stall)) offering = true;
    t.cmd_valid_i = offering;
    if (held_off && opt.fault == VeFault::kCmdChangesWhileStalled && !fault_done) {
      // Change the offered instruction's tag while the engine has not taken it.
      VeInstruction changed = program[next];
      changed.tag = static_cast<uint8_t>(changed.tag + 1);
      drive(t, changed);
      fault_done = true;
    } else if (offering) {
      drive(t, program[next]);
    }
    t.rd_ready_i = !chance(rng, opt.rd_stall);
    t.wr_ready_i = !chance(rng, opt.wr_stall);
    const bool rsp = !reads.empty() && reads.front().due <= cycle;
    t.rd_rsp_valid_i = rsp;
    for (int l = 0; l < lanes; ++l) t.rd_rsp_data_i[l] = rsp ? reads.front().data[l] : 0xDEADBEEFu;
    if (opt.fault == VeFault::kResponseWithoutRequest && !fault_done && cycle == 0) {
      t.rd_rsp_valid_i = 1;
      fault_done = true;
    }
    bench.fall();

    if (rsp) reads.pop_front();
    if (offering && t.cmd_ready_o) {
      const VeInstruction& in = program[next];
      running = static_cast<int>(next);
      accepted_at = cycle;
      expect_index = 0;
      if (count_bins && model::ve_check(in, cfg) == model::VeError::kNone) ++r.bins[ve_cross_bin(in, cfg)];
      if (opt.check) {
        expect_error = model::ve_check(in, cfg);
        if (expect_error == model::VeError::kNone) {
          auto w = model::ve_writes(in, cfg, golden);
          model::ve_apply(w, in, golden);
          expect.assign(w.begin(), w.end());
        }
      }
      ++next;
      offering = false;
      watchdog.progress(cycle);
    }
    held_off = offering;
    if (held_off) ++r.cmd_held_off;
    if (t.rd_valid_o && t.rd_ready_i) {
      const auto space = static_cast<model::MemSpace>(t.rd_space_o);
      const int bytes = t.rd_bytes_o;
      const uint32_t addr = t.rd_addr_o;
      PendingRead p;
      p.due = std::max(last_due + 1, cycle + 1 + (opt.rsp_extra_latency > 0
                                                       ? rng.below(opt.rsp_extra_latency + 1)
                                                       : 0));
      last_due = p.due;
      const model::Sbuf& m = mem.space(space);
      if (bytes != 1 && bytes != 2 && bytes != 4) {
        fail(fmt::format("read of {} bytes", bytes));
        break;
      }
      if (addr % bytes != 0 || addr + bytes > m.bytes_per_partition()) {
        fail(fmt::format("read of {} bytes at 0x{:x} outside {}", bytes, addr,
                         space == model::MemSpace::kSbuf ? "SBUF" : "PSUM"));
        break;
      }
      for (int l = 0; l < lanes; ++l) p.data.push_back(m.read(l, addr, bytes));
      reads.push_back(std::move(p));
    }
    if (t.wr_valid_o && t.wr_ready_i) {
      watchdog.progress(cycle);
      const auto space = static_cast<model::MemSpace>(t.wr_space_o);
      const int bytes = t.wr_bytes_o;
      const uint32_t addr = t.wr_addr_o;
      if (running < 0) {
        fail("a write with no instruction running");
        break;
      }
      const VeInstruction& in = program[static_cast<size_t>(running)];
      if (addr % bytes != 0 || addr + bytes > mem.space(space).bytes_per_partition()) {
        fail(fmt::format("write of {} bytes at 0x{:x} out of range", bytes, addr));
        break;
      }
      for (int l = 0; l < lanes; ++l) {
        const bool masked = port_bit(t.wr_mask_o, l);
        const bool active = l >= in.start_partition && l < in.start_partition + in.partitions;
        if (masked != active) {
          fail(fmt::format("instruction {} ({}): write mask of partition {} is {}, expected {}",
                           running, describe(in), l, masked, active));
          break;
        }
        if (active) mem.space(space).write(l, addr, bytes, t.wr_data_o[l]);
      }
      if (opt.check && r.ok) {
        if (expect.empty()) {
          fail(fmt::format("instruction {} ({}): an extra write to 0x{:x}", running,
                           describe(in), addr));
          break;
        }
        const model::VeWrite& w = expect.front();
        if (w.space != space || w.addr != addr || w.bytes != bytes) {
          fail(fmt::format("instruction {} ({}), element {}: write to {} 0x{:x} ({} bytes), "
                           "expected {} 0x{:x} ({} bytes)", running, describe(in), expect_index,
                           static_cast<int>(space), addr, bytes, static_cast<int>(w.space),
                           w.addr, w.bytes));
          break;
        }
        for (int l = 0; l < lanes; ++l) {
          const uint32_t got = t.wr_data_o[l];
          if (got != w.data[l]) {
            fail(fmt::format("instruction {} ({}), element {}, partition {}: RTL wrote {}, "
                             "golden {}", running, describe(in), expect_index, l,
                             show(in.out, got), show(in.out, w.data[l])));
            break;
          }
          if (l >= in.start_partition && l < in.start_partition + in.partitions)
            ++r.lanes_compared;
        }
        expect.pop_front();
        ++expect_index;
        ++r.writes_compared;
      }
    }
    if (t.done_valid_o) {
      watchdog.progress(cycle);
      if (running < 0) {
        fail("a completion with no instruction running");
        break;
      }
      const VeInstruction& in = program[static_cast<size_t>(running)];
      const auto code = static_cast<model::VeError>(t.done_error_o);
      if (t.done_tag_o != in.tag)
        fail(fmt::format("instruction {}: completion tag {}, expected {}", running, t.done_tag_o, in.tag));
      if (opt.check) {
        if (code != expect_error) {
          fail(fmt::format("instruction {} ({}): RTL says '{}', golden '{}'", running,
                           describe(in), model::ve_error_name(code),
                           model::ve_error_name(expect_error)));
        } else if (!expect.empty()) {
          fail(fmt::format("instruction {} ({}): done with {} writes still expected", running,
                           describe(in), expect.size()));
        }
        if (code != model::VeError::kNone) ++r.refusals_compared;
      }
      r.instr_cycles.push_back(cycle - accepted_at + 1);
      running = -1;
    }
    bench.rise();
    if (next == program.size() && running < 0 && !offering && t.idle_o && reads.empty()) break;
    if (watchdog.expired(cycle)) fail(fmt::format("{} (instruction {} running)", watchdog.report(), running));
  }
  r.cycles = cycle;
  r.counters = {t.cnt_busy_o,     t.cnt_rd_stall_o, t.cnt_wr_stall_o, t.cnt_credit_stall_o,
                t.cnt_elements_o, t.cnt_executed_o, t.cnt_refused_o};
  if (opt.check && r.ok) {
    // Nothing else changed: every byte of both memories equals the golden model's.
    for (auto space : {model::MemSpace::kSbuf, model::MemSpace::kPsum}) {
      const model::Sbuf& a = mem.space(space);
      const model::Sbuf& b = golden.space(space);
      for (int l = 0; l < lanes && r.ok; ++l) {
        for (uint32_t addr = 0; addr < a.bytes_per_partition(); addr += 4) {
          if (a.read(l, addr, 4) != b.read(l, addr, 4)) {
            fail(fmt::format("after the run: {} partition {} word 0x{:x} is 0x{:08x}, golden 0x{:08x}",
                             space == model::MemSpace::kSbuf ? "SBUF" : "PSUM", l, addr,
                             a.read(l, addr, 4), b.read(l, addr, 4)));
            break;
          }
        }
      }
    }
    if (r.ok && r.writes_compared + r.refusals_compared == 0 && !program.empty())
      fail("the co-simulation compared nothing");
  }
  if (coverage_dir && !r.bins.empty()) write_bins(coverage_dir, cfg, r.bins);
  r.wall_seconds = wall.seconds();
  return r;
}

}  // namespace

bool ve_sim_has_lanes(int lanes, bool scalar_engine, bool xprop) {
#define NC_HAS(L, CLASS) if (lanes == L) return true;
  if (xprop && scalar_engine) {
    NC_SE_XPROP_MODELS(NC_HAS)
  } else if (xprop) {
    NC_VE_XPROP_MODELS(NC_HAS)
  } else if (scalar_engine) {
    NC_SE_MODELS(NC_HAS)
  } else {
    NC_VE_MODELS(NC_HAS)
  }
#undef NC_HAS
  return false;
}

namespace {
model::VeConfig make_config(int lanes, bool scalar_engine) {
  model::VeConfig c{lanes, 229376, 16384};
  c.scalar_engine = scalar_engine;
  return c;
}
}  // namespace

VeSim::VeSim(int lanes, VeSimOptions options, bool scalar_engine)
    : cfg_(make_config(lanes, scalar_engine)), opt_(std::move(options)), mem_(cfg_) {
  if (!ve_sim_has_lanes(lanes, scalar_engine, opt_.xprop_seed != 0))
    throw Error(fmt::format("{} engine: no {}RTL model with {} lanes (built: see ve_models.h)",
                            scalar_engine ? "scalar" : "vector",
                            opt_.xprop_seed != 0 ? "X-propagation " : "", lanes));
}

VeSimResult VeSim::run(const std::vector<VeInstruction>& program) {
#define NC_RUN(L, CLASS) \
  if (cfg_.lanes == L) return run_model<CLASS>(cfg_, opt_, mem_, program);
  if (opt_.xprop_seed != 0 && cfg_.scalar_engine) {
    NC_SE_XPROP_MODELS(NC_RUN)
  } else if (opt_.xprop_seed != 0) {
    NC_VE_XPROP_MODELS(NC_RUN)
  } else if (cfg_.scalar_engine) {
    NC_SE_MODELS(NC_RUN)
  } else {
    NC_VE_MODELS(NC_RUN)
  }
#undef NC_RUN
  throw Error("unreachable");
}

void fill_random(model::VeMemory& mem, model::MemSpace space, uint32_t addr, uint32_t elements,
                 model::DType t, model::SplitMix64& rng) {
  model::Sbuf& m = mem.space(space);
  const int bytes = model::storage_bits(t) / 8;
  for (int l = 0; l < m.partitions(); ++l)
    for (uint32_t e = 0; e < elements; ++e) m.write(l, addr + e * bytes, bytes, model::random_value(t, rng));
}

}  // namespace ncore::tb
