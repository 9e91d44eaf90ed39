// Types of the tensor engine: its instruction and PSUM bookkeeping. Refusal codes and sparsity
// modes are the ISA's (isa_te_error_e, isa_te_sparsity_e).
package nc_tensor_pkg;
  import nc_isa_pkg::*;

  // Row and column tiling. The array is a Segs x Segs grid of segments; a tile is a block of
  // them. split: 0 the whole side, 1 halves, 2 quarters; tile: which one.
  localparam int unsigned Segs = 4;
  typedef struct packed {
    logic [1:0] row_split;
    logic [1:0] row_tile;
    logic [1:0] col_split;
    logic [1:0] col_tile;
  } te_tiling_t;

  // What every PE does with the vector passing it (chosen per vector, from the LS's modes).
  typedef enum logic [1:0] {
    PeDense     = 2'd0,   // sum + w * x
    PeDoubleRow = 2'd1,   // sum + (w0 * x0 + w1 * x1)
    PeTranspose = 2'd2,   // x nonzero ? stationary bits : sum
    PeSparse    = 2'd3    // sum + w * x[tag], or sum when the tag is out of range
  } te_pe_op_e;

  localparam int unsigned MaxReps = 4;  // elements an operand access reads per partition
  // Fast LoadStationary (issue 49, model::TensorCosts::ls_columns_per_cycle): an LS loads up to
  // LsCols weight columns a cycle (1, 2 or LsCols at run time); 4 is the NKI performance guide's
  // "up to 4x faster" LoadStationary.
  localparam int unsigned LsCols = 4;

  localparam int unsigned SbufAddrW = 18;  // bytes in one SBUF partition: up to 256 KiB

  // The instruction is the ISA's (isa_te_instr_t: the te payload, the tag echoed on PSUM writes
  // and rejections, and the opcode, load_stationary or multiply_moving). LS reads
  // stationary[K, M]: element j of partition k at sbuf_addr + j * sbuf_stride. MM reads
  // moving[K, N] the same way and writes PSUM partitions 0..M-1 (M of the loaded stationary),
  // bank psum_bank, elements psum_offset .. psum_offset + N - 1, overwriting or accumulating.
  // Modes (README.md, "Modes"): an operand with R elements per partition (R = 2 for
  // double-row, G / 4 for sparse) has element j of replica r at sbuf_addr + (r * F + j) *
  // sbuf_stride, F its free size. A sparse LS also reads 4-bit tags, four per uint16, the
  // tag of column j in bits [4 * (j % 4) +: 4] of the uint16 at tag_addr + 2 * (j / 4).
  /* verilator lint_off UNUSEDSIGNAL */  // the tiling fields only
  function automatic te_tiling_t te_tiling(isa_te_instr_t i);
  /* verilator lint_on UNUSEDSIGNAL */
    return '{row_split: i.row_split, row_tile: i.row_tile, col_split: i.col_split,
             col_tile: i.col_tile};
  endfunction

  // A moving vector carries the data of up to Segs MMs on disjoint tiles. For each row
  // segment: whose data it is (the input side).
  typedef struct packed {
    logic            valid;
    logic            wsel;    // weight bank its products use
    logic [Segs-1:0] cols;    // the column segments of its MM's tile
  } te_row_meta_t;

  // For each column segment: where its outputs go, from the SBUF to the bottom of the array.
  typedef struct packed {
    logic        valid;
    logic [2:0]  psum_bank;
    logic [9:0]  psum_elem;   // psum_offset + n (16-bit elements when narrow)
    logic        narrow;      // transpose of a 16- or 8-bit type: a 16-bit PSUM element
    logic        accumulate;
    logic [8:0]  m_limit;     // columns below m_limit (array index) write PSUM
    logic [7:0]  tag;
    logic        last;        // the MM's last moving vector: it completes as this one leaves
    logic        lead;        // the lowest column segment of the MM's tile: reports completion
  } te_col_meta_t;

endpackage
