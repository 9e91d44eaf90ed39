# RTL source lists, packages first. Every list is used after NC_RTL_COMMON, whose nc_isa_pkg
# (generated from model/isa/ncore.isa) holds the vocabulary every block shares. Included by the top-level CMakeLists.txt.
set(NC_RTL_COMMON
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_isa_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_fp_pkg.sv
)
set(NC_RTL_LINT_WAIVERS ${CMAKE_CURRENT_LIST_DIR}/common/lint.vlt)
set(NC_RTL_TENSOR
  ${CMAKE_CURRENT_LIST_DIR}/tensor/nc_tensor_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_fifo.sv
  ${CMAKE_CURRENT_LIST_DIR}/tensor/nc_systolic_array.sv
  ${CMAKE_CURRENT_LIST_DIR}/tensor/nc_psum.sv
  ${CMAKE_CURRENT_LIST_DIR}/tensor/nc_tensor_engine.sv
)
set(NC_RTL_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/common)
set(NC_RTL_HBM
  ${CMAKE_CURRENT_LIST_DIR}/hbm/nc_hbm_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_fifo.sv
  ${CMAKE_CURRENT_LIST_DIR}/hbm/nc_hbm_sched.sv
  ${CMAKE_CURRENT_LIST_DIR}/hbm/nc_hbm_refresh.sv
  ${CMAKE_CURRENT_LIST_DIR}/hbm/nc_hbm_ctrl.sv
)
set(NC_RTL_DMA
  ${CMAKE_CURRENT_LIST_DIR}/dma/nc_dma_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_fifo.sv
  ${CMAKE_CURRENT_LIST_DIR}/dma/nc_dma.sv
)
set(NC_RTL_VECTOR
  ${CMAKE_CURRENT_LIST_DIR}/scalar/nc_act_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/vector/nc_vector_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_fifo.sv
  ${CMAKE_CURRENT_LIST_DIR}/vector/nc_vector_engine.sv
  ${CMAKE_CURRENT_LIST_DIR}/scalar/nc_scalar_engine.sv
)
set(NC_RTL_ACT
  ${CMAKE_CURRENT_LIST_DIR}/scalar/nc_act_pkg.sv
)
set(NC_RTL_CORE_ISA
  ${CMAKE_CURRENT_LIST_DIR}/common/nc_isa_pkg.sv
  ${CMAKE_CURRENT_LIST_DIR}/core/nc_isa_decode.sv
)
set(NC_RTL_CORE
  ${CMAKE_CURRENT_LIST_DIR}/core/nc_isa_decode.sv
  ${CMAKE_CURRENT_LIST_DIR}/core/nc_sbuf.sv
  ${CMAKE_CURRENT_LIST_DIR}/core/nc_core_seq.sv
  ${CMAKE_CURRENT_LIST_DIR}/core/nc_core.sv
)
