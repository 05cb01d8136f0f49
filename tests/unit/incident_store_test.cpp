// The incident store against real SQLite files in a temporary folder.
#include "autoheal/remediation/incident_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace autoheal::remediation {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

// A raw connection, to look at (or tamper with) the file behind the store's back.
class Raw {
  public:
    explicit Raw(const fs::path& path) {
        EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
        sqlite3_busy_timeout(db_, 5000);
    }
    ~Raw() { sqlite3_close(db_); }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;

    void Exec(const std::string& sql) {
        char* error = nullptr;
        EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
            << sql << ": " << (error != nullptr ? error : "");
        sqlite3_free(error);
    }
    // The first column of the first row, as text ("" when no row).
    std::string Query(const std::string& sql) {
        sqlite3_stmt* stmt = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
        std::string out;
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            const auto* text = sqlite3_column_text(stmt, 0);
            if (text != nullptr) {
                out.assign(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt, 0));
            }
        }
        sqlite3_finalize(stmt);
        return out;
    }

  private:
    sqlite3* db_ = nullptr;
};

class IncidentStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        dir_ = fs::temp_directory_path() / ("incident_store_test." + std::to_string(getpid()) +
                                            "." + std::to_string(counter++));
        fs::remove_all(dir_);
        ASSERT_TRUE(fs::create_directories(dir_));
        path_ = dir_ / "incidents.sqlite";
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::unique_ptr<IncidentStore> OpenStore() {
        auto store = IncidentStore::Open(path_.string());
        EXPECT_TRUE(store.ok()) << store.error();
        return store.ok() ? std::move(store).value() : nullptr;
    }

    static IncidentRecord Incident(std::int64_t time, const std::string& node,
                                   const std::string& gpu, const std::string& key) {
        IncidentRecord r;
        r.time = time;
        r.job = "job-" + std::to_string(time);
        r.node = node;
        r.gpu = gpu;
        r.cause = "gpu-hardware";
        r.rule = "xid-79";
        r.confidence = 0.9;
        r.evidence_json = R"([{"kind":"xid","code":79}])";
        r.dedup_key = key;
        return r;
    }

    fs::path dir_;
    fs::path path_;
};

TEST_F(IncidentStoreTest, OpenCreatesTheSchemaInWalMode) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(fs::exists(path_));
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.Query("PRAGMA user_version"), std::to_string(kIncidentSchemaVersion));
    EXPECT_EQ(kIncidentSchemaVersion, 5);
    for (const char* name :
         {"incidents", "actions", "tickets", "incidents_node_time", "incidents_gpu_time",
          "tickets_state_next_attempt", "job_runs", "job_runs_node_time", "runs", "runs_end_time",
          "gpu_telemetry", "gpu_telemetry_node_time"}) {
        EXPECT_EQ(raw.Query(std::string("SELECT count(*) FROM sqlite_master WHERE name = '") +
                            name + "'"),
                  "1")
            << name;
    }
}

TEST_F(IncidentStoreTest, GpuTelemetryIsKeptPerRunNodeAndGpu) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    diag::GpuTelemetrySummary s;
    s.gpu = "0000:5d:00.0";
    s.seconds = 3600;
    s.thermal_throttle_pct = 40;
    s.temp_max = 88;
    diag::EvidenceSet set;
    diag::Evidence e = diag::TelemetryEvidence(s);
    diag::AddPeerFields(&e, diag::PeerStanding{.clock_vs_peers = 71, .straggler = true}, 16);
    diag::AddEvidence(&set, "t", e);
    diag::AddEvidence(&set, "t", diag::Evidence{.signature = "xid"});  // not a GPU summary
    auto added = store->RecordGpuTelemetry("7", 1, "node3", 1000, set);
    ASSERT_TRUE(added && *added);
    ASSERT_TRUE(store->RecordGpuTelemetry("7", 1, "node3", 1000, set).ok());  // idempotent
    auto rows = store->GpuTelemetry(0, "node3");
    ASSERT_TRUE(rows) << rows.error();
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ(rows->at(0).summary.gpu, "0000:5d:00.0");
    EXPECT_EQ(rows->at(0).summary.thermal_throttle_pct, 40u);
    EXPECT_EQ(rows->at(0).clock_vs_peers, 71u);
    EXPECT_TRUE(rows->at(0).straggler);
    EXPECT_EQ(rows->at(0).run, 1);
    EXPECT_TRUE(store->GpuTelemetry(0, "node4")->empty());
    EXPECT_EQ(store->GpuTelemetry(0, "")->size(), 1u);
    EXPECT_TRUE(store->GpuTelemetry(1001, "")->empty());
}

