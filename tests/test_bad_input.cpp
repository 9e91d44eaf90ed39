// Bad input, one malformed input of each kind, run through `ncore` as a user would: each must
// end with exit status 1 and one stderr line "ncore: error: <where>: <expected>, found <what>"
// naming the file, line and column (or the option), within bounded time and memory (the
// command runs under `timeout` and a virtual-memory limit, so a hang or an unbounded
// allocation fails the test instead of the machine). The README's bad-input table lists them.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

struct BadInput {
  std::string name;      // the test's name
  std::string file;      // written to the input file ("" for none); "{file}" in args names it
  std::string ext;       // the input file's extension
  std::string args;      // ncore's arguments
  std::string expected;  // a fragment stderr must hold (the place and the complaint)
  bool names_file = true;  // the error is about the file's text (not a run-time failure)
};

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string nested_ifs(int depth) {
  return ".queue sp\n" + repeat(".if 1\n", depth) + "nop\n" + repeat(".endif\n", depth);
}

const std::vector<BadInput>& cases() {
  static const std::vector<BadInput> all = {
      // assembler
      {"SemaphoreNumberPastInt", ".queue sp\nsem_signal s99999999999\n", "s", "asm {file}",
       ":2:12: expected a semaphore s0..s31, found 's99999999999'"},
      {"EquMinDividedByMinusOne", ".equ a -9223372036854775807-1\n.equ b a/-1\n", "s", "asm {file}",
       ":2:9: expected a value within 64-bit signed range, found -9223372036854775808 / -1 overflowing"},
      {"EquRemainderOfMinByMinusOne", ".equ a -9223372036854775807-1\n.equ b a%-1\n", "s", "asm {file}",
       "overflowing"},
      {"EquProductOverflows", ".equ a 4611686018427387904*4\n", "s", "asm {file}",
       ":1:27: expected a value within 64-bit signed range, found 4611686018427387904 * 4 overflowing"},
      {"EquSumOverflows", ".equ a 9223372036854775807+1\n", "s", "asm {file}",
       "found 9223372036854775807 + 1 overflowing"},
      {"EquNegatedMinimum", ".equ a -(-9223372036854775807-1)\n", "s", "asm {file}", "overflowing"},
      {"LiteralPast2To63", ".equ a 0xffffffffffffffff\n", "s", "asm {file}",
       ":1:8: expected a number below 2^63, found '0xffffffffffffffff'"},
      {"ThousandsOfNestedParentheses", ".equ a " + repeat("(", 5000) + "1" + repeat(")", 5000) + "\n", "s",
       "asm {file}", "expected at most 64 nested parentheses or signs, found more"},
      {"ThousandsOfUnaryMinuses", ".equ a " + repeat("-", 100000) + "1\n", "s", "asm {file}",
       "expected at most 64 nested parentheses or signs, found more"},
      {"DeeplyNestedIf", nested_ifs(1000), "s", "asm {file}",
       "expected .rept and .if blocks nested at most 64 deep, found more"},
      {"ReptCountOf4e9", ".rept i 4000000000\n.endr\n", "s", "asm {file}",
       ":1:9: expected a count 0..1048576, found 4000000000"},
      {"NestedReptOf1e5By1e5", ".rept i 100000\n.rept j 100000\n.endr\n.endr\n", "s", "asm {file}",
       "expected at most 4194304 lines after .rept expansion, found more"},
      {"ImageMisaligned", ".image 0x1001000\n.queue sp\nnop\n", "s", "asm {file}",
       ":1:8: expected a multiple of 16384 (each stream starts on such a boundary), found 0x1001000"},
      {"ImageOverATensor", ".tensor t hbm addr=0 dtype=fp32 shape=8192\n.image 0x4000\n.queue sp\nnop\n", "s",
       "asm {file}", ":1:1: tensor 't' [0x0, 0x8000) overlaps the program image [0x4000, 0x4080) placed at"},
      {"HbmTensorOf1e9By1e9", ".tensor t hbm addr=0 dtype=bf16 shape=1000000000x1000000000\n", "s", "asm {file}",
       ":1:39: tensor t: expected a shape of at most 4294967296 bytes, found more"},
      {"HbmTensorPastTheCoreWindow", ".tensor t hbm addr=0xffffff00 dtype=bf16 shape=1024\n", "s", "asm {file}",
       ":1:20: tensor t: bytes [0xffffff00, 0x100000700) leave the core's HBM window [0, 0x100000000)"},
      {"SbufPartitionPast2To32", ".tensor t sbuf addr=0 partition=4294967296 dtype=bf16 shape=1x16\n", "s",
       "asm {file}", ":1:33: expected a partition 0..127, found 4294967296"},
      {"SbufTensorPastThePartitions", ".tensor t sbuf addr=0 partition=120 dtype=bf16 shape=16x16\n", "s",
       "asm {file}", "tensor t: partitions [120, 136) leave the 128 SBUF partitions"},
      {"NegativeTensorAddress", ".tensor t hbm addr=-64 dtype=bf16 shape=16\n", "s", "asm {file}",
       ":1:20: expected an address >= 0, found -64"},
      {"ProgramRunMissingFile", "", "s", "run /nonexistent/ncore.s", "/nonexistent/ncore.s: cannot open the program"},
      // HBM traces
      {"TraceRequestAtTheTopOfTheAddressSpace", "0 R ffffffffffffffc0 64\n", "trace",
       "hbm --trace {file} --engine golden", ".trace:1: address: expected 64 bytes at 0xffffffffffffffc0 to end within HBM"},
      {"TraceRequestPastTheEnd", "0 R 0 64\n1 W 0xfffffffe0 64\n", "trace", "hbm --trace {file} --engine golden",
       ".trace:2: address: expected 64 bytes at 0xfffffffe0 to end within HBM"},
      {"TraceOfAGibibyte", "0 R 0 1073741824\n", "trace", "hbm --trace {file} --engine golden --channels 16",
       ".trace:1: bytes: expected a trace of at most 16777216 bursts (512 MiB), found more"},
      {"TraceBadDirection", "0 X 0 64\n", "trace", "hbm --trace {file} --engine golden",
       ".trace:1: direction: expected R or W, found 'X'"},
      // command-line options
      {"VecNegativeLanes", "", "", "vec --lanes -1 --engine golden", "--lanes: Value -1 not in range 1 to 128"},
      {"VecHundredMillionLanes", "", "", "vec --lanes 100000000 --engine golden",
       "--lanes: Value 100000000 not in range 1 to 128"},
      {"RunSizeOfAMillion", "", "", "run /dev/null --size 1000000", "--size: Value 1000000 not in range"},
      {"RunTimingBandOfTwo", "", "", "run /dev/null --engine cosim --timing-band 2",
       "--timing-band: Value 2 not in range 0.000000 to 1.000000"},
      {"RunTimingBandWithoutCosim", "", "", "run /dev/null --timing-band 0.05",
       "--timing-band: compares the golden core with the RTL; expected --engine cosim, found 'golden'"},
      {"RunRtlHbmOnTheGoldenCore", "", "", "run /dev/null --hbm rtl",
       "--hbm rtl: the golden core times its own HBM; expected --engine rtl or cosim"},
      {"RunHbmOfNoKind", "", "", "run /dev/null --engine rtl --hbm dram", "--hbm: dram not in {reference,rtl}"},
      {"RunNoDataOnTheRtl", "", "", "run /dev/null --engine rtl --no-data",
       "--no-data: only the golden core runs without data; expected --engine golden, found 'rtl'"},
      {"RunNoDataWithOutputs", "", "", "run /dev/null --no-data --outputs /tmp/ncore_no_data_outputs",
       "--outputs: a --no-data run computes no outputs"},
      {"CollectiveOf2To60Bytes", "", "", "tlm collective --bytes 1152921504606846976",
       "--bytes: Value 1152921504606846976 not in range"},
      {"CollectiveRealDataPastTheLimit", "", "", "tlm collective --bytes 1073741824 --data on",
       "collective: --bytes: with real data expected at most 268435456 bytes per chip"},
      {"CollectiveUnknownAlgorithm", "", "", "tlm collective --algo tree", "--algo: tree not in {ring,"},
      // TLM configuration
      {"TlmConfigKeyOutOfRange", R"({"x": 1000})", "json", "tlm info --config {file}",
       ".json: key 'x': expected an integer in [1, 64], found 1000"},
      {"TlmConfigNotJson", R"({"x": )", "json", "tlm info --config {file}", ".json: not valid JSON"},
      // ncore tlm run: a configuration for another system, an RTL core that is not there, a bad group
      {"TlmRunConfigForAnotherSystem", R"({"system": "trn2"})", "json",
       "tlm run " NCORE_PROGRAMS "/system/spmd.s --system chip --config {file}",
       ".json: \"system\" is 'trn2' but --system is 'chip'"},
      {"TlmRunRtlCoreNotThere", "", "", "tlm run " NCORE_PROGRAMS "/system/spmd.s --rtl-cores 0.0,0.8",
       "--rtl-cores: '0.8': expected chip 0..0 and core 0..7"},
      {"TlmRunRtlCoreList", "", "", "tlm run " NCORE_PROGRAMS "/system/spmd.s --rtl-cores 0:1",
       "--rtl-cores: '0:1': expected CHIP.CORE (two integers)"},
      {"TlmRunNoDataCoreNotThere", "", "", "tlm run " NCORE_PROGRAMS "/system/spmd.s --no-data-cores 0.9",
       "--no-data-cores: '0.9': expected chip 0..0 and core 0..7"},
      {"TlmRunNoDataTwice", "", "", "tlm run " NCORE_PROGRAMS "/system/spmd.s --no-data --no-data-cores 0.1",
       "--no-data excludes --no-data-cores"},
      {"TlmRunRtlCoreOfASizeNotBuilt", R"({"system": "chip", "chip": {"pe_rows": 16, "pe_cols": 16}})", "json",
       "tlm run " NCORE_PROGRAMS "/system/spmd.s --system chip --config {file} --rtl-cores 0.0 --pe-arith logic",
       "no RTL core of size 16 is built", false},
      {"TlmRunLncOfThree", "", "", "tlm run " NCORE_PROGRAMS "/system/lnc2.s --lnc 3", "--lnc: 3 not in {1,2}"},
      {"TlmRunLnc2OnOddCores", R"({"system": "chip", "chip": {"cores": 3}})", "json",
       "tlm run " NCORE_PROGRAMS "/system/lnc2.s --system chip --config {file} --lnc 2",
       ".json: configuration: key 'chip.cores': expected an even number at lnc 2 (two cores a logical core), found 3"},
      {"TlmRunRtlSliceOfZero", R"({"system": "chip", "rtl_slice_cycles": 0})", "json",
       "tlm run " NCORE_PROGRAMS "/system/spmd.s --system chip --config {file}",
       ".json: key 'rtl_slice_cycles': expected an integer in [1, 1000000], found 0"},
      {"TlmRunHbmTooSlowForItsRefresh", R"({"system": "chip", "chip": {"hbm_pin_gbps": 0.25}})", "json",
       "tlm run " NCORE_PROGRAMS "/system/spmd.s --system chip --config {file}",
       ".json: configuration: key 'chip.hbm_pin_gbps': expected a pin rate at whose HBM clock (16 ns) the DRAM's timing "
       "fits the controller, found 0.25 (HBM configuration: refi is"},
      {"TlmRunHbmStepEveryCycleNotABoolean", R"({"system": "chip", "chip": {"hbm_step_every_cycle": 1}})", "json",
       "tlm run " NCORE_PROGRAMS "/system/spmd.s --system chip --config {file}",
       ".json: key 'chip.hbm_step_every_cycle': expected true or false, found 1"},
      {"TlmRunUnknownGroup", ".queue cc\n  all_reduce src=0 dst=64 bytes=32 group=chip\n", "s",
       "tlm run {file} --system chip", ".s:2:42: unknown name 'chip'"},
      // ncore run --timing: a preset or a JSON file, each key checked (model/core/core_timing.h)
      {"TimingUnknownPreset", "", "", "run " NCORE_PROGRAMS "/softmax.s --timing trn3",
       "--timing trn3: expected a preset (uniform, trn2, trn1) or a readable JSON file", false},
      {"TimingDividerOutOfRange", R"({"preset": "trn2", "clock": {"divide": {"vector": 0}}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}",
       ".json: key 'clock.divide.vector': expected an integer in [1, 64], found 0"},
      {"TimingBaseClockNotANumber", R"({"clock": {"base_ghz": "fast"}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}", ".json: key 'clock.base_ghz': expected a number, found \"fast\""},
      {"TimingUnknownKey", R"({"dma": {"bytes_per_ns": 23}})", "json", "run " NCORE_PROGRAMS "/softmax.s --timing {file}",
       ".json: key 'dma.bytes_per_ns': expected a known key ("},
      {"TimingNegativeCost", R"({"vector": {"min_cycles": -64}})", "json", "run " NCORE_PROGRAMS "/softmax.s --timing {file}",
       ".json: key 'vector.min_cycles': expected a non-negative integer, found -64"},
      {"TimingPerformanceModeNotABoolean", R"({"vector": {"performance_mode": 1}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}", ".json: key 'vector.performance_mode': expected true or false, found 1"},
      {"TimingPerformanceModeOfTheScalarEngine", R"({"scalar": {"performance_mode": false}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}", ".json: key 'scalar.performance_mode': expected a known key"},
      {"TimingPsumParallelNotABoolean", R"({"psum": {"vector_scalar_parallel": "no"}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}",
       ".json: key 'psum.vector_scalar_parallel': expected true or false, found \"no\""},
      {"TimingNegativeLaunchOverhead", R"({"launch": {"overhead_ns": -1}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --timing {file}", ".json: key 'launch.overhead_ns': expected a number in [0, "},
      {"TimingUnknownPresetInFile", R"({"preset": "trn9"})", "json", "run " NCORE_PROGRAMS "/softmax.s --timing {file}",
       ".json: key 'preset': expected \"uniform\", \"trn2\" or \"trn1\", found \"trn9\""},
      {"TimingTheRtlCoreCannotRun", R"({"preset": "trn2", "tensor": {"ls_columns_per_cycle": 3}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --engine rtl --size 8 --timing {file}",
       ".json: the RTL core loads 1, 2 or 4 weight columns a cycle (tensor.ls_columns_per_cycle is 3), with --engine rtl"},
      {"TimingThrottleWindowPastTheRtl", R"({"preset": "trn2", "throttle": {"window_ns": 10000}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --engine cosim --size 8 --timing {file}",
       ".json: the RTL core's throttle keeps a window of 16384 tensor cycles at most (throttle.window_ns is 24000)"},
      {"TimingDmaRowCostPastTheRtl", R"({"preset": "trn2", "dma": {"element_ns": 200}})", "json",
       "run " NCORE_PROGRAMS "/softmax.s --engine rtl --size 8 --timing {file}",
       ".json: the RTL core's DMA takes under 256 dma cycles a row (dma.element_ns is 480.0 of them)"},
      // a system run that can never end: the cores' deadlock, named, instead of a hang
      {"TlmRunDeadlock", ".sem never\n.queue act\n  nop wait=never>=1\n", "s", "tlm run {file} --system chip",
       "chip 0 core 0: deadlock at cycle "},
  };
  return all;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, ExitsOneWithTheFileLineAndField) {
  const BadInput& c = GetParam();
  const std::string base = fmt::format("{}ncore_bad_{}_{}", ::testing::TempDir(), c.name, getpid());
  const std::string file = base + "." + c.ext, err = base + ".err";
  if (!c.file.empty()) std::ofstream(file, std::ios::binary) << c.file;
  std::string args = c.args;
  if (const auto at = args.find("{file}"); at != std::string::npos) args.replace(at, 6, file);
  // 120 s and 16 GiB of address space: a hang or an unbounded allocation fails here.
  const std::string cmd = fmt::format("bash -c \"ulimit -v 16777216; exec timeout 120 '{}' {}\" > /dev/null 2> '{}'",
                                      NCORE_BINARY, args, err);
  const int status = std::system(cmd.c_str());
  const std::string text = slurp(err);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal; stderr:\n" << text;
  EXPECT_NE(WEXITSTATUS(status), 124) << "timed out (a hang)";
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  EXPECT_EQ(text.rfind("ncore: error: ", 0), 0u) << text;
  EXPECT_NE(text.find(c.expected), std::string::npos) << "expected stderr to hold:\n  " << c.expected
                                                      << "\nfound:\n  " << text;
  if (!c.file.empty() && c.names_file) {
    EXPECT_NE(text.find(file), std::string::npos) << "the error does not name the file:\n" << text;
  }
  std::remove(file.c_str());
  std::remove(err.c_str());
}

INSTANTIATE_TEST_SUITE_P(Kinds, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BadInput>& i) { return i.param.name; });

}  // namespace
