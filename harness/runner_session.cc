#include "harness/runner_session.h"

#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/trace.h"
#include "harness/console_report.h"
#include "harness/external_job.h"
#include "harness/meta.h"

namespace tpb {

namespace {

bool sameFile(const std::string& a, const std::string& b) {
  return std::filesystem::absolute(a).lexically_normal() == std::filesystem::absolute(b).lexically_normal();
}

}  // namespace

RunnerSession::RunnerSession(const SessionOptions& opt) : opt_(opt) {
  if (opt_.out.empty() && opt_.flags.resume) TPB_THROW(UsageError, "--resume: needs --out FILE to resume from");
  if (opt_.writer) {
    if (!opt_.trace.empty()) {
      if (!opt_.out.empty() && sameFile(opt_.trace, opt_.out))
        TPB_THROW(UsageError, "--trace: '" << opt_.trace << "' is the results file (--out); name another file");
      traceOut_.emplace("--trace", opt_.trace, kTraceOutput, opt_.flags);
    }
    if (!opt_.out.empty()) out_.emplace("--out", opt_.out, kResultsOutput, opt_.flags);
    std::set<std::string> dirs;
    for (const auto& d : opt_.saveDirs)
      if (dirs.insert(d).second) saveDirs_.push_back(std::make_unique<OutLock>("--save_dir", d));
    if (out_ && out_->continues()) results_ = std::make_unique<ResultsFile>(ResultsFile::load(opt_.out));
  }
  driver_.emplace(opt_.driver);
}

const Meta& RunnerSession::meta() {
  if (meta_) return *meta_;
  meta_ = collectMeta(opt_.command);
  driver_->describe(*meta_);
  if (!driver_->external()) {
    if (opt_.ranksPerNode > 0) meta_->ranksPerNode = opt_.ranksPerNode;
    if (opt_.nnodes == 1) meta_->hosts = std::vector<std::string>{*meta_->host};
  }
  return *meta_;
}

void RunnerSession::open(bool usesMpi) {
  driver_->prepareMpi(usesMpi);
  if (out_ && !results_) results_ = std::make_unique<ResultsFile>(ResultsFile::create(opt_.out, meta()));
  // The trace's clock starts now, on this node's steady clock, which rank 0 of every point shares.
  if (traceOut_) {
    // A resumed sweep goes on in the same trace, after what the file holds.
    trace_ = traceOut_->continues()
                 ? std::make_unique<TraceFile>(TraceFile::resume(opt_.trace, trace::nowNs()))
                 : std::make_unique<TraceFile>(opt_.trace, trace::nowNs(), meta().toJson());
  }
}

void RunnerSession::close() const {
  printOutputsWritten(results_ ? opt_.out : std::string(), opt_.trace, trace_ ? trace_->points() : 0);
}

}  // namespace tpb
