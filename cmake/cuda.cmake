# Detects CUDA and NCCL. Whenever they are found, every GPU source is compiled (so a machine
# without a GPU still proves the GPU path builds); running it needs a GPU.
#
# Sets TPB_HAVE_CUDA / TPB_HAVE_NCCL, enables the CUDA language, and defines tpb::nccl (an
# imported-style interface target carrying nccl.h's directory and the library). NCCL is looked
# for in NCCL_HOME only when it is set (a -D variable or the environment: PyTorch's nvidia-nccl
# wheel ships include/nccl.h and lib/libnccl.so.2, with no libnccl.so link), else on the default
# paths and beside CUDA.
set(TPB_HAVE_CUDA OFF)
set(TPB_HAVE_NCCL OFF)
set(TPB_CUDA_SUMMARY "off")
set(TPB_NCCL_SUMMARY "off")
if(NOT TPB_WITH_CUDA)
  set(TPB_CUDA_SUMMARY "off (TPB_WITH_CUDA=OFF)")
  return()
endif()

# The compiler was chosen before find_package(Torch) (cmake/cuda_arch.cmake).
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  set(TPB_CUDA_SUMMARY "not found (no nvcc)")
  return()
endif()

# H100 (sm_90, plus compute_90 PTX that newer GPUs JIT-compile) unless the user names others,
# e.g. -DCMAKE_CUDA_ARCHITECTURES=80 for A100; scripts/gpu-check.sh passes the GPU's own. The
# value was remembered before find_package(Torch) (cmake/cuda_arch.cmake): a CUDA LibTorch sets
# CMAKE_CUDA_ARCHITECTURES to OFF and puts its own -gencode list into CMAKE_CUDA_FLAGS, which
# would compile the kernels for Torch's architectures instead (or fail on ones nvcc dropped).
if(NOT DEFINED TPB_CUDA_ARCHITECTURES)
  set(TPB_CUDA_ARCHITECTURES 90)
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL ""
   OR CMAKE_CUDA_ARCHITECTURES STREQUAL "OFF")
  set(CMAKE_CUDA_ARCHITECTURES "${TPB_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures to compile for" FORCE)
  set(CMAKE_CUDA_ARCHITECTURES "${TPB_CUDA_ARCHITECTURES}")  # over Torch's normal variable OFF
endif()
string(REGEX REPLACE "-gencode[ =]+arch=[^ ]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
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
# Header and library from one NCCL. With NCCL_HOME, both come from there and nowhere else: a
# default search would let a libnccl.so on a system path win over the wheel's libnccl.so.2 (names
# are tried in order across all directories unless NAMES_PER_DIR), pairing one NCCL's header
# with another's library, and libtorch_cuda would then bind to the NCCL tpbench linked.
if(TPB_NCCL_HINTS)
  find_path(TPB_NCCL_INCLUDE nccl.h PATHS ${TPB_NCCL_HINTS} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(TPB_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR PATHS ${TPB_NCCL_HINTS}
               PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  set(_tpb_nccl_where "NCCL_HOME=${TPB_NCCL_HINTS}")
else()
  find_path(TPB_NCCL_INCLUDE nccl.h PATHS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(TPB_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR PATHS ${CUDAToolkit_LIBRARY_DIR})
  set(_tpb_nccl_where "the default paths and beside CUDA; set NCCL_HOME to choose one")
endif()
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
  set(TPB_NCCL_SUMMARY "not found (looked in ${_tpb_nccl_where}): no nccl transport")
endif()
