// Compiled where LibTorch ships no Gloo headers (PyTorch's wheels): nothing can make a Gloo
// group, and every caller is refused before launch with noGlooReason().
#include "comm/gloo/gloo_process_group.h"

#include "common/error.h"

namespace tpb {

bool glooInThisBuild() { return false; }

std::string noGlooReason() {
  return "this build has no Gloo: its LibTorch ships no Gloo headers (PyTorch's wheels do not; "
         "Debian's libtorch-dev does)";
}

GlooGroup makeGlooGroup(const c10::intrusive_ptr<c10d::Store>&, const std::string&, int, int,
                        std::chrono::milliseconds, const std::string& what) {
  TPB_THROW(Error, what << ": " << noGlooReason());
}

}  // namespace tpb
