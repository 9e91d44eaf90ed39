#include "model/core/image.h"

#include <fmt/format.h>

namespace ncore::model {

namespace {
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

ImageLayout layout_image(const Program& p, uint64_t hbm_bytes, uint64_t top, uint64_t window) {
  ImageLayout l;
  uint64_t offset = 0;  // from the base
  for (int q = 0; q < isa::kNumQueue; ++q) {
    l.length[q] = p.queues[q].size();
    if (!l.length[q]) continue;
    offset = align_up(offset, kImageAlign);
    l.stream[q] = offset;
    offset += l.length[q] * kInstrBytes;
  }
  for (const DescriptorList& list : p.lists) {
    offset = align_up(offset, kListAlign);
    l.list.push_back(offset);
    offset += list.entries.size() * kDmaListEntryBytes;
  }
  l.bytes = offset;
  const std::string where = p.image_addr ? p.image_loc.str() + ": .image" : p.name;
  if (l.bytes > hbm_bytes)
    throw Error(fmt::format("{}: the program image ({} instructions, {} bytes) is larger than HBM ({} bytes)", where,
                            p.instructions(), l.bytes, hbm_bytes));
  if (p.image_addr) {
    l.placed = true;
    l.base = *p.image_addr;
    if (l.base % kImageAlign)
      throw Error(fmt::format("{}: the image address: expected a multiple of {}, found 0x{:x}", where, kImageAlign, l.base));
    if (l.base > hbm_bytes || hbm_bytes - l.base < l.bytes)
      throw Error(fmt::format("{}: the image at 0x{:x} ({} bytes) ends past HBM (0x{:x} bytes)", where, l.base, l.bytes,
                              hbm_bytes));
  } else {
    const uint64_t end = top ? std::min(top, hbm_bytes) : hbm_bytes;
    if (end >= l.bytes) l.base = (end - l.bytes) / kImageAlign * kImageAlign;
    if (end < l.bytes || (window && end - l.base > window))
      throw Error(fmt::format("{}: the program image ({} bytes) does not fit below 0x{:x}{}, its default place "
                              "(place it with .image ADDR)", where, l.bytes, end,
                              window ? fmt::format(" in a window of {} bytes", window) : ""));
  }
  for (int q = 0; q < isa::kNumQueue; ++q) l.stream[q] += l.base;
  for (uint64_t& a : l.list) a += l.base;
  for (const TensorDecl& t : p.tensors)
    if (t.hbm && l.overlaps(t.addr, t.bytes()))
      throw Error(fmt::format("{}: tensor '{}' [0x{:x}, 0x{:x}) overlaps the program image [0x{:x}, 0x{:x}){}",
                              t.loc.str(), t.name, t.addr, t.addr + t.bytes(), l.base, l.base + l.bytes,
                              p.image_addr ? " placed at " + p.image_loc.str() : " (default layout: place it with .image ADDR)"));
  return l;
}

bool ImageLayout::over_streams(uint64_t addr, uint64_t n) const {
  for (int q = 0; q < isa::kNumQueue; ++q)
    if (n && length[q] && addr < stream[q] + length[q] * kInstrBytes && stream[q] < addr + n) return true;
  return false;
}

isa::ListFields list_of(const Program& p, const CoreInstr& in, const ImageLayout& layout) {
  isa::ListFields l = in.list;
  if (in.list_ref >= 0 && static_cast<size_t>(in.list_ref) < layout.list.size()) {
    l.list_addr = layout.list[static_cast<size_t>(in.list_ref)];
    l.count = p.lists[static_cast<size_t>(in.list_ref)].entries.size();
  }
  return l;
}

isa::Word image_word(const Program& p, const ImageLayout& layout, int q, size_t i) {
  const CoreInstr& in = p.queues[q][i];
  if (in.list_ref < 0) return encode(in);
  CoreInstr placed = in;
  placed.list = list_of(p, in, layout);
  return encode(placed);
}

std::array<uint8_t, kInstrBytes> word_bytes(const isa::Word& w) {
  std::array<uint8_t, kInstrBytes> bytes{};
  for (size_t b = 0; b < kInstrBytes; ++b) bytes[b] = static_cast<uint8_t>(w[b / 8] >> (8 * (b % 8)));
  return bytes;
}

void write_image(const Program& p, const ImageLayout& layout,
                 const std::function<void(uint64_t, const isa::Word&)>& write) {
  for (int q = 0; q < isa::kNumQueue; ++q)
    for (size_t i = 0; i < p.queues[q].size(); ++i) {
      isa::Word w{};
      try {
        w = image_word(p, layout, q, i);
      } catch (const Error&) {
        // fields too wide for their bits (a program built in C++): no word, zeros
      }
      write(layout.instr_addr(q, i), w);
    }
}

void write_lists(const Program& p, const ImageLayout& layout,
                 const std::function<void(uint64_t, const std::array<uint8_t, kDmaListEntryBytes>&)>& write) {
  for (size_t k = 0; k < p.lists.size() && k < layout.list.size(); ++k)
    for (size_t e = 0; e < p.lists[k].entries.size(); ++e)
      write(layout.list[k] + e * kDmaListEntryBytes, dma_list_entry(p.lists[k].entries[e]));
}

std::string describe_image(const Program& p, const ImageLayout& l) {
  std::string s = fmt::format("image [0x{:x}, 0x{:x}) {} bytes, {}\n", l.base, l.base + l.bytes, l.bytes,
                              l.placed ? "placed by .image" : "default layout");
  for (int q = 0; q < isa::kNumQueue; ++q)
    if (l.length[q])
      s += fmt::format("  {:<3} [0x{:x}, 0x{:x}) {} instructions\n", isa::kQueueNames[q], l.stream[q],
                       l.stream[q] + l.length[q] * kInstrBytes, l.length[q]);
  for (size_t k = 0; k < p.lists.size() && k < l.list.size(); ++k)
    s += fmt::format("  list {} [0x{:x}, 0x{:x}) {} entries ({})\n", p.lists[k].name, l.list[k],
                     l.list[k] + p.lists[k].entries.size() * kDmaListEntryBytes, p.lists[k].entries.size(),
                     p.lists[k].loc.str());
  return s;
}

}  // namespace ncore::model
