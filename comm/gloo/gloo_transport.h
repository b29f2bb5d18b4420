// comm/gloo/gloo_transport.h — point-to-point over Gloo's TCP pairs, through c10d's
// ProcessGroupGloo send/recv. Works across nodes; on one node it is the loopback baseline the
// shm transport is measured against.
#pragma once

#include <memory>
#include <string>

#include "comm/transport.h"

namespace tpb {

class Store;

class GlooTransport final : public Transport {
 public:
  // Collective. `host` is the address this rank's Gloo device binds to (MASTER_ADDR's
  // interface on one node: 127.0.0.1).
  GlooTransport(Store& store, const std::string& prefix, const std::string& host, int rank,
                int size, std::chrono::milliseconds timeout);
  ~GlooTransport() override;

  std::string name() const override { return "gloo"; }
  std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpb
