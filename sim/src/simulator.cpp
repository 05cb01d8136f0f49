#include "autoheal/sim/simulator.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <random>
#include <set>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"
#include "autoheal/core/submit_policy.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/remediation/breaker_lock.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/ticket_config.h"
#include "autoheal/sim/manual_clock.h"
#include "autoheal/sim/memory_slurm.h"

namespace autoheal::sim {
namespace {

using remediation::JobDecision;
using remediation::NodeReport;

constexpr std::int64_t kEpoch = 1'800'000'000;  // simulated time 0, seconds since the epoch

struct Fault {
    double time = 0;
    std::size_t cause = 0;
    double where = 0;  // uniform [0,1): which of the job's nodes (or leaf switches)
};

// The same faults for both modes: a Poisson process at the mix's rate scaled to the job's GPUs.
std::vector<Fault> DrawFaults(const Scenario& s) {
    std::mt19937_64 rng(s.seed);
    const double gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
    const double rate = s.interruptions * (gpus / s.reference_gpus) / s.counts_span_seconds;
    std::exponential_distribution<double> gap(rate);
    std::vector<double> weights;
    for (const Cause& c : s.causes) weights.push_back(c.count);
    std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<Fault> out;
    for (double t = gap(rng); t < s.span_seconds; t += gap(rng)) {
        Fault f;
        f.time = t;
        f.cause = pick(rng);
        f.where = unit(rng);
        out.push_back(f);
    }
    return out;
}

std::string NodeName(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "node%05d", i + 1);
    return buf;
}

// The nodes a fault is on: one node of the job, or switch_nodes nodes under one of its leaves.
std::vector<std::string> FaultNodes(const Cause& c, const Fault& f,
                                    const std::vector<std::string>& job_nodes,
                                    const std::map<std::string, int>& leaf_of) {
    const std::size_t i =
        std::min(job_nodes.size() - 1,
                 static_cast<std::size_t>(f.where * static_cast<double>(job_nodes.size())));
    if (c.where == "job") return {};
    if (c.where == "node") return {job_nodes[i]};
    const int leaf = leaf_of.at(job_nodes[i]);
    std::vector<std::string> out;
    for (const std::string& n : job_nodes) {
        if (leaf_of.at(n) == leaf) out.push_back(n);
        if (static_cast<int>(out.size()) >= c.switch_nodes) break;
    }
    return out;
}

// The state of one mode's cluster and job.
struct Mode {
    ModeResult result;
    std::vector<std::string> job_nodes;
    std::map<std::string, double> out_until;  // nodes out of service, and when they return
    double run_start = 0;                     // when training (re)started
    void RecordOut(double t) {
        const std::size_t day = static_cast<std::size_t>(t / 86400);
        if (result.out_of_service_by_day.size() <= day)
            result.out_of_service_by_day.resize(day + 1);
        int& slot = result.out_of_service_by_day[day];
        slot = std::max(slot, static_cast<int>(out_until.size()));
    }
};

// Nodes back in service by `t`; `back` is told each one.
template <typename Back>
void Return(Mode* m, double t, const Back& back) {
    for (auto it = m->out_until.begin(); it != m->out_until.end();) {
        if (it->second <= t) {
            back(it->first);
            it = m->out_until.erase(it);
        } else {
            ++it;
        }
    }
}

// Picks the job's nodes at `t` (keeping those it had that are still usable); returns when it can
// start (later than t when it must wait for nodes to return).
template <typename Back>
double Schedule(Mode* m, const std::vector<std::string>& all, std::set<std::string>* excluded,
                double t, const Back& back) {
    const std::size_t need = m->job_nodes.size();
    for (;;) {
        Return(m, t, back);
        auto usable = [&](const std::string& n) {
            return m->out_until.count(n) == 0 && (excluded == nullptr || excluded->count(n) == 0);
        };
        std::vector<std::string> next;
        std::set<std::string> taken;
        for (const std::string& n : m->job_nodes) {
            if (usable(n)) next.push_back(n), taken.insert(n);
        }
        for (const std::string& n : all) {
            if (next.size() >= need) break;
            if (usable(n) && taken.count(n) == 0) next.push_back(n);
        }
        if (next.size() >= need) {
            m->job_nodes = std::move(next);
            return t;
        }
        // Not enough: give back the excluded nodes that are in service (a resubmission would),
        // else wait for the next node to return.
        if (excluded != nullptr && !excluded->empty()) {
            const std::size_t before = excluded->size();
            for (auto it = excluded->begin(); it != excluded->end();) {
                it = m->out_until.count(*it) ? std::next(it) : excluded->erase(it);
            }
            if (excluded->size() != before) {
                ++m->result.exclusions_cleared;
                continue;
            }
        }
        double soonest = 1e300;
        for (const auto& [n, until] : m->out_until) soonest = std::min(soonest, until);
        if (soonest >= 1e299) return t;  // cannot happen: the cluster has the job's nodes
        m->result.waiting_for_nodes_seconds += soonest - t;
        t = soonest;
    }
}

// Work lost at a fault at `t`: training since the last checkpoint; the rest is kept.
void AccountWork(const Scenario& s, Mode* m, double t) {
    const double ran = std::max(0.0, t - m->run_start);
    const double interval = std::max(1.0, s.Seconds("checkpoint_interval"));
    m->result.productive_seconds += ran - std::fmod(ran, interval);
}

// What the autoheal mode keeps between faults: the real controller's world.
class AutohealWorld {
  public:
    AutohealWorld(const Scenario& s, const diag::RuleSet& rules,
                  std::shared_ptr<const diag::Scanner> scanner, const std::string& work_dir,
                  const std::vector<std::string>& all, const std::map<std::string, int>& leaf_of)
        : s_(s), leaf_of_(leaf_of), scanner_(std::move(scanner)), clock_(kEpoch) {
        engine_.rules = rules;
        engine_.scanner = scanner_;
        config_.source = "simulate";
        config_.state_dir = work_dir;
        std::filesystem::create_directories(work_dir + "/jobs");  // the breaker lock's folder
        config_.policy.quarantine_file = work_dir + "/quarantine.json";
        config_.policy.max_auto_resume = s.auto_resume;
        rc_.breaker.max_nodes = s.breaker_max_nodes;
        rc_.breaker.max_fraction = s.breaker_max_fraction;
        rc_.jobs_retention_days = 3650;
        tickets_ = remediation::ParseTicketConfig(YAML::Node(), "simulate", work_dir).value();
        store_ = std::move(remediation::IncidentStore::OpenInMemory().value());
        for (const std::string& n : all) slurm_.AddNode(n);
        std::map<int, remediation::SwitchInfo> leaves;
        for (const auto& [n, leaf] : leaf_of) {
            auto& sw = leaves[leaf];
            sw.name = "leaf" + std::to_string(leaf + 1);
            sw.nodes.push_back(n);
        }
        std::vector<remediation::SwitchInfo> topo;
        topo.reserve(leaves.size() + 1);
        for (auto& [i, sw] : leaves) topo.push_back(std::move(sw));
        topo.push_back({"spine", 1, {}});
        slurm_.SetTopology(std::move(topo));
    }

