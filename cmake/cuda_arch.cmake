# Included before find_package(Torch). A CUDA build of LibTorch (Caffe2's public/cuda.cmake, as
# shipped with PyTorch 2.x) enables CUDA itself, sets CMAKE_CUDA_ARCHITECTURES to OFF and appends
# its own "-gencode arch=...,code=..." list to CMAKE_CUDA_FLAGS, taken from TORCH_CUDA_ARCH_LIST
# or from GPU detection ("common architectures" where none is visible, sm_50 included, which
# CUDA 13's nvcc refuses). The architectures asked for are remembered here, so that
# cmake/cuda.cmake can put them back and drop Torch's list: tpbench's kernels are compiled for
# what the user (or scripts/gpu-check.sh, for the GPU it sees) asked, 90 (H100) by default.
# Torch's list is also pinned to the same architectures, so its detection does not run.
#
# The CUDA toolkit is chosen here too, before Torch looks for one: Caffe2's FindCUDA takes the
# folder above the first nvcc on PATH, which on a machine with a wrapper script such as
# /usr/local/bin/nvcc is /usr/local (no CUDA headers there), while cmake/cuda.cmake would compile
# with /usr/local/cuda. One choice for both, in this order: CMAKE_CUDA_COMPILER or CUDACXX, else
# /usr/local/cuda/bin/nvcc, else nvcc on PATH (CMake's own search, left as it is).
if(TPB_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  set(_tpb_nvcc "${CMAKE_CUDA_COMPILER}")
  if(NOT _tpb_nvcc AND DEFINED ENV{CUDACXX})
    set(_tpb_nvcc "$ENV{CUDACXX}")
  endif()
  if(_tpb_nvcc)
    get_filename_component(_tpb_cuda_bin "${_tpb_nvcc}" DIRECTORY)
    get_filename_component(_tpb_cuda_root "${_tpb_cuda_bin}" DIRECTORY)
    if(EXISTS "${_tpb_cuda_root}/include/cuda_runtime.h")
      set(TPB_CUDA_ROOT "${_tpb_cuda_root}")  # where cmake/nvtx_shim.cmake's FindCUDAToolkit looks
      if(NOT DEFINED CUDA_TOOLKIT_ROOT_DIR)
        set(CUDA_TOOLKIT_ROOT_DIR "${_tpb_cuda_root}" CACHE PATH "CUDA toolkit (the one of CMAKE_CUDA_COMPILER)")
      endif()
    endif()
  endif()
endif()
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
