// Shared types of ncore: data types and their encodings. The numbering matches
// ncore::model::DType (model/common/numerics.h); tests/test_tensor_rtl.cpp checks the two agree.
package nc_pkg;

  typedef enum logic [3:0] {
    DtFp32  = 4'd0,
    DtTf32  = 4'd1,
    DtBf16  = 4'd2,
    DtFp16  = 4'd3,
    DtE4m3  = 4'd4,
    DtE5m2  = 4'd5,
    DtInt8  = 4'd6,
    DtInt16 = 4'd7,
    DtInt32 = 4'd8
  } dtype_e;

  // Bytes one element of the type occupies in SBUF.
  function automatic logic [2:0] dtype_bytes(dtype_e t);
    unique case (t)
      DtFp32, DtTf32, DtInt32: dtype_bytes = 3'd4;
      DtBf16, DtFp16, DtInt16: dtype_bytes = 3'd2;
      default:                 dtype_bytes = 3'd1;
    endcase
  endfunction

  // The tensor engine takes the floating-point types only.
  function automatic logic is_float_dtype(logic [3:0] t);
    return t <= 4'(DtE5m2);
  endfunction

endpackage
