// harness/meta.h — gathers the results file's "meta" block (record/records.h: Meta): versions,
// host, build and GPUs. It lives on the harness side because it asks LibTorch, CUDA and the
// build for their versions, which record/ must not depend on.
#pragma once

#include <string>
#include <vector>

#include "common/cores.h"  // availableCores(), which the harness reports beside each point
#include "core/entry.h"
#include "record/records.h"

namespace tpb {

// The "meta" block: versions, host, build, and the command line that produced the file.
Meta collectMeta(const std::string& command);

// The machine's compute speed for meta.sgemm_gflops: one thread's float32 matrix product
// through LibTorch, the BLAS the training's layers run on (C[512x512] = A[512x784] B[784x512]:
// the MNIST MLP's first layer at batch 512), the fastest of 15 timed products after 2 warm-ups,
// in GFLOP/s (2 M K N flops each); about 0.25 s on a 2 GHz core. The fastest, not the median:
// this VM's speed moves by up to 2x over seconds (one process: 31 GFLOP/s, then 21.6 a second
// later), and what a neighbour takes away only lowers it; the fastest says what the machine
// is. One thread, as in a rank: the intra-op and BLAS thread counts are set to one for the
// measurement and put back after. NaN if a product took no measurable time.
double sgemmGflops();

// The registry's fields recorded beside a run or collective record (origin, order, colour and,
// for a training run, the ranks that consume data).
EntryRecord entryRecordOf(const EntryInfo& entry, std::optional<int> dataRanks = std::nullopt);

// Names of the GPUs this process can see, for meta.gpus ([] without CUDA, a driver or a GPU).
std::vector<std::string> visibleGpuNames();

}  // namespace tpb
