#pragma once
// A NeuronCore program: one instruction stream per queue, named tensors with their initial
// data, and named semaphores. Made by the assembler (text, model/core/assembler.cpp) or by
// ProgramBuilder (C++); both produce the same instruction words for the same program.

#include <array>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/core/core_isa.h"
#include "model/common/error.h"

namespace ncore::model {

inline constexpr uint64_t kSbufPartitionStride = 229376;  // DMA address of partition p: p * this
inline constexpr uint64_t kCoreHbmBytes = uint64_t{1} << 32;  // one core's HBM window (4 GiB)
inline constexpr int kSbufPartitions = 128;

// kData: the bytes given in TensorDecl::data (made in code, or read from init=file:PATH.npy).
enum class TensorInit : uint8_t { kNone, kZero, kRandom, kRamp, kData };

// A named region. HBM tensors are byte ranges; SBUF tensors are `shape[0]` partitions from
// `partition` with the rest of the shape along the free axis of each, at byte offset `addr`.
struct TensorDecl {
  std::string name;
  bool hbm = true;
  uint64_t addr = 0;
  int partition = 0;
  DType dtype = DType::kBf16;
  std::vector<int64_t> shape;
  TensorInit init = TensorInit::kNone;
  uint64_t seed = 1;
  bool output = false;  // reported (checksum) and compared in co-simulation
  std::vector<uint8_t> data;  // init kData: bytes in tensor_bytes() order (SBUF: partition by partition)
  std::string data_file;      // the .npy file `data` came from, if any
  SourceLoc loc;
  uint64_t elements() const;
  uint64_t bytes() const;  // HBM: elements * size; SBUF: per partition
};

// A descriptor list the program's image carries (`.list NAME` ... `.endlist`): entries as they
// lie in HBM (engine and last 0), placed by the image layout (model/core/image.h). A dma_list
// names it by CoreInstr::list_ref.
struct DescriptorList {
  std::string name;
  SourceLoc loc;                      // its .list line
  std::vector<DmaDescriptor> entries;
  std::vector<int> lines;             // each entry's source line
};

struct Program {
  std::string name;
  std::array<std::vector<CoreInstr>, isa::kNumQueue> queues;
  std::vector<TensorDecl> tensors;
  std::vector<DescriptorList> lists;
  std::array<std::string, kNumSemaphores> sem_names;  // "" for unnamed
  std::array<uint32_t, kNumSemaphores> sem_init{};
  // `.image ADDR`: the HBM address of the program image (model/core/image.h); none: the
  // default layout.
  std::optional<uint64_t> image_addr;
  SourceLoc image_loc;
  size_t instructions() const;
  const TensorDecl* tensor(std::string_view name) const;
  std::string sem_name(int s) const;  // its name, or "s<N>"
};

// Tensors as NumPy arrays (.npy) of their declared shape, C order (SBUF: partition first).
// Storage types: FP32 and TF32 '<f4', FP16 '<f2', INT8/16/32 '|i1' '<i2' '<i4'; BF16 '<u2' and
// FP8 (E4M3, E5M2) '|u1' hold the raw bits (NumPy has no such types).
std::string tensor_npy_descr(DType t);
// Reads `path` as the data of `d` (init becomes kData); throws ncore::Error naming the tensor,
// the file, what was expected (dtype, shape) and what was found.
void load_tensor_npy(TensorDecl& d, const std::string& path);
// Writes a tensor's bytes (tensor_bytes order) to `path` as an array of its shape and type.
void write_tensor_npy(const TensorDecl& d, const std::vector<uint8_t>& bytes, const std::string& path);

// An error in a program's text: "file:line:col: what was expected, what was found".
class AsmError : public Error {
 public:
  AsmError(const std::string& file, int line, int col, const std::string& what);
  int line, col;
};

// Names a program may use without defining them (beside SBUF_PARTITION and PSUM_BANK): system
// runs give each core CHIP, CORE, CHIPS and CORES (tb/tlm/system_run.h); `ncore run` gives a
// lone core CHIP 0, CORE 0, CHIPS 1, CORES 1.
using Symbols = std::vector<std::pair<std::string, int64_t>>;
Symbols spmd_symbols(int chip, int core, int chips, int cores);
Program assemble(std::string_view text, const std::string& file, const Symbols& predefined = {});
Program assemble_file(const std::string& path, const Symbols& predefined = {});

// A program's text, split into lines and its .if/.else/.endif and .rept/.endr blocks matched
// once: a system run assembles one text for every core (each with its own CHIP and CORE), and a
// core skips the other cores' blocks without reading them.
class ProgramText {
 public:
  ProgramText(std::string text, std::string file);
  static ProgramText read(const std::string& path);  // Error "PATH: cannot open the program"
  const std::string& file() const { return file_; }
  int lines() const { return static_cast<int>(lines_.size()); }
  std::string_view line(int i) const {
    const auto [at, size] = lines_[static_cast<size_t>(i)];
    return std::string_view(text_).substr(at, size);
  }
  struct Block {
    int middle = -1;  // an .if's .else (-1: none)
    int end = -1;     // an .if's .endif or a .rept's .endr (-1: unmatched, or not an opening line)
  };
  Block block(int open) const { return blocks_[static_cast<size_t>(open)]; }

 private:
  std::string file_, text_;
  std::vector<std::pair<size_t, size_t>> lines_;  // offset and length in text_
  std::vector<Block> blocks_;                     // per line
};
Program assemble(const ProgramText& text, const Symbols& predefined = {});

// Builds programs in C++. Every push returns a handle for the header fields.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name = "built") { prog_.name = std::move(name); }

  class Ref {
   public:
    Ref(Program* p, isa::Queue q, size_t i) : prog_(p), q_(q), i_(i) {}
    Ref& wait(int sem, uint32_t value);
    Ref& signal(int sem, uint32_t increment = 1);
    Ref& set(int sem, uint32_t value);
    Ref& tag(uint8_t t);
    CoreInstr& instr() { return prog_->queues[static_cast<int>(q_)][i_]; }

   private:
    Program* prog_;
    isa::Queue q_;
    size_t i_;
  };

  int semaphore(const std::string& name, uint32_t init = 0);
  void tensor(const TensorDecl& t);
  Ref push(isa::Queue q, CoreInstr in);
  Ref nop(isa::Queue q);
  Ref pe(const TeInstruction& t);
  Ref dve(const VeInstruction& v);  // opcode from v.opcode
  Ref act(const VeInstruction& v);
  Ref dma(const DmaDescriptor& d, int dma_queue);
  // A list of the image (its entries' engine and last are cleared) and a dma_list of it.
  int list(const std::string& name, std::vector<DmaDescriptor> entries);
  Ref dma_list(int engine, int list);
  const Program& program() const { return prog_; }
  Program take() { return std::move(prog_); }

 private:
  Program prog_;
  int next_sem_ = 0;
};

isa::Opcode opcode_of(const VeInstruction& v);
isa::Opcode opcode_of(const TeInstruction& t);

}  // namespace ncore::model
