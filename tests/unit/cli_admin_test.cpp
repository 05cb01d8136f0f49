// The admin commands that read the incident store and the job records (incidents, tickets,
// replay) and the refusals of bad arguments, on a state folder written through the real store
// API and record formats. Commands that need slurmctld (status, node, resume, metrics) are
// tested on the local cluster (tests/integration/e2e_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/job_records.h"
#include "subprocess.h"

namespace autoheal::testing {
namespace {

namespace fs = std::filesystem;
using remediation::IncidentRecord;
using remediation::IncidentStore;
using ::testing::HasSubstr;

const std::string kCli = AUTOHEAL_CLI;
const std::string kRules = std::string(AUTOHEAL_SOURCE_DIR) + "/etc/rules.d";

class CliAdmin : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("autoheal-cli-admin." + std::to_string(getpid()) + "." +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "state");
        config_ = (dir_ / "autoheal.yaml").string();
        std::ofstream(config_) << "state_dir: " << (dir_ / "state").string()
                               << "\nlog_file: " << (dir_ / "autoheal.log").string() << "\n";
        auto store = IncidentStore::Open((dir_ / "state" / "incidents.sqlite").string());
        ASSERT_TRUE(store.ok()) << store.error();
        store_ = std::move(store).value();
    }
    void TearDown() override {
        store_.reset();
        fs::remove_all(dir_);
    }
    CommandResult Cli(std::vector<std::string> args) {
        args.insert(args.begin(), kCli);
        return RunProcess(args, {"AUTOHEAL_CONFIG=" + config_, "AUTOHEAL_RULES_DIR=" + kRules});
    }
    std::int64_t Incident(std::int64_t time, const std::string& job, const std::string& node,
                          const std::string& cause, const std::string& serial = "") {
        IncidentRecord r;
        r.time = time;
        r.job = job;
        r.node = node;
        r.gpu = node.empty() ? "" : "0000:3b:00.0";
        r.gpu_serial = serial;
        r.cause = cause;
        r.rule = cause + "-rule";
        r.evidence_json =
            R"([{"source":"kernel","line":1,"signature":"xid","text":"NVRM: Xid 79"}])";
        r.dedup_key = job + "/" + node + "/" + cause;
        auto id = store_->RecordIncident(r);
        EXPECT_TRUE(id.ok()) << id.error();
        return id.ok() ? *id : 0;
    }

    fs::path dir_;
    std::string config_;
    std::unique_ptr<IncidentStore> store_;
};

