#pragma once
// DMA descriptors between HBM and SBUF: what one moves, and whether it is legal. The RTL
// engines (rtl/dma) are checked against dma_bursts() applied in order, engine by engine.

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
bool dma_fields_fit(const DmaDescriptor& d, std::string* why = nullptr);

// The bursts of a legal descriptor in the order an engine issues them: (HBM, SBUF) addresses.
std::vector<std::pair<uint64_t, uint64_t>> dma_bursts(const DmaDescriptor& d);

}  // namespace ncore::model