TEST_F(IncidentStoreTest, ReopenIsANoOp) {
    std::int64_t id = 0;
    {
        auto store = OpenStore();
        ASSERT_NE(store, nullptr);
        auto r = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "k1"));
        ASSERT_TRUE(r.ok()) << r.error();
        id = *r;
    }
    const std::string schema_before =
        Raw(path_).Query("SELECT group_concat(sql) FROM sqlite_master");
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA user_version"), std::to_string(kIncidentSchemaVersion));
    EXPECT_EQ(raw.Query("SELECT group_concat(sql) FROM sqlite_master"), schema_before);
    EXPECT_EQ(raw.Query("SELECT count(*) FROM incidents"), "1");
    auto again = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "k1"));
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(*again, id);
}

TEST_F(IncidentStoreTest, NewerSchemaIsRefusedAndLeftAlone) {
    {
        Raw raw(path_);
        raw.Exec("CREATE TABLE incidents (id INTEGER PRIMARY KEY, future TEXT)");
        raw.Exec("PRAGMA user_version = 6");
    }
    auto store = IncidentStore::Open(path_.string());
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().find("schema version 6 is newer"), std::string::npos) << store.error();
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA user_version"), "6");
    EXPECT_EQ(raw.Query("PRAGMA journal_mode"), "delete");  // not even switched to WAL
}

TEST_F(IncidentStoreTest, BadPathsAreErrors) {
    auto missing = IncidentStore::Open((dir_ / "no-such-folder" / "incidents.sqlite").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().find("does not exist"), std::string::npos) << missing.error();
    EXPECT_FALSE(fs::exists(dir_ / "no-such-folder"));  // not created

    EXPECT_FALSE(IncidentStore::Open("").ok());

    auto folder = IncidentStore::Open(dir_.string());  // a folder, not a file
    EXPECT_FALSE(folder.ok());

    std::ofstream(path_) << "this is not an SQLite database, just some text long enough to "
                            "fill a header of one hundred bytes...................................";
    auto garbage = IncidentStore::Open(path_.string());
    ASSERT_FALSE(garbage.ok());
    EXPECT_NE(garbage.error().find(path_.string()), std::string::npos) << garbage.error();
}

TEST_F(IncidentStoreTest, IncidentsAreIdempotentOnDedupKey) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto first = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "j1/node-a/xid"));
    ASSERT_TRUE(first.ok()) << first.error();
    // The epilog runs again: same key, even with different details, is the same incident.
    IncidentRecord rerun = Incident(105, "node-a", "0000:3b:00.0", "j1/node-a/xid");
    rerun.cause = "something-else";
    auto second = store->RecordIncident(rerun);
    ASSERT_TRUE(second.ok()) << second.error();
    EXPECT_EQ(*second, *first);
    auto other = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "j2/node-a/xid"));
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_NE(*other, *first);
    // No key: no deduplication.
    auto a = store->RecordIncident(Incident(100, "node-b", "", ""));
    auto b = store->RecordIncident(Incident(100, "node-b", "", ""));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(*a, *b);

    Raw raw(path_);
    EXPECT_EQ(raw.Query("SELECT count(*) FROM incidents"), "4");
    EXPECT_EQ(raw.Query("SELECT cause FROM incidents WHERE id = " + std::to_string(*first)),
              "gpu-hardware");  // the first record wins
    EXPECT_EQ(raw.Query("SELECT time FROM incidents WHERE id = " + std::to_string(*first)), "100");
}

TEST_F(IncidentStoreTest, ActionsAreIdempotent) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto id = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "k"));
    ASSERT_TRUE(id.ok()) << id.error();

    auto drain = store->RecordAction(*id, "drain", "node-a", "drained", "autoheal: xid 79");
    ASSERT_TRUE(drain.ok()) << drain.error();
    EXPECT_TRUE(*drain);
    auto again = store->RecordAction(*id, "drain", "node-a", "already-ours", "second run");
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_FALSE(*again);
    auto other_target = store->RecordAction(*id, "drain", "node-b", "drained", "");
    ASSERT_TRUE(other_target.ok()) << other_target.error();
    EXPECT_TRUE(*other_target);
    auto requeue = store->RecordAction(*id, "requeue", "job-100", "requeued", "");
    ASSERT_TRUE(requeue.ok()) << requeue.error();
    EXPECT_TRUE(*requeue);

    Raw raw(path_);
    EXPECT_EQ(raw.Query("SELECT count(*) FROM actions"), "3");
    EXPECT_EQ(raw.Query("SELECT outcome FROM actions WHERE action = 'drain' AND target = "
                        "'node-a'"),
              "drained");  // the earlier outcome is kept
    EXPECT_NE(raw.Query("SELECT time FROM actions LIMIT 1"), "0");

    // Foreign keys are on: no action for an incident that does not exist.
    auto orphan = store->RecordAction(*id + 1000, "drain", "node-a", "drained", "");
    ASSERT_FALSE(orphan.ok());
    EXPECT_NE(orphan.error().find("FOREIGN KEY"), std::string::npos) << orphan.error();
}

