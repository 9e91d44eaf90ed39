#pragma once
// NeuronCore instructions as the model uses them: one decoded instruction (header plus the
// engine instruction it carries), its 1024-bit encoding and the decoder's checks. The bit
// layout comes from model/isa/ncore.isa through the generated model/isa/isa_gen.h, the same
// description rtl/core/nc_isa_pkg.sv is generated from.

#include <cstdint>
#include <string>
#include <string_view>

#include "model/dma/dma.h"
#include "model/isa/isa_gen.h"
#include "model/tensor/tensor_isa.h"
#include "model/vector/vector_engine.h"

namespace ncore::model {

inline constexpr int kNumSemaphores = 32;
inline constexpr int kSpQueue = static_cast<int>(isa::Queue::kSp);
inline constexpr int kCcQueue = static_cast<int>(isa::Queue::kCc);
inline constexpr int kActQueue = static_cast<int>(isa::Queue::kAct);
inline constexpr int kDveQueue = static_cast<int>(isa::Queue::kDve);
inline constexpr uint32_t kMaxSemValue = 0xFFFF;

// Where an instruction came from, for reports: file:line:col and the nearest label.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string label;  // the last label at or before the instruction, if any
  int label_offset = 0;
  std::string str() const;  // "gemm.s:12:3 (loop+2)"
};

struct CoreInstr {
  isa::Opcode opcode = isa::Opcode::kNop;
  bool wait_en = false;
  int wait_sem = 0;
  uint32_t wait_value = 0;
  isa::SigOp sig_op = isa::SigOp::kNone;
  int sig_sem = 0;
  uint32_t sig_value = 0;
  uint8_t tag = 0;
  // The payload of the opcode's format, as its engine takes it (the others stay default). The
  // engine instructions carry their own opcode and tag: decode() and the builder keep them equal
  // to the header's.
  TeInstruction te;
  VeInstruction ve;
  DmaDescriptor dma;  // dma.engine: the DMA engine 0..15 that runs it
  isa::ListFields list;   // dma_list: a descriptor list in HBM (model/dma/dma.h)
  // dma_list of a list of the program (Program::lists): the image layout gives list_addr and
  // count (model/core/image.h: list_of()); -1: list_addr and count as written.
  int list_ref = -1;
  isa::CcInstruction cc;  // a collective (queue cc)
  SourceLoc loc;
};

using isa::format_of;    // generated from model/isa/ncore.isa
using isa::opcode_info;  // nullptr: not an opcode
bool queue_allows(isa::Queue q, isa::Opcode op);
std::string_view queue_name(isa::Queue q);

// Why a word cannot be executed (model/isa/ncore.isa, enum decode_error). Checked in this
// order by both decoders.
using isa::DecodeError;
std::string_view decode_error_name(DecodeError e);

// Encoding: every field must fit its width (throws ncore::Error naming the field otherwise).
isa::Word encode(const CoreInstr& in);
// Decoding of a word found in queue q; on an error, `detail` says which bits and why.
DecodeError decode(const isa::Word& w, isa::Queue q, CoreInstr* out, std::string* detail = nullptr);

// The instruction an assembler line with no fields makes: the engine instructions' defaults,
// except that activation's scale (s0) is 1.0.
CoreInstr default_instr(isa::Opcode op);

// One line of disassembly: the assembler's syntax, so that it assembles back to the same word.
std::string disassemble(const CoreInstr& in);

}  // namespace ncore::model
