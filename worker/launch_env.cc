#include "worker/launch_env.h"

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cstdint>

#include "common/decimal.h"
#include "common/error.h"

extern char** environ;

namespace tpb {

EnvMap environmentMap() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(static_cast<const char*>(*e), eq), std::string(eq + 1));
  }
  return env;
}

namespace {

constexpr long long kMaxRanks = 1 << 20;

const std::string* find(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

// A plain decimal number (common/decimal.h: no sign, no leading zero) in [lo, hi].
long long parseNumber(const std::string& name, const std::string& text, long long lo, long long hi) {
  std::string why;
  const std::optional<long long> v = parseDecimalInteger<long long>(text, why);
  if (!v) TPB_THROW(UsageError, name << "=" << why);
  if (*v < lo || *v > hi) TPB_THROW(UsageError, name << "=" << text << " is outside " << lo << ".." << hi);
  return *v;
}

int number(const EnvMap& env, const std::string& name, long long lo, long long hi) {
  const std::string* v = find(env, name);
  if (!v) TPB_THROW(UsageError, name << " is not set (the other variables of its launcher are)");
  return static_cast<int>(parseNumber(name, *v, lo, hi));
}

std::optional<int> optNumber(const EnvMap& env, const std::string& name, long long lo, long long hi) {
  const std::string* v = find(env, name);
  if (!v) return std::nullopt;
  return static_cast<int>(parseNumber(name, *v, lo, hi));
}

std::string text(const EnvMap& env, const std::string& name) {
  const std::string* v = find(env, name);
  return v ? *v : std::string();
}

// A launcher's job or step id: it prefixes the job's store keys and seeds its default port, so
// it is bounded (a key has at most 4 KiB) and printable ASCII without spaces ("none", "4242",
// "3405643777", a user's torchrun --rdzv_id).
constexpr std::size_t kMaxJobIdLength = 256;
std::string idText(const EnvMap& env, const std::string& name) {
  const std::string v = text(env, name);
  if (v.size() > kMaxJobIdLength)
    TPB_THROW(UsageError, name << " is " << v.size() << " characters long, more than the " << kMaxJobIdLength
                               << " a job id may have");
  for (const unsigned char c : v)
    if (c < 0x21 || c > 0x7e)
      TPB_THROW(UsageError, name << " holds a space, a control character or a byte beyond ASCII; a job id is "
                                 << "printable ASCII");
  return v;
}

// `err`'s message under the variable `name`, less the "[file:line] " of the check that threw it.
[[noreturn]] void refuseAs(const std::string& name, const UsageError& err) {
  std::string msg = err.what();
  if (msg.rfind('[', 0) == 0 && msg.find("] ") != std::string::npos) msg.erase(0, msg.find("] ") + 2);
  TPB_THROW(UsageError, name << ": " << msg);
}

void takeMaster(const EnvMap& env, LaunchEnv& e) {
  e.masterAddr = text(env, "MASTER_ADDR");
  if (!e.masterAddr.empty()) e.masterFrom = "MASTER_ADDR";
  if (auto p = optNumber(env, "MASTER_PORT", 1, 65535)) e.masterPort = *p;
}

LaunchEnv fromTorchrun(const EnvMap& env) {
  LaunchEnv e;
  e.launcher = "torchrun";
  e.worldSize = number(env, "WORLD_SIZE", 1, kMaxRanks);
  e.rank = number(env, "RANK", 0, e.worldSize - 1);
  e.localWorldSize = optNumber(env, "LOCAL_WORLD_SIZE", 1, e.worldSize).value_or(e.worldSize);
  e.localRank = optNumber(env, "LOCAL_RANK", 0, e.localWorldSize - 1).value_or(e.rank % e.localWorldSize);
  e.nodes = optNumber(env, "GROUP_WORLD_SIZE", 1, e.worldSize).value_or(0);
  e.nodeRank = optNumber(env, "GROUP_RANK", 0, (e.nodes > 0 ? e.nodes : kMaxRanks) - 1).value_or(-1);
  takeMaster(env, e);
  const std::string agent = text(env, "TORCHELASTIC_USE_AGENT_STORE");
  e.agentStore = agent == "True" || agent == "true" || agent == "1";
  if (const std::string id = idText(env, "TORCHELASTIC_RUN_ID"); !id.empty())
    e.jobKey = id + "." + idText(env, "TORCHELASTIC_RESTART_COUNT");
  return e;
}

LaunchEnv fromMpi(const EnvMap& env, const std::string& rankVar, const std::string& sizeVar,
                  const std::string& localRankVar, const std::string& localSizeVar) {
  LaunchEnv e;
  e.launcher = "mpirun";
  e.worldSize = number(env, sizeVar, 1, kMaxRanks);
  e.rank = number(env, rankVar, 0, e.worldSize - 1);
  e.localWorldSize = optNumber(env, localSizeVar, 1, e.worldSize).value_or(e.worldSize);
  e.localRank = optNumber(env, localRankVar, 0, e.localWorldSize - 1).value_or(e.rank % e.localWorldSize);
  if (e.worldSize % e.localWorldSize == 0) e.nodes = e.worldSize / e.localWorldSize;
  takeMaster(env, e);
  // One node and nobody named the master: the store is on this host.
  if (e.masterAddr.empty() && e.localWorldSize == e.worldSize) e.masterAddr = "127.0.0.1";
  e.jobKey = idText(env, "OMPI_MCA_ess_base_jobid");
  return e;
}

LaunchEnv fromSlurm(const EnvMap& env) {
  LaunchEnv e;
  e.launcher = "slurm";
  e.worldSize = number(env, "SLURM_NTASKS", 1, kMaxRanks);
  e.rank = number(env, "SLURM_PROCID", 0, e.worldSize - 1);
  const std::string listVar = find(env, "SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST"
                              : find(env, "SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                                                                 : "SLURM_NODELIST";
  if (const std::string list = text(env, listVar); !list.empty()) {
    try {
      e.nodeList = expandSlurmHostList(list);
    } catch (const UsageError& err) {
      refuseAs(listVar, err);
    }
  }
  // Every node of a step runs at least one of its tasks.
  if (listVar == "SLURM_STEP_NODELIST" && e.nodeList.size() > static_cast<std::size_t>(e.worldSize))
    TPB_THROW(UsageError, listVar << " names " << e.nodeList.size() << " hosts, more than the SLURM_NTASKS="
                                  << e.worldSize << " tasks of the step");
  e.nodes = optNumber(env, "SLURM_STEP_NUM_NODES", 1, e.worldSize)
                .value_or(optNumber(env, "SLURM_NNODES", 1, kMaxRanks).value_or(static_cast<int>(e.nodeList.size())));
  e.nodeRank = optNumber(env, "SLURM_NODEID", 0, (e.nodes > 0 ? e.nodes : kMaxRanks) - 1).value_or(-1);
  // Tasks on this node: a plain --ntasks-per-node, else this node's entry of the step's layout.
  std::optional<int> local;
  if (const std::string* v = find(env, "SLURM_NTASKS_PER_NODE"); v && v->find_first_not_of("0123456789") == std::string::npos)
    local = static_cast<int>(parseNumber("SLURM_NTASKS_PER_NODE", *v, 1, e.worldSize));
  for (const char* var : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    const std::string* v = find(env, var);
    if (local || !v) continue;
    std::vector<int> perNode;
    try {
      perNode = expandSlurmTasksPerNode(*v);
    } catch (const UsageError& err) {
      refuseAs(var, err);
    }
    const int node = e.nodeRank >= 0 ? e.nodeRank : 0;
    if (node < static_cast<int>(perNode.size())) local = perNode[node];
    if (local && *local > e.worldSize)
      TPB_THROW(UsageError, var << "='" << *v << "' gives node " << node << " " << *local
                                << " tasks, more than the SLURM_NTASKS=" << e.worldSize << " of the step");
  }
  e.localWorldSize = local.value_or(e.nodes == 1 ? e.worldSize : 1);
  e.localRank = optNumber(env, "SLURM_LOCALID", 0, e.localWorldSize - 1).value_or(e.rank % e.localWorldSize);
  takeMaster(env, e);
  if (e.masterAddr.empty()) {
    // One node: loopback, as tpbench's own launcher uses; several: the step's first host, where
    // task 0 runs under Slurm's block distribution.
    if (e.nodes == 1) e.masterAddr = "127.0.0.1";
    else if (!e.nodeList.empty()) {
      e.masterAddr = e.nodeList.front();
      e.masterFrom = listVar;
    }
  }
  if (const std::string job = idText(env, "SLURM_JOB_ID"); !job.empty())
    e.jobKey = job + "." + (find(env, "SLURM_STEP_ID") ? idText(env, "SLURM_STEP_ID") : idText(env, "SLURM_STEPID"));
  return e;
}

}  // namespace

std::optional<LaunchEnv> detectLaunchEnv(const EnvMap& env) {
  if (find(env, "RANK") || find(env, "WORLD_SIZE")) return fromTorchrun(env);
  if (find(env, "OMPI_COMM_WORLD_RANK") || find(env, "OMPI_COMM_WORLD_SIZE"))
    return fromMpi(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "OMPI_COMM_WORLD_LOCAL_SIZE");
  // srun's pmi2 plugin sets PMI_RANK and PMI_SIZE in every task of a step, equal to Slurm's own:
  // there Slurm's variables tell the layout (nodes, tasks per node), which PMI's do not.
  const std::string* pmiRank = find(env, "PMI_RANK");
  const std::string* pmiSize = find(env, "PMI_SIZE");
  const std::string* procId = find(env, "SLURM_PROCID");
  const std::string* nTasks = find(env, "SLURM_NTASKS");
  const bool slurmsPmi = pmiRank && pmiSize && procId && nTasks && *pmiRank == *procId && *pmiSize == *nTasks &&
                         find(env, "SLURM_STEP_NODELIST");
  if ((pmiRank || pmiSize) && !slurmsPmi)
    return fromMpi(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
  if (find(env, "SLURM_PROCID") && find(env, "SLURM_STEP_NODELIST")) {
    // One task is a shell or `srun -n 1 tpbench ...`: tpbench launches its ranks itself.
    if (const std::string* n = find(env, "SLURM_NTASKS"); n && *n == "1") return std::nullopt;
    return fromSlurm(env);
  }
  return std::nullopt;
}

// ---- Slurm's compact forms -------------------------------------------------------------------

namespace {

// One "lo-hi" (or "n") of a bracket: the digits as written, for their zero padding.
struct HostRange {
  std::string lo, hi;
  long long count() const { return std::stoll(hi) - std::stoll(lo) + 1; }
};

// "01-04,07" inside one pair of brackets, checked but not expanded.
std::vector<HostRange> parseBracket(const std::string& body, const std::string& whole) {
  std::vector<HostRange> out;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = std::min(body.find(',', start), body.size());
    const std::string item = body.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    HostRange r{item.substr(0, dash), dash == std::string::npos ? item.substr(0, dash) : item.substr(dash + 1)};
    // At most 9 digits: stoll cannot overflow, and a range holds at most 10^9 hosts (the
    // caller's bound refuses far fewer before anything is expanded).
    const auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(r.lo) || !digits(r.hi) || r.count() < 1)
      TPB_THROW(UsageError, "malformed host range '" << item << "' in '" << whole << "'");
    out.push_back(r);
    start = comma + 1;
  }
  return out;
}

// The hosts of one expression ("r[1-2]n[01-03]": the product of its parts, left to right), after
// checking that there are at most `budget` of them, so that nothing huge is ever built.
std::vector<std::string> expandExpression(const std::string& expr, const std::string& list, std::size_t budget) {
  std::vector<std::string> literals;               // literals[i] comes before groups[i]
  std::vector<std::vector<HostRange>> groups;
  unsigned long long total = 1;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t open = expr.find('[', pos);
    literals.push_back(expr.substr(pos, open == std::string::npos ? std::string::npos : open - pos));
    if (open == std::string::npos) break;
    const std::size_t close = expr.find(']', open);
    groups.push_back(parseBracket(expr.substr(open + 1, close - open - 1), list));
    unsigned long long n = 0;
    for (const HostRange& r : groups.back()) n += static_cast<unsigned long long>(r.count());
    if (__builtin_mul_overflow(total, n, &total)) total = budget + 1ULL;
    if (total > budget) break;
    pos = close + 1;
  }
  if (total > budget) TPB_THROW(UsageError, "'" << list << "' names more than " << kMaxSlurmHosts << " hosts");
  std::vector<std::string> partial{literals[0]};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::string> next;
    for (const auto& p : partial)
      for (const HostRange& r : groups[g])
        for (long long x = std::stoll(r.lo), end = std::stoll(r.hi); x <= end; ++x) {
          std::string digits = std::to_string(x);
          // "01-04": zero padded to the low bound's width
          if (digits.size() < r.lo.size()) digits.insert(0, r.lo.size() - digits.size(), '0');
          next.push_back(p + digits + literals[g + 1]);
        }
    partial = std::move(next);
  }
  return partial;
}

}  // namespace

