#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/gpu_telemetry.h"
#include "autoheal/diag/log_line.h"
#include "autoheal/diag/taxonomy.h"

namespace autoheal::diag {
namespace {

using Index = std::unordered_map<std::string_view, std::vector<const Evidence*>>;

// A field's value as a number; nullopt when it is not one.
std::optional<double> Number(std::string_view v) {
    const std::string s(v);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d)) return std::nullopt;
    return d;
}

bool PassesTests(const Evidence& e, const std::vector<FieldTest>& tests) {
    for (const FieldTest& t : tests) {
        auto v = e.Field(t.field);
        bool in = v && std::find(t.values.begin(), t.values.end(), *v) != t.values.end();
        if (v && t.at_least) {
            const std::optional<double> n = Number(*v);
            in = in || (n && *n >= *t.at_least);
        }
        if (in == t.negate) return false;
    }
    return true;
}

// Returns whether the condition holds; adds the evidence that made it hold.
bool Evaluate(const Condition& c, const Index& index, const EvidenceSet& set,
              std::vector<const Evidence*>* out) {
    switch (c.kind) {
        case Condition::Kind::kLeaf: {
            auto it = index.find(c.signature);
            std::vector<const Evidence*> hits;
            if (it != index.end()) {
                for (const Evidence* e : it->second) {
                    if (PassesTests(*e, c.where)) hits.push_back(e);
                }
            }
            // Without field tests the uncapped count decides; with them, the kept items.
            std::uint64_t n = c.where.empty() ? set.Count(c.signature) : hits.size();
            if (hits.empty() || n < static_cast<std::uint64_t>(c.min_count)) return false;
            out->insert(out->end(), hits.begin(), hits.end());
            return true;
        }
        case Condition::Kind::kAll: {
            std::vector<const Evidence*> all;
            for (const Condition& child : c.children) {
                if (!Evaluate(child, index, set, &all)) return false;
            }
            out->insert(out->end(), all.begin(), all.end());
            return true;
        }
        case Condition::Kind::kAny: {
            bool any = false;
            for (const Condition& child : c.children) any |= Evaluate(child, index, set, out);
            return any;
        }
        case Condition::Kind::kNot: {
            std::vector<const Evidence*> ignored;
            return !Evaluate(c.children.front(), index, set, &ignored);
        }
    }
    return false;
}

struct Fired {
    const Rule* rule;
    std::vector<const Evidence*> evidence;
    bool suppressed = false;
};

std::string FirstField(const std::vector<const Evidence*>& evidence,
                       std::initializer_list<std::string_view> names) {
    for (const Evidence* e : evidence) {
        for (std::string_view n : names) {
            if (auto v = e->Field(n); v && !v->empty()) return std::string(*v);
        }
    }
    return "";
}

// The first of `fields` that the first `signature` item of input `source` to carry one has
// (context the winning lines do not carry themselves: the shell prompt of a pasted session, the
// device a library names, the node Slurm names for a failed task).
std::string ContextField(const EvidenceSet& set, std::string_view signature,
                         std::initializer_list<std::string_view> fields, std::size_t source) {
    for (const Evidence& e : set.items) {
        if (e.signature != signature || e.source != source) continue;
        for (std::string_view field : fields) {
            if (auto v = e.Field(field); v && !v->empty()) return std::string(*v);
        }
    }
    return "";
}

