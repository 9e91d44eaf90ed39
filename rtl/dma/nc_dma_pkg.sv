// Types of the DMA engines. Refusal codes are the ISA's (isa_dma_error_e).
package nc_dma_pkg;
  import nc_isa_pkg::*;

  localparam int unsigned SbufAddrW = 25;  // 128 partitions x 224 KiB = 28 MiB, byte addresses
  localparam int unsigned SbufBytes = 128 * 229376;

  // One transfer of count2 planes x count1 rows x bytes, in 32-byte bursts. Row r of plane p
  // starts at addr + p * stride2 + r * stride1 on each side. A list of descriptors (scatter /
  // gather) ends with `last`; its completion is reported once.
  typedef struct packed {
    logic                 to_hbm;        // 0: HBM -> SBUF, 1: SBUF -> HBM
    logic                 last;
    logic [31:0]          hbm_addr;
    logic [SbufAddrW-1:0] sbuf_addr;     // partition * 229376 + offset
    logic [16:0]          bytes;         // per row: a multiple of 32, 32 .. 65536
    logic [11:0]          count1;        // rows per plane, 1 .. 4095
    logic [11:0]          count2;        // planes, 1 .. 4095
    logic [31:0]          hbm_stride1, hbm_stride2;
    logic [SbufAddrW-1:0] sbuf_stride1, sbuf_stride2;
  } dma_desc_t;

  // What is wrong with a descriptor, if anything, in model::dma_check's order. HBM holds
  // 2^hbm_log2 bytes and the flat SBUF sbuf_limit. The NeuronCore checks each descriptor at
  // issue (so a refusal is precise); an engine checks it again when it loads it.
  // (The direction and `last` do not matter to the checks.)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic isa_dma_error_e dma_check(input dma_desc_t d, input logic [5:0] hbm_log2,
                                         input logic [47:0] sbuf_limit);
  /* verilator lint_on UNUSEDSIGNAL */
    logic [47:0] hbm_end, sbuf_end;
    if (d.bytes == '0 || d.count1 == '0 || d.count2 == '0) return DmaErrorZero;
    if (d.hbm_addr[4:0] != '0 || d.sbuf_addr[4:0] != '0 || d.bytes[4:0] != '0 ||
        d.hbm_stride1[4:0] != '0 || d.hbm_stride2[4:0] != '0 || d.sbuf_stride1[4:0] != '0 ||
        d.sbuf_stride2[4:0] != '0)
      return DmaErrorAlign;
    hbm_end = 48'(d.hbm_addr) + (48'(d.count2) - 48'd1) * 48'(d.hbm_stride2) +
              (48'(d.count1) - 48'd1) * 48'(d.hbm_stride1) + 48'(d.bytes);
    if (hbm_end > (48'd1 << hbm_log2)) return DmaErrorHbmRange;
    sbuf_end = 48'(d.sbuf_addr) + (48'(d.count2) - 48'd1) * 48'(d.sbuf_stride2) +
               (48'(d.count1) - 48'd1) * 48'(d.sbuf_stride1) + 48'(d.bytes);
    if (sbuf_end > sbuf_limit) return DmaErrorSbufRange;
    return DmaErrorNone;
  endfunction

endpackage
