// The RTL decoder (rtl/core/nc_isa_decode.sv, on the generated SystemVerilog package) against
// the model's decoder (on the generated C++ header): the same verdict and header fields for
// legal words of every opcode in every queue, and for the same words with random bits flipped.

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "Vnc_isa_decode.h"
#include "model/core/core_isa.h"
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

// Illegal encodings made of one field alone, on a word otherwise legal (the opcode in its first
// queue, every other bit zero): each bit outside the header and the payload, each bit of the
// wait fields with wait_en 0 and of the signal fields with sig_op none, sig_op 3, an opcode
// outside the table, a queue the opcode does not belong to. The verdict each must get is worked
// out here from the field table (not from model::decode), and both decoders must give it.
TEST(IsaDecodeRtl, EveryIllegalFieldAloneIsRefused) {
  auto dut = std::make_unique<Vnc_isa_decode>();
  int words = 0;
  const auto verdict = [&](const isa::Word& w, isa::Queue q) {
    for (int i = 0; i < isa::kWordU64; ++i) {
      dut->instr_i[2 * i] = static_cast<uint32_t>(w[i]);
      dut->instr_i[2 * i + 1] = static_cast<uint32_t>(w[i] >> 32);
    }
    dut->queue_i = static_cast<uint8_t>(q);
    dut->eval();
    ++words;
    return std::pair<int, int>(dut->err_o, static_cast<int>(decode(w, q, nullptr)));
  };
  const auto field = [](const char* name) {
    for (int i = 0; i < isa::kFormats[0].field_count; ++i)
      if (std::string(isa::kHeaderFields[i].name) == name) return isa::kHeaderFields[i];
    return isa::FieldInfo{};
  };
  for (const auto& op : isa::kOpcodes) {
    int q0 = 0;
    while (!(op.queue_mask >> q0 & 1)) ++q0;
    const auto queue = static_cast<isa::Queue>(q0);
    isa::Word legal{};
    isa::set_bits(legal, 0, 8, static_cast<uint64_t>(op.opcode));
    ASSERT_EQ(verdict(legal, queue), std::make_pair(0, 0)) << op.name;
    // Every reserved bit alone: outside the header's fields and the payload's.
    const int payload_end = 64 + isa::kFormats[static_cast<int>(op.format)].bits;
    for (int bit = isa::kFormats[0].bits; bit < isa::kWordBits; ++bit) {
      if (bit >= 64 && bit < payload_end) continue;
      isa::Word w = legal;
      isa::set_bits(w, bit, 1, 1);
      ASSERT_EQ(verdict(w, queue), std::make_pair(3, 3)) << op.name << ": reserved bit " << bit << " alone";
    }
    // The wait and signal fields, each bit alone, with their enables off.
    for (const char* name : {"wait_sem", "wait_value", "sig_sem", "sig_value"}) {
      const isa::FieldInfo f = field(name);
      ASSERT_GT(f.width, 0) << name;
      for (int b = 0; b < f.width; ++b) {
        isa::Word w = legal;
        isa::set_bits(w, f.lsb + b, 1, 1);
        ASSERT_EQ(verdict(w, queue), std::make_pair(3, 3)) << op.name << ": " << name << " bit " << b << " alone";
      }
    }
    isa::Word sig3 = legal;
    isa::set_bits(sig3, field("sig_op").lsb, 2, 3);
    ASSERT_EQ(verdict(sig3, queue), std::make_pair(4, 4)) << op.name << ": sig_op 3";
    for (int q = 0; q < isa::kNumQueue; ++q)
      if (!(op.queue_mask >> q & 1))
        ASSERT_EQ(verdict(legal, static_cast<isa::Queue>(q)), std::make_pair(2, 2)) << op.name << " in queue " << q;
  }
  for (int code = 0; code < 256; ++code) {
    bool known = false;
    for (const auto& op : isa::kOpcodes) known |= static_cast<int>(op.opcode) == code;
    if (known) continue;
    isa::Word w{};
    isa::set_bits(w, 0, 8, static_cast<uint64_t>(code));
    ASSERT_EQ(verdict(w, isa::Queue::kSp), std::make_pair(1, 1)) << "opcode " << code;
  }
  EXPECT_GT(words, 5000);
  dut->final();
}

}  // namespace
}  // namespace ncore::model
