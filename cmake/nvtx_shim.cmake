# Included before find_package(Torch), after cmake/cuda_arch.cmake (which chooses the toolkit).
# PyTorch's CMake config for a CUDA build of LibTorch (Caffe2's public/cuda.cmake) links torch
# against CUDA::nvToolsExt, the NVTX v2 library. CUDA 12.9 and 13 no longer ship that library (NVTX
# 3 is header-only), so FindCUDAToolkit defines no such target and the configure fails ("Failed to
# find nvToolsExt", or "target CUDA::nvToolsExt was not found"), depending on the PyTorch release.
# tpbench itself uses no NVTX: where the toolkit lacks the library, an interface target with the
# NVTX 3 headers stands in for it. With Debian's CPU-only LibTorch nothing refers to it.
set(TPB_NVTX_SHIM OFF)
if(TPB_WITH_CUDA)
  # The CUDA language is not enabled yet, so FindCUDAToolkit does not know the compiler: without
  # this it would take the first nvcc on PATH and cache that toolkit's library paths.
  if(TPB_CUDA_ROOT AND NOT DEFINED CUDAToolkit_ROOT)
    set(CUDAToolkit_ROOT "${TPB_CUDA_ROOT}")
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    target_include_directories(CUDA::nvToolsExt INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
    set(TPB_NVTX_SHIM ON)
  endif()
endif()
