// ncore vec: one vector-engine instruction on random data (every value class of the input
// type), through the golden model, the RTL, or both in lockstep; prints cycles and mismatches.

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "model/common/name_table.h"
#include "model/vector/vector_engine.h"
#include "tb/cli/commands.h"
#include "tb/cli/waves_options.h"
#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"

namespace ncore::cli {
namespace {

struct VecOptions {
  std::string op = "tensor_tensor", dtype_in = "bf16", dtype_out = "fp32", engine = "cosim";
  std::string alu0, alu1, rounding = "rne", func = "identity", cmp;
  std::optional<double> value;  // memset's fill (in dtype out), affine_select's (FP32)
  float scale = 1.0f, bias = 0.0f;
  bool accumulate = false;
  int partitions = 0, lanes = 128;  // partitions 0: every lane
  uint32_t free = 512;
  uint64_t seed = 1;
  WavesOptions waves;
  double stall = 0.0;
  bool saturate = false, json = false;
};

void run_vec(const VecOptions& o) {
  using model::DType;
  const isa::Opcode op = model::parse_ve_opcode(o.op);
  const DType in = model::parse_dtype(o.dtype_in), out = model::parse_dtype(o.dtype_out);
  if (o.engine != "golden" && o.engine != "rtl" && o.engine != "cosim")
    throw Error(fmt::format("--engine: expected golden, rtl or cosim, found '{}'", o.engine));
  if (o.rounding != "rne" && o.rounding != "sr")
    throw Error(fmt::format("--rounding: expected rne or sr, found '{}'", o.rounding));
  const uint32_t limit = 65536 / (model::storage_bits(in) / 8);
  if (o.free < 1 || o.free > limit)
    throw Error(fmt::format("--free: expected 1..{} elements of {} (64 KiB per operand), found {}",
                            limit, o.dtype_in, o.free));
  if (op == isa::Opcode::kBnStats && o.free > model::kBnStatsMaxElements)
    throw Error(fmt::format("--free: bn_stats reads at most {} elements (NKI's bn_stats_fmax), found {}",
                            model::kBnStatsMaxElements, o.free));
  if (op == isa::Opcode::kBnAggr && o.free % 3 != 0)
    throw Error(fmt::format("--free: bn_aggr reads (count, mean, M2) triples, a multiple of 3, found {}", o.free));
  if (o.value && op != isa::Opcode::kMemset && op != isa::Opcode::kAffineSelect)
    throw Error(fmt::format("--value: only memset and affine_select take a value, not {}", o.op));
  if (!o.cmp.empty() && op != isa::Opcode::kAffineSelect)
    throw Error(fmt::format("--cmp: only affine_select compares, not {}", o.op));
  tb::VeSimOptions so;
  so.seed = o.seed;
  so.check = o.engine == "cosim";
  so.cmd_stall = so.rd_stall = so.wr_stall = o.stall;
  so.rsp_extra_latency = o.stall > 0 ? 3 : 0;
  o.waves.apply(so);
  so.reproduce = fmt::format("ncore vec --op {} --dtype-in {} --dtype-out {} --partitions {} "
                             "--free {} --lanes {} --seed {} --stall {}{}{}{} --engine cosim",
                             o.op, o.dtype_in, o.dtype_out, o.partitions > 0 ? o.partitions : o.lanes, o.free, o.lanes, o.seed,
                             o.stall, o.alu0.empty() ? "" : " --alu0 " + o.alu0,
                             o.alu1.empty() ? "" : " --alu1 " + o.alu1,
                             op == isa::Opcode::kActivation
                                 ? fmt::format(" --func {} --scale {} --bias {}{}", o.func, o.scale,
                                               o.bias, o.accumulate ? " --accumulate" : "")
                                 : "");
  // activation runs on the scalar engine; everything else on the vector engine.
  const bool scalar_engine = op == isa::Opcode::kActivation;
  model::VeConfig cfg{o.lanes, 229376, 16384};
  cfg.scalar_engine = scalar_engine;
  std::unique_ptr<tb::VeSim> sim;
  std::unique_ptr<model::VeMemory> golden_mem;
  if (o.engine != "golden") {
    sim = std::make_unique<tb::VeSim>(o.lanes, so, scalar_engine);
  } else {
    golden_mem = std::make_unique<model::VeMemory>(cfg);
  }
  model::VeMemory& mem = sim ? sim->memory() : *golden_mem;
  model::VeInstruction instr = tb::simple_ve_instruction(cfg, op, in, out, o.free);
  if (scalar_engine) {
    instr.act_func = model::parse_act_func(o.func);
    instr.s0 = model::float_to_bits(o.scale);
    instr.s1 = model::float_to_bits(o.bias);
    instr.acc_enable = o.accumulate;
    instr.acc_addr = 3 * 65536;
  }
  instr.partitions = o.partitions > 0 ? o.partitions : o.lanes;
  if (!o.alu0.empty()) instr.op0 = model::parse_alu_op(o.alu0);
  if (!o.alu1.empty()) instr.op1 = model::parse_alu_op(o.alu1);
  if (!o.cmp.empty()) instr.cmp_op = model::value_of<isa::CmpOp>(isa::kCmpOpNames, o.cmp, "--cmp comparison");
  if (o.value) {
    const uint32_t fp32 = model::float_to_bits(static_cast<float>(*o.value));
    instr.value = op == isa::Opcode::kMemset ? model::from_fp32(fp32, out, {}) : fp32;
    // memset's value must be one of the output type's: nothing is rounded silently.
    if (op == isa::Opcode::kMemset && model::to_fp32_bits(out, instr.value) != fp32)
      throw Error(fmt::format("--value: {} is not a {} value (it would become {})", *o.value,
                              model::dtype_name(out), model::to_float(out, instr.value)));
  }
  instr.stochastic = o.rounding == "sr";
  instr.saturate = o.saturate;
  instr.seed = static_cast<uint32_t>(o.seed);
  std::string why;
  if (const auto e = model::ve_check(instr, cfg, &why); e != model::VeError::kNone)
    throw Error(fmt::format("the instruction is illegal ({}): {}", model::ve_error_name(e), why));
  model::SplitMix64 rng(o.seed);
  tb::fill_random(mem, instr.src0.space, instr.src0.addr, o.free, in, rng);
  tb::fill_random(mem, instr.src1.space, instr.src1.addr, o.free, in, rng);

  const uint64_t cost = model::ve_cost_cycles(instr, cfg);
  uint64_t cycles = cost, compared = 0;
  bool ok = true;
  std::string failure;
  tb::VeCounters counters;
  if (sim) {
    const auto r = sim->run({instr});
    ok = r.ok;
    failure = r.failure;
    cycles = r.instr_cycles.empty() ? r.cycles : r.instr_cycles.front();
    compared = r.lanes_compared;
    counters = r.counters;
  } else {
    const auto writes = model::ve_writes(instr, cfg, mem);
    model::ve_apply(writes, instr, mem);
    compared = 0;
  }
  if (o.json) {
    nlohmann::json j = {{"op", o.op}, {"dtype_in", o.dtype_in}, {"dtype_out", model::dtype_name(instr.out)},
                        {"engine", o.engine}, {"lanes", o.lanes},
                        {"func", scalar_engine ? o.func : ""}, {"partitions", instr.partitions},
                        {"free", o.free}, {"seed", o.seed}, {"cycles", cycles},
                        {"cost_model_cycles", cost}, {"elements_compared", compared},
                        {"mismatches", ok ? 0 : 1}, {"rd_stall", counters.rd_stall},
                        {"wr_stall", counters.wr_stall}, {"busy", counters.busy}};
    if (!ok) j["first_mismatch"] = failure;
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("vec {} {} -> {}: {} partitions x {} elements, {} lanes, engine {}, seed {}\n",
               scalar_engine ? o.op + " " + o.func : o.op,
               o.dtype_in, model::dtype_name(instr.out), instr.partitions, o.free, o.lanes, o.engine, o.seed);
    if (sim)
      fmt::print("  cycles {} (cost model {}: {:.3f}x)\n", cycles, cost,
                 static_cast<double>(cycles) / static_cast<double>(cost));
    else
      fmt::print("  cost model {} cycles (the golden model is untimed)\n", cost);
    if (sim)
      fmt::print("  busy {}, read-port stalls {}, write-port stalls {}\n", counters.busy,
                 counters.rd_stall, counters.wr_stall);
    if (o.engine == "cosim")
      fmt::print("  {} element values compared bit for bit, {} mismatches\n", compared, ok ? 0 : 1);
    if (!ok) fmt::print("  first mismatch: {}\n", failure);
  }
  std::fflush(stdout);
  if (!ok) throw Error("vec: the RTL failed\n" + failure);
}

}  // namespace

void add_vec_command(CLI::App& app) {
  auto o = std::make_shared<VecOptions>();
  auto* cmd = app.add_subcommand(
      "vec", "run one vector-engine (or, for activation, scalar-engine) instruction on random data");
  cmd->add_option("--op", o->op, "tensor_tensor, tensor_scalar, tensor_reduce, tensor_copy, "
                                 "tensor_tensor_scan, transpose, shuffle, memset, iota, "
                                 "affine_select (a causal mask), bn_stats, bn_aggr, "
                                 "scalar_tensor_tensor, tensor_scalar_reduce; activation (scalar "
                                 "engine)")->capture_default_str();
  cmd->add_option("--value", o->value, "memset: the fill (converted to --dtype-out); affine_select: "
                                       "the value where the mask is false (FP32)");
  cmd->add_option("--cmp", o->cmp, "affine_select: equal, not_equal, greater, greater_equal (the "
                                   "default mask's), less, less_equal");
  cmd->add_option("--func", o->func, "activation: identity, exp, tanh, sigmoid, gelu, relu, sqrt, "
                                     "rsqrt, reciprocal, square")->capture_default_str();
  cmd->add_option("--scale", o->scale, "activation: the input's scale")->capture_default_str();
  cmd->add_option("--bias", o->bias, "activation: the bias")->capture_default_str();
  cmd->add_flag("--accumulate", o->accumulate, "activation: also write the sum of the results");
  cmd->add_option("--dtype-in", o->dtype_in, "input type")->capture_default_str();
  cmd->add_option("--dtype-out", o->dtype_out, "output type")->capture_default_str();
  cmd->add_option("--partitions", o->partitions, "active partitions, from 0 (default: all lanes)")
      ->check(CLI::Range(0, 128));
  cmd->add_option("--free", o->free, "free size (elements per partition)")->capture_default_str();
  cmd->add_option("--lanes", o->lanes, "lanes of the engine (a built RTL size: 8, 16, 32, 128)")
      ->capture_default_str()->check(CLI::Range(1, 128));
  cmd->add_option("--alu0", o->alu0, "first ALU operation (add, subtract, multiply, max, min, "
                                     "and, or, xor, shl, lshr, ashr, bypass)");
  cmd->add_option("--alu1", o->alu1, "second ALU operation (tensor_scalar, scan, "
                                     "scalar_tensor_tensor; tensor_scalar_reduce's reduction)");
  cmd->add_option("--rounding", o->rounding, "rne or sr (stochastic)")->capture_default_str();
  cmd->add_flag("--saturate", o->saturate, "saturate on overflow instead of Inf/NaN");
  cmd->add_option("--engine", o->engine, "golden, rtl, or cosim (RTL checked against golden)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the data, rounding and back-pressure")
      ->capture_default_str();
  cmd->add_option("--stall", o->stall, "chance of back-pressure per cycle on every port")
      ->capture_default_str();
  add_waves_options(cmd, o->waves);
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o] { run_vec(*o); });
}

}  // namespace ncore::cli
