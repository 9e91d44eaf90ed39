#include "tb/core/lockstep.h"

#include <set>

#include <fmt/format.h>

#include "model/dma/dma.h"
#include "model/common/error.h"

namespace ncore::tb {

using model::CoreMemory;
using model::InstrEffects;

std::string describe_instruction(const model::Program& p, int q, uint64_t pc) {
  if (pc >= p.queues[q].size()) return fmt::format("{} instruction {}", isa::kQueueNames[q], pc);
  const auto& in = p.queues[q][pc];
  std::string text;
  try {
    text = model::disassemble(in);
  } catch (const Error&) {
    text = fmt::format("opcode 0x{:02x}", static_cast<int>(in.opcode));
  }
  return fmt::format("{} instruction {} at {}: {}", isa::kQueueNames[q], pc, in.loc.str(), text);
}

std::string locate_tensor_byte(const model::Program& p, bool hbm, uint64_t addr, int part) {
  for (const auto& t : p.tensors) {
    const uint64_t size = static_cast<uint64_t>(model::storage_bits(t.dtype) / 8);
    if (hbm && t.hbm && addr >= t.addr && addr < t.addr + t.bytes())
      return fmt::format(" (tensor {} element {})", t.name, (addr - t.addr) / size);
    if (!hbm && !t.hbm && part >= t.partition && part < t.partition + t.shape[0] && addr >= t.addr &&
        addr < t.addr + t.bytes())
      return fmt::format(" (tensor {} partition {} element {})", t.name, part - t.partition, (addr - t.addr) / size);
  }
  return "";
}

uint64_t effects_digest(const InstrEffects& e) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit
  auto mix = [&h](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  };
  for (const auto& [key, line] : e.writes) {
    mix(static_cast<uint64_t>(key.first), 1);
    mix(key.second, 8);
    mix(line.mask, 4);
    for (int b = 0; b < model::kLineBytes; ++b)
      if (line.mask >> b & 1) mix(line.data[static_cast<size_t>(b)], 1);
  }
  return h;
}

Lockstep::Lockstep(const model::Program& program, const model::CoreConfig& config,
                   const std::map<std::pair<int, size_t>, isa::Word>& raw_words, std::string reproduce)
    : prog_(program),
      config_(config),
      golden_(config, program),
      raw_words_(raw_words),
      reproduce_(std::move(reproduce)) {
  golden_.load_tensors();
  // The image holds the words the RTL fetches: the raw ones where a test gives them.
  for (const auto& [where, word] : raw_words_) {
    const auto bytes = model::word_bytes(word);
    golden_.hbm().write_block(golden_.image().instr_addr(where.first, where.second), bytes.data(), bytes.size());
  }
  golden_.on_effects([this](const InstrEffects& e) {
    golden_effects_[{e.queue, e.index}] = {effects_digest(e), e.cycle};
  });
  golden_.record_timeline(true);  // beside the RTL's in `ncore run --timeline`
  golden_result_ = golden_.run();
  golden_.on_effects(nullptr);

  for (int q = 0; q < isa::kNumQueue; ++q) {
    committed_.emplace_back(prog_.queues[q].size(), 0);
    signalled_.emplace_back(prog_.queues[q].size(), 0);
  }
  last_engine_commit_.assign(isa::kNumQueue, -1);
  // The DMA engines' descriptors, in the order the sync queue issues them; a dma_list's, as
  // the golden core walked it (its entries live in HBM: the program may have written them).
  dma_.resize(static_cast<size_t>(config_.dma_engines));
  std::map<size_t, uint64_t> list_bursts(golden_result_.list_bursts.begin(), golden_result_.list_bursts.end());
  const auto& sp = prog_.queues[static_cast<int>(isa::Queue::kSp)];
  for (size_t i = 0; i < sp.size(); ++i) {
    if (sp[i].opcode == isa::Opcode::kDmaCopy && sp[i].dma.engine < static_cast<uint64_t>(config_.dma_engines))
      dma_[static_cast<size_t>(sp[i].dma.engine)].descriptors.emplace_back(i, model::dma_burst_count(sp[i].dma));
    const auto walked = list_bursts.find(i);
    if (sp[i].opcode == isa::Opcode::kDmaList && walked != list_bursts.end() && walked->second &&
        sp[i].list.engine < static_cast<uint64_t>(config_.dma_engines))
      dma_[static_cast<size_t>(sp[i].list.engine)].descriptors.emplace_back(i, walked->second);
  }
}