    MemorySlurmClient& slurm() { return slurm_; }
    std::uint32_t job_id() const { return job_id_; }

    // A new job (a person's resubmission), or the requeued one, running on `nodes` from `t`.
    void Start(const std::vector<std::string>& nodes, double t, bool fresh) {
        if (fresh || job_id_ == 0) {
            ++job_id_;
            remediation::JobInfo j;
            j.id = job_id_;
            j.requeue = true;
            j.user_id = 1000;
            j.user_name = "trainer";
            slurm_.AddJob(j);
        }
        remediation::JobInfo& j = slurm_.job(job_id_);
        j.state = "RUNNING";
        j.pending = j.being_requeued = j.completing = false;
        j.exit_code = 0;
        j.nodes = remediation::SlurmAdapter::CompressHostlist(nodes);
        j.batch_host = nodes.front();
        j.start_time = kEpoch + static_cast<std::int64_t>(t);
    }

    std::set<std::string> Excluded() {
        const auto v = remediation::SlurmAdapter::ExpandHostlist(slurm_.job(job_id_).exc_nodes);
        return {v.begin(), v.end()};
    }
    void SetExcluded(const std::set<std::string>& nodes) {
        slurm_.job(job_id_).exc_nodes = remediation::SlurmAdapter::CompressHostlist(
            std::vector<std::string>(nodes.begin(), nodes.end()));
    }

