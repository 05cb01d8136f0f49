#include "autoheal/remediation/decision.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "autoheal/core/escape.h"
#include "autoheal/diag/flight_recorder.h"
#include "autoheal/diag/taxonomy.h"

namespace autoheal::remediation {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

void AddUnique(std::vector<std::string>* v, const std::string& s) {
    if (!s.empty() && !Contains(*v, s)) v->push_back(s);
}

using diag::IsInfrastructure;
using diag::IsNetworkCause;

// A cause that blames the node it was seen on (the catalog's blame column). An NCCL timeout is
// seen on every rank and blames none of them; "unknown" and a guess blame nothing.
bool BlamesNode(const diag::Diagnosis& d) {
    return d.Explains() && diag::BlameOf(d.cause) == diag::Blame::kNode;
}

bool IsJobsOwn(const std::string& cause) { return diag::BlameOf(cause) == diag::Blame::kJob; }

// The fields of a node reason for a diagnosis: its Xid (when one is in the evidence), GPU, rule
// and the job.
NodeReason ReasonFor(const diag::Diagnosis& d, const std::string& job) {
    NodeReason reason;
    reason.cause = diag::ParseCause(d.cause).value_or(diag::Cause::kUnknown);
    for (const diag::Evidence& e : d.evidence) {
        if (auto xid = e.Field("xid")) {
            reason.fields.emplace_back("xid", std::string(*xid));
            break;
        }
    }
    reason.fields.emplace_back("gpu", d.culprit.gpu);
    reason.fields.emplace_back("rule", d.rule);
    reason.fields.emplace_back("job", job);
    return reason;
}

int Priority(const diag::Diagnosis& d) {
    return d.findings.empty() ? 0 : d.findings.front().priority;
}

// Diagnoses evidence as a node found it: the analyzers run here, on a copy, never a rescan.
NodeVerdict DiagnoseEvidence(const DecisionInput& in, const std::string& node,
                             diag::EvidenceSet evidence,
                             const std::vector<diag::HistoryRecord>& history) {
    NodeVerdict v;
    v.node = node;
    v.evidence = std::move(evidence);
    diag::Analyze(&v.evidence);
    diag::DiagnoseOptions options;
    options.node = node;
    options.job = in.job.job;
    options.user = in.job.user;
    options.escalation_min_users = in.config->escalation_min_users;
    options.history = history;
    options.now = in.cluster.now;
    v.diagnosis = diag::Diagnose(*in.rules, v.evidence, options);
    if (v.diagnosis.culprit.node.empty()) v.diagnosis.culprit.node = node;
    return v;
}

// The flight recorder's culprit among a diagnosis's evidence, when its rule decided on it.
const diag::Evidence* FlightRecorderCulprit(const diag::Diagnosis& d) {
    for (const diag::Evidence& e : d.evidence) {
        if (e.signature == diag::kFrCulpritSignature) return &e;
    }
    return nullptr;
}

// A line of evidence quoted in the summary (and so in the explanation, the AdminComment and the
// job's output): one line, control characters escaped, at most `max` bytes.
std::string ShortText(std::string s, std::size_t max) {
    for (char& c : s) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    if (s.size() > max) s = s.substr(0, max - 3) + "...";
    return EscapeControl(s);
}

}  // namespace

std::string DescribeEvidence(const diag::Diagnosis& d) {
    std::vector<std::string> parts;
    for (const diag::Evidence& e : d.evidence) {
        if (auto xid = e.Field("xid")) {
            AddUnique(&parts, "xid " + std::string(*xid));
            break;
        }
    }
    if (parts.empty() && !d.rule.empty()) parts.push_back(d.rule);
    if (!d.culprit.gpu.empty()) parts.push_back("GPU " + d.culprit.gpu);
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

int NodesTakenOut(const std::vector<NodeInfo>& nodes) {
    return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const NodeInfo& node) {
        return (node.Out() || node.reboot_pending) && node.ReasonIsOurs();
    }));
}

int BreakerLimit(const BreakerConfig& config, int total) {
    const int by_fraction = static_cast<int>(std::floor(config.max_fraction * total + 1e-9));
    return std::max(1, std::min(config.max_nodes, by_fraction));
}