// An action asked of a node (a GPU reset) is recorded "asked" at once, so the breaker of the
// decisions meanwhile counts the node; its result replaces the row.
TEST_F(IncidentStoreTest, AnAskedActionIsReplacedByItsResult) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto id = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "k"));
    ASSERT_TRUE(id.ok()) << id.error();
    ASSERT_TRUE(store->RecordAction(*id, "reset_gpu", "node-a", "asked", "0000:3b:00.0").value());
    ASSERT_TRUE(store->RecordAction(*id, "reset_gpu", "node-b", "asked", "0000:3b:00.0").value());
    EXPECT_EQ(store->NodesWithActionsAsked(60).value(),
              (std::vector<std::string>{"node-a", "node-b"}));
    Raw(path_).Exec("UPDATE actions SET time = time - 120 WHERE target = 'node-b'");
    EXPECT_EQ(store->NodesWithActionsAsked(60).value(), std::vector<std::string>{"node-a"});
    Raw(path_).Exec("UPDATE actions SET time = time + 120 WHERE target = 'node-b'");
    EXPECT_TRUE(store->RecordAction(*id, "reset_gpu", "node-a", "on-node", "reset").value());
    EXPECT_EQ(store->NodesWithActionsAsked(60).value(), std::vector<std::string>{"node-b"});
    // A result is final: nothing replaces it.
    EXPECT_FALSE(store->RecordAction(*id, "reset_gpu", "node-a", "asked", "again").value());
    Raw raw(path_);
    EXPECT_EQ(raw.Query("SELECT outcome || ' ' || detail FROM actions WHERE target = 'node-a'"),
              "on-node reset");
}

TEST_F(IncidentStoreTest, TicketsAreIdempotentOnDedupKey) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto i1 = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "j1"));
    auto i2 = store->RecordIncident(Incident(200, "node-a", "0000:3b:00.0", "j2"));
    ASSERT_TRUE(i1.ok() && i2.ok());

    const std::string key = "rma/node-a/0000:3b:00.0/row-remap-failure";
    auto t1 = store->OpenTicket(*i1, "rma", key, R"({"serial":"123"})", "webhook");
    ASSERT_TRUE(t1.ok()) << t1.error();
    // The same fault on the same GPU, seen again by a later job: the same ticket.
    auto t2 = store->OpenTicket(*i2, "rma", key, R"({"serial":"123","again":true})", "webhook");
    ASSERT_TRUE(t2.ok()) << t2.error();
    EXPECT_EQ(*t2, *t1);
    auto net = store->OpenTicket(*i2, "network", "network/leaf-7", "{}", "webhook");
    ASSERT_TRUE(net.ok()) << net.error();
    EXPECT_NE(*net, *t1);

    Raw raw(path_);
    EXPECT_EQ(raw.Query("SELECT count(*) FROM tickets"), "2");
    EXPECT_EQ(raw.Query("SELECT incident_id FROM tickets WHERE id = " + std::to_string(*t1)),
              std::to_string(*i1));
    EXPECT_EQ(raw.Query("SELECT payload_json FROM tickets WHERE id = " + std::to_string(*t1)),
              R"({"serial":"123"})");

    EXPECT_FALSE(store->OpenTicket(*i1, "hardware", "k", "{}", "webhook").ok());
    EXPECT_FALSE(store->OpenTicket(*i1, "rma", "", "{}", "webhook").ok());
    EXPECT_FALSE(store->OpenTicket(*i1 + 1000, "rma", "orphan", "{}", "webhook").ok());
}

