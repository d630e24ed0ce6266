# Chooses the OpenMP runtime that Weir's kernels and oneDNN share.
#
# Debian's oneDNN is built against GNU OpenMP's ABI (GOMP_parallel and
# friends). LLVM's libomp implements that same ABI, so when the executables
# link libomp instead of libgomp, every parallel region in the process, Weir's
# and oneDNN's, runs on libomp's thread pool (the dynamic linker resolves
# oneDNN's GOMP_* references to the first library that defines them, and an
# executable's own libraries come before its libraries' libraries).
#
# Why bother: libgomp makes two futex system calls per parallel region even
# when no thread sleeps; on this project's (virtualized) machines a system
# call costs ~1 us, so an empty two-thread parallel_for costs 3.4-3.9 us
# against libomp's 1.8-1.9 us. A batch-1 SqueezeNet runs ~40 regions (bench/
# openmp_region_bench.cc, docs/perf.md).
#
# WEIR_OPENMP_RUNTIME: AUTO (LLVM when libomp is installed and ThreadSanitizer
# is off, else GNU), LLVM, GNU. ThreadSanitizer builds keep libgomp, whose
# false positives tsan.supp knows. Defines the target weir::openmp and
# WEIR_OPENMP_LIBRARY, the runtime's library name (libomp or libgomp), which
# the threading test checks against what actually runs.

set(WEIR_OPENMP_RUNTIME "AUTO" CACHE STRING "OpenMP runtime for Weir and oneDNN: AUTO, LLVM (libomp), GNU (libgomp)")
set_property(CACHE WEIR_OPENMP_RUNTIME PROPERTY STRINGS AUTO LLVM GNU)

# GCC compiles the pragmas (-fopenmp) whichever runtime executes them.
find_package(OpenMP REQUIRED)

file(GLOB weir_llvm_lib_dirs LIST_DIRECTORIES true /usr/lib/llvm-*/lib)
find_library(WEIR_LIBOMP NAMES omp omp5 HINTS ${weir_llvm_lib_dirs})

set(weir_openmp_choice GNU)
if(WEIR_OPENMP_RUNTIME STREQUAL "LLVM")
  if(NOT WEIR_LIBOMP)
    message(FATAL_ERROR "WEIR_OPENMP_RUNTIME=LLVM but libomp was not found (apt-get install libomp-dev)")
  endif()
  set(weir_openmp_choice LLVM)
elseif(WEIR_OPENMP_RUNTIME STREQUAL "AUTO" AND WEIR_LIBOMP AND NOT WEIR_SANITIZE_THREAD)
  set(weir_openmp_choice LLVM)
elseif(NOT WEIR_OPENMP_RUNTIME MATCHES "^(AUTO|GNU)$")
  message(FATAL_ERROR "WEIR_OPENMP_RUNTIME must be AUTO, LLVM or GNU, got '${WEIR_OPENMP_RUNTIME}'")
endif()

add_library(weir_openmp INTERFACE)
add_library(weir::openmp ALIAS weir_openmp)
target_compile_options(weir_openmp INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${OpenMP_CXX_FLAGS}>)
if(weir_openmp_choice STREQUAL "LLVM")
  target_link_libraries(weir_openmp INTERFACE ${WEIR_LIBOMP})
    set(WEIR_OPENMP_LIBRARY libomp)
  message(STATUS "Weir: OpenMP runtime LLVM (${WEIR_LIBOMP})")
else()
  target_link_libraries(weir_openmp INTERFACE OpenMP::OpenMP_CXX)
  set(WEIR_OPENMP_LIBRARY libgomp)
  message(STATUS "Weir: OpenMP runtime GNU (libgomp)")
endif()