void Lockstep::fail(uint64_t cycle, int q, uint64_t index, const std::string& what) {
  if (failed_) return;
  failed_ = true;
  failure_cycle_ = cycle;
  const uint64_t from = cycle > 2000 ? cycle - 2000 : 0;
  failure_ = fmt::format("lockstep, cycle {}: {}: {}\n  reproduce with waves: {} --waves core.fst --from {} --to {}",
                         cycle, describe_instruction(prog_, q, index), what, reproduce_, from, cycle + 20);
}

void Lockstep::write(int q, uint64_t index, CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n) {
  if (failed_) return;
  InstrEffects& e = rtl_effects_[{q, index}];
  e.queue = q;
  e.index = index;
  e.write(m, addr, bytes, n);
}

void Lockstep::dma_write(int engine, CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n, uint64_t cycle) {
  if (failed_) return;
  const int sp = static_cast<int>(isa::Queue::kSp);
  if (engine < 0 || engine >= static_cast<int>(dma_.size())) {
    failure_ = fmt::format("lockstep, cycle {}: a write from DMA engine {}, which does not exist", cycle, engine);
    failed_ = true;
    failure_cycle_ = cycle;
    return;
  }
  DmaCursor& c = dma_[static_cast<size_t>(engine)];
  if (c.at >= c.descriptors.size()) {
    const uint64_t last = c.descriptors.empty() ? 0 : c.descriptors.back().first;
    return fail(cycle, sp, last,
                fmt::format("DMA engine {} wrote {} after its last descriptor had made all its bursts", engine,
                            describe_line(m, addr / model::kLineBytes * model::kLineBytes)));
  }
  write(sp, c.descriptors[c.at].first, m, addr, bytes, n);
  if (++c.bursts == c.descriptors[c.at].second) {
    ++c.at;
    c.bursts = 0;
  }
}

std::string Lockstep::describe_line(CoreMemory m, uint64_t line) const {
  switch (m) {
    case CoreMemory::kSbuf: {
      const auto part = static_cast<int>(line / model::kSbufPartitionStride);
      const uint64_t off = line % model::kSbufPartitionStride;
      return fmt::format("SBUF partition {} bytes 0x{:x}..0x{:x}{}", part, off, off + model::kLineBytes - 1,
                         locate_tensor_byte(prog_, false, off, part));
    }
    case CoreMemory::kPsum: {
      const uint64_t bank_bytes = static_cast<uint64_t>(config_.te.bank_elements) * 4;
      const uint64_t psum_bytes = bank_bytes * static_cast<uint64_t>(config_.te.psum_banks);
      const uint64_t off = line % psum_bytes;
      return fmt::format("PSUM partition {} bank {} words {}..{}", line / psum_bytes, off / bank_bytes,
                         off % bank_bytes / 4, (off % bank_bytes + model::kLineBytes) / 4 - 1);
    }
    case CoreMemory::kHbm:
      return fmt::format("HBM bytes 0x{:x}..0x{:x}{}", line, line + model::kLineBytes - 1,
                         locate_tensor_byte(prog_, true, line));
  }
  return "";
}

namespace {
std::string line_bytes(const model::LineWrite* w) {
  std::string s;
  for (int b = 0; b < model::kLineBytes; ++b) {
    if (b) s += b % 4 ? " " : "  ";
    s += w && (w->mask >> b & 1) ? fmt::format("{:02x}", w->data[static_cast<size_t>(b)]) : "--";
  }
  return s;
}
}  // namespace

// Runs the golden core again to get the instruction's writes, and names the first line that
// differs.
std::string Lockstep::explain(const Key& k, const InstrEffects& rtl) {
  InstrEffects want;
  model::CoreModel again(config_, prog_);
  again.load_tensors();
  again.on_effects([&](const InstrEffects& e) {
    if (e.queue == k.queue && e.index == k.index) want = e;
  });
  again.run();
  std::set<std::pair<CoreMemory, uint64_t>> lines;
  for (const auto& [key, w] : rtl.writes) lines.insert(key);
  for (const auto& [key, w] : want.writes) lines.insert(key);
  for (const auto& key : lines) {
    const auto r = rtl.writes.find(key);
    const auto g = want.writes.find(key);
    const model::LineWrite* rw = r == rtl.writes.end() ? nullptr : &r->second;
    const model::LineWrite* gw = g == want.writes.end() ? nullptr : &g->second;
    if (line_bytes(rw) == line_bytes(gw)) continue;
    return fmt::format("its writes differ from the golden core's ({} lines written by the RTL, {} by the golden "
                       "core); the first differing line, {}:\n    RTL:    {}\n    golden: {}",
                       rtl.writes.size(), want.writes.size(), describe_line(key.first, key.second),
                       line_bytes(rw), line_bytes(gw));
  }
  return fmt::format("its writes differ from the golden core's ({} lines written by the RTL, {} by the golden core)",
                     rtl.writes.size(), want.writes.size());
}

