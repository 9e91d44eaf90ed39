// The ncore command line, run as a user would: exit codes, stdout, and the stderr line that a
// bad input gets.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct Result {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result run(const std::string& args, const std::string& input = "") {
  // CTest runs the tests in parallel: each test gets its own files.
  const std::string base = fmt::format(
      "{}ncore_cli_{}_{}", ::testing::TempDir(),
      ::testing::UnitTest::GetInstance()->current_test_info()->name(), getpid());
  const std::string in = base + ".in", out = base + ".out", err = base + ".err";
  std::ofstream(in) << input;
  const std::string cmd =
      fmt::format("'{}' {} < '{}' > '{}' 2> '{}'", NCORE_BINARY, args, in, out, err);
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

TEST(Cli, CastRoundsToNearestEven) {
  // 1.0, 1 + 2^-8 (tie, rounds down to even), 1 + 3*2^-8 (tie, rounds up to even), 1e9
  const Result r = run("cast --from fp32 --to bf16", "3f800000\n3f808000\n0x3F818000\n4e6e6b28\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "3f80\n3f80\n3f82\n4e6e\n");
}

TEST(Cli, CastSaturatesOnlyWhenAsked) {
  EXPECT_EQ(run("cast --from fp32 --to e4m3", "43e80000\n").out, "7e\n");  // 464: tie to 448
  EXPECT_EQ(run("cast --from fp32 --to e4m3", "44000000\n").out, "7f\n");  // 512: NaN
  EXPECT_EQ(run("cast --from fp32 --to e4m3 --sat", "44000000\nc4000000\n").out, "7e\nfe\n");
  EXPECT_EQ(run("cast --from fp32 --to e5m2 --no-sat", "7f800000\n").out, "7c\n");
  EXPECT_EQ(run("cast --from fp32 --to e5m2 --sat", "ff800000\n").out, "fb\n");
}

TEST(Cli, CastBetweenNarrowTypesAndTf32Container) {
  EXPECT_EQ(run("cast --from bf16 --to e4m3", "3f80\n").out, "38\n");
  EXPECT_EQ(run("cast --from fp16 --to tf32", "3c01\n").out, "3f802000\n");
  EXPECT_EQ(run("cast --from fp32 --to int8", "42fe0000\n").out, "7f\n");  // 127.0
}

TEST(Cli, StochasticRoundingReproducesFromTheSeed) {
  std::string input;
  for (int i = 0; i < 64; ++i) input += "3f804000\n";  // 1 + 2^-9: a quarter ulp of BF16
  const Result a = run("cast --from fp32 --to bf16 --round sr --seed 42", input);
  const Result b = run("cast --from fp32 --to bf16 --round sr --seed 42", input);
  const Result c = run("cast --from fp32 --to bf16 --round sr --seed 43", input);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_NE(a.out.find("3f80"), std::string::npos);
  EXPECT_NE(a.out.find("3f81"), std::string::npos);
}

TEST(Cli, DecodePrintsValueAndClass) {
  const Result r = run("decode --type e4m3", "7e\n7f\nff\n80\n01\n38\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "448 normal\nnan nan\nnan nan\n-0 zero\n0.001953125 subnormal\n1 normal\n");
  EXPECT_EQ(run("decode --type fp32", "ff800000\n3dcccccd\n").out,
            "-inf inf\n0.1 normal\n");
  EXPECT_EQ(run("decode --type int16", "ffff\n").out, "-1 normal\n");
}

TEST(Cli, BadInputNamesTheLineAndFails) {
  Result r = run("decode --type bf16", "3f80\n\n# comment\nzz12\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");  // nothing half-written
  EXPECT_NE(r.err.find("stdin:4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'zz12'"), std::string::npos) << r.err;

  r = run("cast --from e4m3 --to bf16", "1ff\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("stdin:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("8 bits"), std::string::npos) << r.err;

  r = run("cast --from fp64 --to bf16", "0\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'fp64'"), std::string::npos) << r.err;
}

TEST(Cli, MatmulFromFilesMatchesHandComputedResult) {
  // stationary [K=2, M=2] = [[1, 2], [3, 4]], moving [K=2, N=3] = [[1, 0, -1], [0.5, 2, 1]]
  // out[m][n] = sum_k st[k][m] * mv[k][n]: [[2.5, 6, 2], [4, 8, 2]]
  const Result r = run(fmt::format("matmul --dtype bf16 --stationary {0}/st_2x2.hex --moving "
                                   "{0}/mv_2x3.hex --decode", NCORE_TEST_DATA));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2.5 6 2\n4 8 2\n"), std::string::npos) << r.out;
}

TEST(Cli, MatmulRandomIsReproducibleAndChecksShapes) {
  const Result a = run("matmul --k 16 --m 4 --n 8 --dtype e4m3 --moving-type e5m2 --seed 9");
  const Result b = run("matmul --k 16 --m 4 --n 8 --dtype e4m3 --moving-type e5m2 --seed 9");
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("seed=9"), std::string::npos);

  Result r = run("matmul --k 16 --m 4 --n 600 --dtype bf16");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'N' = 600"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("512"), std::string::npos) << r.err;

  r = run(fmt::format("matmul --dtype bf16 --stationary {0}/st_2x2.hex --moving "
                      "{0}/mv_ragged.hex", NCORE_TEST_DATA));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("mv_ragged.hex:3"), std::string::npos) << r.err;
}