TEST_F(IncidentStoreTest, DueTicketsAndBackoff) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto incident = store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "j1"));
    ASSERT_TRUE(incident.ok());
    auto rma = store->OpenTicket(*incident, "rma", "rma-1", R"({"a":1})", "webhook");
    auto net = store->OpenTicket(*incident, "network", "net-1", R"({"b":2})", "file");
    ASSERT_TRUE(rma.ok() && net.ok());

    auto due = store->DueTickets(1000, 10);
    ASSERT_TRUE(due.ok()) << due.error();
    ASSERT_EQ(due->size(), 2u);
    EXPECT_EQ((*due)[0].id, *rma);
    EXPECT_EQ((*due)[0].incident_id, *incident);
    EXPECT_EQ((*due)[0].kind, "rma");
    EXPECT_EQ((*due)[0].dedup_key, "rma-1");
    EXPECT_EQ((*due)[0].state, "pending");
    EXPECT_EQ((*due)[0].attempts, 0);
    EXPECT_EQ((*due)[0].next_attempt, 0);
    EXPECT_EQ((*due)[0].payload_json, R"({"a":1})");
    EXPECT_EQ((*due)[0].sink, "webhook");
    EXPECT_EQ((*due)[0].last_error, "");
    EXPECT_EQ((*due)[1].id, *net);

    auto limited = store->DueTickets(1000, 1);
    ASSERT_TRUE(limited.ok());
    EXPECT_EQ(limited->size(), 1u);

    // The RMA sink answers 503: retry in a minute.
    auto failed = store->MarkTicketFailed(*rma, "HTTP 503", 1060);
    ASSERT_TRUE(failed.ok()) << failed.error();
    EXPECT_TRUE(*failed);
    due = store->DueTickets(1000, 10);
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 1u);
    EXPECT_EQ((*due)[0].id, *net);

    due = store->DueTickets(1060, 10);
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 2u);
    EXPECT_EQ((*due)[0].id, *net);  // next_attempt 0 before 1060
    const TicketRow& retry = (*due)[1];
    EXPECT_EQ(retry.id, *rma);
    EXPECT_EQ(retry.state, "failed");
    EXPECT_EQ(retry.attempts, 1);
    EXPECT_EQ(retry.next_attempt, 1060);
    EXPECT_EQ(retry.last_error, "HTTP 503");

    ASSERT_TRUE(store->MarkTicketFailed(*rma, "timeout", 1180).ok());
    due = store->DueTickets(1180, 10);
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 2u);
    EXPECT_EQ((*due)[1].attempts, 2);
    EXPECT_EQ((*due)[1].last_error, "timeout");

    // Delivered: never due again, and a late failure report changes nothing.
    auto delivered = store->MarkTicketDelivered(*net);
    ASSERT_TRUE(delivered.ok()) << delivered.error();
    EXPECT_TRUE(*delivered);
    auto twice = store->MarkTicketDelivered(*net);
    ASSERT_TRUE(twice.ok());
    EXPECT_FALSE(*twice);
    auto late = store->MarkTicketFailed(*net, "late", 5000);
    ASSERT_TRUE(late.ok());
    EXPECT_FALSE(*late);
    due = store->DueTickets(1'000'000, 10);
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 1u);
    EXPECT_EQ((*due)[0].id, *rma);

    // Giving up: never due again.
    ASSERT_TRUE(store->MarkTicketFailed(*rma, "giving up", kNeverRetry).ok());
    due = store->DueTickets(std::numeric_limits<std::int64_t>::max() - 1, 10);
    ASSERT_TRUE(due.ok());
    EXPECT_TRUE(due->empty());

    EXPECT_FALSE(store->MarkTicketDelivered(*rma + 1000).ok());
    EXPECT_FALSE(store->MarkTicketFailed(*rma + 1000, "x", 1).ok());
}

TEST_F(IncidentStoreTest, HistoryFiltersByNodeGpuAndTimeAndFeedsEscalation) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    const std::string gpu_x = "0000:3b:00.0";
    const std::string gpu_y = "0000:5e:00.0";
    ASSERT_TRUE(store->RecordIncident(Incident(100, "node-a", gpu_x, "1")).ok());
    ASSERT_TRUE(store->RecordIncident(Incident(200, "node-a", gpu_y, "2")).ok());
    ASSERT_TRUE(store->RecordIncident(Incident(300, "node-b", gpu_x, "3")).ok());
    ASSERT_TRUE(store->RecordIncident(Incident(400, "node-a", gpu_x, "4")).ok());
    ASSERT_TRUE(store->RecordIncident(Incident(50, "node-a", gpu_x, "old")).ok());

    auto times = [](const std::vector<diag::HistoryRecord>& records) {
        std::vector<std::int64_t> out;
        out.reserve(records.size());
        for (const auto& r : records) out.push_back(r.time);
        return out;
    };
    auto node_a = store->History(100, "node-a", "");
    ASSERT_TRUE(node_a.ok()) << node_a.error();
    EXPECT_EQ(times(*node_a), (std::vector<std::int64_t>{400, 200, 100}));  // newest first

    // A bus id is unique only within a node: node-b's 0000:3b:00.0 is another GPU.
    auto node_a_gpu = store->History(100, "node-a", gpu_x);
    ASSERT_TRUE(node_a_gpu.ok());
    EXPECT_EQ(times(*node_a_gpu), (std::vector<std::int64_t>{400, 200, 100}));

    auto gpu_anywhere = store->History(100, "", gpu_x);
    ASSERT_TRUE(gpu_anywhere.ok());
    EXPECT_EQ(times(*gpu_anywhere), (std::vector<std::int64_t>{400, 300, 100}));

    auto all = store->History(0, "", "");
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(times(*all), (std::vector<std::int64_t>{400, 300, 200, 100, 50}));

    auto recent = store->History(301, "", "");
    ASSERT_TRUE(recent.ok());
    EXPECT_EQ(times(*recent), (std::vector<std::int64_t>{400}));

    auto nobody = store->History(0, "node-z", "");
    ASSERT_TRUE(nobody.ok());
    EXPECT_TRUE(nobody->empty());

    // What the epilog hands to Diagnose() for escalation.
    diag::DiagnoseOptions options;
    options.node = "node-a";
    options.job = "job-500";
    options.now = 500;
    options.history = std::move(node_a).value();
    ASSERT_EQ(options.history.size(), 3u);
    const diag::HistoryRecord& newest = options.history[0];
    EXPECT_EQ(newest.time, 400);
    EXPECT_EQ(newest.node, "node-a");
    EXPECT_EQ(newest.gpu, gpu_x);
    EXPECT_EQ(newest.rule, "xid-79");
    EXPECT_EQ(newest.cause, "gpu-hardware");
    EXPECT_EQ(newest.job, "job-400");
    EXPECT_EQ(newest.user, "");  // no job run recorded for it
    EXPECT_EQ(options.history[1].gpu, gpu_y);
}