    // The job ended on the fault at `t`: the node epilogs' reports and the controller's steps.
    // `down` nodes died (no report; Slurm requeued the job itself).
    JobDecision Decide(const Cause& c, const std::vector<std::string>& all_job_nodes,
                       const std::vector<std::string>& fault_nodes, bool down, double t,
                       double* ms) {
        const std::vector<std::string> job_nodes = DecidedOn(all_job_nodes, fault_nodes);
        AdvanceTo(t);
        remediation::JobInfo& j = slurm_.job(job_id_);
        j.end_time = clock_.Now();
        if (down) {
            // Slurm requeued it (NODE_FAIL): pending again, its restart count up.
            j.state = "PENDING";
            j.pending = j.being_requeued = true;
            ++j.restart_count;
            for (const std::string& n : fault_nodes) {
                remediation::NodeInfo& node = slurm_.node(n);
                node.down = true;
                node.state = "DOWN";
                node.reason = "Not responding";
            }
        } else {
            j.state = "FAILED";
            j.exit_code = 1 << 8;
        }
        ScriptContext ctx;
        ctx.job_id = std::to_string(job_id_);
        ctx.nodelist = j.nodes;
        ctx.restart_count = std::to_string(j.restart_count);
        ctx.uid = "1000";
        ctx.user = "trainer";
        ctx.options.auto_resume = s_.auto_resume;
        const auto start = std::chrono::steady_clock::now();
        remediation::CtldEnv env{config_, ctx,    rc_,    tickets_, engine_,
                                 *store_, slurm_, clock_, 0,        0};
        remediation::DecisionInput in;
        in.rules = &engine_.rules;
        in.config = &rc_;
        in.job.job = ctx.job_id;
        in.job.restart_count = j.restart_count;
        in.job.auto_resume = CappedAutoResume(ctx.options.auto_resume, s_.auto_resume);
        in.job.nodes = job_nodes;
        JobDecision d;
        auto times = remediation::LoadFacts(env, &in);
        if (times) {
            in.reports = Reports(c, job_nodes, fault_nodes, down, &in.job.missing_reports);
            // As the controller does: the breaker's count and the drains under the breaker lock.
            const remediation::BreakerLock breaker(config_.state_dir,
                                                   remediation::kBreakerLockWaitSeconds);
            auto decided = remediation::DecideJob(env, &in, *times, breaker);
            if (decided) {
                d = std::move(*decided);
                auto incidents = remediation::RecordIncidents(env, in, d);
                if (incidents) {
                    remediation::Act(env, in, d, *incidents);
                    remediation::Requeue(env, in, &d, *incidents);
                }
            }
        }
        *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
        return d;
    }

    // A node autoheal took out is back: its reboot happened, or it was repaired and resumed.
    void Back(const std::string& n) {
        remediation::NodeInfo& node = slurm_.node(n);
        if (node.reboot_pending) {
            slurm_.Boot(n);
        } else if (node.ReasonIsOurs()) {
            (void)slurm_.Resume(n);
        } else {
            node.down = node.drained = false;
            node.reason.clear();
            node.state = "IDLE";
        }
    }

  private:
    // The nodes the steps decide on (Scenario::decide_on), in the job's order.
    std::vector<std::string> DecidedOn(const std::vector<std::string>& job_nodes,
                                       const std::vector<std::string>& fault_nodes) const {
        if (s_.decide_on == "all") return job_nodes;
        std::set<int> leaves;
        for (const std::string& n : fault_nodes) leaves.insert(leaf_of_.at(n));
        std::vector<std::string> out;
        for (const std::string& n : job_nodes) {
            if (n == job_nodes.front() || leaves.count(leaf_of_.at(n))) out.push_back(n);
        }
        return out;
    }