// Every mode runs in lockstep on a small array and reports its dense-equivalent MACs.
TEST(Cli, GemmRunsEveryModeInLockstep) {
  for (const char* mode : {"dense", "double-row", "transpose", "sparse-4:8", "sparse-4:12",
                           "sparse-4:16"}) {
    const std::string type = std::string(mode) == "double-row" ? "e4m3" : "bf16";
    const Result r = run(fmt::format("gemm --mode {} --k 40 --n 12 --m 24 --dtype {} --rows 8 "
                                     "--cols 8 --stall 0.2 --all-classes --json", mode, type));
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    EXPECT_NE(r.out.find("\"mismatches\": 0"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"psum_writes_compared\": 0,"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(fmt::format("\"mode\": \"{}\"", mode)), std::string::npos) << r.out;
  }
}

TEST(Cli, GemmRejectsABadModeAndDoubleRowWithoutFp8) {
  Result r = run("gemm --mode sparse-2:4 --k 8 --n 8 --m 8 --rows 8 --cols 8");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sparse-2:4"), std::string::npos) << r.err;
  r = run("gemm --mode double-row --dtype bf16 --k 8 --n 8 --m 8 --rows 8 --cols 8");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("FP8"), std::string::npos) << r.err;
}

// An array size with no Verilated model is an error that lists the sizes built and names the
// option that adds the others (24x24 is never built). Logic PEs named: the fast PE build's
// default has its own message (FastPe.AnUnbuiltSizeIsAClearError).
TEST(Cli, GemmOnAnArraySizeNotBuiltListsTheBuiltOnes) {
  const Result r = run("gemm --k 8 --n 8 --m 8 --rows 24 --cols 24 --engine rtl --pe-arith logic");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no RTL model of a 24x24 array is built; built sizes: 8x8"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-DNCORE_ALL_SIZES=ON"), std::string::npos) << r.err;
}

// Tiled batches run in lockstep; a matmul that does not fit its tile, or a bad tiling, is an
// error naming the limit.
TEST(Cli, GemmTilingRunsBatchesAndRejectsWhatDoesNotFit) {
  Result r = run("gemm --tiling 4x4 --batch 8 --k 4 --n 4 --m 64 --rows 16 --cols 16 --stall 0.2 "
                 "--all-classes --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"mismatches\": 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"psum_writes_compared\": 2048"), std::string::npos) << r.out;
  r = run("gemm --tiling 4x4 --k 8 --n 4 --m 8 --rows 16 --cols 16");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("K <= 4"), std::string::npos) << r.err;
  r = run("gemm --tiling 3x1 --k 4 --n 4 --m 8 --rows 16 --cols 16");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'3x1'"), std::string::npos) << r.err;
}

