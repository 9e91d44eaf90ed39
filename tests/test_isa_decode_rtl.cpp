// The RTL decoder (rtl/core/nc_isa_decode.sv, on the generated SystemVerilog package) against
// the model's decoder (on the generated C++ header): the same verdict and header fields for
// legal words of every opcode in every queue, and for the same words with random bits flipped.

#include <memory>

#include <gtest/gtest.h>

#include "Vnc_isa_decode.h"
#include "model/core_isa.h"
#include "tb/common/coverage_dump.h"
#include "tests/seed.h"

namespace ncore::model {
namespace {

TEST(IsaDecodeRtl, AgreesWithTheModelOnRandomAndCorruptedWords) {
  SplitMix64 rng(test::test_seed(3));
  auto dut = std::make_unique<Vnc_isa_decode>();
  const tb::CoverageDump coverage(*dut->contextp(), "isa_decode");
  int errors_seen[5] = {};
  for (int trial = 0; trial < 20000; ++trial) {
    isa::Word w{};
    const auto& op = isa::kOpcodes[rng.next() % std::size(isa::kOpcodes)];
    for (const auto fmt : {isa::Format::kHeader, op.format}) {
      const auto& f = isa::kFormats[static_cast<int>(fmt)];
      for (int i = 0; i < f.field_count; ++i)
        if (f.fields[i].width) isa::set_bits(w, f.fields[i].lsb, f.fields[i].width, rng.next());
    }
    isa::set_bits(w, 0, 8, static_cast<uint64_t>(op.opcode));
    switch (rng.next() % 4) {
      case 0: break;                                                    // legal but for sig_op
      case 1: isa::set_bits(w, static_cast<int>(rng.next() % isa::kWordBits), 1, 1); break;
      case 2: isa::set_bits(w, 0, 8, rng.next()); break;                // any opcode
      default: isa::set_bits(w, 61, 2, 0); break;                       // header reserved clear
    }
    const auto q = static_cast<isa::Queue>(rng.next() % isa::kNumQueue);
    for (int i = 0; i < isa::kWordU64; ++i) {
      dut->instr_i[2 * i] = static_cast<uint32_t>(w[i]);
      dut->instr_i[2 * i + 1] = static_cast<uint32_t>(w[i] >> 32);
    }
    dut->queue_i = static_cast<uint8_t>(q);
    dut->eval();
    const DecodeError want = decode(w, q, nullptr);
    ASSERT_EQ(dut->err_o, static_cast<int>(want)) << "trial " << trial << " opcode " << op.name << " queue " << queue_name(q);
    EXPECT_EQ(dut->header_o, isa::get_bits(w, 0, isa::kFormats[0].bits));
    ++errors_seen[dut->err_o];
  }
  for (int e = 0; e < 5; ++e) EXPECT_GT(errors_seen[e], 100) << "verdict " << e << " hardly exercised";
  dut->final();
}

}  // namespace
}  // namespace ncore::model
