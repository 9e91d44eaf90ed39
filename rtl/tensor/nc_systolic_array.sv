// Weight-stationary systolic array of Rows x Cols processing elements (PEs).
//
// PE(k, m) holds two stationary weights, w[0][k][m] and w[1][k][m] (an active and a shadow
// bank, so the next stationary loads while the current one computes). Moving element
// x[k][n] enters row k at the left edge and moves one column right per cycle; the partial
// sum of output (m, n) moves one row down per cycle:
//     psum[k][m] = psum[k-1][m] + w[k][m] * x[k][n]      (psum[-1][m] = +0)
// Each PE rounds its product and its sum to FP32 (nc_fp_pkg), so column m adds its K
// products in row order 0..Rows-1 exactly as the golden model does.
//
// Inputs arrive unskewed, one whole vector (all rows) per cycle. The vector that entered d
// cycles ago is at every PE with k + m = d (its wavefront is that anti-diagonal), so a PE
// reads its moving element straight from a ring buffer of the last Rows + Cols input vectors:
// no moving data shifts between PEs in the model, only the partial sums move. (In silicon the
// ring is the chain of operand registers; in Verilator a ring write is one vector a cycle
// instead of Rows x Cols copies.) Each element carries its weight-bank select, so every PE
// switches banks exactly when the first vector of the next MultiplyMoving reaches it.
//
// Output: out_sum_o[m] holds the finished sum of the vector that entered Rows + m cycles ago.
//
// Modes: each vector carries the operation every PE applies to it (nc_tensor_pkg::te_pe_op_e):
//   dense       sum + w0 * x0
//   double-row  sum + (w0 * x0 + w1 * x1)   (FP8: two K rows per PE, the pair summed first)
//   transpose   x0 nonzero ? the stationary's raw bits (w_aux) : sum   (no arithmetic)
//   sparse      sum + w0 * x, x the element its tag (w_aux[3:0]) selects among the G moving
//               rows of its group: partition 4 * (k / 4) + tag % 4, replica tag / 4; a tag
//               >= G leaves the sum unchanged.
// A vector carries up to MaxReps elements per row (replicas: the second K row of double-row,
// the G / 4 rows a sparse group's partition holds).
//
// Tiling: the array is a Segs x Segs grid of segments. A vector may carry the data of several
// MMs on disjoint tiles; each row segment's metadata says whether it holds data, its weight
// bank, and the column segments of its MM's tile. A PE takes part only when its row segment
// holds data for its column segment; otherwise it passes the sum from above unchanged, so
// each column adds exactly the products of its own MM's rows.
//
// The array is written as loops over state arrays (a PE function applied to every element)
// rather than Rows x Cols module instances: Verilator then builds a 128 x 128 array in a few
// minutes instead of hours.
module nc_systolic_array
  import nc_isa_pkg::*;
  import nc_fp_pkg::*;
  import nc_tensor_pkg::*;
