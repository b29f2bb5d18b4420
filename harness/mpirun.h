// harness/mpirun.h — tpbench's launcher starting a point's ranks through Open MPI's mpirun
// (--launcher mpirun) instead of forking them itself: the command line, the reading of its
// output, and what to say when it fails.
//
// One launch is one `mpirun -np N [--allow-run-as-root] --oversubscribe [--map-by core] --bind-to
// none|core:overload-allowed --tag-output --stdin none --mca ... -x VAR...
// tpbench worker --job F`. mpirun starts the ranks as its own children; the worker maps
// OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE to its rank, and finds the rendezvous store
// through MASTER_ADDR/MASTER_PORT, exported with -x like TPB_RUN_ID. --tag-output marks every
// line with its rank, which the launcher turns into its usual "[rank r] " prefix.
//
// Stopping: the launcher sends mpirun SIGTERM (mpirun passes it on to the ranks), then SIGKILL.
// A rank outlives a killed mpirun only if it was stuck before its parent died: workers started
// by mpirun carry PR_SET_PDEATHSIG, and after mpirun is reaped the launcher kills any process
// still carrying the launch's TPB_RUN_ID (killRunStragglers), so nothing is left running.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpb {

// --launcher: "" (tpbench's own, or mpirun where a point needs it), "tpbench" or "mpirun".
// Throws UsageError for anything else.
void checkLauncherFlag(const std::string& launcher);

// --bind: "none" or "core" (LaunchSpec::bindCores); whether ranks are bound to cores. Throws
// UsageError for anything else, and for "core" under an external launcher (`external`: torchrun,
// srun or mpirun started this process), which placed the ranks itself.
bool checkBindFlag(const std::string& bind, bool external);

// "" when an Open MPI mpirun is on PATH (`mpirun --version` says "Open MPI"), else why not.
// Asked once per process.
std::string mpirunProblem();

// Whether a point runs through mpirun. `needsMpi` is what needs an MPI launcher ("--transport
// mpi", "--algos mpi", ""); `flag` is --launcher. Throws UsageError (naming --launcher, or the
// flag that needs MPI) when tpbench's own launcher was asked for a point that needs mpirun,
// when mpirun is wanted over several nodes, or when no usable mpirun is there.
bool chooseMpirun(const std::string& flag, const std::string& needsMpi, int nnodes = 1);

// The preload library that keeps mpirun's listeners on loopback (harness/loopback_bind.cc):
// its path beside this executable, or "" when it is not there; and LD_PRELOAD for mpirun with it
// first. chooseMpirun() refuses mpirun without it.
inline constexpr char kLoopbackShim[] = "libtpb_loopback_bind.so";
std::string loopbackShim();
std::string mpirunPreload();

// The full path of `mpirun` on PATH, or "" when there is none (resolved before fork, so the
// child only has to execve it).
std::string findMpirun();

// The argv of one mpirun launch of `np` ranks running `program` (exe and its arguments), with
// the variables in `exportVars` passed to every rank (-x); each rank bound to a core of its own
// (`bindCores`: --map-by core --bind-to core, ranks beyond the cores sharing them in turn) or to
// none (--bind-to none).
std::vector<std::string> mpirunArgv(int np, const std::vector<std::string>& program,
                                    const std::vector<std::string>& exportVars, bool bindCores = false);

// Reads mpirun's output lines (--tag-output): gives each the launcher's prefix and remembers
// what explains a failure.
class MpirunOutput {
 public:
  // "[1,3]<stderr>:text" -> "[rank 3] text"; mpirun's own lines -> "[mpirun] text".
  std::string retag(const std::string& line);
  // One line: why the launch failed, given how mpirun ended (exit code, or the signal that
  // killed it). In order: the rank mpirun saw killed by a signal; the rank it names as the
  // first to exit non-zero, with that rank's "error:" line (the worker's own message) when it
  // wrote one; the first "error:" line of any rank; mpirun's own last words.
  std::string describeFailure(int exitCode, int signal) const;

 private:
  std::map<int, std::string> rankError_;  // each rank's first "error: ..." line
  std::string firstRankError_;            // "rank r: error: ...", the first of them
  std::string signalled_;                 // "rank r was killed by signal s (SIGNAME)"
  int exitedRank_ = -1;                   // from "Process name: [[j,1],r]" ...
  std::string exitedCode_;                // ... and "Exit code: c"
  std::string lastOwnLine_;               // mpirun's last line that is not a rule of dashes
};

// Sends SIGKILL to every process of this user whose environment holds TPB_RUN_ID=`runId` (the
// ranks of that launch), waits briefly for them to go, and returns how many there were.
int killRunStragglers(const std::string& runId);

}  // namespace tpb