// Issue 52's two levers from the command line: --pe-arith host-fpu (the fast PE build's model)
// and --threads (the array in column slices) give the default model's cycles, and the JSON names
// what ran; a bad choice is an error naming the option.
TEST(Cli, GemmPeArithAndThreadsGiveTheSameCyclesAndSayWhatRan) {
  const std::string gemm = "gemm --k 40 --n 20 --m 64 --rows 16 --cols 16 --stall 0.1 --all-classes --json";
  std::vector<nlohmann::json> runs;
  for (const char* choice : {"--pe-arith logic --threads 0", "--pe-arith host-fpu --threads 0",
                             "--pe-arith logic --threads 2", "--pe-arith host-fpu --threads 3 --engine-cols 2"}) {
    const Result r = run(gemm + " " + choice);
    ASSERT_EQ(r.exit_code, 0) << choice << ": " << r.err;
    runs.push_back(nlohmann::json::parse(r.out));
    EXPECT_EQ(runs.back()["mismatches"], 0) << choice;
    EXPECT_GT(runs.back()["psum_writes_compared"].get<int>(), 0) << choice;
  }
  EXPECT_EQ(runs[1]["pe_arith"], "host-fpu");
  EXPECT_EQ(runs[2]["threads"], 2);
  EXPECT_EQ(runs[3]["slice_cols"], nlohmann::json({4, 6, 6})) << runs[3].dump();  // (16 + 2 + 1) / 3 - 2
  for (const auto& j : runs) EXPECT_EQ(j["cycles"], runs[0]["cycles"]) << j.dump();
  Result r = run(gemm + " --pe-arith fpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--pe-arith"), std::string::npos) << r.err;
  r = run(gemm + " --threads 17");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--threads 17: at most 16 for a 16-column array"), std::string::npos) << r.err;
  r = run(gemm + " --threads 2 --engine-cols -3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--engine-cols: Value -3 not in range 0 to 4096"), std::string::npos) << r.err;
}

TEST(Cli, HbmTraceFromStdinReportsEveryFigure) {
  std::string trace = "# two streams\n";
  for (int i = 0; i < 64; ++i) trace += fmt::format("0 R {:x} 256\n0 W {:x} 256\n", i * 256, 0x400000 + i * 256);
  for (const char* engine : {"golden", "cosim"}) {
    const Result r = run(fmt::format("hbm --trace - --engine {} --json", engine), trace);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* key : {"\"utilization\"", "\"gbps\"", "\"peak_gbps\"", "\"row_hit_rate\"",
                            "\"lat_mean_ns\"", "\"lat_p99_ns\"", "\"max_age_cycles\"",
                            "\"bursts\":1024", "\"peak_gbps\":25.6"})
      EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
  }
  const Result cosim = run("hbm --trace - --engine cosim", trace);
  EXPECT_NE(cosim.out.find("co-simulation compared"), std::string::npos) << cosim.out;
}

TEST(Cli, HbmBadTraceLineNamesTheLine) {
  const Result r = run("hbm --trace -", "0 R 0 64\n\n7 Q 40 64\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ncore: error: stdin:3: direction: expected R or W, found 'Q'\n");
  const Result far = run("hbm --trace -", "0 R ffffffe0 64\n");
  EXPECT_EQ(far.exit_code, 1);
  EXPECT_NE(far.err.find("stdin:1: address: expected 64 bytes at 0xffffffe0 to end within HBM"), std::string::npos)
      << far.err;
  const Result bad = run("hbm --trace - --channels 3", "0 R 0 64\n");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("channels is 3"), std::string::npos) << bad.err;
  const Result missing = run("hbm --trace /nonexistent/t.trace");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/t.trace: cannot open the trace"), std::string::npos);
}

TEST(Cli, VecCosimComparesEveryElementAndReportsCycles) {
  const Result r = run("vec --op tensor_scalar --dtype-in fp16 --dtype-out e4m3 --alu0 multiply "
                       "--alu1 add --rounding sr --partitions 16 --free 100 --lanes 32 --stall 0.2 "
                       "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"\"cycles\"", "\"cost_model_cycles\":106", "\"elements_compared\":1600",
                          "\"mismatches\":0", "\"partitions\":16"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
  const Result text = run("vec --op transpose --dtype-in bf16 --lanes 8 --free 16");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("cycles 38 (cost model 38: 1.000x)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("128 element values compared bit for bit, 0 mismatches"),
            std::string::npos) << text.out;
  const Result golden = run("vec --op tensor_reduce --engine golden --free 64");
  ASSERT_EQ(golden.exit_code, 0) << golden.err;
  EXPECT_NE(golden.out.find("cost model 70 cycles"), std::string::npos) << golden.out;
}

// Issue 29's instructions through ncore vec: co-simulated, at their cost model's cycles.
TEST(Cli, VecRunsTheEngineOperations) {
  const struct {
    const char* args;
    const char* cycles;
  } cases[] = {
      {"--op memset --value 2.5 --dtype-out bf16 --free 64", "\"cycles\":68"},
      {"--op iota --dtype-out int32 --free 64", "\"cycles\":214"},
      {"--op affine_select --cmp less --value -1e4 --free 64", "\"cycles\":214"},
      {"--op bn_stats --free 512", "\"cycles\":541"},
      {"--op bn_aggr --free 63", "\"cycles\":88"},
      {"--op scalar_tensor_tensor --alu0 subtract --alu1 multiply --free 64", "\"cycles\":134"},
      {"--op tensor_scalar_reduce --alu0 multiply --alu1 max --free 64", "\"cycles\":71"},
  };
  for (const auto& c : cases) {
    const Result r = run(fmt::format("vec {} --lanes 8 --json", c.args));
    ASSERT_EQ(r.exit_code, 0) << c.args << ": " << r.err;
    EXPECT_NE(r.out.find(c.cycles), std::string::npos) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find("\"mismatches\":0"), std::string::npos) << c.args << ": " << r.out;
  }
  const Result wide = run("vec --op bn_stats --free 600 --lanes 8");
  EXPECT_EQ(wide.exit_code, 1);
  EXPECT_NE(wide.err.find("bn_stats reads at most 512 elements"), std::string::npos) << wide.err;
  const Result triples = run("vec --op bn_aggr --free 64 --lanes 8");
  EXPECT_EQ(triples.exit_code, 1);
  EXPECT_NE(triples.err.find("a multiple of 3, found 64"), std::string::npos) << triples.err;
  const Result inexact = run("vec --op memset --value 3.5 --dtype-out int8 --lanes 8");
  EXPECT_EQ(inexact.exit_code, 1);
  EXPECT_NE(inexact.err.find("--value: 3.5 is not a int8 value"), std::string::npos) << inexact.err;
  const Result cmp = run("vec --op tensor_copy --cmp less --lanes 8");
  EXPECT_EQ(cmp.exit_code, 1);
  EXPECT_NE(cmp.err.find("only affine_select compares"), std::string::npos) << cmp.err;
}

TEST(Cli, VecBadArgumentsSayWhatWasExpected) {
  const Result op = run("vec --op tensor_mangle");
  EXPECT_EQ(op.exit_code, 1);
  EXPECT_NE(op.err.find("unknown vector-engine operation 'tensor_mangle'"), std::string::npos) << op.err;
  const Result alu = run("vec --alu0 divide");
  EXPECT_EQ(alu.exit_code, 1);
  EXPECT_NE(alu.err.find("unknown ALU operation 'divide'"), std::string::npos) << alu.err;
  const Result parts = run("vec --lanes 8 --partitions 9");
  EXPECT_EQ(parts.exit_code, 1);
  EXPECT_NE(parts.err.find("illegal (partitions)"), std::string::npos) << parts.err;
  const Result big = run("vec --dtype-in fp32 --free 20000");
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_NE(big.err.find("--free: expected 1..16384 elements of fp32"), std::string::npos) << big.err;
  const Result lanes = run("vec --lanes 12");
  EXPECT_EQ(lanes.exit_code, 1);
  EXPECT_NE(lanes.err.find("no RTL model with 12 lanes"), std::string::npos) << lanes.err;
  const Result mix = run("vec --op tensor_tensor --dtype-in bf16 --alu0 xor");
  EXPECT_EQ(mix.exit_code, 1);
  EXPECT_NE(mix.err.find("illegal (dtype)"), std::string::npos) << mix.err;
}

