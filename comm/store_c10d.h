// The c10d object behind tpb::Store, for code that hands the store to c10d itself (Gloo and
// NCCL process groups). Only those translation units include torch headers through this.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

#include "comm/store.h"

namespace tpb {

class StoreServer;

struct Store::Impl {
  std::shared_ptr<StoreServer> server;  // the host's; declared first, so it outlives its client
  c10::intrusive_ptr<c10d::Store> store;
  std::uint16_t port = 0;
  std::string host;
  bool own = false;
};

inline c10::intrusive_ptr<c10d::Store> nativeStore(Store& s) { return s.impl().store; }

}  // namespace tpb
