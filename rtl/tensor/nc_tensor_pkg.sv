// Types of the tensor engine: its instruction, error codes and PSUM bookkeeping.
// The C++ mirror is model/tensor_isa.h; tests/test_tensor_rtl.cpp checks that they agree.
package nc_tensor_pkg;

  typedef enum logic [1:0] {
    OpNop             = 2'd0,
    OpLoadStationary  = 2'd1,
    OpMultiplyMoving  = 2'd2
  } te_opcode_e;

  // Why an instruction was rejected. It is dropped, nothing else changes, the next one runs.
  typedef enum logic [3:0] {
    ErrNone          = 4'd0,
    ErrOpcode        = 4'd1,   // opcode is not LS or MM
    ErrDtype         = 4'd2,   // not a floating-point input type
    ErrK             = 4'd3,   // K is 0 or more than the array's rows
    ErrM             = 4'd4,   // LS: M is 0 or more than the array's columns
    ErrN             = 4'd5,   // MM: N is 0 or more than a PSUM bank's elements
    ErrPsumBank      = 4'd6,   // MM: bank >= number of banks
    ErrPsumRange     = 4'd7,   // MM: offset + N runs past the end of the bank
    ErrNoStationary  = 4'd8,   // MM before any LoadStationary
    ErrKMismatch     = 4'd9,   // MM: K differs from the loaded stationary's K
    ErrSbufRange     = 4'd10,  // the access runs past the end of an SBUF partition
    ErrSbufAlign     = 4'd11   // address or stride not a multiple of the element size
  } te_error_e;

  localparam int unsigned SbufAddrW = 18;  // bytes in one SBUF partition: up to 256 KiB

  // One tensor-engine instruction. LS reads stationary[K, M]: element j of partition k at
  // sbuf_addr + j * sbuf_stride. MM reads moving[K, N] the same way and writes PSUM
  // partitions 0..M-1 (M of the loaded stationary), bank psum_bank, elements
  // psum_offset .. psum_offset + N - 1, overwriting or accumulating.
  typedef struct packed {
    te_opcode_e            opcode;
    logic [3:0]            dtype;        // nc_pkg::dtype_e
    logic [8:0]            k;
    logic [8:0]            m;            // LS only
    logic [9:0]            n;            // MM only
    logic [SbufAddrW-1:0]  sbuf_addr;
    logic [15:0]           sbuf_stride;
    logic [3:0]            psum_bank;    // MM only
    logic [9:0]            psum_offset;  // MM only
    logic                  accumulate;   // MM only
    logic [7:0]            tag;          // echoed on PSUM writes and rejections
  } te_instr_t;

  // What travels with each moving vector from the SBUF to the bottom of the array.
  typedef struct packed {
    logic        valid;
    logic        wsel;        // weight bank the vector multiplies with
    logic [2:0]  psum_bank;
    logic [9:0]  psum_elem;   // psum_offset + n
    logic        accumulate;
    logic [8:0]  m_limit;     // columns 0..m_limit-1 write PSUM
    logic [7:0]  tag;
  } te_vec_meta_t;

endpackage