// Escalation by distinct users (issue 13.1): each incident carries the user of its job's run on
// that node, as the controller recorded it.
TEST_F(IncidentStoreTest, HistoryCarriesTheUserOfTheIncidentsJobRun) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->RecordIncident(Incident(100, "node-a", "0000:3b:00.0", "1")).ok());
    ASSERT_TRUE(store->RecordIncident(Incident(200, "node-a", "0000:3b:00.0", "2")).ok());
    ASSERT_TRUE(store->RecordJobRun("job-100", 0, {"node-a", "node-b"}, 100, "own", "1001").ok());
    ASSERT_TRUE(store->RecordJobRun("job-200", 0, {"node-b"}, 200, "own", "1002").ok());
    auto h = store->History(0, "node-a", "");
    ASSERT_TRUE(h.ok()) << h.error();
    ASSERT_EQ(h->size(), 2u);
    EXPECT_EQ((*h)[1].job, "job-100");
    EXPECT_EQ((*h)[1].user, "1001");
    EXPECT_EQ((*h)[0].user, "");  // job-200 ran on node-b only
}

TEST_F(IncidentStoreTest, HistoryIsCapped) {
    ASSERT_NE(OpenStore(), nullptr);
    {
        Raw raw(path_);
        raw.Exec("BEGIN");
        raw.Exec(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) "
            "INSERT INTO incidents (time, node, gpu, rule) SELECT i, 'node-a', '', 'r' FROM n");
        raw.Exec("COMMIT");
    }
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto history = store->History(0, "node-a", "");
    ASSERT_TRUE(history.ok()) << history.error();
    ASSERT_EQ(history->size(), static_cast<std::size_t>(kHistoryLimit));
    EXPECT_EQ(history->front().time, 1200);  // the newest are kept
    EXPECT_EQ(history->back().time, 1200 - kHistoryLimit + 1);
}

TEST_F(IncidentStoreTest, TwoConnectionsInterleaveWrites) {
    auto first = OpenStore();
    auto second = OpenStore();
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    for (int i = 0; i < 20; ++i) {
        IncidentStore& store = (i % 2 == 0) ? *first : *second;
        auto id = store.RecordIncident(Incident(i, "node-a", "", "k" + std::to_string(i)));
        ASSERT_TRUE(id.ok()) << id.error();
        ASSERT_TRUE(store.RecordAction(*id, "drain", "node-a", "drained", "").ok());
    }
    // Each sees the other's writes, and dedup works across connections.
    auto seen = first->History(0, "node-a", "");
    ASSERT_TRUE(seen.ok());
    EXPECT_EQ(seen->size(), 20u);
    auto dup = second->RecordIncident(Incident(0, "node-a", "", "k0"));
    ASSERT_TRUE(dup.ok());
    EXPECT_EQ(Raw(path_).Query("SELECT count(*) FROM incidents"), "20");

    // A reader in the middle of a transaction does not block writers (WAL).
    Raw reader(path_);
    reader.Exec("BEGIN");
    EXPECT_EQ(reader.Query("SELECT count(*) FROM incidents"), "20");
    ASSERT_TRUE(first->RecordIncident(Incident(50, "node-a", "", "during-read")).ok());
    EXPECT_EQ(reader.Query("SELECT count(*) FROM incidents"), "20");  // its snapshot
    reader.Exec("COMMIT");
}

TEST_F(IncidentStoreTest, WriterWaitsForAnotherWriterThanksToBusyTimeout) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    std::promise<void> locked;
    std::thread holder([&] {
        Raw raw(path_);
        raw.Exec("BEGIN IMMEDIATE");
        raw.Exec("INSERT INTO incidents (time, node) VALUES (1, 'holder')");
        locked.set_value();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raw.Exec("COMMIT");
    });
    locked.get_future().wait();
    const auto start = std::chrono::steady_clock::now();
    auto id = store->RecordIncident(Incident(2, "node-a", "", "waits"));
    const auto waited = std::chrono::steady_clock::now() - start;
    holder.join();
    ASSERT_TRUE(id.ok()) << id.error();
    EXPECT_GE(waited, std::chrono::milliseconds(100));
    EXPECT_EQ(Raw(path_).Query("SELECT count(*) FROM incidents"), "2");
}

