// Types of the DMA engines. Refusal codes are the ISA's (isa_dma_error_e).
package nc_dma_pkg;
  import nc_isa_pkg::*;

  localparam int unsigned SbufAddrW = 25;  // 128 partitions x 224 KiB = 28 MiB, byte addresses
  // HBM byte addresses: the width of the ISA's hbm_addr (a chip's HBM; nc_dma checks it).
  localparam int unsigned HbmAddrW = 40;
  localparam int unsigned PartitionBytes = 229376;
  localparam int unsigned SbufBytes = 128 * PartitionBytes;
  localparam int unsigned TpRows = 16;  // rows of a transpose block (NKI's DMA transpose: 16)

  // A descriptor is the ISA's (isa_dma_t): count2 planes x count1 rows x bytes, in 32-byte
  // bursts; row r of plane p starts at addr + p * stride2 + r * stride1 on each side; a list of
  // descriptors (scatter / gather) ends with `last`, and its completion is reported once. The
  // engines route by their own engine input: the descriptor's `engine` is the NeuronCore's.

  // One past the last HBM byte a descriptor touches.
  /* verilator lint_off UNUSEDSIGNAL */  // the SBUF side and the flags
  function automatic logic [47:0] dma_hbm_end(input isa_dma_t d);
  /* verilator lint_on UNUSEDSIGNAL */
    return 48'(d.hbm_addr) + (48'(d.count2) - 48'd1) * 48'(d.hbm_stride2) +
           (48'(d.count1) - 48'd1) * 48'(d.hbm_stride1) + 48'(d.bytes);
  endfunction

  // What is wrong with a descriptor, if anything, in model::dma_check's order. HBM holds
  // 2^hbm_log2 bytes and the flat SBUF sbuf_limit. The NeuronCore checks each descriptor at
  // issue (so a refusal is precise); an engine checks it again when it loads it.
  // (The direction and `last` do not matter to the checks.)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic isa_dma_error_e dma_check(input isa_dma_t d, input logic [5:0] hbm_log2,
                                         input logic [47:0] sbuf_limit);
  /* verilator lint_on UNUSEDSIGNAL */
    logic [47:0] hbm_end, sbuf_end;
    if (d.bytes == '0 || d.count1 == '0 || d.count2 == '0) return DmaErrorZero;
    if (d.hbm_addr[4:0] != '0 || d.sbuf_addr[4:0] != '0 || d.bytes[4:0] != '0 ||
        d.hbm_stride1[4:0] != '0 || d.hbm_stride2[4:0] != '0 || d.sbuf_stride1[4:0] != '0 ||
        d.sbuf_stride2[4:0] != '0)
      return DmaErrorAlign;
    hbm_end = dma_hbm_end(d);
    if (hbm_end > (48'd1 << hbm_log2)) return DmaErrorHbmRange;
    // A transpose: one plane of whole 16-row blocks from HBM; element column c of a row goes to
    // partition (sbuf_addr's) + c, 2 bytes per row.
    if (d.transpose) begin
      if (d.to_hbm || d.count2 != 12'd1 || d.count1[3:0] != '0 || d.sbuf_stride1 != '0
          || 48'(d.sbuf_addr) % 48'(PartitionBytes) + 48'(d.count1) * 48'd2 > 48'(PartitionBytes)
          || 48'(d.sbuf_addr) / 48'(PartitionBytes) + 48'(d.bytes) / 48'd2 > sbuf_limit / 48'(PartitionBytes))
        return DmaErrorTranspose;
      return DmaErrorNone;
    end
    sbuf_end = 48'(d.sbuf_addr) + (48'(d.count2) - 48'd1) * 48'(d.sbuf_stride2) +
               (48'(d.count1) - 48'd1) * 48'(d.sbuf_stride1) + 48'(d.bytes);
    if (sbuf_end > sbuf_limit) return DmaErrorSbufRange;
    return DmaErrorNone;
  endfunction

  // Whether an SBUF -> HBM descriptor writes into the program image [base, base + bytes), which
  // the fetch unit reads instructions and descriptor lists from (DmaErrorImage).
  function automatic logic dma_writes_image(input isa_dma_t d, input logic [HbmAddrW-1:0] base,
                                           input logic [HbmAddrW-1:0] bytes);
    return d.to_hbm && bytes != '0 && 48'(d.hbm_addr) < 48'(base) + 48'(bytes) &&
           48'(base) < dma_hbm_end(d);
  endfunction

  // A descriptor on its way to an engine: from the sync queue, or an entry of a list in HBM
  // (malformed: its engine, last or reserved bits were set; the engine refuses it).
  typedef struct packed {
    logic     malformed;
    isa_dma_t desc;
  } dma_entry_t;

endpackage
