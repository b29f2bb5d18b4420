#include "workload/pipeline_step.h"

#include <chrono>
#include <memory>

#include "comm/transport.h"
#include "common/trace.h"

namespace tpb {

StageTimes runStageOps(Transport& t, const std::vector<PipeOp>& ops, const StageWork& work) {
  using clock_type = std::chrono::steady_clock;
  const int s = work.stage;
  const bool first = s == 0, last = s == work.stages - 1;
  StageTimes times;
  std::vector<std::unique_ptr<Request>> sends;
  for (const PipeOp& op : ops) {
    const bool receives = op.forward ? !first : !last;
    const bool sendsOn = op.forward ? !last : !first;
    const int from = op.forward ? s - 1 : s + 1, to = op.forward ? s + 1 : s - 1;
    if (receives) {
      const StageBuffer in = work.receiveInto(op);
      const auto c = clock_type::now();
      t.recv(from, in.data, in.bytes);
      times.commS += trace::close("recv", trace::Category::Comm, c, "micro", op.micro);
    }
    const auto c0 = clock_type::now();
    const StageBuffer out = work.compute(op);
    times.computeS += trace::close(op.forward ? "forward" : "backward", trace::Category::Compute, c0, "micro", op.micro);
    if (!sendsOn) continue;
    const auto c = clock_type::now();
    sends.push_back(t.isend(to, out.data, out.bytes));
    if (op.flushSend) t.flush();
    times.commS += trace::close("send", trace::Category::Comm, c, "micro", op.micro);
  }
  const auto c = clock_type::now();
  for (auto& r : sends) r->wait();
  times.commS += trace::close("send wait", trace::Category::Wait, c);
  return times;
}

}  // namespace tpb