TEST(Cli, RunPrintsCyclesUtilizationAndOutputChecksums) {
  const Result r = run(fmt::format("run {}/../programs/softmax.s --json", NCORE_TEST_DATA));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"status\": \"done\""), std::string::npos) << r.out;
  for (const char* key : {"\"cycles\"", "\"te_utilization\"", "\"hbm_gbps\"", "\"act\"", "\"outputs\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
  // Re-seeding the inputs changes the output's checksum; the same seed gives the same one.
  const Result a = run(fmt::format("run {}/../programs/softmax.s --seed 5", NCORE_TEST_DATA));
  const Result b = run(fmt::format("run {}/../programs/softmax.s --seed 5", NCORE_TEST_DATA));
  const Result c = run(fmt::format("run {}/../programs/softmax.s --seed 6", NCORE_TEST_DATA));
  auto sum = [](const std::string& out) { return out.substr(out.find("fnv1a")); };
  EXPECT_EQ(sum(a.out), sum(b.out));
  EXPECT_NE(sum(a.out), sum(c.out));
}

// Issue 47's options: --program-out (the image map, the same for either core), ncore asm --image
// (every word's address, from the same layout), --no-fetch (golden only: no fetch traffic), and
// each refused cleanly when it cannot be honoured.
TEST(Cli, RunProgramOutAsmImageAndNoFetch) {
  const std::string prog = fmt::format("{}/../programs/small/gemm_8.s", NCORE_TEST_DATA);
  const std::string map = ::testing::TempDir() + "ncore_image.json", rtl_map = ::testing::TempDir() + "ncore_image_rtl.json";
  const Result golden = run(fmt::format("run {} --size 8 --json --timeline --program-out {}", prog, map));
  ASSERT_EQ(golden.exit_code, 0) << golden.err;
  const auto g = nlohmann::json::parse(golden.out);
  const auto m = nlohmann::json::parse(std::ifstream(map));
  EXPECT_EQ(m.at("streams"), g.at("image").at("streams"));
  EXPECT_EQ(g.at("fetch_bytes").get<uint64_t>(), g.at("instructions").get<uint64_t>() * 128);
  EXPECT_FALSE(g.at("fetch_stalls").empty());  // every queue waits for its first instructions
  const Result rtl = run(fmt::format("run {} --size 8 --engine rtl --json --program-out {}", prog, rtl_map));
  ASSERT_EQ(rtl.exit_code, 0) << rtl.err;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(rtl_map)).at("streams"), m.at("streams"));
  EXPECT_EQ(nlohmann::json::parse(rtl.out).at("fetch_bytes"), g.at("fetch_bytes"));
  // ncore asm --image: the pe stream's first word at the map's address.
  const Result listing = run("asm " + prog + " --image");
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  EXPECT_NE(listing.out.find(fmt::format("# 0x{:010x} ", m.at("streams").at("pe").at("addr").get<uint64_t>())),
            std::string::npos) << listing.out;
  const Result no_fetch = run(fmt::format("run {} --size 8 --json --no-fetch", prog));
  ASSERT_EQ(no_fetch.exit_code, 0) << no_fetch.err;
  const auto n = nlohmann::json::parse(no_fetch.out);
  EXPECT_EQ(n.at("fetch_bytes"), 0u);
  EXPECT_LT(n.at("cycles").get<uint64_t>(), g.at("cycles").get<uint64_t>());
  // Refusals: a map or a trace that cannot be written, --no-fetch on the RTL, --image with --hex.
  const Result unwritable = run(fmt::format("run {} --size 8 --program-out /nonexistent/ncore/image.json", prog));
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("--program-out /nonexistent/ncore/image.json: cannot write the file"), std::string::npos)
      << unwritable.err;
  const Result no_trace = run(fmt::format("run {} --size 8 --trace-json /nonexistent/ncore/trace.json", prog));
  EXPECT_EQ(no_trace.exit_code, 1);
  EXPECT_NE(no_trace.err.find("--trace-json: cannot write /nonexistent/ncore/trace.json"), std::string::npos)
      << no_trace.err;
  const Result rtl_no_fetch = run(fmt::format("run {} --size 8 --engine rtl --no-fetch", prog));
  EXPECT_EQ(rtl_no_fetch.exit_code, 1);
  EXPECT_NE(rtl_no_fetch.err.find("--no-fetch: only the golden core runs without instruction fetch; expected --engine "
                                  "golden, found 'rtl'"), std::string::npos) << rtl_no_fetch.err;
  const Result both = run("asm " + prog + " --image --hex");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("--image and --hex"), std::string::npos) << both.err;
}

