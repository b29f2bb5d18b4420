# Detects CUDA and NCCL. Whenever they are found, every GPU source is compiled (so a machine
# without a GPU still proves the GPU path builds); running it needs a GPU.
#
# Sets TPB_HAVE_CUDA / TPB_HAVE_NCCL, enables the CUDA language, and defines tpb::nccl (an
# imported-style interface target carrying nccl.h's directory and the library). NCCL is looked
# for in NCCL_HOME first (a -D variable or the environment: PyTorch's nvidia-nccl wheel ships
# include/nccl.h and lib/libnccl.so.2, with no libnccl.so link), then beside CUDA.
set(TPB_HAVE_CUDA OFF)
set(TPB_HAVE_NCCL OFF)
set(TPB_CUDA_SUMMARY "off")
set(TPB_NCCL_SUMMARY "off")
if(NOT TPB_WITH_CUDA)
  set(TPB_CUDA_SUMMARY "off (TPB_WITH_CUDA=OFF)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  set(TPB_CUDA_SUMMARY "not found (no nvcc)")
  return()
endif()

# H100 (sm_90, plus compute_90 PTX that newer GPUs JIT-compile) unless the user names others,
# e.g. -DCMAKE_CUDA_ARCHITECTURES=80 for A100; scripts/gpu-check.sh passes the GPU's own.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures to compile for" FORCE)
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# One CUDA runtime per process: the shared libcudart that CUDA::cudart links. Mixing it with the
# static one CMake would otherwise link into targets with .cu files gives two runtimes whose
# streams and events are not interchangeable.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  set(TPB_CUDA_SUMMARY "nvcc found but the CUDA toolkit is incomplete")
  return()
endif()
set(TPB_HAVE_CUDA ON)
set(TPB_CUDA_SUMMARY
    "${CUDAToolkit_VERSION} (${CUDAToolkit_BIN_DIR}; architectures ${CMAKE_CUDA_ARCHITECTURES})")

set(TPB_NCCL_HINTS)
foreach(home "${NCCL_HOME}" "$ENV{NCCL_HOME}")
  if(home)
    list(APPEND TPB_NCCL_HINTS "${home}")
  endif()
endforeach()
find_path(TPB_NCCL_INCLUDE nccl.h HINTS ${TPB_NCCL_HINTS} PATH_SUFFIXES include
          PATHS ${CUDAToolkit_INCLUDE_DIRS})
find_library(TPB_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${TPB_NCCL_HINTS} PATH_SUFFIXES lib lib64
             PATHS ${CUDAToolkit_LIBRARY_DIR})
if(TPB_NCCL_INCLUDE AND TPB_NCCL_LIBRARY)
  set(TPB_HAVE_NCCL ON)
  add_library(tpb_nccl_lib INTERFACE)
  target_include_directories(tpb_nccl_lib INTERFACE ${TPB_NCCL_INCLUDE})
  target_link_libraries(tpb_nccl_lib INTERFACE ${TPB_NCCL_LIBRARY})
  add_library(tpb::nccl ALIAS tpb_nccl_lib)
  file(STRINGS "${TPB_NCCL_INCLUDE}/nccl.h" _tpb_nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
         _tpb_nccl_ver "${_tpb_nccl_ver}")
  set(TPB_NCCL_SUMMARY "${_tpb_nccl_ver} (${TPB_NCCL_LIBRARY})")
else()
  set(TPB_NCCL_SUMMARY "not found (looked in NCCL_HOME and beside CUDA): no nccl transport")
endif()