void Lockstep::commit(int q, uint64_t index, uint64_t cycle) {
  if (failed_) return;
  if (index >= committed_[static_cast<size_t>(q)].size())
    return fail(cycle, q, index, "the RTL committed an instruction past the end of its queue");
  auto& done = committed_[static_cast<size_t>(q)][index];
  if (done) return fail(cycle, q, index, "the RTL committed this instruction a second time");
  done = 1;
  const model::CoreInstr& in = prog_.queues[q][index];
  // The vector and scalar engines run one instruction at a time: their queue's engine
  // instructions complete in program order (nops complete at issue, the tensor engine's tiles
  // and the DMA engines may finish out of program order).
  const bool ve_queue = q == static_cast<int>(isa::Queue::kAct) || q == static_cast<int>(isa::Queue::kDve);
  if (ve_queue && in.opcode != isa::Opcode::kNop) {
    int64_t& last = last_engine_commit_[static_cast<size_t>(q)];
    if (static_cast<int64_t>(index) < last)
      return fail(cycle, q, index, fmt::format("committed after instruction {} of its queue", last));
    last = static_cast<int64_t>(index);
  }

  InstrEffects rtl;
  if (auto it = rtl_effects_.find({q, index}); it != rtl_effects_.end()) {
    rtl = std::move(it->second);
    rtl_effects_.erase(it);
  }
  const auto g = golden_effects_.find({q, index});
  if (g == golden_effects_.end()) {
    if (golden_result_.status == model::CoreStatus::kDone)
      return fail(cycle, q, index, "the RTL completed an instruction the golden core never completed");
    ++stats_.not_compared;  // the golden core stopped on an error before completing it
    return;
  }
  if (effects_digest(rtl) != g->second.digest) return fail(cycle, q, index, explain({q, index}, rtl));
  ++stats_.instructions;
  stats_.lines += rtl.writes.size();
}

void Lockstep::signal(int q, uint64_t index, int op, int sem, uint32_t value, uint64_t cycle) {
  if (failed_) return;
  if (index >= signalled_[static_cast<size_t>(q)].size())
    return fail(cycle, q, index, "the RTL signalled for an instruction past the end of its queue");
  const model::CoreInstr& in = prog_.queues[q][index];
  if (!raw_words_.count({q, static_cast<size_t>(index)}) &&
      (static_cast<int>(in.sig_op) != op || in.sig_sem != sem || in.sig_value != value))
    return fail(cycle, q, index,
                fmt::format("the RTL applied signal op {} to semaphore {} with value {}; the instruction's is op {} to "
                            "{} with value {}",
                            op, prog_.sem_name(sem), value, static_cast<int>(in.sig_op), prog_.sem_name(in.sig_sem),
                            in.sig_value));
  auto& done = signalled_[static_cast<size_t>(q)][index];
  if (done) return fail(cycle, q, index, "the RTL applied this instruction's signal a second time");
  done = 1;
  if (!committed_[static_cast<size_t>(q)][index])
    return fail(cycle, q, index, "the RTL applied this instruction's signal before the instruction completed");
  ++stats_.signals;
}

void Lockstep::finish(uint64_t cycle) {
  if (failed_) return;
  for (int q = 0; q < isa::kNumQueue; ++q)
    for (size_t i = 0; i < prog_.queues[q].size(); ++i) {
      if (!committed_[static_cast<size_t>(q)][i])
        return fail(cycle, q, i, "the RTL finished the program without ever committing this instruction");
      if (prog_.queues[q][i].sig_op != isa::SigOp::kNone && !signalled_[static_cast<size_t>(q)][i])
        return fail(cycle, q, i, "the RTL finished the program without applying this instruction's signal");
    }
  if (!rtl_effects_.empty()) {
    const auto& [k, e] = *rtl_effects_.begin();
    fail(cycle, k.queue, k.index, fmt::format("{} lines written by the RTL for this instruction were never checked",
                                              e.writes.size()));
  }
}

}  // namespace ncore::tb
