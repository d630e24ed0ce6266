# Decides whether the CUDA backend is built. With WEIR_CUDA=AUTO it is built
# when nvcc is found (on PATH, under $CUDA_HOME or /usr/local/cuda); building
# needs no GPU, and the CUDA tests skip at run time when none is present.

set(WEIR_HAVE_CUDA OFF)
if(NOT WEIR_CUDA STREQUAL "OFF")
  find_program(WEIR_NVCC nvcc HINTS ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES bin)
  if(WEIR_NVCC)
    set(CMAKE_CUDA_COMPILER ${WEIR_NVCC})
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # 90: Hopper (H100/H200), the GPUs Weir is tuned for.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # Weir's headers are C++20. CMake 3.25 predates nvcc's C++20 support and
    # has no flag for it, so name the flag (nvcc 12+ accepts it).
    # One CUDA runtime per process, the shared one that weir_cuda links
    # (CUDA::cudart): CMake would otherwise add the static runtime to every
    # target with .cu sources as well.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    find_package(CUDAToolkit REQUIRED)
    set(WEIR_HAVE_CUDA ON)
    message(STATUS "Weir: CUDA backend enabled (${WEIR_NVCC}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(WEIR_CUDA STREQUAL "ON")
    message(FATAL_ERROR "WEIR_CUDA=ON but nvcc was not found (set CUDA_HOME)")
  else()
    message(STATUS "Weir: nvcc not found, CUDA backend skipped")
  endif()
endif()