// --no-data: the golden core's cycles and timeline without arithmetic or data, and no outputs.
TEST(Cli, RunNoDataGivesTheSameCyclesAndNoOutputs) {
  const std::string prog = fmt::format("{}/../programs/softmax.s", NCORE_TEST_DATA);
  const Result data = run(fmt::format("run {} --json --timeline", prog));
  const Result timing = run(fmt::format("run {} --json --timeline --no-data", prog));
  ASSERT_EQ(data.exit_code, 0) << data.err;
  ASSERT_EQ(timing.exit_code, 0) << timing.err;
  const auto d = nlohmann::json::parse(data.out), t = nlohmann::json::parse(timing.out);
  EXPECT_EQ(d.at("cycles"), t.at("cycles"));
  EXPECT_EQ(d.at("queues"), t.at("queues"));
  EXPECT_EQ(d.at("timeline"), t.at("timeline"));
  EXPECT_FALSE(d.at("timing_only").get<bool>());
  EXPECT_TRUE(t.at("timing_only").get<bool>());
  EXPECT_TRUE(d.contains("outputs"));
  EXPECT_FALSE(t.contains("outputs"));
  EXPECT_NE(run(fmt::format("run {} --no-data", prog)).out.find("output        none: timing only (--no-data)"),
            std::string::npos);
  // Refused: --no-data on another engine than the golden core, or with --outputs.
  const Result rtl = run(fmt::format("run {} --no-data --engine rtl", prog));
  EXPECT_EQ(rtl.exit_code, 1);
  EXPECT_NE(rtl.err.find("--no-data: only the golden core runs without data; expected --engine golden, found 'rtl'"),
            std::string::npos) << rtl.err;
  const Result outputs = run(fmt::format("run {} --no-data --outputs {}ncore_no_data", prog, ::testing::TempDir()));
  EXPECT_EQ(outputs.exit_code, 1);
  EXPECT_NE(outputs.err.find("--outputs: a --no-data run computes no outputs"), std::string::npos) << outputs.err;
}