TEST_F(IncidentStoreTest, ConcurrentFirstOpensMigrateOnce) {
    std::vector<std::thread> threads;
    threads.reserve(8);
    std::atomic<int> ok{0};
    std::vector<std::string> errors(8);
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&, i] {
            auto store = IncidentStore::Open(path_.string());
            if (!store.ok()) {
                errors[i] = store.error();
                return;
            }
            if ((*store)->RecordIncident(Incident(i, "node-a", "", "t" + std::to_string(i))).ok()) {
                ++ok;
            }
        });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(ok.load(), 8);
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA user_version"), std::to_string(kIncidentSchemaVersion));
    EXPECT_EQ(raw.Query("SELECT count(*) FROM incidents"), "8");
}

TEST_F(IncidentStoreTest, AVersion1FileIsMigratedKeepingItsIncidents) {
    {
        // What autoheal wrote before job runs were recorded: schema version 1 with an incident.
        Raw raw(path_);
        raw.Exec(
            "CREATE TABLE incidents (id INTEGER PRIMARY KEY, time INTEGER NOT NULL, "
            "job TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', gpu TEXT NOT NULL "
            "DEFAULT '', cause TEXT NOT NULL DEFAULT '', rule TEXT NOT NULL DEFAULT '', "
            "confidence REAL NOT NULL DEFAULT 0, evidence_json TEXT NOT NULL DEFAULT '[]', "
            "dedup_key TEXT UNIQUE)");
        raw.Exec("INSERT INTO incidents (time, node, cause, dedup_key) VALUES (5, 'n1', 'x', 'k')");
        raw.Exec("PRAGMA user_version = 1");
    }
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA user_version"), "5");
    EXPECT_EQ(raw.Query("SELECT node FROM incidents"), "n1");
    EXPECT_EQ(raw.Query("SELECT gpu_serial FROM incidents"), "");
    EXPECT_EQ(raw.Query("SELECT count(*) FROM sqlite_master WHERE name = 'job_runs'"), "1");
    EXPECT_EQ(raw.Query("SELECT count(*) FROM sqlite_master WHERE name = 'runs'"), "1");
}

TEST_F(IncidentStoreTest, RunsAreRecordedOnceAndListedOldestFirst) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    RunRecord r;
    r.job = "7";
    r.run = 0;
    r.nodes = 4;
    r.node_list = "node[1-4]";
    r.start_time = 1000;
    r.end_time = 4600;
    r.decided_at = 4601;
    r.outcome = "blamed";
    r.cause = "faulty_gpu";
    r.culprits = "node2";
    r.requeued = true;
    ASSERT_TRUE(*store->RecordRun(r));
    EXPECT_FALSE(*store->RecordRun(r));  // the same run again: the first record wins
    RunRecord older = r;
    older.job = "6";
    older.end_time = 900;
    older.requeued = false;
    ASSERT_TRUE(*store->RecordRun(older));
    auto all = store->Runs(0);
    ASSERT_TRUE(all.ok()) << all.error();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].job, "6");
    EXPECT_EQ((*all)[1].job, "7");
    EXPECT_EQ((*all)[1].nodes, 4);
    EXPECT_EQ((*all)[1].culprits, "node2");
    EXPECT_TRUE((*all)[1].requeued);
    EXPECT_FALSE((*all)[0].requeued);
    EXPECT_EQ(store->Runs(1000)->size(), 1u);
}

TEST_F(IncidentStoreTest, IncidentsActionsAndTicketsAreQueriedWithFilters) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    IncidentRecord a = Incident(100, "node-a", "0000:3b:00.0", "a");
    a.gpu_serial = "1654024197323";
    IncidentRecord b = Incident(200, "node-b", "", "b");
    b.cause = "network_switch_cable";
    IncidentRecord job = Incident(300, "", "", "j");  // the job's own incident
    const std::int64_t ia = *store->RecordIncident(a);
    *store->RecordIncident(b);
    *store->RecordIncident(job);

    IncidentQuery q;
    auto rows = store->Incidents(q);
    ASSERT_TRUE(rows.ok()) << rows.error();
    ASSERT_EQ(rows->size(), 3u);
    EXPECT_EQ((*rows)[0].time, 300);  // newest first
    q.nodes_only = true;
    EXPECT_EQ(store->Incidents(q)->size(), 2u);
    q.node = "node-a";
    rows = store->Incidents(q);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].gpu_serial, "1654024197323");
    EXPECT_EQ((*rows)[0].evidence_json, R"([{"kind":"xid","code":79}])");
    q = IncidentQuery{};
    q.gpu_serial = "1654024197323";
    EXPECT_EQ(store->Incidents(q)->size(), 1u);
    q = IncidentQuery{};
    q.cause = "network_switch_cable";
    EXPECT_EQ(store->Incidents(q)->size(), 1u);
    q = IncidentQuery{};
    q.since = 150;
    q.until = 250;
    rows = store->Incidents(q);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].node, "node-b");

    ASSERT_TRUE(*store->RecordAction(ia, "drain", "node-a", "done", "autoheal: faulty_gpu"));
    ASSERT_TRUE(*store->RecordAction(ia, "rma_ticket", "node-a", "opened", "k"));
    EXPECT_EQ(store->Actions(0, "node-a")->size(), 2u);
    EXPECT_EQ(store->Actions(0, "node-b")->size(), 0u);

    const std::int64_t t1 = *store->OpenTicket(ia, "rma", "rma/a", "{}", "spool");
    *store->OpenTicket(ia, "rma", "rma/b", "{}", "spool");
    ASSERT_TRUE(*store->MarkTicketDelivered(t1));
    auto pending = store->Tickets(true);
    ASSERT_TRUE(pending.ok()) << pending.error();
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].dedup_key, "rma/b");
    EXPECT_EQ((*pending)[0].node, "node-a");
    EXPECT_EQ((*pending)[0].opened, 100);
    EXPECT_EQ(store->Tickets(false)->size(), 2u);
}

