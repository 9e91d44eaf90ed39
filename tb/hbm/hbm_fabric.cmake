# The HBM fabric of the DMA and core harnesses and the timing checker it attaches to every
# pseudo-channel (nc_hbm_fabric). Included by tb/CMakeLists.txt and, through
# tb/core/core_models.cmake, by the fuzzing build (tests/fuzz).
if(NOT TARGET nc_hbm_fabric)
  add_library(nc_hbm_fabric STATIC ${CMAKE_CURRENT_LIST_DIR}/hbm_checker.cpp ${CMAKE_CURRENT_LIST_DIR}/hbm_fabric.cpp)
  target_link_libraries(nc_hbm_fabric PUBLIC ncore_model fmt::fmt)
endif()