    void AdvanceTo(double t) {
        const auto target = static_cast<std::int64_t>(t);
        if (target > advanced_) clock_.Advance(std::chrono::seconds(target - advanced_));
        advanced_ = std::max(advanced_, target);
        slurm_.set_now(clock_.Now());
    }

    diag::EvidenceSet Scan(const std::vector<std::string>& lines, const char* source,
                           diag::InputKind kind) const {
        std::string text;
        for (const std::string& l : lines) text += l + "\n";
        diag::EvidenceSet set;
        if (!text.empty()) scanner_->ScanText(text, source, &set, kind);
        return set;
    }

    // Every node of the job reports: the fault's nodes their kernel lines and NVML deltas, the
    // batch host the job's output; a node that died reports nothing.
    std::vector<NodeReport> Reports(const Cause& c, const std::vector<std::string>& job_nodes,
                                    const std::vector<std::string>& fault_nodes, bool down,
                                    std::vector<std::string>* missing) {
        const diag::EvidenceSet kernel = Scan(c.kernel, "kernel", diag::InputKind::kKernelLog);
        diag::EvidenceSet node_evidence = kernel;
        std::size_t line = 1;
        for (const NvmlChange& change : c.nvml) {
            diag::Evidence e;
            e.signature = diag::kNvmlDeltaSignature;
            e.line = line++;
            e.text =
                "gpu 0000:3b:00.0 " + change.counter + " " + change.before + " -> " + change.after;
            e.SetField("gpu", "0000:3b:00.0");
            e.SetField("counter", change.counter);
            if (!change.before.empty()) e.SetField("before", change.before);
            if (!change.after.empty()) e.SetField("after", change.after);
            diag::AddEvidence(&node_evidence, "nvml", std::move(e));
        }
        const diag::EvidenceSet output = Scan(c.job_output, "job-output", diag::InputKind::kMixed);
        const std::set<std::string> faulty(fault_nodes.begin(), fault_nodes.end());
        std::vector<NodeReport> reports;
        reports.reserve(job_nodes.size());
        for (const std::string& n : job_nodes) {
            if (down && faulty.count(n)) {
                missing->push_back(n);
                continue;
            }
            NodeReport r;
            r.job = std::to_string(job_id_);
            r.node = n;
            r.restart = slurm_.job(job_id_).restart_count;
            r.time = clock_.Now();
            if (faulty.count(n)) r.evidence = node_evidence;
            if (n == job_nodes.front()) {
                r.job_output_read = true;
                r.job_output = output;
            }
            reports.push_back(std::move(r));
        }
        std::sort(reports.begin(), reports.end(),
                  [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });
        return reports;
    }

    const Scenario& s_;
    const std::map<std::string, int>& leaf_of_;
    std::shared_ptr<const diag::Scanner> scanner_;
    remediation::Engine engine_;
    Config config_;
    remediation::RemediationConfig rc_;
    remediation::TicketConfig tickets_;
    std::unique_ptr<remediation::IncidentStore> store_;
    MemorySlurmClient slurm_;
    ManualClock clock_;
    std::int64_t advanced_ = 0;
    std::uint32_t job_id_ = 0;
};

bool Has(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Describe(const JobDecision& d, bool requeued_by_slurm) {
    std::string out;
    std::set<std::string> seen;
    for (const remediation::NodePlan& p : d.plans) {
        std::string acts;
        for (const std::string& a : p.actions) {
            if (Has(p.held, a)) continue;
            acts += (acts.empty() ? "" : "+") + a;
        }
        if (!acts.empty() && seen.insert(acts).second) out += (out.empty() ? "" : ", ") + acts;
    }
    if (out.empty()) out = "no node action";
    if (d.network) out += ", switch incident " + d.network->name;
    if (d.breaker_open) out += " (breaker: held)";
    return out + (d.requeue           ? "; requeued"
                  : requeued_by_slurm ? "; requeued by Slurm"
                                      : "; not requeued");
}

}  // namespace

double SimResult::DecisionMedianMs() const {
    if (decision_ms.empty()) return 0;
    std::vector<double> v = decision_ms;
    const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), middle, v.end());
    return v[v.size() / 2];
}

