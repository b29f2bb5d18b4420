# Included before find_package(Torch). A CUDA build of LibTorch (Caffe2's public/cuda.cmake, as
# shipped with PyTorch 2.x) enables CUDA itself, sets CMAKE_CUDA_ARCHITECTURES to OFF and appends
# its own "-gencode arch=...,code=..." list to CMAKE_CUDA_FLAGS, taken from TORCH_CUDA_ARCH_LIST
# or from GPU detection ("common architectures" where none is visible, sm_50 included, which
# CUDA 13's nvcc refuses). The architectures asked for are remembered here, so that
# cmake/cuda.cmake can put them back and drop Torch's list: tpbench's kernels are compiled for
# what the user (or scripts/gpu-check.sh, for the GPU it sees) asked, 90 (H100) by default.
# Torch's list is also pinned to the same architectures, so its detection does not run.
set(TPB_CUDA_ARCHITECTURES 90)
if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL ""
   AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "OFF")
  set(TPB_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
endif()
# In the cache before any enable_language(CUDA), so CMake's own default (the compiler's, e.g. 75)
# never takes its place and a re-configure reads back what was asked for.
set(CMAKE_CUDA_ARCHITECTURES "${TPB_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures to compile for")
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  # "90;80-real" -> "9.0 8.0": Torch's notation (major.minor, +PTX not needed for host-only use).
  # Only plain numbers translate ("native" or "all" leave Torch to its own choice).
  set(_tpb_torch_archs "")
  foreach(arch IN LISTS TPB_CUDA_ARCHITECTURES)
    if(NOT arch MATCHES "^([0-9]+)([0-9])[a-z]?(-real|-virtual)?$")
      set(_tpb_torch_archs "")
      break()
    endif()
    list(APPEND _tpb_torch_archs "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  endforeach()
  if(_tpb_torch_archs)
    string(REPLACE ";" " " TORCH_CUDA_ARCH_LIST "${_tpb_torch_archs}")
  endif()
endif()
