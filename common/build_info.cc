// common/build_info.cc — data only; see build_info.h for why these live apart from their readers.
#include "common/build_info.h"

#if __has_include("tpb_git_sha.h")
#include "tpb_git_sha.h"  // generated at build time by cmake/git_sha.cmake
#endif

#ifndef TPB_SOURCE_DIR
#define TPB_SOURCE_DIR ""
#endif
#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif
#ifndef TPB_VERSION
#define TPB_VERSION "unknown"
#endif
#ifndef TPB_BUILD_TYPE
#define TPB_BUILD_TYPE "unknown"
#endif

namespace tpb::build_info {

extern const char kSourceDir[] = TPB_SOURCE_DIR;
extern const char kGitSha[] = TPB_GIT_SHA;
extern const char kVersion[] = TPB_VERSION;
extern const char kBuildType[] = TPB_BUILD_TYPE;

}  // namespace tpb::build_info
