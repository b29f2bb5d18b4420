// `library` allreduce: the device's default library collective, under the name results have
// carried since before the libraries had names of their own. It stands for gloo on cpu and nccl
// on cuda (algorithms/allreduce_gloo.cc, algorithms/allreduce_nccl.cc) and builds exactly what
// they build; records keep the name the user asked for, so old and new files compare.
#include "common/error.h"
#include "core/registry.h"

namespace tpb {

namespace {

std::string defaultLibrary(Device d) { return d == Device::Cuda ? "nccl" : "gloo"; }

// The entry `library` stands for on `d`, or nullptr when this build has none.
const AllreduceAlgo* standIn(Device d) {
  for (const auto& a : allreduceAlgos())
    if (a.name == defaultLibrary(d)) return &a;
  return nullptr;
}

AllreduceAlgo libraryAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "library";
  a.origin = Origin::Library;
  a.description = "the device's default library allreduce: gloo on cpu, nccl on cuda";
  a.order = 2;
  a.color = "#9467bd";
  a.standsFor = defaultLibrary;
  a.carrier = [](Device d) {
    const AllreduceAlgo* s = standIn(d);
    return s && s->carrier ? s->carrier(d) : std::string();
  };
  a.cost = ringAllreduceCost("modelled as a ring");  // Gloo's and NCCL's choice for large messages
  a.unsupported = [](Device d) {
    const AllreduceAlgo* s = standIn(d);
    return s ? s->unsupported(d) : "this build has no " + defaultLibrary(d) + " allreduce";
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    const AllreduceAlgo* s = standIn(ctx.device());
    TPB_CHECK(s, "library allreduce: this build has no " << defaultLibrary(ctx.device()));
    return s->make(ctx, buf, count);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(libraryAllreduceAlgo);

}  // namespace tpb
