// comm/group_request.h — the request of a transport that defers posts and launches them in
// groups (nccl, grouped): every post of one group shares the group, and waiting on any of them
// waits for the whole group. T provides `struct Group` and
// `void waitGroup(Group&, const char* what, int peer)`.
#pragma once

#include <memory>

#include "comm/transport.h"

namespace tpb {

template <class T>
class GroupRequest final : public Request {
 public:
  // `what` (a string literal) and `peer` name the post in errors; peer -1 means all ranks.
  GroupRequest(T& t, std::shared_ptr<typename T::Group> g, const char* what, int peer)
      : t_(t), g_(std::move(g)), what_(what), peer_(peer) {}
  void wait() override {
    if (!g_) return;
    t_.waitGroup(*g_, what_, peer_);
    g_.reset();
  }

 private:
  T& t_;
  std::shared_ptr<typename T::Group> g_;
  const char* what_;
  int peer_;
};

}  // namespace tpb