namespace {

struct Run {
    const Scenario& s;
    std::vector<std::string> all;  // every node of the cluster, in order
    std::map<std::string, int> leaf_of;
    double Stage(const char* name) const { return s.Seconds(name); }
};

void AddLoss(const Run& r, Mode* m, const Cause& c, double t, double kept_until, bool human) {
    // GPU-hours from the last checkpoint before the fault to training again.
    const double ran = std::max(0.0, t - m->run_start);
    const double lost =
        std::fmod(ran, std::max(1.0, r.Stage("checkpoint_interval"))) + (kept_until - t);
    CauseOutcome& o = m->result.by_cause[c.name];
    ++o.interruptions;
    o.gpu_hours_lost += lost * r.s.nodes * r.s.gpus_per_node / 3600;
    if (human) ++o.human;
    ++m->result.interruptions;
}

// The autoheal mode's handling of one fault at `t`.
void AutohealFault(const Run& r, Mode* m, AutohealWorld* world, SimResult* out, const Cause& c,
                   const Fault& f) {
    const double t = f.time;
    // The nodes whose reboot or repair is done by now are back in Slurm before it decides.
    Return(m, t, [&](const std::string& n) { world->Back(n); });
    const auto fault_nodes = FaultNodes(c, f, m->job_nodes, r.leaf_of);
    double ms = 0;
    const JobDecision d = world->Decide(c, m->job_nodes, fault_nodes, c.node_down, t, &ms);
    out->decision_ms.push_back(ms);
    if (out->verdicts.count(c.name) == 0) {
        out->verdicts[c.name] = {d.cause, d.rule, Describe(d, c.node_down)};
    }
    bool agent = false;  // autoheal-agent saw a line that interrupts the job, and acted at once
    for (const remediation::NodeVerdict& v : d.verdicts) {
        if (Has(fault_nodes, v.node) && v.diagnosis.interrupts_job) agent = true;
    }
    const double detect = c.node_down ? r.Stage("slurmd_timeout")
                          : agent     ? r.Stage("detect_agent")
                          : c.hangs   ? r.Stage("nccl_watchdog") + r.Stage("detect_exit")
                                      : r.Stage("detect_exit");
    const double decided = t + detect + r.Stage("decision");
    ModeResult& res = m->result;
    FaultEvent ev;
    ev.time = t;
    ev.cause = c.name;
    ev.fault_nodes = fault_nodes;
    ev.decided = d.cause;
    ev.agent = agent;
    ev.requeued = c.node_down || d.requeue;
    if (d.network) ev.switch_incident = d.network->name;
    ev.excluded = world->slurm().job(world->job_id()).exc_nodes;
    for (const remediation::NodePlan& p : d.plans) {
        if (Has(p.actions, "rma_ticket") && !Has(p.held, "rma_ticket")) ++res.rmas;
        // A reboot (scontrol reboot ASAP) keeps the node out until it is back, as a drain does.
        const bool drain = Has(p.actions, "drain") && !Has(p.held, "drain");
        const bool reboot = Has(p.actions, "reboot") && !Has(p.held, "reboot");
        if (!drain && !reboot) continue;
        ev.taken_out.push_back(p.node);
        if (reboot) ev.rebooted.push_back(p.node);
        m->out_until[p.node] = decided + r.Stage(reboot ? "reboot" : "repair");
        ++res.node_actions;
        if (!Has(fault_nodes, p.node)) ++res.false_node_actions;
    }
    if (d.breaker_open) ++res.breaker_trips;
    ev.breaker_held = d.breaker_open;
    out->events.push_back(std::move(ev));
    if (c.node_down) {
        for (const std::string& n : fault_nodes) m->out_until[n] = t + r.Stage("repair");
    }
    m->RecordOut(t);
    const bool requeued = c.node_down || d.requeue;
    double ready = decided;
    if (requeued) {
        ++res.automatic_requeues;
        ready += c.node_down ? r.Stage("slurm_requeue_delay") : r.Stage("requeue_to_start");
    } else {
        ++res.human_interventions;
        ready += r.Stage("human_diagnosis") + r.Stage("requeue_to_start");
    }
    std::set<std::string> excluded;
    if (requeued) excluded = world->Excluded();
    const double start =
        Schedule(m, r.all, &excluded, ready, [&](const std::string& n) { world->Back(n); });
    world->Start(m->job_nodes, start, !requeued);
    if (requeued) world->SetExcluded(excluded);
    const double training = start + r.Stage("prolog") + r.Stage("restart");
    AddLoss(r, m, c, t, training, !requeued);
    m->run_start = training;
}

// The same fault with Slurm's own requeue (a node that died) or a person.
void SlurmFault(const Run& r, Mode* m, const Cause& c, const Fault& f) {
    const double t = f.time;
    const auto fault_nodes = FaultNodes(c, f, m->job_nodes, r.leaf_of);
    ModeResult& res = m->result;
    double ready = t;
    if (c.node_down) {
        ready += r.Stage("slurmd_timeout") + r.Stage("slurm_requeue_delay");
        ++res.automatic_requeues;
    } else {
        ready += (c.hangs ? r.Stage("nccl_watchdog") : 0) + r.Stage("detect_exit") +
                 r.Stage("human_diagnosis") + r.Stage("requeue_to_start");
        ++res.human_interventions;
        res.node_actions += static_cast<int>(fault_nodes.size());
    }
    for (const std::string& n : fault_nodes) m->out_until[n] = ready + r.Stage("repair");
    m->RecordOut(t);
    const double start = Schedule(m, r.all, nullptr, ready, [](const std::string&) {});
    const double training = start + r.Stage("restart");
    AddLoss(r, m, c, t, training, !c.node_down);
    m->run_start = training;
}

void Finish(const Scenario& s, Mode* m) {
    m->result.productive_seconds += std::max(0.0, s.span_seconds - m->run_start);
    m->result.ettr = m->result.productive_seconds / s.span_seconds;
    auto& days = m->result.out_of_service_by_day;
    days.resize(static_cast<std::size_t>(std::ceil(s.span_seconds / 86400)), -1);
    int last = 0;
    for (int& d : days) d = d < 0 ? last : (last = d);
}

}  // namespace