// Docker names a container's host after the first 12 hex digits of its id ("root@9e4697a656da:/#"
// in a pasted session): a container, not a machine of the cluster.
bool IsContainerHostname(std::string_view host) {
    return host.size() == 12 && std::all_of(host.begin(), host.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// The host of a pasted session's prompt whose command ran on it ("root@gpu7:~# dmesg"): the last
// such prompt at or above the evidence's line (the session the output came from), else the first.
// A command typed to run elsewhere (Slurm's and MPI's launchers, a remote shell, kubectl) or to
// report on the whole cluster (Slurm's sinfo, squeue, sacct, scontrol) printed other machines'
// state, and its prompt's host is where the user logged in. A container's id names no machine.
std::string PromptHost(const EvidenceSet& set, std::size_t source, std::size_t line) {
    static constexpr std::array<std::string_view, 16> kElsewhere = {
        "srun",    "salloc", "sbatch", "mpirun", "mpiexec",  "ssh",   "pdsh", "clush",
        "kubectl", "sinfo",  "squeue", "sacct",  "scontrol", "sstat", "seff", "sreport"};
    std::string_view first;
    std::string_view above;
    for (const Evidence& e : set.items) {
        if (e.signature != "context-shell-prompt" || e.source != source) continue;
        const std::string_view host = e.Field("prompt_host").value_or("");
        if (host.empty() || IsContainerHostname(host)) continue;
        std::string_view command = e.Field("prompt_command").value_or("");
        command.remove_prefix(
            command.rfind('/') == std::string_view::npos ? 0 : command.rfind('/') + 1);
        if (std::find(kElsewhere.begin(), kElsewhere.end(), command) != kElsewhere.end()) continue;
        if (first.empty()) first = host;
        if (e.line <= line) above = host;
    }
    return std::string(above.empty() ? first : above);
}

// The one value of `field` that every item of input `source` carrying it has (only `signature`
// items, when one is named), else "": the GPU every Xid names (a hang on a node whose kernel
// log shows one GPU), the host every prefixed line names (a paste from one machine).
std::string OnlyField(const EvidenceSet& set, std::size_t source, std::string_view field,
                      std::string_view signature = {}) {
    std::string only;
    for (const Evidence& e : set.items) {
        if (e.source != source || (!signature.empty() && e.signature != signature)) continue;
        auto v = e.Field(field);
        if (!v || v->empty()) continue;
        if (!only.empty() && only != *v) return "";
        only = std::string(*v);
    }
    return only;
}

// The last value of `field` that a `signature` item of input `source` carries, else "".
std::string LastField(const EvidenceSet& set, std::string_view signature, std::string_view field,
                      std::size_t source) {
    std::string last;
    for (const Evidence& e : set.items) {
        if (e.signature != signature || e.source != source) continue;
        if (auto v = e.Field(field); v && !v->empty()) last = std::string(*v);
    }
    return last;
}

// The task of srun's first failed-task line ("srun: error: NODE: task 32: ..."), else "" (also
// when that line names a range of tasks, "tasks 240-255").
std::string FirstTaskRank(const EvidenceSet& set, std::size_t source) {
    for (const Evidence& e : set.items) {
        if (e.signature != "context-task-node" || e.source != source) continue;
        if (!e.Field("task_node")) continue;
        auto rank = e.Field("task_rank");
        return rank ? std::string(*rank) : "";
    }
    return "";
}

// The rank of the job that failed, when the deciding lines name none: the root cause of
// torchrun's failure summary (its last "rank : N (local_rank: M)", printed after the other
// failures), else the one rank every "[rankN]:"-prefixed line of the input names, else the task
// srun saw fail first ("srun: error: NODE: task 32: Segmentation fault": Slurm's task id is the
// job's rank), else the local rank of the worker torchrun saw fail ("failed (exitcode: -9)
// local_rank: 3": the rank in a one-node job, the rank on its node in a larger one).
std::string FailedRank(const EvidenceSet& set, std::size_t source) {
    std::string rank = LastField(set, "torch-failure-rank", "rank", source);
    if (rank.empty()) rank = OnlyField(set, source, "rank");
    if (rank.empty()) rank = FirstTaskRank(set, source);
    if (rank.empty()) rank = ContextField(set, "torch-worker-exitcode", {"local_rank"}, source);
    return rank;
}

// A field's value as a number when it is only digits (at most 8), else none.
std::optional<int> SmallNumber(const std::string& text) {
    if (text.empty() || text.size() > 8 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    return std::stoi(text);
}

// How sure the kind of the deciding evidence lets a diagnosis be, whatever its rule says: the
// kernel's or a driver's own record of the fault (an Xid, an EDAC or MCE record) is the strongest;
// a counter the node epilog read through NVML, or a health check, next; a line a tool or the job
// printed (nvidia-smi, dcgmi, NCCL, a framework's message) after that. The rule's own confidence
// says how specific its words are (a named CUDA error above a generic exception). The strongest
// kind among the deciding lines counts.
struct EvidenceKind {
    const char* name;
    double ceiling;
};

EvidenceKind KindOf(const std::vector<const Evidence*>& evidence) {
    constexpr EvidenceKind kKernel{"kernel record", 0.95};
    constexpr EvidenceKind kCounter{"nvml counter", 0.9};
    constexpr EvidenceKind kOutput{"tool or job output", 0.8};
    EvidenceKind best = kOutput;
    for (const Evidence* e : evidence) {
        if (e->signature == "nvml-delta" || e->signature == "health-check" ||
            e->signature == kGpuTelemetrySignature) {
            if (best.ceiling < kCounter.ceiling) best = kCounter;
        } else if (IsKernelRecord(e->text)) {
            return kKernel;
        }
    }
    return best;
}

void ApplyEscalation(const Rule& rule, const DiagnoseOptions& options, Diagnosis* d) {
    for (const Escalation& step : rule.escalate) {
        const std::string& key = step.per == "gpu" ? d->culprit.gpu : d->culprit.node;
        if (key.empty()) continue;
        std::set<std::string> jobs;
        std::set<std::string> users;
        int count = 1;  // this incident
        if (!options.job.empty()) jobs.insert(options.job);
        if (!options.user.empty()) users.insert(options.user);
        for (const HistoryRecord& h : options.history) {
            if (h.rule != rule.name) continue;
            if ((step.per == "gpu" ? h.gpu : h.node) != key) continue;
            // A PCI bus id names a GPU only within its node.
            if (step.per == "gpu" && !d->culprit.node.empty() && !h.node.empty() &&
                h.node != d->culprit.node) {
                continue;
            }
            if (options.now - h.time > step.within_seconds || h.time > options.now) continue;
            ++count;
            if (!h.job.empty()) jobs.insert(h.job);
            if (!h.user.empty()) users.insert(h.user);
        }
        const int repeats = step.distinct_jobs ? static_cast<int>(jobs.size()) : count;
        if (repeats < step.repeats) continue;
        // A fault the job itself may cause repeats across jobs of one user when that user's
        // code is at fault: it blames the GPU only across distinct users.
        const int distinct_users = static_cast<int>(users.size());
        // (One user: jobs alone count, users known or not.)
        if (step.distinct_jobs && options.escalation_min_users > 1 &&
            distinct_users < options.escalation_min_users) {
            continue;
        }
        if (step.cause) d->cause = *step.cause;
        if (step.actions) d->actions = *step.actions;
        if (step.requeue) d->requeue = *step.requeue;
        d->escalation =
            std::to_string(repeats) + (step.distinct_jobs ? " jobs" : " times") +
            (step.distinct_jobs ? " of " + std::to_string(distinct_users) + " users" : "") +
            " on this " + step.per + " within " + std::to_string(step.within_seconds / 86400) + "d";
    }
}

}  // namespace

bool ConditionHolds(const Condition& condition, const EvidenceSet& set) {
    Index index;
    for (const Evidence& e : set.items) index[e.signature].push_back(&e);
    std::vector<const Evidence*> ignored;
    return Evaluate(condition, index, set, &ignored);
}

std::vector<std::string> NormalizePlan(std::vector<std::string> actions) {
    auto order = [](const std::string& a) {
        const ActionInfo* info = FindAction(a);
        return info != nullptr ? info->order : 100;
    };
    std::stable_sort(
        actions.begin(), actions.end(),
        [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
    actions.erase(std::unique(actions.begin(), actions.end()), actions.end());
    actions.erase(std::remove(actions.begin(), actions.end(), ToString(Action::kNone)),
                  actions.end());
    return actions;
}

Diagnosis Diagnose(const RuleSet& rules, const EvidenceSet& set, const DiagnoseOptions& options) {
    Index index;
    for (const Evidence& e : set.items) index[e.signature].push_back(&e);

    std::vector<Fired> fired;
    for (const Rule& rule : rules.rules) {
        std::vector<const Evidence*> ev;
        if (!Evaluate(rule.match, index, set, &ev)) continue;
        if (rule.unless) {
            std::vector<const Evidence*> ignored;
            if (Evaluate(*rule.unless, index, set, &ignored)) continue;
        }
        std::sort(ev.begin(), ev.end(), [](const Evidence* a, const Evidence* b) {
            return std::tie(a->source, a->line) < std::tie(b->source, b->line);
        });
        ev.erase(std::unique(ev.begin(), ev.end()), ev.end());
        fired.push_back(Fired{&rule, std::move(ev)});
    }
    std::set<std::string> fired_names;
    for (const Fired& f : fired) fired_names.insert(f.rule->name);
    for (Fired& f : fired) {
        for (const std::string& s : f.rule->suppressed_by) {
            if (s != f.rule->name && fired_names.count(s)) f.suppressed = true;
        }
    }
    // The winner: not suppressed, naming a cause, highest priority; earliest rule on a tie.
    // Rules that only contribute actions come next, and a guess last.
    const Fired* winner = nullptr;
    for (int pass = 0; pass < 3 && winner == nullptr; ++pass) {
        for (const Fired& f : fired) {
            if (f.suppressed || (pass == 0 && f.rule->contributes_actions) ||
                (pass < 2 && f.rule->guess)) {
                continue;
            }
            if (winner == nullptr || f.rule->priority > winner->rule->priority) winner = &f;
        }
    }
    Diagnosis d;
    if (winner == nullptr) return d;
    const Rule& rule = *winner->rule;
    d.rule = rule.name;
    d.guess = rule.guess;
    d.cause = rule.cause;
    d.requeue = rule.requeue;
    d.interrupts_job = rule.interrupts_job;
    const EvidenceKind kind = KindOf(winner->evidence);
    d.evidence_kind = kind.name;
    d.confidence = std::min(rule.confidence, kind.ceiling);
    d.actions = rule.actions;
    std::vector<const Evidence*> evidence = winner->evidence;
    for (const Fired& f : fired) {
        if (&f == winner || f.suppressed || !f.rule->contributes_actions) continue;
        d.actions.insert(d.actions.end(), f.rule->actions.begin(), f.rule->actions.end());
        evidence.insert(evidence.end(), f.evidence.begin(), f.evidence.end());
    }
    // Conflicting evidence: another cause almost as specific lowers our confidence.
    for (const Fired& f : fired) {
        if (&f == winner || f.suppressed || f.rule->contributes_actions || f.rule->guess) continue;
        if (f.rule->cause != rule.cause && f.rule->priority + 10 >= rule.priority) {
            d.confidence *= 0.75;
            break;
        }
    }
    d.culprit.node = options.node;
    // A node the message names ("Setting node gpu07 state to INVAL", "Node failure on gpu07") is
    // the culprit, not the host whose log holds the line (the controller's, a login node's).
    // A rule may name another field: the peer an IB transport gave up on, an NFS server.
    if (d.culprit.node.empty() && !rule.culprit_node.empty()) {
        d.culprit.node = FirstField(winner->evidence, {std::string_view(rule.culprit_node)});
    }
    if (d.culprit.node.empty()) d.culprit.node = FirstField(winner->evidence, {"node", "host"});
    // A device's PCI id (`bdf`: AER, a NIC's driver) names the GPU only for a GPU cause; a
    // network adapter's or a bridge's address is not a culprit GPU.
    const CauseInfo* info = FindCause(d.cause);
    const bool gpu_cause = info != nullptr && info->category == Category::kGpu;
    d.culprit.gpu = gpu_cause ? FirstField(evidence, {"pci", "uuid", "bdf", "gpu"})
                              : FirstField(evidence, {"pci", "uuid", "gpu"});
    d.culprit.gpu_index = SmallNumber(FirstField(evidence, {"gpu_index"}));
    const std::size_t source = winner->evidence.empty() ? 0 : winner->evidence[0]->source;
    const std::size_t line = winner->evidence.empty() ? 0 : winner->evidence[0]->line;
    if (d.culprit.node.empty()) d.culprit.node = PromptHost(set, source, line);
    // The machine a report names as its own (a cloud notice's instance, smartd's mail).
    if (d.culprit.node.empty()) {
        d.culprit.node = ContextField(set, "context-named-machine", {"instance"}, source);
    }
    // The node Slurm names for the job's first failed task or its step (srun's "NODE: task 3:
    // Exited with exit code 1", "Node failure on NODE", slurmstepd's "*** STEP 42.0 ON NODE
    // CANCELLED"), or the MPI launcher for the daemon it lost or the first rank that died
    // ("Remote daemon: [[1,0],1] on node NODE", "mpirun noticed that process rank 3 with PID 42
    // on node NODE exited on signal 9"), or the node `scontrol show node` describes
    // ("NodeName=NODE Arch=...", beside its Reason=), or NCCL RAS for a process it lost.
    if (d.culprit.node.empty()) {
        d.culprit.node = ContextField(set, "context-task-node",
                                      {"failed_node", "task_node", "step_node", "stepd_node",
                                       "daemon_node", "shown_node", "ras_node"},
                                      source);
    }
    if (d.culprit.node.empty()) {
        d.culprit.node = ContextField(set, "mpi-process-exited", {"node"}, source);
    }
    // Else the one host the input's prefixed lines name; a container's id or "localhost" names
    // no machine of the cluster.
    if (d.culprit.node.empty()) {
        std::string host = OnlyField(set, source, "host");
        if (!IsContainerHostname(host) && host != "localhost") d.culprit.node = std::move(host);
    }
    // Else the GPU every Xid of the input names, else the one GPU all its GPU lines name (an
    // RmInitAdapter failure's address beside the GSP lines that say only "GPU6").
    if (d.culprit.gpu.empty()) d.culprit.gpu = OnlyField(set, source, "pci", "xid");
    if (d.culprit.gpu.empty()) d.culprit.gpu = OnlyField(set, source, "pci");
    if (gpu_cause && d.culprit.gpu.empty() && !d.culprit.gpu_index) {
        d.culprit.gpu_index =
            SmallNumber(ContextField(set, "context-gpu-index", {"gpu_index"}, source));
    }
    d.culprit.rank = SmallNumber(FirstField(winner->evidence, {"rank", "grank"}));
    // A rank that timed out waiting, or lost its peer, is where the fault showed, not its
    // culprit: only a failure of the rank's own names it.
    const bool victim = d.cause == "nccl_timeout" || d.cause == "unknown" ||
                        !FirstField(winner->evidence, {"from_rank"}).empty();
    if (!d.culprit.rank && !victim) d.culprit.rank = SmallNumber(FailedRank(set, source));
    ApplyEscalation(rule, options, &d);
    // A burn-in or benchmark tool's own output: the run tested the node; no job was interrupted,
    // so there is nothing to requeue (a failed burn-in run elsewhere proves nothing). The same
    // for a fault raised while the driver loaded or opened the GPU.
    if (!ContextField(set, "context-burn-in-tool", {"tool"}, source).empty() ||
        !ContextField(set, "context-driver-start", {"proc"}, source).empty()) {
        d.requeue = false;
    }
    d.actions = NormalizePlan(std::move(d.actions));
    std::sort(evidence.begin(), evidence.end(), [](const Evidence* a, const Evidence* b) {
        return std::tie(a->source, a->line) < std::tie(b->source, b->line);
    });
    evidence.erase(std::unique(evidence.begin(), evidence.end()), evidence.end());
    constexpr std::size_t kMaxEvidence = 20;
    for (const Evidence* e : evidence) {
        if (d.evidence.size() == kMaxEvidence) break;
        d.evidence.push_back(*e);
    }
    // Each finding keeps its first lines, for `classify --explain`.
    auto first_lines = [](const std::vector<const Evidence*>& ev) {
        constexpr std::size_t kPerFinding = 3;
        std::vector<Evidence> out;
        for (const Evidence* e : ev) {
            if (out.size() == kPerFinding) break;
            out.push_back(*e);
        }
        return out;
    };
    d.findings.push_back(Finding{rule.name, rule.cause, rule.priority, false,
                                 rule.contributes_actions, first_lines(winner->evidence)});
    for (const Fired& f : fired) {
        if (&f == winner) continue;
        d.findings.push_back(Finding{f.rule->name, f.rule->cause, f.rule->priority, f.suppressed,
                                     f.rule->contributes_actions, first_lines(f.evidence)});
    }
    return d;
}

}  // namespace autoheal::diag
