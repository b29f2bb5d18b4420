// common/build_info.h — the strings a build takes from where and from what it was built: the
// source directory, the commit, the version and the build type.
//
// They are defined in one unit that holds data only (build_info.cc) and read through these
// declarations, so no other unit sees their contents or their lengths. A literal's length reaches
// the machine code that copies it, and every function linked after that code moves with it: in
// two builds of one source, one in a worktree with a longer path and one with "-dirty" in its
// commit, the two functions that copied them differed by 72 and 48 bytes, and every function
// after them sat elsewhere. The A/B gate (docs/reports.md) compares such builds; through these
// declarations they get the same machine code at the same addresses.
#pragma once

namespace tpb::build_info {

extern const char kSourceDir[];  // the source tree this was configured from
extern const char kGitSha[];     // 12 hex digits, "-dirty" after them for a modified tree; or "unknown"
extern const char kVersion[];    // the project's version
extern const char kBuildType[];  // CMAKE_BUILD_TYPE, or "unknown"

}  // namespace tpb::build_info
