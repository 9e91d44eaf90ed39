#include "model/dma/dma.h"

#include <fmt/format.h>

namespace ncore::model {

std::string_view dma_error_name(DmaError e) {
  const auto i = static_cast<size_t>(e);
  return i < isa::kDmaErrorDocs.size() ? isa::kDmaErrorDocs[i] : "?";
}

uint64_t dma_hbm_end(const DmaDescriptor& d) {
  return d.hbm_addr + (d.count2 - 1) * d.hbm_stride2 + (d.count1 - 1) * d.hbm_stride1 + d.bytes;
}

DmaError dma_check(const DmaDescriptor& d, uint64_t hbm_bytes, uint64_t sbuf_bytes) {
  if (d.bytes == 0 || d.count1 == 0 || d.count2 == 0) return DmaError::kZero;
  for (uint64_t v : {d.hbm_addr, d.sbuf_addr, d.bytes, d.hbm_stride1, d.hbm_stride2,
                     d.sbuf_stride1, d.sbuf_stride2})
    if (v % kDmaBurstBytes != 0) return DmaError::kAlign;
  if (dma_hbm_end(d) > hbm_bytes) return DmaError::kHbmRange;
  if (d.transpose) {
    // One plane of whole 16-row blocks from HBM, each element column into its own partition:
    // rows fill 2 bytes each of one partition, columns partitions from sbuf_addr's on.
    const uint64_t offset = d.sbuf_addr % kDmaPartitionBytes, partition = d.sbuf_addr / kDmaPartitionBytes;
    if (d.to_hbm || d.count2 != 1 || d.count1 % kDmaTransposeRows != 0 || d.sbuf_stride1 != 0 ||
        offset + 2 * d.count1 > kDmaPartitionBytes || partition + d.bytes / 2 > sbuf_bytes / kDmaPartitionBytes)
      return DmaError::kTranspose;
    return DmaError::kNone;
  }
  const uint64_t sbuf_end = d.sbuf_addr + (d.count2 - 1) * d.sbuf_stride2 +
                            (d.count1 - 1) * d.sbuf_stride1 + d.bytes;
  if (sbuf_end > sbuf_bytes) return DmaError::kSbufRange;
  return DmaError::kNone;
}

std::array<uint8_t, kDmaListEntryBytes> dma_list_entry(const DmaDescriptor& d) {
  DmaDescriptor entry = d;
  entry.engine = entry.last = 0;
  isa::Word w{};
  isa::pack(w, entry);
  std::array<uint8_t, kDmaListEntryBytes> bytes{};
  for (size_t b = 0; b < kDmaListEntryBytes; ++b)  // bits [64, 320) of the word
    bytes[b] = static_cast<uint8_t>(w[1 + b / 8] >> (8 * (b % 8)));
  return bytes;
}

DmaError dma_list_entry_decode(const uint8_t* bytes, DmaDescriptor* out, std::string* why) {
  isa::Word w{};
  for (size_t b = 0; b < kDmaListEntryBytes; ++b) w[1 + b / 8] |= uint64_t{bytes[b]} << (8 * (b % 8));
  const uint64_t lsb = isa::kFormats[static_cast<int>(isa::Format::kDma)].lsb;
  const uint64_t bits = isa::kFormats[static_cast<int>(isa::Format::kDma)].bits;
  for (uint64_t b = lsb + bits; b < lsb + 8 * kDmaListEntryBytes; ++b)
    if (w[b / 64] >> (b % 64) & 1) {
      if (why) *why = fmt::format("bit {} of the entry is set (an entry uses bits 0..{})", b - lsb, bits - 1);
      return DmaError::kDescriptor;
    }
  const DmaDescriptor d = isa::unpack_dma(w);
  if (d.engine || d.last) {
    if (why) *why = fmt::format("its {} field is {} (the list's engine runs it; its end is its count)",
                                d.engine ? "engine" : "last", d.engine ? d.engine : d.last);
    return DmaError::kDescriptor;
  }
  *out = d;
  return DmaError::kNone;
}

DmaError dma_list_check(const DmaList& l, uint64_t hbm_bytes) {
  if (l.count == 0) return DmaError::kZero;
  if (l.list_addr % kDmaListEntryBytes) return DmaError::kAlign;
  if (l.list_addr > hbm_bytes || (hbm_bytes - l.list_addr) / kDmaListEntryBytes < l.count) return DmaError::kHbmRange;
  return DmaError::kNone;
}

void dma_transpose_block(const uint8_t (&in)[kDmaTransposeRows][kDmaBurstBytes],
                         uint8_t (&out)[kDmaTransposeRows][kDmaBurstBytes]) {
  for (int i = 0; i < kDmaTransposeRows; ++i)
    for (int j = 0; j < kDmaTransposeRows; ++j) {
      out[j][2 * i] = in[i][2 * j];
      out[j][2 * i + 1] = in[i][2 * j + 1];
    }
}

bool dma_fields_fit(const DmaDescriptor& d, std::string* why) {
  const std::pair<const char*, std::pair<uint64_t, int>> fields[] = {
      {"hbm_addr", {d.hbm_addr, 32}},       {"sbuf_addr", {d.sbuf_addr, 25}},
      {"bytes", {d.bytes, 17}},             {"count1", {d.count1, 12}},
      {"count2", {d.count2, 12}},           {"hbm_stride1", {d.hbm_stride1, 32}},
      {"hbm_stride2", {d.hbm_stride2, 32}}, {"sbuf_stride1", {d.sbuf_stride1, 25}},
      {"sbuf_stride2", {d.sbuf_stride2, 25}}};
  for (const auto& [name, f] : fields)
    if (f.first >= (1ull << f.second) || (std::string(name) == "bytes" && f.first > 65536)) {
      if (why)
        *why = fmt::format("DMA descriptor: {} is {}, expected below 2^{}{}", name, f.first,
                           f.second, std::string(name) == "bytes" ? " and at most 65536" : "");
      return false;
    }
  return true;
}

std::vector<std::pair<uint64_t, uint64_t>> dma_bursts(const DmaDescriptor& d) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.reserve(d.count2 * d.count1 * d.bytes / kDmaBurstBytes);
  if (d.transpose) {
    for (uint64_t r0 = 0; r0 < d.count1; r0 += kDmaTransposeRows)
      for (uint64_t o = 0; o < d.bytes; o += kDmaBurstBytes)
        for (uint64_t i = 0; i < kDmaTransposeRows; ++i)
          out.emplace_back((d.hbm_addr + (r0 + i) * d.hbm_stride1 + o) & 0xFFFFFFFFull,
                           (d.sbuf_addr + (o / 2 + i) * kDmaPartitionBytes + 2 * r0) & ((1ull << 25) - 1));
    return out;
  }
  for (uint64_t p = 0; p < d.count2; ++p)
    for (uint64_t r = 0; r < d.count1; ++r)
      for (uint64_t o = 0; o < d.bytes; o += kDmaBurstBytes)
        out.emplace_back((d.hbm_addr + p * d.hbm_stride2 + r * d.hbm_stride1 + o) & 0xFFFFFFFFull,
                         (d.sbuf_addr + p * d.sbuf_stride2 + r * d.sbuf_stride1 + o) &
                             ((1ull << 25) - 1));
  return out;
}

}  // namespace ncore::model