TEST_F(CliAdmin, IncidentsFilterAndShowActions) {
    const std::int64_t now = time(nullptr);
    const std::int64_t a = Incident(now - 3600, "10", "node1", "faulty_gpu", "1650000111");
    Incident(now - 3600, "10", "", "faulty_gpu");  // the job's own verdict
    Incident(now - 60, "11", "node2", "nvlink");
    Incident(now - 30LL * 86400, "9", "node1", "faulty_gpu");  // older than the default 7d
    ASSERT_TRUE(*store_->RecordAction(a, "drain", "node1", "done", "autoheal: faulty_gpu"));

    auto r = Cli({"incidents", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 2u);  // node incidents of the last 7 days, newest first
    EXPECT_EQ(j[0]["node"], "node2");
    EXPECT_EQ(j[1]["gpu_serial"], "1650000111");
    EXPECT_EQ(j[1]["actions"][0]["action"], "drain");
    EXPECT_EQ(j[1]["evidence"][0]["text"], "NVRM: Xid 79");

    EXPECT_EQ(nlohmann::json::parse(Cli({"incidents", "--json", "--since", "60d"}).out).size(), 3u);
    EXPECT_EQ(nlohmann::json::parse(Cli({"incidents", "--json", "--jobs"}).out).size(), 3u);
    j = nlohmann::json::parse(Cli({"incidents", "--json", "--cause", "nvlink"}).out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["job"], "11");
    EXPECT_EQ(nlohmann::json::parse(Cli({"incidents", "--json", "--node", "node3"}).out).size(),
              0u);

    r = Cli({"incidents", "--node", "node1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("TIME"));
    EXPECT_THAT(r.out, HasSubstr("faulty_gpu-rule"));
    EXPECT_THAT(r.out, HasSubstr("sn 1650000111"));
    EXPECT_THAT(r.out, HasSubstr("drain"));
}

TEST_F(CliAdmin, BadArgumentsAreRefusedNamingThem) {
    auto r = Cli({"incidents", "--since", "yesterday"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--since: 'yesterday' is neither a duration"));
    r = Cli({"incidents", "--colour"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("unknown option '--colour'"));
    r = Cli({"incidents", "--node"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--node needs a value"));
    for (const char* limit : {"0", "1001", "5x", ""}) {
        r = Cli({"incidents", "--limit", limit});
        EXPECT_EQ(r.exit_code, 2) << limit;
        EXPECT_THAT(r.err, HasSubstr("--limit: expected 1 to 1000")) << limit;
    }
    r = Cli({"resume", "node1"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--reason is required"));
    r = Cli({"resume", "node1;reboot", "--reason", "x"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("is not a node name"));
    r = Cli({"replay"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--rules PATH is required"));
    r = Cli({"tickets", "extra"});
    EXPECT_EQ(r.exit_code, 2);
}

TEST_F(CliAdmin, NoStoreIsSaidAndNotCreated) {
    store_.reset();
    const fs::path db = dir_ / "state" / "incidents.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
    auto r = Cli({"incidents"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("no incident store at " + db.string()));
    EXPECT_FALSE(fs::exists(db));
}

TEST_F(CliAdmin, BrokenConfigIsReportedWithItsLocation) {
    std::ofstream(config_) << "state_dir: [unclosed\n";
    auto r = Cli({"incidents"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr(config_));
}

TEST_F(CliAdmin, TicketsShowsWhatIsNotDeliveredYet) {
    const std::int64_t a = Incident(time(nullptr), "10", "node1", "gpu_hbm_memory");
    const std::int64_t t1 = *store_->OpenTicket(a, "rma", "rma/1", "{}", "webhook");
    *store_->OpenTicket(a, "rma", "rma/2", "{}", "spool");
    ASSERT_TRUE(*store_->MarkTicketDelivered(*store_->OpenTicket(a, "rma", "rma/2", "{}", "x")));
    ASSERT_TRUE(*store_->MarkTicketFailed(t1, "HTTP 503", time(nullptr) + 60));

    auto r = Cli({"tickets", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["state"], "failed");
    EXPECT_EQ(j[0]["attempts"], 1);
    EXPECT_EQ(j[0]["last_error"], "HTTP 503");
    EXPECT_EQ(j[0]["node"], "node1");
    EXPECT_EQ(nlohmann::json::parse(Cli({"tickets", "--all", "--json"}).out).size(), 2u);
    r = Cli({"tickets"});
    EXPECT_THAT(r.out, HasSubstr("HTTP 503"));
}

// A stored run (decision + node reports in the real formats) decided again under a rule set
// where Xid 79 asks for a GPU reset instead of a drain and reboot.
TEST_F(CliAdmin, ReplayShowsWhatAnotherRuleSetWouldHaveDone) {
    const fs::path run = dir_ / "state" / "jobs" / "42" / "run0";
    fs::create_directories(run);
    remediation::DecisionRecord d;
    d.cause = "faulty_gpu";
    d.rule = "xid-79-fallen-off-bus";
    d.requeue = true;
    d.facts.failed = true;
    d.facts.auto_resume = 3;
    d.facts.nodes = {"node1", "node2"};
    std::ofstream(run / "decision.json") << remediation::DecisionRecordToJson(d);
    for (const std::string node : {"node1", "node2"}) {
        remediation::NodeReport rep;
        rep.job = "42";
        rep.node = node;
        rep.time = time(nullptr) - 5;
        if (node == "node2") {
            diag::Evidence xid;  // as the node epilog's scan of its kernel log gives it
            xid.signature = "xid";
            xid.line = 1;
            xid.text =
                "[10.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has "
                "fallen off the bus.";
            xid.SetField("pci", "0000:3b:00");
            xid.SetField("xid", "79");
            diag::AddEvidence(&rep.evidence, "kernel", xid);
        }
        std::ofstream(run / (node + ".epilog.json")) << remediation::NodeReportToJson(rep);
    }

    // The same rules: nothing changes.
    auto r = Cli({"replay", "--rules", kRules, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["runs"], 1);
    EXPECT_EQ(j["changed"], 0);

    // An edited copy of the rules.
    const fs::path edited = dir_ / "rules";
    fs::create_directories(edited);
    for (const auto& f : fs::directory_iterator(kRules)) {
        std::ifstream in(f.path());
        std::string text((std::istreambuf_iterator<char>(in)), {});
        if (f.path().filename() == "10-gpu.yaml") {
            const std::string from = "cause: faulty_gpu\n  actions: [reboot]";
            ASSERT_NE(text.find(from), std::string::npos);
            text.replace(text.find(from), from.size(), "cause: faulty_gpu\n  actions: [reset_gpu]");
        }
        std::ofstream(edited / f.path().filename()) << text;
    }
    r = Cli({"replay", "--rules", edited.string(), "--json"});
    ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
    j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["changed"], 1);
    ASSERT_EQ(j["results"].size(), 1u);
    EXPECT_EQ(j["results"][0]["job"], "42");
    EXPECT_EQ(j["results"][0]["installed_rules"]["actions"], "node2:reboot");
    EXPECT_EQ(j["results"][0]["new_rules"]["actions"], "node2:reset_gpu");
    EXPECT_EQ(j["results"][0]["recorded"]["cause"], "faulty_gpu");

    r = Cli({"replay", "--rules", edited.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr("1 would change"));
    EXPECT_THAT(r.out, HasSubstr("node2:reboot -> node2:reset_gpu"));

    // A rule set that does not load is refused, not replayed.
    std::ofstream(edited / "99-broken.yaml") << "- rule: [\n";
    r = Cli({"replay", "--rules", edited.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("99-broken.yaml"));
}

// Issue 13.5: `autoheal resume` run as root made a store owned by root where none was, and the
// controller epilog (SlurmUser) could never write it again. The store it makes belongs to
// state_dir's owner. (Slurm is not reachable here: the resume itself fails after the store was
// opened, which is what this test is about.)
TEST_F(CliAdmin, ResumeRunAsRootNeverMakesAStoreTheStateDirOwnerCannotWrite) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    store_.reset();
    const fs::path state = dir_ / "state";
    fs::remove(state / "incidents.sqlite");
    constexpr uid_t kOwner = 65534;
    ASSERT_EQ(::chown(state.c_str(), kOwner, kOwner), 0);
    std::ofstream(config_, std::ios::app)
        << "remediation:\n  slurm_conf: " << (dir_ / "no-slurm.conf").string() << "\n";
    // Stopped after 5 s: it waits for slurmctld after the store was opened, and the -wal and -shm
    // files a killed process leaves must be the owner's too.
    RunProcess({"timeout", "5", kCli, "resume", "node1", "--reason", "fan replaced"},
               {"AUTOHEAL_CONFIG=" + config_, "AUTOHEAL_RULES_DIR=" + kRules});
    for (const char* name : {"incidents.sqlite", "incidents.sqlite-wal", "incidents.sqlite-shm"}) {
        struct stat st {};
        if (::stat((state / name).c_str(), &st) != 0) continue;  // removed on close
        EXPECT_EQ(st.st_uid, kOwner) << name;
    }
    struct stat db {};
    ASSERT_EQ(::stat((state / "incidents.sqlite").c_str(), &db), 0);
}

}  // namespace
}  // namespace autoheal::testing
