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

// The registry's fields recorded beside a run or collective record (origin, order, colour and,
// for a training run, the ranks that consume data).
EntryRecord entryRecordOf(const EntryInfo& entry, std::optional<int> dataRanks = std::nullopt);

// Names of the GPUs this process can see, for meta.gpus ([] without CUDA, a driver or a GPU).
std::vector<std::string> visibleGpuNames();

}  // namespace tpb