std::vector<std::string> expandSlurmHostList(const std::string& list) {
  std::vector<std::string> hosts;
  std::size_t start = 0;
  while (start < list.size()) {
    // A host expression ends at a comma outside brackets.
    std::size_t end = start;
    int depth = 0;
    for (; end < list.size(); ++end) {
      if (list[end] == '[') ++depth;
      else if (list[end] == ']') --depth;
      else if (list[end] == ',' && depth == 0) break;
      if (depth < 0 || depth > 1) TPB_THROW(UsageError, "unbalanced brackets in '" << list << "'");
    }
    if (depth != 0) TPB_THROW(UsageError, "unbalanced brackets in '" << list << "'");
    const std::string expr = list.substr(start, end - start);
    if (expr.empty()) TPB_THROW(UsageError, "empty host name in '" << list << "'");
    const std::vector<std::string> some = expandExpression(expr, list, kMaxSlurmHosts - hosts.size());
    hosts.insert(hosts.end(), some.begin(), some.end());
    start = end + 1;
  }
  if (hosts.empty()) TPB_THROW(UsageError, "no host in '" << list << "'");
  return hosts;
}

std::vector<int> expandSlurmTasksPerNode(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t paren = item.find("(x");
    const std::string count = item.substr(0, paren);
    const std::string times = paren == std::string::npos ? "1" : item.substr(paren + 2, item.size() - paren - 3);
    if (paren != std::string::npos && item.back() != ')')
      TPB_THROW(UsageError, "malformed tasks per node '" << item << "' in '" << text << "'");
    const long long c = parseNumber("tasks per node", count, 1, kMaxRanks);
    const long long t = parseNumber("tasks per node repeat", times, 1, kMaxRanks);
    // One entry per node: bounded before it is built, however many items repeat.
    if (out.size() + static_cast<std::size_t>(t) > kMaxSlurmHosts)
      TPB_THROW(UsageError, "'" << text << "' describes more than " << kMaxSlurmHosts << " nodes");
    out.insert(out.end(), static_cast<std::size_t>(t), static_cast<int>(c));
    start = comma + 1;
  }
  return out;
}

int defaultMasterPort(const LaunchEnv& env) {
  if (env.jobKey.empty()) return 29500;
  // FNV-1a of the job's id (the same on every node, whatever the build) into 20000..32767,
  // below Linux's ephemeral range (32768..60999 by default), where any process's outgoing
  // connection may hold a port at any moment.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : env.jobKey) h = (h ^ c) * 1099511628211ULL;
  return 20000 + static_cast<int>(h % 12768);
}

}  // namespace tpb
