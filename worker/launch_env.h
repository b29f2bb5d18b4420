// worker/launch_env.h — what the environment says about this process's place in a job, read in
// one place for every launcher tpbench runs under: its own (which sets torchrun's names),
// torchrun, Slurm's srun and mpirun (Open MPI, MPICH). Pure functions over an environment map,
// so that every form is unit-tested without setting variables.
//
// Numbers are plain decimal (common/decimal.h) within their bounds and consistent with each
// other (RANK < WORLD_SIZE, LOCAL_RANK < LOCAL_WORLD_SIZE <= WORLD_SIZE, a node's index below the
// node count, no more nodes than tasks). Without LibTorch or process state but environmentMap():
// the fuzz target tests/fuzz/fuzz_launch_env.cc calls detectLaunchEnv.
//
// Precedence when several launchers' variables are present (srun starting torchrun, mpirun
// inside a Slurm allocation): torchrun's names, then Open MPI's, then MPICH's PMI, then Slurm's;
// the innermost launcher sets the most specific ones.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpb {

using EnvMap = std::map<std::string, std::string>;

// This process's environment as a map.
EnvMap environmentMap();

struct LaunchEnv {
  std::string launcher;  // "torchrun", "slurm" or "mpirun" (names torchrun's variables set by tpbench's own launcher too)
  int rank = 0, worldSize = 1;
  int localRank = 0, localWorldSize = 1;
  int nodes = 0;      // nodes of the job; 0: not said by the environment
  int nodeRank = -1;  // this node's index; -1: not said
  std::string masterAddr;  // where the rendezvous store is; empty: not said
  std::string masterFrom;  // the variable masterAddr came from ("MASTER_ADDR", a Slurm node list); empty: a default
  int masterPort = -1;     // -1: not said
  // torchrun's agent already hosts the store at MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE):
  // every rank, rank 0 included, is a client.
  bool agentStore = false;
  // Names this job (and attempt) in a store that may outlive it: torchrun's run id and restart
  // count, Slurm's job and step ids, Open MPI's job id; empty when none is known.
  std::string jobKey;
  std::vector<std::string> nodeList;  // Slurm: the step's hosts in order; empty elsewhere
};

// The job this process is one rank of, or nullopt when no launcher's variables are there (or
// Slurm's say one task: an allocation's shell or `srun -n 1` runs tpbench's own launcher).
// Malformed or contradictory values throw tpb::UsageError naming the variable.
std::optional<LaunchEnv> detectLaunchEnv(const EnvMap& env);

// The most hosts a Slurm host list, and nodes a tasks-per-node form, may name: far above any
// job tpbench measures, and small enough that expanding it costs a few MB. Both are counted
// before anything is expanded: "n[0-999999999]" or "1(x1000000),1(x1000000),..." is refused
// at once, not after gigabytes.
constexpr std::size_t kMaxSlurmHosts = 65536;

// A Slurm host list expanded in order: "a,b", "node[01-04,07]" (zero padding kept),
// "pre[1-3]-suf", "r[1-2]n[1-2]" and any mix. Throws tpb::UsageError on a malformed list or one
// of more than kMaxSlurmHosts hosts.
std::vector<std::string> expandSlurmHostList(const std::string& list);

// Slurm's tasks-per-node form, "2(x3),1" -> {2, 2, 2, 1}. Throws tpb::UsageError when malformed
// or longer than kMaxSlurmHosts nodes.
std::vector<int> expandSlurmTasksPerNode(const std::string& text);

// The store's port when the environment names none (Slurm, mpirun without MASTER_PORT): derived
// from the job's id so that two jobs sharing a node pick different ports, in 20000..32767 (below
// Linux's default ephemeral range); 29500 (torchrun's default) without one.
int defaultMasterPort(const LaunchEnv& env);

}  // namespace tpb
