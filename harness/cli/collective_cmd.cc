#include <memory>

#include "common/bus_factor.h"
#include "common/error.h"
#include "core/registry.h"
#include "harness/cli/bench_flags.h"
#include "harness/cli/commands.h"
#include "harness/input_checks.h"
#include "harness/range.h"

namespace tpb::cli {

void addCollective(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external) {
  auto f = std::make_shared<BenchFlags>();
  f->algos = "all";
  auto ops = std::make_shared<std::string>();  // every op, in the op table's order
  for (const auto& name : opNames()) *ops += (ops->empty() ? "" : ",") + name;
  auto place = std::make_shared<std::string>("in,out");
  auto root = std::make_shared<int>(0);
  auto* cmd = app.add_subcommand(
      "collective",
      "Benchmark collectives like nccl-tests: per op, algorithm, N and size the time (median/min/max over "
      "iterations, slowest rank), algbw = bytes/time, busbw = algbw x the op's factor (" +
          busFactorText(opNames()) + "; sendrecv is a ping-pong "
      "whose time is a round trip, so its busbw is about half nccl-tests' sendrecv), exact traffic per rank "
      "and an exact verification pass. Sizes follow nccl-tests: allgather's is the gathered output, "
      "reduce_scatter's the input; blocked ops round the count down to a multiple of N. After the tables: per "
      "op the fastest algorithm per N and size, the others' time as a multiple of its ('a \u2248 b' where their "
      "min-max ranges overlap: within noise). The defaults on cpu (every op and algorithm, in and out of place, "
      "N = 2, 4K..1M:x4) finish in about a minute on two cores; each further N takes about as long again "
      "(--n_gpus 2..4 --bytes 4K..16M: about ten minutes); on cuda N = 2..8 (at most the GPUs "
      "visible) and 4K..64M:x4.");
  cmd->add_option("--op", *ops, "Comma list of collectives, or 'all'")->capture_default_str();
  cmd->add_option("--algos", f->algos,
                  "Comma list of algorithms, or 'all'; with several ops each op runs those it has (see `tpbench list`)")
      ->capture_default_str();
  cmd->add_option("--root", *root, "Root rank of broadcast and reduce")->capture_default_str();
  cmd->add_option("--place", *place,
                  "in (in place), out (out of place) or in,out; alltoall and sendrecv run out of place only")
      ->capture_default_str();
  addBenchFlags(cmd, *f);
  cmd->callback([&action, f, ops, place, root, cmd, commandLine, external] {
    action = [f, ops, place, root, cmd, commandLine, external] {
      CollectiveBenchOptions o = benchOptions(cmd, *f, commandLine, external);
      o.ops = withoutDuplicates(*ops == "all" ? opNames() : splitList(*ops));
      for (const auto& op : o.ops) findOp("--op", op);
      o.allAlgos = f->algos == "all";  // all there is for this device, each library once
      if (!o.allAlgos) o.algos = withoutDuplicates(splitList(f->algos));
      o.root = *root;
      o.inPlace.clear();
      for (const auto& p : withoutDuplicates(splitList(*place))) {
        if (p != "in" && p != "out") TPB_THROW(UsageError, "--place: '" << p << "' is not in or out");
        o.inPlace.push_back(p == "in");
      }
      checkCollectiveRun(o);
      return runCollectiveBench(o);
    };
  });
}

}  // namespace tpb::cli
