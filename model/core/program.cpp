#include "model/core/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/common/npy.h"

namespace ncore::model {

uint64_t TensorDecl::elements() const {
  uint64_t n = 1;
  for (auto d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t TensorDecl::bytes() const {
  const uint64_t size = static_cast<uint64_t>(storage_bits(dtype) / 8);
  if (hbm || shape.empty()) return elements() * size;
  return elements() / static_cast<uint64_t>(shape[0]) * size;
}

size_t Program::instructions() const {
  size_t n = 0;
  for (const auto& q : queues) n += q.size();
  return n;
}

const TensorDecl* Program::tensor(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string Program::sem_name(int s) const {
  return sem_names[s].empty() ? fmt::format("s{}", s) : sem_names[s];
}

AsmError::AsmError(const std::string& file, int line_, int col_, const std::string& what)
    : Error(fmt::format("{}:{}:{}: {}", file, line_, col_, what)), line(line_), col(col_) {}

isa::Opcode opcode_of(const VeInstruction& v) {
  return static_cast<isa::Opcode>(0x20 | static_cast<int>(v.opcode));
}

isa::Opcode opcode_of(const TeInstruction& t) {
  return t.opcode == Opcode::kLoadStationary ? isa::Opcode::kLoadStationary
                                               : isa::Opcode::kMultiplyMoving;
}

ProgramBuilder::Ref& ProgramBuilder::Ref::wait(int sem, uint32_t value) {
  auto& in = instr();
  in.wait_en = true;
  in.wait_sem = sem;
  in.wait_value = value;
  return *this;
}

ProgramBuilder::Ref& ProgramBuilder::Ref::signal(int sem, uint32_t increment) {
  auto& in = instr();
  in.sig_op = isa::SigOp::kIncrement;
  in.sig_sem = sem;
  in.sig_value = increment;
  return *this;
}

ProgramBuilder::Ref& ProgramBuilder::Ref::set(int sem, uint32_t value) {
  auto& in = instr();
  in.sig_op = isa::SigOp::kSet;
  in.sig_sem = sem;
  in.sig_value = value;
  return *this;
}

ProgramBuilder::Ref& ProgramBuilder::Ref::tag(uint8_t t) {
  auto& in = instr();
  in.tag = t;
  in.te.tag = t;
  in.ve.tag = t;
  return *this;
}

int ProgramBuilder::semaphore(const std::string& name, uint32_t init) {
  if (next_sem_ >= kNumSemaphores)
    throw Error(fmt::format("semaphore {}: all {} semaphores are in use", name, kNumSemaphores));
  prog_.sem_names[next_sem_] = name;
  prog_.sem_init[next_sem_] = init;
  return next_sem_++;
}

void ProgramBuilder::tensor(const TensorDecl& t) { prog_.tensors.push_back(t); }

ProgramBuilder::Ref ProgramBuilder::push(isa::Queue q, CoreInstr in) {
  auto& list = prog_.queues[static_cast<int>(q)];
  list.push_back(std::move(in));
  return Ref(&prog_, q, list.size() - 1);
}

ProgramBuilder::Ref ProgramBuilder::nop(isa::Queue q) { return push(q, CoreInstr{}); }

ProgramBuilder::Ref ProgramBuilder::pe(const TeInstruction& t) {
  CoreInstr in;
  in.opcode = opcode_of(t);
  in.te = t;
  return push(isa::Queue::kPe, in);
}

ProgramBuilder::Ref ProgramBuilder::dve(const VeInstruction& v) {
  CoreInstr in;
  in.opcode = opcode_of(v);
  in.ve = v;
  return push(isa::Queue::kDve, in);
}

ProgramBuilder::Ref ProgramBuilder::act(const VeInstruction& v) {
  CoreInstr in;
  in.opcode = isa::Opcode::kActivation;
  in.ve = v;
  in.ve.opcode = Opcode::kActivation;
  return push(isa::Queue::kAct, in);
}

ProgramBuilder::Ref ProgramBuilder::dma(const DmaDescriptor& d, int dma_queue) {
  CoreInstr in;
  in.opcode = isa::Opcode::kDmaCopy;
  in.dma = d;
  in.dma.engine = static_cast<uint64_t>(dma_queue);
  return push(isa::Queue::kSp, in);
}

int ProgramBuilder::list(const std::string& name, std::vector<DmaDescriptor> entries) {
  DescriptorList l;
  l.name = name;
  for (DmaDescriptor& d : entries) d.engine = d.last = 0;
  l.entries = std::move(entries);
  l.lines.assign(l.entries.size(), 0);
  prog_.lists.push_back(std::move(l));
  return static_cast<int>(prog_.lists.size()) - 1;
}

ProgramBuilder::Ref ProgramBuilder::dma_list(int engine, int list) {
  CoreInstr in;
  in.opcode = isa::Opcode::kDmaList;
  in.list.engine = static_cast<uint64_t>(engine);
  in.list.count = prog_.lists.at(static_cast<size_t>(list)).entries.size();
  in.list_ref = list;
  return push(isa::Queue::kSp, in);
}

std::string tensor_npy_descr(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kTf32: return "<f4";
    case DType::kFp16: return "<f2";
    case DType::kBf16: return "<u2";
    case DType::kE4m3:
    case DType::kE5m2: return "|u1";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
  }
  return "?";
}

void load_tensor_npy(TensorDecl& d, const std::string& path) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const Error& e) {
    throw Error(fmt::format("tensor {}: {}", d.name, e.what()));
  }
  const std::string want = tensor_npy_descr(d.dtype);
  if (a.descr != want)
    throw Error(fmt::format("tensor {}: {}: expected dtype '{}' ({} is stored as '{}'), found '{}'", d.name, path,
                            want, dtype_name(d.dtype), want, a.descr));
  if (a.shape != d.shape)
    throw Error(fmt::format("tensor {}: {}: expected shape ({}), found ({})", d.name, path, fmt::join(d.shape, ", "),
                            fmt::join(a.shape, ", ")));
  d.init = TensorInit::kData;
  d.data = std::move(a.data);
  d.data_file = path;
}

void write_tensor_npy(const TensorDecl& d, const std::vector<uint8_t>& bytes, const std::string& path) {
  NpyArray a;
  a.descr = tensor_npy_descr(d.dtype);
  a.shape = d.shape;
  a.data = bytes;
  write_npy(path, a);
}

}  // namespace ncore::model
