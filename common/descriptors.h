// common/descriptors.h — keeping descriptors out of processes we start.
//
// tpbench opens its own descriptors close-on-exec (O_CLOEXEC, pipe2, mkostemp), but libraries do
// not all do so: LibTorch 1.13's c10d TCPStore makes its daemons' wake-up pipes with pipe(), and
// Gloo its epoll descriptor and pair sockets without SOCK_CLOEXEC. Whoever sets those up marks
// everything close-on-exec afterwards (the store in comm/store.cc, the worker after its
// transport), and the launcher's children close all but 0-2 before exec (harness/launch.cc).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace tpb {

// Sets FD_CLOEXEC on every open descriptor from 3 up.
inline void markDescriptorsCloseOnExec() {
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  // Kernels before 5.11: one at a time. opendir's own descriptor is close-on-exec already.
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd < 3) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
  closedir(d);
}

}  // namespace tpb
