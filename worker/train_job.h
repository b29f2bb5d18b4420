// worker/train_job.h — the worker side of one training point (`tpbench run|sweep`): the job's
// config back as a TrainConfig, the strategy run on this rank's CommContext, and rank 0's
// per-epoch records written to the job's result file as they come ({"epochs": [...], "done"}).
#pragma once

#include <nlohmann/json.hpp>

namespace tpb {

struct Worker;

void trainJob(Worker& w, const nlohmann::json& job);

}  // namespace tpb