Result<SimResult> Simulate(const Scenario& scenario, const diag::RuleSet& rules,
                           std::shared_ptr<const diag::Scanner> scanner,
                           const std::string& work_dir) {
    const auto wall = std::chrono::steady_clock::now();
    Run r{scenario, {}, {}};
    const int total = scenario.nodes + scenario.spare_nodes;
    for (int i = 0; i < total; ++i) {
        r.all.push_back(NodeName(i));
        r.leaf_of[r.all.back()] = i / scenario.nodes_per_leaf;
    }
    SimResult out;
    out.scenario = scenario;
    Mode ah, sl;
    ah.result.name = "autoheal";
    sl.result.name = "slurm";
    ah.job_nodes = sl.job_nodes =
        std::vector<std::string>(r.all.begin(), r.all.begin() + scenario.nodes);
    ah.run_start = sl.run_start = scenario.Seconds("prolog") + scenario.Seconds("restart");
    const auto level = spdlog::get_level();
    // The steps' log lines, hundreds of times over (the breaker's alerts are counted instead).
    spdlog::set_level(spdlog::level::critical);
    AutohealWorld world(scenario, rules, std::move(scanner), work_dir, r.all, r.leaf_of);
    world.Start(ah.job_nodes, 0, true);
    for (const Fault& f : DrawFaults(scenario)) {
        const Cause& c = scenario.causes[f.cause];
        // A fault while the job is not training (it is still recovering) interrupts nothing.
        if (f.time >= ah.run_start) {
            AccountWork(scenario, &ah, f.time);
            AutohealFault(r, &ah, &world, &out, c, f);
        }
        if (f.time >= sl.run_start) {
            AccountWork(scenario, &sl, f.time);
            SlurmFault(r, &sl, c, f);
        }
    }
    spdlog::set_level(level);
    Finish(scenario, &ah);
    Finish(scenario, &sl);
    out.autoheal = std::move(ah.result);
    out.slurm = std::move(sl.result);
    out.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return out;
}

}  // namespace autoheal::sim