TEST_F(IncidentStoreTest, JobRunsAreRecordedOnceAndCountedPerDistinctJob) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto first = store->RecordJobRun("10", 0, {"n1", "n2"}, 100, "unexplained");
    ASSERT_TRUE(first.ok()) << first.error();
    EXPECT_TRUE(*first);
    EXPECT_FALSE(*store->RecordJobRun("10", 0, {"n1", "n2"}, 100, "unexplained"));  // a rerun
    ASSERT_TRUE(store->RecordJobRun("10", 1, {"n1"}, 110, "unexplained").ok());     // same job
    ASSERT_TRUE(store->RecordJobRun("11", 0, {"n1"}, 120, "unexplained").ok());
    ASSERT_TRUE(store->RecordJobRun("12", 0, {"n1"}, 130, "ok").ok());
    ASSERT_TRUE(store->RecordJobRun("13", 0, {"n1"}, 50, "unexplained").ok());  // too old
    EXPECT_EQ(*store->CountJobRuns("n1", "unexplained", 100), 2);
    EXPECT_EQ(*store->CountJobRuns("n2", "unexplained", 100), 1);
    EXPECT_EQ(*store->CountJobRuns("n1", "ok", 0), 1);
    EXPECT_EQ(*store->CountJobRuns("n3", "unexplained", 0), 0);
}

TEST_F(IncidentStoreTest, JobRunUsersAreDistinctAndSkipUnknownOnes) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->RecordJobRun("10", 0, {"n1", "n2"}, 100, "unexplained", "1001").ok());
    ASSERT_TRUE(store->RecordJobRun("11", 0, {"n1"}, 110, "unexplained", "1001").ok());
    ASSERT_TRUE(store->RecordJobRun("12", 0, {"n1"}, 120, "unexplained", "1002").ok());
    ASSERT_TRUE(store->RecordJobRun("13", 0, {"n1"}, 130, "unexplained").ok());  // before v4
    ASSERT_TRUE(store->RecordJobRun("14", 0, {"n1"}, 140, "ok", "1003").ok());
    ASSERT_TRUE(store->RecordJobRun("15", 0, {"n1"}, 50, "unexplained", "1004").ok());  // old
    EXPECT_THAT(*store->JobRunUsers("n1", "unexplained", 100), ElementsAre("1001", "1002"));
    EXPECT_THAT(*store->JobRunUsers("n2", "unexplained", 100), ElementsAre("1001"));
    EXPECT_THAT(*store->JobRunUsers("n1", "ok", 0), ElementsAre("1003"));
    EXPECT_EQ(*store->CountJobRuns("n1", "unexplained", 100), 4);
}

TEST_F(IncidentStoreTest, InjectionLookingStringsAreStoredVerbatim) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    const std::string evil = "node-a'); DROP TABLE incidents; --";
    const std::string quotes = R"(x" OR "1"="1' OR '1'='1)";
    const std::string with_nul("a\0b", 3);
    IncidentRecord r = Incident(100, evil, quotes, "key'; DELETE FROM tickets; --");
    r.job = with_nul;
    r.cause = "ünïcödé ✓";
    auto id = store->RecordIncident(r);
    ASSERT_TRUE(id.ok()) << id.error();
    ASSERT_TRUE(store->RecordAction(*id, "drain", evil, quotes, "?1 ?2 :x @y $z").ok());
    auto ticket = store->OpenTicket(*id, "rma", "'); DROP TABLE tickets; --", quotes, evil);
    ASSERT_TRUE(ticket.ok()) << ticket.error();

    auto history = store->History(0, evil, "");
    ASSERT_TRUE(history.ok()) << history.error();
    ASSERT_EQ(history->size(), 1u);
    EXPECT_EQ((*history)[0].node, evil);
    EXPECT_EQ((*history)[0].gpu, quotes);
    EXPECT_EQ((*history)[0].job, with_nul);
    EXPECT_EQ((*history)[0].cause, "ünïcödé ✓");
    auto by_gpu = store->History(0, "", quotes);
    ASSERT_TRUE(by_gpu.ok());
    EXPECT_EQ(by_gpu->size(), 1u);
    EXPECT_TRUE(store->History(0, "' OR 1=1 --", "")->empty());

    auto due = store->DueTickets(0, 10);
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 1u);
    EXPECT_EQ((*due)[0].dedup_key, "'); DROP TABLE tickets; --");
    EXPECT_EQ((*due)[0].payload_json, quotes);
    EXPECT_EQ((*due)[0].sink, evil);

    Raw raw(path_);
    EXPECT_EQ(raw.Query("SELECT count(*) FROM sqlite_master WHERE type = 'table'"),
              "6");  // incidents, actions, tickets, job_runs, runs, gpu_telemetry: none dropped
    EXPECT_EQ(raw.Query("SELECT detail FROM actions"), "?1 ?2 :x @y $z");
    EXPECT_EQ(raw.Query("SELECT dedup_key FROM incidents"), "key'; DELETE FROM tickets; --");
}

