#pragma once
// The program image: where a program's instruction streams lie in HBM, from which the core's
// fetch unit reads them (model::CoreModel, rtl/core). A queue's stream is its instructions'
// 128-byte words one after another; each stream starts on a 16 KiB boundary.
//
// Placement: a program may place its image with `.image ADDR` (Program::image_addr); otherwise
// the default layout puts it as high as it fits below `top` (the end of the core's HBM window
// for a lone core; a system run gives each core of a chip its own window,
// tb/tlm/system_run.h), so that the low addresses programs use for their tensors stay free.
// Streams follow in queue order (pe, act, dve, sp, cc); an empty queue takes no space. The
// program's descriptor lists (`.list`) follow the streams, each on a 1 KiB boundary (a DRAM
// row), their 32-byte entries one after another (model/dma/dma.h). A dma_list naming a list
// gets its address and count from the layout (list_of). The core refuses a DMA write into the
// image, and a dma_list over an instruction stream (over_streams).
//
// An image that does not fit in HBM, or that overlaps an HBM tensor of the program, is refused
// with the line of the `.image` directive or of the tensor.

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "model/core/program.h"

namespace ncore::model {

inline constexpr uint64_t kInstrBytes = isa::kWordBits / 8;  // one instruction word: 128 bytes
// Each stream's first word: one pseudo-channel's stretch of the address map (16 banks of 1 KiB
// rows, model/hbm/hbm.h), so that the five streams start in different pseudo-channels.
inline constexpr uint64_t kImageAlign = 16384;
// A system run's default layout: core K of a chip below top - K * this (tb/tlm/system_run.cpp).
inline constexpr uint64_t kCoreImageWindow = uint64_t{1} << 30;

struct ImageLayout {
  uint64_t base = 0, bytes = 0;                   // the image is [base, base + bytes)
  std::array<uint64_t, isa::kNumQueue> stream{};  // HBM address of each queue's first word
  std::array<uint64_t, isa::kNumQueue> length{};  // instructions in each queue
  std::vector<uint64_t> list;                     // HBM address of each Program::lists entry
  bool placed = false;                            // by `.image` (else the default layout)
  uint64_t instr_addr(int queue, uint64_t index) const { return stream[queue] + index * kInstrBytes; }
  bool overlaps(uint64_t addr, uint64_t n) const { return n && bytes && addr < base + bytes && base < addr + n; }
  // Whether [addr, addr + n) meets an instruction stream (what a dma_list may not read).
  bool over_streams(uint64_t addr, uint64_t n) const;
};
inline constexpr uint64_t kListAlign = 1024;

// Lays out `p`'s image in an HBM of `hbm_bytes`, below `top` (0: hbm_bytes) and within `window`
// bytes of it (0: anywhere below) unless the program placed it. Throws ncore::Error (the file,
// line and field) when it does not fit or overlaps a tensor.
ImageLayout layout_image(const Program& p, uint64_t hbm_bytes, uint64_t top = 0, uint64_t window = 0);

// A dma_list's list as the core sees it: a list of the program at its place in the layout,
// else the instruction's own fields.
isa::ListFields list_of(const Program& p, const CoreInstr& in, const ImageLayout& layout);
// Instruction i of queue q as its word lies in the image (a dma_list of a program's list with
// its place); throws ncore::Error when a field does not fit its bits.
isa::Word image_word(const Program& p, const ImageLayout& layout, int q, size_t i);

// A word as it lies in memory: 128 bytes, little-endian (bit 0 of the word in byte 0).
std::array<uint8_t, kInstrBytes> word_bytes(const isa::Word& w);

// Hands every instruction's word and its HBM address to `write`, in address order (zeros for an
// instruction whose fields do not fit their bits, which the core refuses at issue anyway).
void write_image(const Program& p, const ImageLayout& layout,
                 const std::function<void(uint64_t addr, const isa::Word& word)>& write);

// Hands every list entry of the program (32 bytes) and its HBM address to `write`.
void write_lists(const Program& p, const ImageLayout& layout,
                 const std::function<void(uint64_t addr, const std::array<uint8_t, kDmaListEntryBytes>& entry)>& write);

// "pe 0x...-0x... (N instructions, B bytes)" per queue and per list: where everything went.
std::string describe_image(const Program& p, const ImageLayout& layout);

}  // namespace ncore::model
