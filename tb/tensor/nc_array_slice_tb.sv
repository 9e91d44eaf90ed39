// Top of one column slice of the PE array for Verilator (tb/tensor/array_slices.h): SliceCols
// columns of a Rows x Cols nc_systolic_array from col_base_i on, its ports those of the array.
// The harness steps Cols / SliceCols of these beside the engine built with ExternalArray.
module nc_array_slice_tb
  import nc_tensor_pkg::*;
#(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128,
  parameter int unsigned SliceCols = 32
) (
  input  logic                           clk_i,
  input  logic                           rst_ni,
  input  logic [$clog2(Cols+1)-1:0]      col_base_i,
  input  logic [LsCols-1:0]              w_we_i,
  input  logic                           w_row_en_i [Rows],
  input  logic                           w_bank_i,
  input  logic [$clog2(Cols)-1:0]        w_col_i [LsCols],
  input  nc_fp_pkg::fp_unpacked_t        w_col_data_i [LsCols][Rows],
  input  nc_fp_pkg::fp_unpacked_t        w_col_data1_i [LsCols][Rows],
  input  logic [31:0]                    w_col_aux_i [LsCols][Rows],
  input  te_row_meta_t                   in_row_i [Segs],
  input  te_pe_op_e                      in_op_i,
  input  nc_isa_pkg::isa_te_sparsity_e   in_sparsity_i,
  input  nc_fp_pkg::fp_unpacked_t        in_data_i [MaxReps][Rows],
  output logic [31:0]                    out_sum_o [SliceCols]
);
  nc_systolic_array #(.Rows(Rows), .Cols(Cols), .SliceCols(SliceCols)) u_array (.*);
endmodule
