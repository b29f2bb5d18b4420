// worker/train_job.h — the worker side of one training point (`tpbench run|sweep`): the job's
// config back as a TrainConfig, the strategy run on this rank's CommContext, and rank 0's
// per-epoch records written to the job's result file as they come ({"epochs": [...], "done"}).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpb {

struct Worker;
struct TrainConfig;

// The job's config (a RunConfig the launcher wrote) as this rank's TrainConfig: every setting at
// once, so none can be missed; one the record leaves out reads as its default.
TrainConfig configFromJob(const nlohmann::json& config, const std::string& jobPath);

void trainJob(Worker& w, const nlohmann::json& job);

}  // namespace tpb