// Co-simulation reports the golden core's cycles beside the RTL's, and their ratio, both from
// the one run (the golden cycles are the golden engine's own).
TEST(Cli, RunCosimReportsGoldenCyclesBesideTheRtlCycles) {
  const std::string prog = fmt::format("{}/../programs/small/gemm_8.s", NCORE_TEST_DATA);
  const Result cosim = run(fmt::format("run {} --engine cosim --size 8 --json", prog));
  ASSERT_EQ(cosim.exit_code, 0) << cosim.err;
  const Result golden = run(fmt::format("run {} --engine golden --size 8 --json", prog));
  ASSERT_EQ(golden.exit_code, 0) << golden.err;
  const auto c = nlohmann::json::parse(cosim.out), g = nlohmann::json::parse(golden.out);
  EXPECT_EQ(c.at("golden_cycles"), g.at("cycles"));
  EXPECT_GT(c.at("cycles").get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(c.at("golden_over_rtl").get<double>(),
                   g.at("cycles").get<double>() / c.at("cycles").get<double>());
  // --timing-band fails the run when the two differ by more than the band (gemm_8 at the uniform
  // timing: 1.6%).
  EXPECT_EQ(run(fmt::format("run {} --engine cosim --size 8 --timing uniform --timing-band 0.05", prog)).exit_code, 0);
  const Result narrow = run(fmt::format("run {} --engine cosim --size 8 --timing uniform --timing-band 0.001", prog));
  EXPECT_EQ(narrow.exit_code, 1);
  EXPECT_NE(narrow.err.find("--timing-band 0.001: the golden core took"), std::string::npos) << narrow.err;
  // --timeline: every instruction's RTL issue and commit cycles, and the golden core's beside.
  const Result tl = run(fmt::format("run {} --engine cosim --size 8 --json --timeline", prog));
  ASSERT_EQ(tl.exit_code, 0) << tl.err;
  const auto t = nlohmann::json::parse(tl.out);
  EXPECT_EQ(t.at("timeline").size(), 28u);
  EXPECT_EQ(t.at("golden_timeline").size(), 28u);
  // Each entry ends with its opcode, the same on both sides: the pe queue's nc_matmul lines are
  // a load_stationary and a multiply_moving each.
  for (const auto& side : {t.at("timeline"), t.at("golden_timeline")}) {
    std::multiset<std::string> pe;
    for (const auto& e : side) {
      ASSERT_EQ(e.size(), 6u) << e;
      EXPECT_NE(e[5].get<std::string>(), "?") << e;
      if (e[0] == "pe") pe.insert(e[5].get<std::string>());
    }
    EXPECT_GT(pe.count("load_stationary"), 0u);
    EXPECT_EQ(pe.count("load_stationary"), pe.count("multiply_moving"));
  }
}

TEST(Cli, RunReportsDeadlockAndBadPrograms) {
  const std::string dead = ::testing::TempDir() + "ncore_dead.s";
  std::ofstream(dead) << ".sem a\n.sem b\n.queue pe\nsem_wait a>=1\nsem_signal b\n"
                         ".queue dve\nsem_wait b>=1\nsem_signal a\n";
  const Result d = run("run " + dead);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("deadlock at cycle "), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("pe waits at instruction 0 (" + dead + ":4:1: nop) for semaphore a >= 1 (it is 0)"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("dve waits"), std::string::npos) << d.err;

  const std::string bad = ::testing::TempDir() + "ncore_bad.s";
  std::ofstream(bad) << "# a comment\n.queue pe\n  load_stationary k=128 m=1000\n";
  const Result b = run("run " + bad);
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find(bad + ":3:27: field m: expected an unsigned 9-bit value, found 1000"), std::string::npos) << b.err;
}

TEST(Cli, AsmHexDisassemblesBackAndIllegalWordsAreNamed) {
  const std::string prog = ::testing::TempDir() + "ncore_asm.s";
  std::ofstream(prog) << ".queue dve\ntensor_copy partitions=4 src0_ap=[[1,8]] dst=0x40 dst_ap=[[1,8]] tag=3\n";
  const Result hex = run("asm --hex " + prog);
  ASSERT_EQ(hex.exit_code, 0) << hex.err;
  const std::string words = ::testing::TempDir() + "ncore_words.hex";
  // The listing, then the same word with a reserved bit (the top one) set.
  std::string line = hex.out.substr(hex.out.find('\n') + 1, 256);
  std::ofstream(words) << hex.out << "8" << line.substr(1) << "\n";
  const Result dis = run("disasm " + words);
  EXPECT_EQ(dis.exit_code, 1);
  EXPECT_NE(dis.out.find("tensor_copy partitions=0x4 src0_count0=0x8 dst_addr=0x40 dst_count0=0x8 tag=3"), std::string::npos) << dis.out;
  EXPECT_NE(dis.out.find(":3: illegal word: illegal_reserved: bit 1023 is set"), std::string::npos) << dis.out;
}

}  // namespace
