#include "record/trace_file.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/error.h"
#include "record/results.h"

namespace tpb {

using nlohmann::json;

namespace {

// Where a resumed trace may end at most (TraceFile::resume): the trace reader's bound.
constexpr double kMaxResumeUs = kMaxTraceUs;

// o[key] is the string `want`; false where o is not an object, lacks key or holds another type
// there (json::value would throw a library error out of a resumed file).
bool hasString(const json& o, const char* key, const char* want) {
  if (!o.is_object()) return false;
  const auto it = o.find(key);
  return it != o.end() && it->is_string() && it->get_ref<const std::string&>() == want;
}

json metadataEvent(const char* name, int pid, int tid, const json& args) {
  json e = {{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", args}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

std::int64_t intAt(const json& a, std::size_t i, const std::string& what) {
  TPB_CHECK(a.size() > i && a[i].is_number_integer(), "trace fragment: " << what << " is not an integer");
  return a[i].get<std::int64_t>();
}

std::string stringAt(const json& a, std::size_t i, const std::string& what) {
  TPB_CHECK(a.size() > i && a[i].is_string(), "trace fragment: " << what << " is not a string");
  return a[i].get<std::string>();
}

}  // namespace

TraceFile::TraceFile(std::string path, std::int64_t originNs, json meta)
    : path_(std::move(path)), originNs_(originNs) {
  doc_ = {{"traceEvents", json::array()},
          {"displayTimeUnit", "ms"},
          {"tpbench", {{"schema", "tpbench.trace/1"}, {"meta", std::move(meta)}, {"points", json::array()}}}};
}

TraceFile TraceFile::resume(const std::string& path, std::int64_t nowNs) {
  json doc = readJsonBounded(path, "trace file");
  const bool ok = doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array() &&
                  doc.contains("tpbench") && doc["tpbench"].is_object() &&
                  hasString(doc["tpbench"], "schema", "tpbench.trace/1") && doc["tpbench"].contains("points") &&
                  doc["tpbench"]["points"].is_array();
  if (!ok)
    TPB_THROW(UsageError, "--trace: '" << path << "' is not a tpbench trace (schema tpbench.trace/1) to resume; "
                                       << "name another file");
  double lastUs = 0;
  for (const json& e : doc["traceEvents"])
    if (hasString(e, "ph", "X") && e.contains("ts") && e["ts"].is_number() && e.contains("dur") &&
        e["dur"].is_number())
      lastUs = std::max(lastUs, e["ts"].get<double>() + e["dur"].get<double>());
  // The next points go on after lastUs on the int64 ns clock: an end past kMaxResumeUs would not
  // fit it (UB, then garbage times), and no sweep runs that long.
  if (!(lastUs <= kMaxResumeUs))
    TPB_THROW(UsageError, "--trace: '" << path << "' has an event ending " << lastUs << " us after its start (more than "
                                       << kMaxResumeUs << "): not a tpbench trace to resume; name another file");
  TraceFile f(path, nowNs - static_cast<std::int64_t>((lastUs + 1000.0) * 1e3), json::object());
  f.doc_ = std::move(doc);
  return f;
}

void TraceFile::add(const std::string& label, const json& config, const json& fragment) {
  TPB_CHECK(fragment.is_object() && fragment.contains("ranks") && fragment["ranks"].is_array(),
            "trace fragment of " << label << ": no \"ranks\" array");
  const int pid = static_cast<int>(points()) + 1;
  json& events = doc_["traceEvents"];
  json added = json::array();
  added.push_back(metadataEvent("process_name", pid, -1, {{"name", label}}));
  added.push_back(metadataEvent("process_sort_index", pid, -1, {{"sort_index", pid}}));
  json ranks = json::array();
  for (const json& r : fragment["ranks"]) {
    TPB_CHECK(r.is_object() && r.contains("rank") && r["rank"].is_number_integer() && r.contains("events") &&
                  r["events"].is_array(),
              "trace fragment of " << label << ": a rank without \"rank\" or \"events\"");
    const int rank = r["rank"].get<int>();
    const std::string host = r.value("host", std::string());
    bool used[kTraceTracks] = {true, false, false, false};  // the host thread is always named
    for (const json& e : r["events"]) {
      TPB_CHECK(e.is_array() && e.size() == 7, "trace fragment of " << label << ", rank " << rank
                                                                     << ": an event is not [name, arg_key, category, track, begin, end, arg]");
      const std::string trackName = stringAt(e, 3, "track");
      const int track = static_cast<int>(
          std::find(std::begin(kTraceTrackNames), std::end(kTraceTrackNames), trackName) - std::begin(kTraceTrackNames));
      TPB_CHECK(track < kTraceTracks, "trace fragment of " << label << ", rank " << rank << ": no track '" << trackName << "'");
      used[track] = true;
      const std::int64_t begin = intAt(e, 4, "begin"), end = intAt(e, 5, "end");
      json x = {{"name", stringAt(e, 0, "name")},
                {"cat", stringAt(e, 2, "category")},
                {"ph", "X"},
                {"ts", static_cast<double>(begin - originNs_) / 1e3},
                {"dur", static_cast<double>(end - begin) / 1e3},
                {"pid", pid},
                {"tid", traceTid(rank, track)}};
      if (e[1].is_string()) x["args"] = {{e[1].get<std::string>(), intAt(e, 6, "arg")}};
      added.push_back(std::move(x));
    }
    const std::string where = host.empty() ? "" : " (" + host + ")";
    for (int track = 0; track < kTraceTracks; ++track) {
      if (!used[track]) continue;
      const int tid = traceTid(rank, track);
      const std::string name = "rank " + std::to_string(rank) + (track == 0 ? where : std::string(" ") + kTraceTrackNames[track]);
      added.push_back(metadataEvent("thread_name", pid, tid, {{"name", name}}));
      added.push_back(metadataEvent("thread_sort_index", pid, tid, {{"sort_index", tid}}));
    }
    ranks.push_back({{"rank", rank},
                     {"host", host},
                     {"clock_offset_ns", r.value("clock_offset_ns", 0LL)},
                     {"clock_error_ns", r.value("clock_error_ns", 0LL)}});
  }
  // Validated whole before the document changes: a bad fragment leaves the file as it was.
  for (json& e : added) events.push_back(std::move(e));
  doc_["tpbench"]["points"].push_back({{"pid", pid}, {"label", label}, {"config", config}, {"ranks", std::move(ranks)}});
  writeFileAtomic(path_, doc_.dump());
}

}  // namespace tpb
