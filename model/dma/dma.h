#pragma once
// DMA descriptors between HBM and SBUF: what one moves, and whether it is legal. The RTL
// engines (rtl/dma) are checked against dma_bursts() applied in order, engine by engine.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/isa/isa_gen.h"

namespace ncore::model {

inline constexpr uint64_t kDmaSbufBytes = 128ull * 229376;  // SBUF: 128 partitions x 224 KiB
inline constexpr int kDmaBurstBytes = 32;

// One descriptor: the ISA's dma format as it is (model/isa/ncore.isa): count2 planes x count1
// rows x bytes on engine `engine`; row r of plane p starts at addr + p * stride2 + r * stride1
// on each side. SBUF addresses are partition * 229376 + offset.
using DmaDescriptor = isa::DmaFields;

// kListLength: the descriptor would make a list (descriptors up to one with `last`) longer than
// an engine's completion tracker holds (kDmaListDescriptors): the NeuronCore refuses it at issue.
using isa::DmaError;  // model/isa/ncore.isa, enum dma_error
inline constexpr int kDmaListDescriptors = 8;
std::string_view dma_error_name(DmaError e);

// Why the engines refuse a descriptor (kNone: they execute it). Field widths are the encoder's
// business: dma_fields_fit() says whether a descriptor can be encoded at all.
// sbuf_bytes: the flat SBUF address space that exists (a core's partitions x 224 KiB).
DmaError dma_check(const DmaDescriptor& d, uint64_t hbm_bytes, uint64_t sbuf_bytes = kDmaSbufBytes);
// One past the last HBM byte the descriptor touches (rtl/dma/nc_dma_pkg.sv: dma_hbm_end).
uint64_t dma_hbm_end(const DmaDescriptor& d);
bool dma_fields_fit(const DmaDescriptor& d, std::string* why = nullptr);

// The bursts of a legal descriptor in the order an engine issues them: (HBM, SBUF) addresses.
// A transposing descriptor (`transpose`: HBM -> SBUF, 2-byte elements, rtl/dma/README.md) moves
// blocks of 16 rows x 16 elements: its bursts come 16 to a block, the HBM reads of rows r0..r0+15
// at one 32-byte column chunk, paired with the block's SBUF writes, one per element column
// (partition), each holding that column's element of the 16 rows in order (dma_transpose_block).
std::vector<std::pair<uint64_t, uint64_t>> dma_bursts(const DmaDescriptor& d);


// Descriptor lists in HBM (dma_list, rtl/core/README.md "Descriptor lists"). An entry is 32
// bytes, little-endian: the dma format's fields at bit 0 (field f at bit lsb(f) - 64), one HBM
// burst. Its engine and last fields and bits 227..255 must be zero: the list's engine runs
// it, and its last entry ends the list. Anything else is a malformed entry (kDescriptor).
inline constexpr uint64_t kDmaListEntryBytes = 32;
inline constexpr uint64_t kDmaListMaxEntries = (uint64_t{1} << 24) - 1;  // the count field
using DmaList = isa::ListFields;
// The entry of descriptor d: its fields, with engine and last zero.
std::array<uint8_t, kDmaListEntryBytes> dma_list_entry(const DmaDescriptor& d);
// Decodes an entry; kDescriptor (and `why`) when malformed, else kNone and *out.
DmaError dma_list_entry_decode(const uint8_t* bytes, DmaDescriptor* out, std::string* why = nullptr);
// Why a dma_list is refused at issue, before its entries are read: a zero count (kZero), an
// address not 32-byte aligned (kAlign), entries past HBM (kHbmRange). (The NeuronCore also
// refuses a list over an instruction stream, kListImage: model/core/image.h.)
DmaError dma_list_check(const DmaList& l, uint64_t hbm_bytes);

inline constexpr int kDmaTransposeRows = 16;  // rows of a transpose block (NKI's DMA transpose: 16)
// How many bursts dma_bursts(d) gives (a transpose's count2 is 1), without making them.
inline uint64_t dma_burst_count(const DmaDescriptor& d) { return d.bytes / kDmaBurstBytes * d.count1 * d.count2; }
inline constexpr uint64_t kDmaPartitionBytes = 229376;
// One block: in[i] is row i's 32-byte chunk (16 elements), out[j] element j of every row.
void dma_transpose_block(const uint8_t (&in)[kDmaTransposeRows][kDmaBurstBytes],
                         uint8_t (&out)[kDmaTransposeRows][kDmaBurstBytes]);

}  // namespace ncore::model
