// Types of the DMA engines. Mirrors model/dma/dma.h (DmaDescriptor, DmaError).
package nc_dma_pkg;

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

  typedef enum logic [2:0] {
    DmaErrNone      = 3'd0,
    DmaErrZero      = 3'd1,  // bytes, count1 or count2 is zero
    DmaErrAlign     = 3'd2,  // an address, stride or size not a multiple of 32 bytes
    DmaErrHbmRange  = 3'd3,  // the transfer runs past the end of HBM
    DmaErrSbufRange = 3'd4,  // the transfer runs past the end of SBUF
    DmaErrListLength = 3'd5  // (the NeuronCore's) a ninth descriptor in one list: never issued
  } dma_err_e;

  // What is wrong with a descriptor, if anything, in model::dma_check's order. HBM holds
  // 2^hbm_log2 bytes and the flat SBUF sbuf_limit. The NeuronCore checks each descriptor at
  // issue (so a refusal is precise); an engine checks it again when it loads it.
  // (The direction and `last` do not matter to the checks.)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic dma_err_e dma_check(input dma_desc_t d, input logic [5:0] hbm_log2,
                                         input logic [47:0] sbuf_limit);
  /* verilator lint_on UNUSEDSIGNAL */
    logic [47:0] hbm_end, sbuf_end;
    if (d.bytes == '0 || d.count1 == '0 || d.count2 == '0) return DmaErrZero;
    if (d.hbm_addr[4:0] != '0 || d.sbuf_addr[4:0] != '0 || d.bytes[4:0] != '0 ||
        d.hbm_stride1[4:0] != '0 || d.hbm_stride2[4:0] != '0 || d.sbuf_stride1[4:0] != '0 ||
        d.sbuf_stride2[4:0] != '0)
      return DmaErrAlign;
    hbm_end = 48'(d.hbm_addr) + (48'(d.count2) - 48'd1) * 48'(d.hbm_stride2) +
              (48'(d.count1) - 48'd1) * 48'(d.hbm_stride1) + 48'(d.bytes);
    if (hbm_end > (48'd1 << hbm_log2)) return DmaErrHbmRange;
    sbuf_end = 48'(d.sbuf_addr) + (48'(d.count2) - 48'd1) * 48'(d.sbuf_stride2) +
               (48'(d.count1) - 48'd1) * 48'(d.sbuf_stride1) + 48'(d.bytes);
    if (sbuf_end > sbuf_limit) return DmaErrSbufRange;
    return DmaErrNone;
  endfunction

endpackage
