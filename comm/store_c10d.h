// The c10d object behind tpb::Store, for code that hands the store to c10d itself (Gloo and
// NCCL process groups). Only those translation units include torch headers through this.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/store.h"

namespace tpb {

struct Store::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  std::uint16_t port = 0;
};

inline c10::intrusive_ptr<c10d::Store> nativeStore(Store& s) { return s.impl().store; }

}  // namespace tpb
