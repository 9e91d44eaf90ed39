# nc_verilate(): one Verilated model, built as part of a library target.
#
# Verilator's own verilate() runs Verilator while CMake configures and lists the files it wrote
# then; when an RTL change makes Verilator write a different set of files, the next build links
# a stale list. Here Verilator runs only at build time, when one of the model's sources changed,
# and the target compiles a fixed set of unit files that #include whatever Verilator wrote
# (scripts/verilated_units): FAST_UNITS units of the per-cycle code at the build type's
# optimisation; TRACE_UNITS units of the per-cycle wave dumping at -O1 (it runs only with waves
# on, and -O3 took 2.3 times as long to compile it for no faster waves); SLOW_UNITS units of the
# code that runs once (construction, the initial settle, the first full dump) at -O0. One unit
# of each (the default) suits a small model: every unit parses the model's headers again. The
# full-size models ask for more units, compiled in parallel.
# tests/README.md, "Build time", has the figures. Touching one RTL file re-Verilates and
# recompiles only the models that include it.
#
#   nc_verilate(TARGET PREFIX Vname TOP_MODULE top SOURCES a.sv ... [TRACE_FST] [COVERAGE]
#               [HOST_FP] [FAST_UNITS n] [TRACE_UNITS n] [SLOW_UNITS n] VERILATOR_ARGS ...)
#
# HOST_FP: the fast PE build (NCORE_FAST_PE, rtl/common/README.md): Verilated with
# +define+NCORE_FAST_PE, each unit compiled with rtl/common/nc_host_fp.h included first (the
# functions the RTL's $c calls name).
#
# The Verilator runtime (verilated.cpp and friends) is compiled once, in nc_verilated.

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_program(NC_VERILATOR_BIN verilator REQUIRED)
set(NC_VERILATOR_ROOT /usr/share/verilator)
set(NC_VERILATE_UNITS_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/../scripts/verilated_units)
find_program(NC_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)

if(NOT TARGET nc_verilated)
  add_library(nc_verilated STATIC ${NC_VERILATOR_ROOT}/include/verilated.cpp
                                  ${NC_VERILATOR_ROOT}/include/verilated_fst_c.cpp
                                  ${NC_VERILATOR_ROOT}/include/verilated_threads.cpp)
  if(NCORE_COVERAGE)
    target_sources(nc_verilated PRIVATE ${NC_VERILATOR_ROOT}/include/verilated_cov.cpp)
    target_compile_definitions(nc_verilated PUBLIC VM_COVERAGE=1)
  else()
    target_compile_definitions(nc_verilated PUBLIC VM_COVERAGE=0)
  endif()
  target_include_directories(nc_verilated SYSTEM PUBLIC ${NC_VERILATOR_ROOT}/include
                                                        ${NC_VERILATOR_ROOT}/include/vltstd)
  target_compile_definitions(nc_verilated PUBLIC VM_SC=0 VM_TRACE=1 VM_TRACE_VCD=0 VM_TRACE_FST=1)
  target_compile_options(nc_verilated PRIVATE -w)
  target_link_libraries(nc_verilated PUBLIC Threads::Threads ZLIB::ZLIB)
endif()

function(nc_verilate target)
  cmake_parse_arguments(V "TRACE_FST;COVERAGE;HOST_FP" "PREFIX;TOP_MODULE;FAST_UNITS;TRACE_UNITS;SLOW_UNITS"
                        "SOURCES;VERILATOR_ARGS" ${ARGN})
  if(NOT DEFINED V_FAST_UNITS)
    set(V_FAST_UNITS 1)
  endif()
  if(NOT DEFINED V_TRACE_UNITS)
    set(V_TRACE_UNITS 1)
  endif()
  if(NOT DEFINED V_SLOW_UNITS)
    set(V_SLOW_UNITS 1)
  endif()
  set(mdir ${CMAKE_CURRENT_BINARY_DIR}/verilated/${V_PREFIX})
  file(MAKE_DIRECTORY ${mdir})
  set(args --cc --make cmake --prefix ${V_PREFIX} --Mdir ${mdir} --top-module ${V_TOP_MODULE})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND args --compiler clang)
  else()
    list(APPEND args --compiler gcc)
  endif()
  if(V_TRACE_FST)
    list(APPEND args --trace-fst)
  endif()
  if(V_COVERAGE)
    list(APPEND args --coverage)
  endif()
  set(unit_options -w)
  if(V_HOST_FP)
    list(APPEND args +define+NCORE_FAST_PE)
    list(APPEND unit_options -include ${PROJECT_SOURCE_DIR}/rtl/common/nc_host_fp.h)
  endif()
  set(sources "")
  foreach(src IN LISTS V_SOURCES)
    get_filename_component(src ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND sources ${src})
  endforeach()
  # Every file a Verilation reads: the sources, the lint waivers and the included headers.
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/rtl/common/*.svh)
  # The command line, kept in a file that changes only when it does: a new option re-Verilates.
  set(argfile ${mdir}/${V_PREFIX}.args)
  file(CONFIGURE OUTPUT ${argfile} CONTENT "${args};${V_VERILATOR_ARGS};${sources}\n" @ONLY)
  set(units "")
  foreach(kind fast trace slow)
    string(TOUPPER ${kind} KIND)
    math(EXPR last "${V_${KIND}_UNITS} - 1")
    foreach(k RANGE ${last})
      list(APPEND units ${mdir}/${V_PREFIX}__${kind}_${k}.cpp)
    endforeach()
  endforeach()
  add_custom_command(
    OUTPUT ${mdir}/${V_PREFIX}.stamp
    BYPRODUCTS ${units} ${mdir}/${V_PREFIX}.h
    COMMAND ${NC_VERILATOR_BIN} ${args} ${V_VERILATOR_ARGS} ${sources}
    COMMAND ${NC_PYTHON3} ${NC_VERILATE_UNITS_SCRIPT} ${mdir} ${V_PREFIX} ${V_FAST_UNITS} ${V_TRACE_UNITS}
            ${V_SLOW_UNITS}
    COMMAND ${CMAKE_COMMAND} -E touch ${mdir}/${V_PREFIX}.stamp
    DEPENDS ${sources} ${headers} ${NC_RTL_LINT_WAIVERS} ${NC_VERILATOR_BIN} ${NC_VERILATE_UNITS_SCRIPT}
            ${argfile}
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    COMMENT "Verilating ${V_PREFIX}"
    VERBATIM)
  add_custom_target(${V_PREFIX}_verilated DEPENDS ${mdir}/${V_PREFIX}.stamp)
  add_dependencies(${target} ${V_PREFIX}_verilated)
  target_sources(${target} PRIVATE ${units})
  foreach(unit IN LISTS units)
    if(unit MATCHES "__slow_[0-9]+\\.cpp$")
      set_source_files_properties(${unit} PROPERTIES COMPILE_OPTIONS "-O0;${unit_options}")
    elseif(unit MATCHES "__trace_[0-9]+\\.cpp$")
      set_source_files_properties(${unit} PROPERTIES COMPILE_OPTIONS "-O1;${unit_options}")
    else()
      set_source_files_properties(${unit} PROPERTIES COMPILE_OPTIONS "${unit_options}")
    endif()
  endforeach()
  target_include_directories(${target} PUBLIC ${mdir})
  target_link_libraries(${target} PUBLIC nc_verilated)
endfunction()