namespace {

// 1 and 2: diagnoses each node's own evidence (kernel, NVML, health) into out.verdicts and the
// job's output, gathered from every report that read it, into out.job_output.
void DiagnoseReports(const DecisionInput& in, JobDecision* decision) {
    JobDecision& out = *decision;
    std::map<std::string, const std::vector<diag::HistoryRecord>*> history;
    for (const auto& [node, records] : in.history) history[node] = &records;
    static const std::vector<diag::HistoryRecord> kNoHistory;

    // 1. Each node's own evidence; 2. the job's output.
    diag::EvidenceSet job_output;
    bool job_output_read = false;
    for (const NodeReport& r : in.reports) {
        auto h = history.find(r.node);
        out.verdicts.push_back(
            DiagnoseEvidence(in, r.node, r.evidence, h == history.end() ? kNoHistory : *h->second));
        const std::string& gpu = out.verdicts.back().diagnosis.culprit.gpu;
        out.verdicts.back().other_gpu =
            !gpu.empty() && !r.job_gpus.empty() && !Contains(r.job_gpus, gpu);
        if (r.job_output_read) {
            diag::MergeEvidence(&job_output, r.job_output);
            job_output_read = true;
        }
    }
    if (job_output_read && !job_output.items.empty()) {
        out.job_output = DiagnoseEvidence(in, "", std::move(job_output), kNoHistory);
        out.job_output->diagnosis.culprit.node.clear();
        // The job's output may name a host (NCCL, "fallen off the bus" from one rank).
        const diag::Diagnosis& jd = out.job_output->diagnosis;
        for (const diag::Evidence& e : jd.evidence) {
            if (auto host = e.Field("host")) {
                if (Contains(in.job.nodes, std::string(*host))) {
                    out.job_output->diagnosis.culprit.node = std::string(*host);
                    break;
                }
            }
        }
    }
}

// 3. Culprits and the job's cause: every node whose own diagnosis blames it is a culprit; the
// strongest of those (else the job's output, else the strongest finding anywhere) gives the
// job's cause, rule, confidence and summary, and a user bug in the output outranks hints that
// blame no node. Returns whether the deciding rule asks for a requeue.
bool DecideCause(JobDecision* decision) {
    JobDecision& out = *decision;
    const NodeVerdict* deciding = nullptr;
    for (NodeVerdict& v : out.verdicts) {
        if (!BlamesNode(v.diagnosis) || v.other_gpu) continue;
        v.culprit = true;
        out.culprits.push_back(v.node);
        if (deciding == nullptr || Priority(v.diagnosis) > Priority(deciding->diagnosis)) {
            deciding = &v;
        }
    }
    if (deciding == nullptr && out.job_output && out.job_output->diagnosis.Explains()) {
        deciding = &*out.job_output;
        const std::string& named = out.job_output->diagnosis.culprit.node;
        if (!named.empty() && BlamesNode(out.job_output->diagnosis))
            AddUnique(&out.culprits, named);
    }
    const diag::Evidence* fr =
        deciding != nullptr ? FlightRecorderCulprit(deciding->diagnosis) : nullptr;
    if (deciding == nullptr) {
        // Nothing on any node or in the output: the strongest finding anywhere, if any.
        for (const NodeVerdict& v : out.verdicts) {
            if (!v.diagnosis.Explains() || v.other_gpu) continue;
            if (deciding == nullptr || Priority(v.diagnosis) > Priority(deciding->diagnosis)) {
                deciding = &v;
            }
        }
    }
    bool requeue_by_rule = false;
    if (deciding != nullptr) {
        const diag::Diagnosis& d = deciding->diagnosis;
        out.cause = d.cause;
        out.rule = d.rule;
        out.confidence = d.confidence;
        requeue_by_rule = d.requeue;
        std::string where;
        if (!out.culprits.empty()) {
            for (const std::string& c : out.culprits) where += (where.empty() ? "" : ",") + c;
        }
        out.summary = out.cause + (where.empty() ? "" : " on " + where);
        const std::string ev = DescribeEvidence(d);
        if (!ev.empty()) out.summary += " (" + ev + ")";
        if (fr != nullptr) {
            // "nccl hang: rank 13 on node7 never entered ALLREDUCE #80078 (pg 0)"
            out.summary = "nccl hang: " + ShortText(fr->text, 160);
            if (!d.culprit.node.empty() && d.culprit.node == fr->Field("host")) {
                AddUnique(&out.suspects, d.culprit.node);
            }
        }
    }
    // A user bug seen in the job's output outranks infrastructure hints that blame no node.
    if (out.culprits.empty() && out.job_output && out.job_output->diagnosis.Explains() &&
        IsJobsOwn(out.job_output->diagnosis.cause)) {
        out.cause = out.job_output->diagnosis.cause;
        out.rule = out.job_output->diagnosis.rule;
        out.confidence = out.job_output->diagnosis.confidence;
        requeue_by_rule = false;
        std::string line;
        if (!out.job_output->diagnosis.evidence.empty()) {
            line = ": " + ShortText(out.job_output->diagnosis.evidence.front().text, 120);
        }
        out.summary = out.cause + line;
    }
    return requeue_by_rule;
}

// Node plans: every node whose own evidence calls for actions, culprit or not (a job that
// succeeded can still have seen its GPU fail).
void PlanNodes(const DecisionInput& in, JobDecision* decision) {
    JobDecision& out = *decision;
    for (const NodeVerdict& v : out.verdicts) {
        const diag::Diagnosis& d = v.diagnosis;
        if (d.actions.empty() || !d.Explains()) continue;
        NodePlan plan;
        plan.node = v.node;
        plan.gpu = d.culprit.gpu;
        plan.cause = d.cause;
        plan.rule = d.rule;
        plan.actions = d.actions;
        plan.why = ReasonFor(d, in.job.job);
        out.plans.push_back(std::move(plan));
    }
}

// 4. Network correlation under one leaf switch: when enough of one leaf switch's nodes saw a
// network fault (in this job or recently), the incident goes to the switch: one ticket for it
// instead of one per node, and the summary and culprits name its nodes.
void CorrelateNetwork(const DecisionInput& in, JobDecision* decision) {
    JobDecision& out = *decision;
    const RemediationConfig& config = *in.config;
    std::set<std::string> network_nodes;
    for (const NodeVerdict& v : out.verdicts) {
        if (v.diagnosis.Explains() && IsNetworkCause(v.diagnosis.cause)) {
            network_nodes.insert(v.node);
        }
    }
    if (!network_nodes.empty()) {
        std::set<std::string> recent;
        for (const diag::HistoryRecord& h : in.cluster.recent) {
            if (IsNetworkCause(h.cause) &&
                h.time >= in.cluster.now - config.correlation.window_seconds) {
                recent.insert(h.node);
            }
        }
        for (const SwitchInfo& sw : in.cluster.switches) {
            if (sw.level != 0) continue;
            std::vector<std::string> hit;
            bool ours = false;
            for (const std::string& n : sw.nodes) {
                if (network_nodes.count(n) != 0) ours = true;
                if (network_nodes.count(n) != 0 || recent.count(n) != 0) hit.push_back(n);
            }
            if (ours && static_cast<int>(hit.size()) >= config.correlation.min_nodes) {
                out.network = SwitchIncident{sw.name, hit};
                break;
            }
        }
        if (out.network) {
            for (NodePlan& p : out.plans) {
                if (!Contains(out.network->nodes, p.node) || !IsNetworkCause(p.cause)) continue;
                std::vector<std::string> kept;
                for (const std::string& a : p.actions) {
                    if (diag::TicketOf(a) != diag::TicketKind::kNone) {
                        p.held.push_back(a + " (one ticket for switch " + out.network->name + ")");
                    } else {
                        kept.push_back(a);
                    }
                }
                p.actions = kept;
            }
            out.summary = std::string(diag::ToString(diag::Cause::kNetworkSwitchCable)) +
                          " on switch " + out.network->name + " (nodes ";
            for (std::size_t i = 0; i < out.network->nodes.size(); ++i) {
                out.summary += (i ? "," : "") + out.network->nodes[i];
            }
            out.summary += ")";
            for (const std::string& n : out.network->nodes) {
                if (Contains(in.job.nodes, n)) AddUnique(&out.culprits, n);
            }
        }
    }
}

// The distinct users of a node's earlier unexplained failures and of this job.
int DistinctUsers(const UnexplainedFailures& earlier, const std::string& user) {
    std::set<std::string> users(earlier.users.begin(), earlier.users.end());
    if (!user.empty()) users.insert(user);
    return static_cast<int>(users.size());
}

// The lemon plan for `node`, which has now failed `count` jobs of `users` users unexplained.
NodePlan LemonPlan(const DecisionInput& in, const std::string& node, int count, int users) {
    const std::string days =
        std::to_string((in.config->lemon.window_seconds + 86399) / 86400) + "d";
    NodePlan plan;
    plan.node = node;
    plan.cause = diag::ToString(diag::Cause::kLemon);
    plan.rule = "lemon-node";
    plan.actions = {std::string(diag::ToString(diag::Action::kDrain))};
    plan.why.cause = diag::Cause::kLemon;
    plan.why.fields = {{"failures", std::to_string(count)},
                       {"users", std::to_string(users)},
                       {"within", days},
                       {"rule", plan.rule},
                       {"job", in.job.job}};
    plan.why.note = std::to_string(count) + " unexplained job failures of " +
                    std::to_string(users) + " users within " + days + "; deep checks needed";
    return plan;
}

// 4b. Lemons: sets the run's outcome; a failure nothing explains, with every node's report in,
// counts towards lemons, and drains as a lemon each of the job's nodes that has no plan yet and
// has now failed lemon.failures jobs of lemon.min_users distinct users unexplained within
// lemon.window.
void PlanLemons(const DecisionInput& in, JobDecision* decision) {
    JobDecision& out = *decision;
    const RemediationConfig& config = *in.config;
    diag::RunOutcome outcome = diag::RunOutcome::kOther;
    if (!in.job.failed) {
        outcome = diag::RunOutcome::kOk;
    } else if (IsJobsOwn(out.cause)) {
        outcome = diag::RunOutcome::kOwn;
    } else if (!out.culprits.empty()) {
        outcome = diag::RunOutcome::kBlamed;
    } else if (diag::IsUnexplained(out.cause)) {
        outcome = diag::RunOutcome::kUnexplained;
    }
    out.outcome = diag::ToString(outcome);
    // A node that did not report may hold the explanation: such a run is no evidence.
    out.counts_towards_lemons =
        outcome == diag::RunOutcome::kUnexplained && in.job.missing_reports.empty();
    if (!out.counts_towards_lemons || config.lemon.failures <= 0) return;
    for (const UnexplainedFailures& earlier : in.unexplained_failures) {
        const int count = earlier.jobs + 1;
        const int users = DistinctUsers(earlier, in.job.user);
        const bool planned = std::any_of(out.plans.begin(), out.plans.end(),
                                         [&](const NodePlan& p) { return p.node == earlier.node; });
        if (count < config.lemon.failures || users < config.lemon.min_users || planned ||
            !Contains(in.job.nodes, earlier.node)) {
            continue;
        }
        out.plans.push_back(LemonPlan(in, earlier.node, count, users));
    }
}

// 5. The breaker: only actions that take a node out of service count. Past the limit, those of a
// plan are held and its node is quarantined instead; its tickets and notices still go out.
void ApplyBreaker(const DecisionInput& in, JobDecision* decision) {
    JobDecision& out = *decision;
    const RemediationConfig& config = *in.config;
    const int total = static_cast<int>(in.cluster.nodes.size());
    const int limit = BreakerLimit(config.breaker, std::max(total, 1));
    int out_now = NodesTakenOut(in.cluster.nodes);
    std::set<std::string> already_out;
    for (const NodeInfo& n : in.cluster.nodes) {
        if (n.Out() || n.reboot_pending) already_out.insert(n.name);
    }
    for (const std::string& n : in.cluster.busy_with_asked) {
        if (already_out.insert(n).second) ++out_now;
    }
    for (NodePlan& p : out.plans) {
        const bool takes_out =
            std::any_of(p.actions.begin(), p.actions.end(), diag::CountsAgainstBreaker);
        if (!takes_out || already_out.count(p.node) != 0) continue;
        if (in.cluster.nodes_known && out_now + 1 <= limit) {
            ++out_now;
            continue;
        }
        out.breaker_open = true;
        std::vector<std::string> kept;  // tickets and notify go through
        for (const std::string& a : p.actions) {
            if (diag::CountsAgainstBreaker(a)) {
                p.held.push_back(a + " (breaker)");
            } else {
                kept.push_back(a);
            }
        }
        p.actions = std::move(kept);
        AddUnique(&out.quarantine, p.node);
    }
    if (out.breaker_open && !in.cluster.nodes_known) {
        out.breaker_note =
            "breaker open: Slurm's node states could not be read under the breaker lock, so how "
            "many nodes autoheal holds is unknown; node actions held, admins alerted";
    } else if (out.breaker_open) {
        out.breaker_note = "breaker open: " + std::to_string(out_now) + " of " +
                           std::to_string(total) +
                           " nodes already taken out by autoheal or resetting a GPU (limit " +
                           std::to_string(limit) + "); node actions held, admins alerted";
    }
}

// Requeues in a row without checkpoint progress, counting the one this run would be: the
// newest checkpoint is known and not past where it stood at the last requeue. Unknown (no
// checkpoint folder, no report from the batch host): 0.
int StalledRequeues(const JobFacts& job) {
    if (!job.checkpoint || !job.checkpoint_at_requeue) return 0;
    const CheckpointMark& now = *job.checkpoint;
    const CheckpointMark& then = *job.checkpoint_at_requeue;
    const bool advanced = now.step != then.step ? now.step > then.step : now.mtime > then.mtime;
    return advanced ? 0 : job.stalled_requeues + 1;
}

// 6. Requeue: the exclusions, whether the job is requeued and the line that tells its user why.
void DecideRequeue(const DecisionInput& in, bool requeue_by_rule, JobDecision* decision) {
    JobDecision& out = *decision;
    out.exclude = in.job.excluded;
    std::vector<std::string> left_out = out.culprits;
    for (const std::string& s : out.suspects) AddUnique(&left_out, s);
    for (const std::string& c : left_out) AddUnique(&out.exclude, c);
    const bool infra = IsInfrastructure(out.cause);
    const int cap = in.job.auto_resume.value_or(0);
    const std::string restarts =
        std::to_string(in.job.restart_count + 1) + "/" + std::to_string(cap);
    const std::string excluded_words = left_out.empty() ? std::string() : "; excluded " + [&] {
        std::string s;
        for (const std::string& c : left_out) s += (s.empty() ? "" : ",") + c;
        return s;
    }();
    if (!in.job.failed) {
        out.requeue = false;
        if (!out.plans.empty()) {
            out.explanation =
                "autoheal: job ended normally; " + out.summary + " seen on its nodes and handled";
        }
    } else if (in.job.exit_status == kNoRequeueExitCode) {
        out.explanation = "autoheal: " + (out.summary.empty() ? "no cause found" : out.summary) +
                          "; not requeued: the job exited " + std::to_string(kNoRequeueExitCode) +
                          " (its own \"do not requeue\")";
    } else if (!in.job.auto_resume) {
        out.explanation = "autoheal: " + (out.summary.empty() ? "no cause found" : out.summary) +
                          "; not requeued: the job did not ask for --auto-resume";
    } else if (IsJobsOwn(out.cause)) {
        out.explanation = "autoheal: not requeued: the job failed by itself (" + out.summary + ")";
    } else if (!infra || !requeue_by_rule) {
        out.explanation = "autoheal: not requeued: " +
                          (out.summary.empty() ? std::string("no infrastructure fault found")
                                               : out.summary +
                                                     " is not an infrastructure fault "
                                                     "autoheal requeues for");
    } else if (in.job.restart_count >= cap) {
        out.explanation = "autoheal: not requeued: " + out.summary + ", but the job already " +
                          "restarted " + std::to_string(in.job.restart_count) + "/" +
                          std::to_string(cap) + " times (--auto-resume=" + std::to_string(cap) +
                          ")";
    } else if (!in.job.requeueable) {
        out.explanation = "autoheal: not requeued: " + out.summary +
                          ", but the job is not "
                          "requeueable (--no-requeue)";
    } else if (const int limit = in.config != nullptr ? in.config->no_progress_requeues : 0;
               limit > 0 && StalledRequeues(in.job) >= limit) {
        out.explanation = "autoheal: not requeued: " + out.summary +
                          ", but its newest checkpoint (step " +
                          std::to_string(in.job.checkpoint->step) + ") has not advanced across " +
                          std::to_string(limit) + " requeues (no-progress breaker)";
    } else {
        out.requeue = true;
        out.stalled_requeues = StalledRequeues(in.job);
        out.explanation =
            "autoheal: requeued " + restarts + " after " + out.summary + excluded_words;
    }
}

}  // namespace

JobDecision Decide(const DecisionInput& in) {
    JobDecision out;
    DiagnoseReports(in, &out);
    const bool requeue_by_rule = DecideCause(&out);
    PlanNodes(in, &out);
    CorrelateNetwork(in, &out);
    PlanLemons(in, &out);
    ApplyBreaker(in, &out);
    DecideRequeue(in, requeue_by_rule, &out);
    return out;
}

}  // namespace autoheal::remediation
