// Helpers on the data types (isa_d_type_e, from model/isa/ncore.isa).
package nc_pkg;
  import nc_isa_pkg::*;

  // Bytes one element of the type occupies in SBUF.
  function automatic logic [2:0] dtype_bytes(isa_d_type_e t);
    unique case (t)
      DTypeFp32, DTypeTf32, DTypeInt32: dtype_bytes = 3'd4;
      DTypeBf16, DTypeFp16, DTypeInt16: dtype_bytes = 3'd2;
      default:                 dtype_bytes = 3'd1;
    endcase
  endfunction

  // The tensor engine takes the floating-point types only.
  function automatic logic is_float_dtype(logic [3:0] t);
    return t <= 4'(DTypeE5m2);
  endfunction

endpackage