#(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128,
  // One PE whose operands and sums are brought out as plain signals, for waves: the big
  // state arrays are too large for a wave dump.
  parameter int unsigned ProbeRow = 0,
  parameter int unsigned ProbeCol = 0
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  // One column of a weight bank per cycle (LoadStationary).
  input  logic                           w_we_i,
  input  logic                           w_row_en_i [Rows],     // rows of the LS's tile
  input  logic                           w_bank_i,
  input  logic [$clog2(Cols)-1:0]        w_col_i,
  input  fp_unpacked_t                   w_col_data_i [Rows],
  input  fp_unpacked_t                   w_col_data1_i [Rows],  // double-row: second K row
  input  logic [31:0]                    w_col_aux_i [Rows],    // transpose bits or sparse tag
  // One moving vector per cycle, unskewed; bubbles are all-zero vectors.
  input  te_row_meta_t                   in_row_i [Segs],
  input  te_pe_op_e                      in_op_i,
  input  isa_te_sparsity_e                   in_sparsity_i,
  input  fp_unpacked_t                   in_data_i [MaxReps][Rows],
  // Bottom of each column (FP32 bits).
  output logic [31:0]                    out_sum_o [Cols]
);
  localparam int unsigned Depth = Rows + Cols;  // oldest vector still in the array
  localparam int unsigned PtrW = $clog2(Depth);
  localparam int unsigned RowW = $clog2(Rows);
  localparam int unsigned SegW = $clog2(Segs);

  // State is kept in unpacked arrays: Verilator then reads one element where a packed
  // vector would have it copy and shift a whole row.
  // Weights: [bank][column][row], written one column a cycle.
  fp_unpacked_t w_q [2][Cols][Rows];
  fp_unpacked_t w1_q [2][Cols][Rows];
  logic [31:0]  w_aux_q [2][Cols][Rows];

  // Input ring: the entry written at ptr this cycle is at anti-diagonal d, d cycles later.
  fp_unpacked_t    ring_data_q [Depth][MaxReps][Rows];
  te_row_meta_t    ring_row_q [Depth][Segs];
  te_pe_op_e       ring_op_q [Depth];
  isa_te_sparsity_e    ring_sparsity_q [Depth];
  logic [PtrW-1:0] ptr_q, ptr_d;

  // Partial sums: registered in the column groups below (g_col[g]).
  // A sum only moves down its column, so columns are independent: the array is computed in
  // ColGroups blocks of columns, each a clocked block with its own sum registers, so that a
  // simulator built with threads could run them in parallel (Verilator 5.006 keeps them in one
  // macro-task: tests/README.md, "Levers").
  localparam int unsigned ColGroups = (Cols >= 32 && Cols % 2 == 0) ? 2 : 1;
  localparam int unsigned GroupCols = Cols / ColGroups;

  // Ring slot of the vector on anti-diagonal d >= 1 (d = 0 is the live input).
  function automatic logic [PtrW-1:0] ring_index(int unsigned d, logic [PtrW-1:0] ptr);
    return PtrW'((int'(ptr) >= int'(d)) ? int'(ptr) - d : int'(ptr) + Depth - d);
  endfunction

  always_comb begin
    ptr_d = (ptr_q == PtrW'(Depth - 1)) ? '0 : ptr_q + 1'b1;
  end

  // An LS writes the rows of its tile and keeps the rest of the column (other tiles' weights).
  fp_unpacked_t w_col_new [Rows];
  fp_unpacked_t w_col_new1 [Rows];
  logic [31:0]  w_col_aux_new [Rows];
  always_comb begin
    for (int unsigned k = 0; k < Rows; k++) begin
      w_col_new[k] = w_row_en_i[k] ? w_col_data_i[k] : w_q[w_bank_i][w_col_i][k];
      w_col_new1[k] = w_row_en_i[k] ? w_col_data1_i[k] : w1_q[w_bank_i][w_col_i][k];
      w_col_aux_new[k] = w_row_en_i[k] ? w_col_aux_i[k] : w_aux_q[w_bank_i][w_col_i][k];
    end
  end

  // The moving element of replica rep, row row, for the vector on diagonal d.
  function automatic fp_unpacked_t moving(int unsigned d, logic [PtrW-1:0] idx,
                                          logic [1:0] rep, logic [RowW-1:0] row);
    return (d == 0) ? in_data_i[rep][row] : ring_data_q[idx][rep][row];
  endfunction

  // The new partial sum of PE(k, m), given the sum from the PE above: the PE function.
  // Every mode shares one multiplier and one adder (double-row adds a second product first),
  // so the simulator holds one copy of the FP32 logic per PE rather than one per mode.
  function automatic logic [31:0] pe_sum(int unsigned k, int unsigned m, logic [31:0] above);
    // The vector at PE(k, m) is the one on diagonal k + m.
    automatic int unsigned     d = k + m;
    automatic logic [PtrW-1:0] idx = ring_index(d, ptr_q);
    automatic logic [SegW-1:0] seg_row = SegW'(k * Segs / Rows);
    automatic logic [SegW-1:0] seg_col = SegW'(m * Segs / Cols);
    automatic te_row_meta_t    row = (d == 0) ? in_row_i[seg_row] : ring_row_q[idx][seg_row];
    automatic logic            sel = row.wsel;
    automatic te_pe_op_e       op = (d == 0) ? in_op_i : ring_op_q[idx];
    automatic fp_unpacked_t    x = moving(d, idx, 2'd0, RowW'(k));
    automatic logic [31:0]     aux = w_aux_q[sel][m][k];
    automatic logic [31:0]     product;
    if (!row.valid || !row.cols[seg_col]) return above;  // not this column's MM: pass the sum
    if (op == PeTranspose) return x.is_zero ? above : aux;
    if (op == PeSparse) begin
      automatic isa_te_sparsity_e sp = (d == 0) ? in_sparsity_i : ring_sparsity_q[idx];
      automatic logic [4:0]       group = 5'd4 + 5'({sp, 2'b00});
      if ({1'b0, aux[3:0]} >= group) return above;  // out-of-range tag: adds nothing
      x = moving(d, idx, aux[3:2], RowW'((k & ~32'd3) | 32'(aux[1:0])));
    end
    product = fp32_mul(w_q[sel][m][k], x);
    if (op == PeDoubleRow)
      product = fp32_add(product, fp32_mul(w1_q[sel][m][k], moving(d, idx, 2'd1, RowW'(k))));
    return fp32_add(above, product);
  endfunction


  // The probed PE, as seen in waves (waves/tensor_engine.gtkw): its operands and incoming sum
  // this cycle, and its sum register (what it computed on the last clock edge; recomputing the
  // PE here would double the simulator's code for it).
  logic [31:0] probe_weight, probe_moving, probe_sum_in, probe_sum_q;
  logic        probe_wsel;
  te_pe_op_e   probe_op;
  logic [PtrW-1:0] probe_idx;
  always_comb begin
    probe_idx = ring_index(ProbeRow + ProbeCol, ptr_q);
    probe_wsel = (ProbeRow + ProbeCol == 0) ? in_row_i[ProbeRow * Segs / Rows].wsel
                                            : ring_row_q[probe_idx][ProbeRow * Segs / Rows].wsel;
    probe_op = (ProbeRow + ProbeCol == 0) ? in_op_i : ring_op_q[probe_idx];
    probe_weight = pack_fp32(w_q[probe_wsel][ProbeCol][ProbeRow]);
    probe_moving = pack_fp32((ProbeRow + ProbeCol == 0) ? in_data_i[0][ProbeRow]
                                                        : ring_data_q[probe_idx][0][ProbeRow]);
    probe_sum_in = g_col[ProbeCol / GroupCols].probe_above_q;
    probe_sum_q = g_col[ProbeCol / GroupCols].probe_own_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ptr_q <= '0;
    else ptr_q <= ptr_d;
  end

  // Bubbles entered in a row, saturating at Depth. The sum at PE(k, m) belongs to the vector
  // that entered k + m cycles ago and is zero when that vector was a bubble, so once Depth
  // bubbles have entered and another is entering, every sum is zero and stays zero: the PEs
  // are then not evaluated at all (an idle array costs the simulation almost nothing).
  logic [PtrW:0] bubbles_q;
  logic          in_any_valid, array_idle;
  always_comb begin
    in_any_valid = 1'b0;
    for (int unsigned s = 0; s < Segs; s++) in_any_valid = in_any_valid | in_row_i[s].valid;
  end
  assign array_idle = bubbles_q == (PtrW + 1)'(Depth) && !in_any_valid;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) bubbles_q <= '0;
    else if (in_any_valid) bubbles_q <= '0;
    else if (bubbles_q != (PtrW + 1)'(Depth)) bubbles_q <= bubbles_q + 1'b1;
  end

  always_ff @(posedge clk_i) begin
    ring_data_q[ptr_q] <= in_data_i;
    ring_row_q[ptr_q] <= in_row_i;
    ring_op_q[ptr_q] <= in_op_i;
    ring_sparsity_q[ptr_q] <= in_sparsity_i;
    if (w_we_i) begin
      w_q[w_bank_i][w_col_i] <= w_col_new;
      w1_q[w_bank_i][w_col_i] <= w_col_new1;
      w_aux_q[w_bank_i][w_col_i] <= w_col_aux_new;
    end
  end

  // The sums of each column group, each group a clocked block. The PEs are evaluated in the
  // clocked block, not in an always_comb, so the simulator runs them once per clock edge with
  // their temporaries in machine registers. The sums are updated in place from the bottom row
  // up: every PE reads the sum above it before that row is rewritten, which is exactly a
  // register per PE, and no next-state copy of the array is made (a simulator copies such a
  // copy element by element, Rows x Cols assignments a cycle and as many lines of code). The
  // sums are read only here; what leaves the group (its bottom row, the probed PE) is
  // registered from them.
  for (genvar g = 0; g < ColGroups; g++) begin : g_col
    logic [31:0] bottom_q [GroupCols];
    logic [31:0] probe_above_q, probe_own_q;
    always_ff @(posedge clk_i) begin
      logic [31:0] ps [Rows][GroupCols];  // static: holds its value from edge to edge
      logic [31:0] bottom_d [GroupCols];
      if (!array_idle) begin
        for (int unsigned r = 0; r < Rows; r++) begin
          automatic int unsigned k = Rows - 1 - r;
          for (int unsigned j = 0; j < GroupCols; j++)
            ps[k][j] = pe_sum(k, g * GroupCols + j, (k == 0) ? 32'd0 : ps[k-1][j]);
        end
        for (int unsigned j = 0; j < GroupCols; j++) bottom_d[j] = ps[Rows-1][j];
        bottom_q <= bottom_d;
        if (ProbeCol / GroupCols == g) begin
          // The inner select keeps the unused index in range when ProbeRow is 0.
          probe_above_q <= (ProbeRow == 0) ? 32'd0
                         : ps[(ProbeRow == 0) ? 0 : ProbeRow - 1][ProbeCol % GroupCols];
          probe_own_q <= ps[ProbeRow][ProbeCol % GroupCols];
        end
      end
    end
    for (genvar j = 0; j < GroupCols; j++) begin : g_out
      assign out_sum_o[g * GroupCols + j] = bottom_q[j];
    end
  end
endmodule