// 64 epilogs of 64 jobs ending at once, each a process of its own writing its incidents,
// actions and job runs: nothing is lost, nothing doubled, the file checks clean.
TEST_F(IncidentStoreTest, SixtyFourProcessesWritingAtOnceLoseNothing) {
    { ASSERT_NE(OpenStore(), nullptr); }  // created and migrated once, as the cluster would
    constexpr int kWriters = 64;
    constexpr int kEach = 5;
    std::vector<pid_t> pids;
    for (int w = 0; w < kWriters; ++w) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int bad = 0;
            auto store = IncidentStore::Open(path_.string());
            if (!store.ok()) _exit(10);
            for (int i = 0; i < kEach; ++i) {
                IncidentRecord r = Incident(1000 + i, "node" + std::to_string(w), "",
                                            std::to_string(w) + "/" + std::to_string(i));
                auto id = (*store)->RecordIncident(r);
                if (!id.ok()) ++bad;
                if (id.ok() && !(*store)->RecordAction(*id, "drain", r.node, "done", "").ok())
                    ++bad;
                if (!(*store)
                         ->RecordJobRun("job" + std::to_string(w), i, {r.node}, 1000, "ok")
                         .ok()) {
                    ++bad;
                }
            }
            _exit(bad == 0 ? 0 : 11);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
    }
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(raw.Query("SELECT count(*) FROM incidents"), std::to_string(kWriters * kEach));
    EXPECT_EQ(raw.Query("SELECT count(*) FROM actions"), std::to_string(kWriters * kEach));
    EXPECT_EQ(raw.Query("SELECT count(*) FROM job_runs"), std::to_string(kWriters * kEach));
}

// A writer killed (SIGKILL) in the middle of its transactions: every write it saw committed is
// there, no transaction is half there, and the file opens and checks clean.
TEST_F(IncidentStoreTest, AWriterKilledMidTransactionLosesOnlyWhatWasNotCommitted) {
    { ASSERT_NE(OpenStore(), nullptr); }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    constexpr int kNodes = 300;  // one job run of 300 nodes per transaction
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        auto store = IncidentStore::Open(path_.string());
        if (!store.ok()) _exit(10);
        std::vector<std::string> nodes;
        nodes.reserve(kNodes);
        for (int n = 0; n < kNodes; ++n) nodes.push_back("n" + std::to_string(n));
        for (int job = 0;; ++job) {
            if ((*store)->RecordJobRun(std::to_string(job), 0, nodes, 1000, "ok").ok()) {
                // Committed: tell the parent.
                if (write(fds[1], &job, sizeof job) != sizeof job) _exit(12);
            }
        }
    }
    close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status));
    std::vector<int> committed;
    int job = 0;
    while (read(fds[0], &job, sizeof job) == sizeof job) committed.push_back(job);
    close(fds[0]);
    ASSERT_GT(committed.size(), 2u) << "the writer committed too little to test anything";

    auto store = OpenStore();  // opens cleanly (recovers the WAL)
    ASSERT_NE(store, nullptr);
    Raw raw(path_);
    EXPECT_EQ(raw.Query("PRAGMA integrity_check"), "ok");
    for (int j : committed) {
        EXPECT_EQ(
            raw.Query("SELECT count(*) FROM job_runs WHERE job = '" + std::to_string(j) + "'"),
            std::to_string(kNodes))
            << "job " << j;
    }
    // No job run is half there (the one being written when the writer died is all or nothing).
    EXPECT_EQ(raw.Query("SELECT count(*) FROM (SELECT job FROM job_runs GROUP BY job HAVING "
                        "count(*) != " +
                        std::to_string(kNodes) + ")"),
              "0");
    // And the store takes new writes.
    EXPECT_TRUE(store->RecordJobRun("after", 0, {"n1"}, 2000, "ok").ok());
}

}  // namespace
}  // namespace autoheal::remediation
