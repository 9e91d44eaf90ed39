// Types of the DMA engines. Mirrors model/dma.h (DmaDescriptor, DmaError).
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
    DmaErrSbufRange = 3'd4   // the transfer runs past the end of SBUF
  } dma_err_e;

endpackage
