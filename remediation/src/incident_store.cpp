#include "autoheal/remediation/incident_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <system_error>
#include <thread>
#include <utility>

#include "autoheal/diag/taxonomy.h"

namespace autoheal::remediation {
namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr const char* kInMemory = ":memory:";

// Migration i takes the schema from version i to i + 1. Append new steps; never edit a released
// one (files in the field already ran it).
constexpr const char* kMigrations[] = {
    // v0 -> v1: incidents, the actions taken on them, and the tickets owed for them.
    R"sql(
CREATE TABLE incidents (
    id INTEGER PRIMARY KEY,
    time INTEGER NOT NULL,
    job TEXT NOT NULL DEFAULT '',
    node TEXT NOT NULL DEFAULT '',
    gpu TEXT NOT NULL DEFAULT '',
    cause TEXT NOT NULL DEFAULT '',
    rule TEXT NOT NULL DEFAULT '',
    confidence REAL NOT NULL DEFAULT 0,
    evidence_json TEXT NOT NULL DEFAULT '[]',
    dedup_key TEXT UNIQUE
);
CREATE INDEX incidents_node_time ON incidents(node, time);
CREATE INDEX incidents_gpu_time ON incidents(gpu, time);
CREATE TABLE actions (
    id INTEGER PRIMARY KEY,
    incident_id INTEGER NOT NULL REFERENCES incidents(id),
    time INTEGER NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    UNIQUE (incident_id, action, target)
);
CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    incident_id INTEGER NOT NULL REFERENCES incidents(id),
    kind TEXT NOT NULL CHECK (kind IN ('rma', 'network')),
    dedup_key TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt INTEGER NOT NULL DEFAULT 0,
    payload_json TEXT NOT NULL DEFAULT '{}',
    sink TEXT NOT NULL DEFAULT '',
    last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX tickets_state_next_attempt ON tickets(state, next_attempt);
CREATE INDEX tickets_incident ON tickets(incident_id);
)sql",
    // v1 -> v2: which nodes each job run used and how it ended, for "lemon" nodes (nodes that
    // keep failing jobs while nothing names them).
    R"sql(
CREATE TABLE job_runs (
    job TEXT NOT NULL,
    run INTEGER NOT NULL,
    node TEXT NOT NULL,
    time INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (job, run, node)
);
CREATE INDEX job_runs_node_time ON job_runs(node, time);
)sql",
    // v2 -> v3: one row per decided job run (how long it ran, on how many nodes, why it ended,
    // whether it was requeued) for metrics and reports; GPU serial numbers on incidents, so a
    // GPU's history follows it across slots and nodes.
    R"sql(
CREATE TABLE runs (
    job TEXT NOT NULL,
    run INTEGER NOT NULL,
    nodes INTEGER NOT NULL,
    node_list TEXT NOT NULL DEFAULT '',
    start_time INTEGER NOT NULL,
    end_time INTEGER NOT NULL,
    decided_at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    cause TEXT NOT NULL DEFAULT '',
    culprits TEXT NOT NULL DEFAULT '',
    requeued INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, run)
);
CREATE INDEX runs_end_time ON runs(end_time);
ALTER TABLE incidents ADD COLUMN gpu_serial TEXT NOT NULL DEFAULT '';
CREATE INDEX incidents_gpu_serial ON incidents(gpu_serial);
)sql",
    // v3 -> v4: the user whose job each job run was, so a lemon takes failures of several
    // users (one user's failing jobs must not drain a node); '' for runs recorded before.
    R"sql(
ALTER TABLE job_runs ADD COLUMN job_user TEXT NOT NULL DEFAULT '';
)sql",
    // v4 -> v5: each GPU's power and temperature summary per job run (autoheal-agent's samples),
    // for `autoheal node` and `autoheal report`.
    R"sql(
CREATE TABLE gpu_telemetry (
    job TEXT NOT NULL,
    run INTEGER NOT NULL,
    node TEXT NOT NULL,
    gpu TEXT NOT NULL,
    time INTEGER NOT NULL,
    seconds INTEGER NOT NULL,
    power_throttle_pct INTEGER NOT NULL,
    thermal_throttle_pct INTEGER NOT NULL,
    hw_slowdown_pct INTEGER NOT NULL,
    power_p5 INTEGER NOT NULL,
    power_p95 INTEGER NOT NULL,
    temp_max INTEGER NOT NULL,
    temp_mean INTEGER NOT NULL,
    sm_clock_mean INTEGER NOT NULL,
    clock_vs_peers INTEGER NOT NULL DEFAULT 100,
    straggler INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, run, node, gpu)
);
CREATE INDEX gpu_telemetry_time ON gpu_telemetry(time);
CREATE INDEX gpu_telemetry_node_time ON gpu_telemetry(node, time);
)sql",
};
static_assert(std::size(kMigrations) == kIncidentSchemaVersion,
              "one migration step per schema version");

// A prepared statement, finalized on destruction. Bind errors are kept and reported by Step().
class Statement {
  public:
    Statement(sqlite3* db, const char* sql) {
        rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // SQLITE_OK unless preparing or binding failed.
    int status() const { return rc_; }

    void Bind(int index, std::int64_t v) {
        if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(stmt_, index, v);
    }
    void Bind(int index, double v) {
        if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_double(stmt_, index, v);
    }
    void Bind(int index, const std::string& v) {
        if (rc_ == SQLITE_OK) {
            rc_ = sqlite3_bind_text64(stmt_, index, v.data(), v.size(), SQLITE_TRANSIENT,
                                      SQLITE_UTF8);
        }
    }
    void BindNull(int index) {
        if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_null(stmt_, index);
    }

    // SQLITE_ROW, SQLITE_DONE or an error code.
    int Step() {
        if (rc_ != SQLITE_OK) return rc_;
        const int rc = sqlite3_step(stmt_);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) rc_ = rc;
        return rc;
    }

    // Ready to run again with new bindings (keeps an error from preparing or binding).
    void Reset() {
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }

    std::int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
    double Real(int column) const { return sqlite3_column_double(stmt_, column); }
    std::string Text(int column) const {
        const auto* text = sqlite3_column_text(stmt_, column);
        if (text == nullptr) return "";
        return std::string(reinterpret_cast<const char*>(text),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
    }

  private:
    sqlite3_stmt* stmt_ = nullptr;
    int rc_ = SQLITE_OK;
};

// The ticket columns every ticket query selects first, in this order: id, incident_id, kind,
// dedup_key, state, attempts, next_attempt, payload_json, sink, last_error.
void ReadTicketColumns(const Statement& select, TicketRow* t) {
    t->id = select.Int(0);
    t->incident_id = select.Int(1);
    t->kind = select.Text(2);
    t->dedup_key = select.Text(3);
    t->state = select.Text(4);
    t->attempts = static_cast<int>(select.Int(5));
    t->next_attempt = select.Int(6);
    t->payload_json = select.Text(7);
    t->sink = select.Text(8);
    t->last_error = select.Text(9);
}

std::string Describe(sqlite3* db) {
    if (db == nullptr) return "out of memory";
    return std::string(sqlite3_errmsg(db)) + " (" + sqlite3_errstr(sqlite3_extended_errcode(db)) +
           ")";
}

// Runs constant SQL (no user data) that returns no rows we need.
bool Exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

// Reads a single-integer PRAGMA (user_version, foreign_keys).
bool PragmaInt(sqlite3* db, const char* sql, std::int64_t* value) {
    Statement s(db, sql);
    if (s.Step() != SQLITE_ROW) return false;
    *value = s.Int(0);
    return true;
}

Error NewerSchema(std::int64_t version) {
    return MakeError("schema version " + std::to_string(version) +
                     " is newer than this autoheal's (" + std::to_string(kIncidentSchemaVersion) +
                     "); refusing to open it (no downgrades)");
}

// Migrates to kIncidentSchemaVersion, one step per IMMEDIATE transaction. The version is re-read
// inside each transaction, so two processes opening a new file at once migrate it once.
Result<bool> Migrate(sqlite3* db) {
    for (;;) {
        if (!Exec(db, "BEGIN IMMEDIATE")) return MakeError("begin migration: " + Describe(db));
        std::int64_t version = 0;
        if (!PragmaInt(db, "PRAGMA user_version", &version)) {
            const std::string error = "read schema version: " + Describe(db);
            Exec(db, "ROLLBACK");
            return MakeError(error);
        }
        if (version > kIncidentSchemaVersion) {
            Exec(db, "ROLLBACK");
            return NewerSchema(version);
        }
        if (version == kIncidentSchemaVersion) {
            Exec(db, "COMMIT");
            return true;
        }
        // PRAGMA takes no bound parameters; the version is our own integer.
        const std::string bump = "PRAGMA user_version = " + std::to_string(version + 1);
        if (version < 0 || !Exec(db, kMigrations[version]) || !Exec(db, bump.c_str()) ||
            !Exec(db, "COMMIT")) {
            const std::string error =
                "migrate schema from version " + std::to_string(version) + ": " + Describe(db);
            Exec(db, "ROLLBACK");
            return MakeError(error);
        }
    }
}

std::int64_t Now() { return static_cast<std::int64_t>(std::time(nullptr)); }

// Switches the file to WAL and says the journal mode it is in. Where waiting could deadlock,
// SQLite answers SQLITE_BUSY at once without calling the busy handler (sqlite3_busy_handler's
// documentation): processes that open a new store at the same moment can meet that here (seen
// with Debian 13's SQLite in IncidentStoreTest.ConcurrentFirstOpensMigrateOnce). The statement
// is then run again from the start, with no lock held in between, until the busy timeout.
Result<std::string> EnableWal(sqlite3* raw) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (int wait_ms = 1;; wait_ms = std::min(wait_ms * 2, 50)) {
        {
            Statement wal(raw, "PRAGMA journal_mode = WAL");
            const int rc = wal.Step();
            if (rc == SQLITE_ROW) return wal.Text(0);
            if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
                return MakeError("enable WAL: " + Describe(raw));
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
}

}  // namespace

IncidentStore::IncidentStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

IncidentStore::~IncidentStore() { sqlite3_close_v2(db_); }

Result<std::unique_ptr<IncidentStore>> IncidentStore::Open(const std::string& path) {
    const std::string where = "incident store " + path + ": ";
    if (path.empty()) return MakeError("incident store: empty path");
    const bool memory = path == kInMemory;
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) parent = ".";
    std::error_code ec;
    if (!memory && !std::filesystem::is_directory(parent, ec)) {
        return MakeError(where + "folder " + parent.string() + " does not exist");
    }

    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(path.c_str(), &raw,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    // The store owns the handle from here, so every early return closes it.
    std::unique_ptr<IncidentStore> store(new IncidentStore(raw, path));
    if (rc != SQLITE_OK) return MakeError(where + "open: " + Describe(raw));
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_busy_timeout(raw, kBusyTimeoutMs);

    // Refuse a newer schema before changing anything (journal mode included). This is also the
    // first read, so a file that is not a database fails here.
    std::int64_t version = 0;
    if (!PragmaInt(raw, "PRAGMA user_version", &version)) {
        return MakeError(where + "read schema version: " + Describe(raw));
    }
    if (version > kIncidentSchemaVersion) {
        return MakeError(where + NewerSchema(version).message);
    }

    auto mode = EnableWal(raw);
    if (!mode) return MakeError(where + mode.error());
    // A store in memory has no WAL: SQLite keeps its journal in memory.
    if (*mode != (memory ? "memory" : "wal")) {
        return MakeError(where + "enable WAL: journal mode is '" + *mode + "'");
    }
    std::int64_t foreign_keys = 0;
    if (!Exec(raw, "PRAGMA foreign_keys = ON") ||
        !PragmaInt(raw, "PRAGMA foreign_keys", &foreign_keys) || foreign_keys != 1) {
        return MakeError(where + "enable foreign keys: " + Describe(raw));
    }

    auto migrated = Migrate(raw);
    if (!migrated) return MakeError(where + migrated.error());
    return store;
}

Result<std::unique_ptr<IncidentStore>> IncidentStore::OpenInMemory() { return Open(kInMemory); }

Result<bool> IncidentStore::SaveTo(const std::string& path) {
    Statement vacuum(db_, "VACUUM INTO ?1");
    vacuum.Bind(1, path);
    if (vacuum.Step() != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": save to " + path + ": " + Describe(db_));
    }
    return true;
}

Result<int> IncidentStore::ImportFrom(const std::string& path) {
    const std::string where = "incident store " + path_ + ": import " + path + ": ";
    Statement attach(db_, "ATTACH DATABASE ?1 AS spool");
    attach.Bind(1, path);
    if (attach.Step() != SQLITE_DONE) return MakeError(where + Describe(db_));
    auto imported = ImportAttached();
    Exec(db_, "DETACH DATABASE spool");
    if (!imported) return MakeError(where + imported.error());
    return imported;
}

// REQUIRES: the saved store is attached as `spool`.
Result<int> IncidentStore::ImportAttached() {
    if (!Exec(db_, "BEGIN IMMEDIATE")) return MakeError(Describe(db_));
    auto fail = [&] {
        const std::string error = Describe(db_);
        Exec(db_, "ROLLBACK");
        return MakeError(error);
    };
    // Incidents one by one: each gets an id here (or the one of the incident with its key).
    if (!Exec(db_, "CREATE TEMP TABLE spool_ids (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)"))
        return fail();
    Statement rows(db_,
                   "SELECT id, time, job, node, gpu, cause, rule, confidence, evidence_json, "
                   "dedup_key, gpu_serial FROM spool.incidents ORDER BY id");
    Statement insert(db_,
                     "INSERT INTO main.incidents (time, job, node, gpu, cause, rule, confidence, "
                     "evidence_json, dedup_key, gpu_serial) "
                     "SELECT time, job, node, gpu, cause, rule, confidence, evidence_json, "
                     "dedup_key, gpu_serial FROM spool.incidents WHERE id = ?1 "
                     "ON CONFLICT (dedup_key) DO NOTHING");
    Statement existing(db_, "SELECT id FROM main.incidents WHERE dedup_key = ?1");
    Statement map(db_, "INSERT INTO spool_ids (old, new) VALUES (?1, ?2)");
    int count = 0;
    int rc = SQLITE_ROW;
    while ((rc = rows.Step()) == SQLITE_ROW) {
        const std::int64_t old_id = rows.Int(0);
        insert.Reset();
        insert.Bind(1, old_id);
        if (insert.Step() != SQLITE_DONE) return fail();
        std::int64_t new_id = sqlite3_last_insert_rowid(db_);
        if (sqlite3_changes(db_) == 0) {
            existing.Reset();
            existing.Bind(1, rows.Text(9));
            if (existing.Step() != SQLITE_ROW) return fail();
            new_id = existing.Int(0);
            existing.Reset();  // no read left open: DROP TABLE below fails while one is
        }
        map.Reset();
        map.Bind(1, old_id);
        map.Bind(2, new_id);
        if (map.Step() != SQLITE_DONE) return fail();
        ++count;
    }
    if (rc != SQLITE_DONE) return fail();
    const char* kCopy = R"sql(
INSERT OR IGNORE INTO main.actions (incident_id, time, action, target, outcome, detail)
    SELECT m.new, a.time, a.action, a.target, a.outcome, a.detail
    FROM spool.actions a JOIN spool_ids m ON m.old = a.incident_id ORDER BY a.id;
INSERT OR IGNORE INTO main.tickets (incident_id, kind, dedup_key, state, attempts, next_attempt,
                                    payload_json, sink, last_error)
    SELECT m.new, t.kind, t.dedup_key, t.state, t.attempts, t.next_attempt, t.payload_json,
           t.sink, t.last_error
    FROM spool.tickets t JOIN spool_ids m ON m.old = t.incident_id ORDER BY t.id;
INSERT OR IGNORE INTO main.job_runs (job, run, node, time, outcome, job_user)
    SELECT job, run, node, time, outcome, job_user FROM spool.job_runs;
INSERT OR IGNORE INTO main.runs (job, run, nodes, node_list, start_time, end_time, decided_at,
                                 outcome, cause, culprits, requeued)
    SELECT job, run, nodes, node_list, start_time, end_time, decided_at, outcome, cause,
           culprits, requeued FROM spool.runs;
DROP TABLE spool_ids;
)sql";
    if (!Exec(db_, kCopy) || !Exec(db_, "COMMIT")) return fail();
    return count;
}

Result<std::int64_t> IncidentStore::RecordIncident(const IncidentRecord& incident) {
    Statement insert(db_,
                     "INSERT INTO incidents (time, job, node, gpu, cause, rule, confidence, "
                     "evidence_json, dedup_key, gpu_serial) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                     "ON CONFLICT (dedup_key) DO NOTHING");
    insert.Bind(1, incident.time);
    insert.Bind(2, incident.job);
    insert.Bind(3, incident.node);
    insert.Bind(4, incident.gpu);
    insert.Bind(5, incident.cause);
    insert.Bind(6, incident.rule);
    insert.Bind(7, incident.confidence);
    insert.Bind(8, incident.evidence_json);
    if (incident.dedup_key.empty()) {
        insert.BindNull(9);  // NULLs never conflict: no deduplication
    } else {
        insert.Bind(9, incident.dedup_key);
    }
    insert.Bind(10, incident.gpu_serial);
    if (insert.Step() != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": record incident: " + Describe(db_));
    }
    if (sqlite3_changes(db_) == 1) return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));

    // Recorded before (rows are never deleted, so it is still there).
    Statement select(db_, "SELECT id FROM incidents WHERE dedup_key = ?1");
    select.Bind(1, incident.dedup_key);
    if (select.Step() != SQLITE_ROW) {
        return MakeError("incident store " + path_ + ": find incident '" + incident.dedup_key +
                         "': " + Describe(db_));
    }
    return select.Int(0);
}

Result<bool> IncidentStore::RecordAction(std::int64_t incident_id, const std::string& action,
                                         const std::string& target, const std::string& outcome,
                                         const std::string& detail) {
    Statement insert(db_,
                     "INSERT INTO actions (incident_id, time, action, target, outcome, detail) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                     "ON CONFLICT (incident_id, action, target) DO UPDATE SET "
                     "time = excluded.time, outcome = excluded.outcome, detail = excluded.detail "
                     "WHERE actions.outcome = 'asked'");
    insert.Bind(1, incident_id);
    insert.Bind(2, Now());
    insert.Bind(3, action);
    insert.Bind(4, target);
    insert.Bind(5, outcome);
    insert.Bind(6, detail);
    if (insert.Step() != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": record action " + action +
                         " for incident " + std::to_string(incident_id) + ": " + Describe(db_));
    }
    return sqlite3_changes(db_) == 1;
}

Result<std::int64_t> IncidentStore::OpenTicket(std::int64_t incident_id, const std::string& kind,
                                               const std::string& dedup_key,
                                               const std::string& payload_json,
                                               const std::string& sink) {
    const std::string where = "incident store " + path_ + ": open ticket: ";
    if (kind != "rma" && kind != "network") {
        return MakeError(where + "kind '" + kind + "' is not 'rma' or 'network'");
    }
    if (dedup_key.empty()) return MakeError(where + "empty dedup key");
    Statement insert(db_,
                     "INSERT INTO tickets (incident_id, kind, dedup_key, state, attempts, "
                     "next_attempt, payload_json, sink, last_error) "
                     "VALUES (?1, ?2, ?3, 'pending', 0, 0, ?4, ?5, '') "
                     "ON CONFLICT (dedup_key) DO NOTHING");
    insert.Bind(1, incident_id);
    insert.Bind(2, kind);
    insert.Bind(3, dedup_key);
    insert.Bind(4, payload_json);
    insert.Bind(5, sink);
    if (insert.Step() != SQLITE_DONE) return MakeError(where + Describe(db_));
    if (sqlite3_changes(db_) == 1) return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));

    Statement select(db_, "SELECT id FROM tickets WHERE dedup_key = ?1");
    select.Bind(1, dedup_key);
    if (select.Step() != SQLITE_ROW) {
        return MakeError(where + "find ticket '" + dedup_key + "': " + Describe(db_));
    }
    return select.Int(0);
}

Result<std::vector<TicketRow>> IncidentStore::DueTickets(std::int64_t now, int limit) {
    Statement select(db_,
                     "SELECT id, incident_id, kind, dedup_key, state, attempts, next_attempt, "
                     "payload_json, sink, last_error FROM tickets "
                     "WHERE state IN ('pending', 'failed') AND next_attempt <= ?1 "
                     "ORDER BY next_attempt, id LIMIT ?2");
    select.Bind(1, now);
    select.Bind(2, std::int64_t{limit < 0 ? 0 : limit});
    std::vector<TicketRow> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        TicketRow& t = rows.emplace_back();
        ReadTicketColumns(select, &t);
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": due tickets: " + Describe(db_));
    }
    return rows;
}

namespace {

// After an UPDATE that changed nothing: error if the ticket does not exist, else false.
Result<bool> UnchangedTicket(sqlite3* db, const std::string& where, std::int64_t ticket_id) {
    Statement select(db, "SELECT 1 FROM tickets WHERE id = ?1");
    select.Bind(1, ticket_id);
    const int rc = select.Step();
    if (rc == SQLITE_ROW) return false;
    if (rc == SQLITE_DONE) return MakeError(where + "no ticket " + std::to_string(ticket_id));
    return MakeError(where + Describe(db));
}

}  // namespace

Result<bool> IncidentStore::MarkTicketDelivered(std::int64_t ticket_id) {
    const std::string where = "incident store " + path_ + ": mark ticket delivered: ";
    Statement update(db_,
                     "UPDATE tickets SET state = 'delivered' "
                     "WHERE id = ?1 AND state <> 'delivered'");
    update.Bind(1, ticket_id);
    if (update.Step() != SQLITE_DONE) return MakeError(where + Describe(db_));
    if (sqlite3_changes(db_) == 1) return true;
    return UnchangedTicket(db_, where, ticket_id);
}

Result<bool> IncidentStore::MarkTicketFailed(std::int64_t ticket_id, const std::string& error,
                                             std::int64_t next_attempt) {
    const std::string where = "incident store " + path_ + ": mark ticket failed: ";
    Statement update(db_,
                     "UPDATE tickets SET state = 'failed', attempts = attempts + 1, "
                     "last_error = ?2, next_attempt = ?3 "
                     "WHERE id = ?1 AND state <> 'delivered'");
    update.Bind(1, ticket_id);
    update.Bind(2, error);
    update.Bind(3, next_attempt);
    if (update.Step() != SQLITE_DONE) return MakeError(where + Describe(db_));
    if (sqlite3_changes(db_) == 1) return true;
    return UnchangedTicket(db_, where, ticket_id);
}

Result<std::vector<diag::HistoryRecord>> IncidentStore::History(std::int64_t since,
                                                                const std::string& node,
                                                                const std::string& gpu) {
    // The job's user comes from its job run on that node ('' where none was recorded). One
    // filter per query, so each can use its (column, time) index.
    std::string sql =
        "SELECT time, node, gpu, rule, cause, job, dedup_key, "
        "coalesce((SELECT job_user FROM job_runs r WHERE r.job = incidents.job AND "
        "r.node = incidents.node AND r.job_user != '' ORDER BY r.run DESC LIMIT 1), '') "
        "FROM incidents WHERE ";
    sql += !node.empty() ? "node = ?3 AND " : !gpu.empty() ? "gpu = ?3 AND " : "";
    sql += "time >= ?1 ORDER BY time DESC, id DESC LIMIT ?2";
    Statement select(db_, sql.c_str());
    select.Bind(1, since);
    select.Bind(2, std::int64_t{kHistoryLimit});
    if (!node.empty()) {
        select.Bind(3, node);
    } else if (!gpu.empty()) {
        select.Bind(3, gpu);
    }
    std::vector<diag::HistoryRecord> records;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        diag::HistoryRecord& h = records.emplace_back();
        h.time = select.Int(0);
        h.node = select.Text(1);
        h.gpu = select.Text(2);
        h.rule = select.Text(3);
        h.cause = select.Text(4);
        h.job = select.Text(5);
        h.key = select.Text(6);
        h.user = select.Text(7);
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": history: " + Describe(db_));
    }
    return records;
}

Result<bool> IncidentStore::RecordJobRun(const std::string& job, int run,
                                         const std::vector<std::string>& nodes, std::int64_t time,
                                         const std::string& outcome, const std::string& user) {
    const std::string where = "incident store " + path_ + ": job run: ";
    if (!Exec(db_, "BEGIN IMMEDIATE")) return MakeError(where + Describe(db_));
    Statement insert(db_,
                     "INSERT OR IGNORE INTO job_runs (job, run, node, time, outcome, job_user) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    bool added = false;
    for (const std::string& node : nodes) {
        insert.Reset();
        insert.Bind(1, job);
        insert.Bind(2, std::int64_t{run});
        insert.Bind(3, node);
        insert.Bind(4, time);
        insert.Bind(5, outcome);
        insert.Bind(6, user);
        if (insert.Step() != SQLITE_DONE) {
            const std::string error = Describe(db_);
            Exec(db_, "ROLLBACK");
            return MakeError(where + error);
        }
        added = added || sqlite3_changes(db_) > 0;
    }
    if (!Exec(db_, "COMMIT")) {
        const std::string error = Describe(db_);
        Exec(db_, "ROLLBACK");
        return MakeError(where + error);
    }
    return added;
}

Result<int> IncidentStore::CountJobRuns(const std::string& node, const std::string& outcome,
                                        std::int64_t since) {
    Statement select(db_,
                     "SELECT count(DISTINCT job) FROM job_runs "
                     "WHERE node = ?1 AND outcome = ?2 AND time >= ?3");
    select.Bind(1, node);
    select.Bind(2, outcome);
    select.Bind(3, since);
    if (select.Step() != SQLITE_ROW) {
        return MakeError("incident store " + path_ + ": job runs: " + Describe(db_));
    }
    return static_cast<int>(select.Int(0));
}

Result<std::vector<std::string>> IncidentStore::JobRunUsers(const std::string& node,
                                                            const std::string& outcome,
                                                            std::int64_t since) {
    Statement select(db_,
                     "SELECT DISTINCT job_user FROM job_runs "
                     "WHERE node = ?1 AND outcome = ?2 AND time >= ?3 AND job_user != '' "
                     "ORDER BY job_user");
    select.Bind(1, node);
    select.Bind(2, outcome);
    select.Bind(3, since);
    std::vector<std::string> users;
    int rc = SQLITE_ROW;
    while ((rc = select.Step()) == SQLITE_ROW) users.push_back(select.Text(0));
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": job run users: " + Describe(db_));
    }
    return users;
}

Result<bool> IncidentStore::RecordRun(const RunRecord& r) {
    Statement insert(db_,
                     "INSERT INTO runs (job, run, nodes, node_list, start_time, end_time, "
                     "decided_at, outcome, cause, culprits, requeued) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                     "ON CONFLICT (job, run) DO NOTHING");
    insert.Bind(1, r.job);
    insert.Bind(2, std::int64_t{r.run});
    insert.Bind(3, std::int64_t{r.nodes});
    insert.Bind(4, r.node_list);
    insert.Bind(5, r.start_time);
    insert.Bind(6, r.end_time);
    insert.Bind(7, r.decided_at);
    insert.Bind(8, r.outcome);
    insert.Bind(9, r.cause);
    insert.Bind(10, r.culprits);
    insert.Bind(11, std::int64_t{r.requeued ? 1 : 0});
    if (insert.Step() != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": record run " + r.job + "/" +
                         std::to_string(r.run) + ": " + Describe(db_));
    }
    return sqlite3_changes(db_) == 1;
}

Result<std::vector<IncidentRow>> IncidentStore::Incidents(const IncidentQuery& q) {
    // Constant SQL; an empty filter matches everything.
    Statement select(db_,
                     "SELECT id, time, job, node, gpu, gpu_serial, cause, rule, confidence, "
                     "evidence_json FROM incidents WHERE time >= ?1 AND time <= ?2 "
                     "AND (?3 = '' OR node = ?3) AND (?4 = '' OR cause = ?4) "
                     "AND (?5 = '' OR job = ?5) AND (?6 = 0 OR node != '') "
                     "AND (?8 = '' OR gpu_serial = ?8) ORDER BY time DESC, id DESC LIMIT ?7");
    select.Bind(1, q.since);
    select.Bind(2, q.until);
    select.Bind(3, q.node);
    select.Bind(4, q.cause);
    select.Bind(5, q.job);
    select.Bind(6, std::int64_t{q.nodes_only ? 1 : 0});
    select.Bind(7, std::int64_t{q.limit});
    select.Bind(8, q.gpu_serial);
    std::vector<IncidentRow> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        IncidentRow& r = rows.emplace_back();
        r.id = select.Int(0);
        r.time = select.Int(1);
        r.job = select.Text(2);
        r.node = select.Text(3);
        r.gpu = select.Text(4);
        r.gpu_serial = select.Text(5);
        r.cause = select.Text(6);
        r.rule = select.Text(7);
        r.confidence = select.Real(8);
        r.evidence_json = select.Text(9);
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": incidents: " + Describe(db_));
    }
    return rows;
}

Result<std::vector<std::string>> IncidentStore::NodesWithActionsAsked(
    std::int64_t max_age_seconds) {
    Statement select(db_,
                     "SELECT DISTINCT target FROM actions WHERE outcome = 'asked' AND time >= ?1 "
                     "ORDER BY target LIMIT ?2");
    select.Bind(1, Now() - max_age_seconds);
    select.Bind(2, std::int64_t{kHistoryLimit});
    std::vector<std::string> nodes;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) nodes.push_back(select.Text(0));
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": actions asked: " + Describe(db_));
    }
    return nodes;
}

Result<std::vector<ActionRow>> IncidentStore::Actions(std::int64_t since,
                                                      const std::string& target) {
    Statement select(db_,
                     "SELECT id, incident_id, time, action, target, outcome, detail FROM actions "
                     "WHERE time >= ?1 AND (?2 = '' OR target = ?2) ORDER BY time DESC, id DESC "
                     "LIMIT ?3");
    select.Bind(1, since);
    select.Bind(2, target);
    select.Bind(3, std::int64_t{kHistoryLimit});
    std::vector<ActionRow> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        ActionRow& r = rows.emplace_back();
        r.id = select.Int(0);
        r.incident_id = select.Int(1);
        r.time = select.Int(2);
        r.action = select.Text(3);
        // `resume@<seconds>` rows (written before the catalog had `resume`) read as `resume`.
        if (diag::ParseAction(r.action) == diag::Action::kResume) {
            r.action = diag::ToString(diag::Action::kResume);
        }
        r.target = select.Text(4);
        r.outcome = select.Text(5);
        r.detail = select.Text(6);
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": actions: " + Describe(db_));
    }
    return rows;
}

Result<std::vector<TicketRow>> IncidentStore::Tickets(bool undelivered_only) {
    Statement select(db_,
                     "SELECT t.id, t.incident_id, t.kind, t.dedup_key, t.state, t.attempts, "
                     "t.next_attempt, t.payload_json, t.sink, t.last_error, i.node, i.time "
                     "FROM tickets t JOIN incidents i ON i.id = t.incident_id "
                     "WHERE (?1 = 0 OR t.state != 'delivered') ORDER BY t.id DESC LIMIT ?2");
    select.Bind(1, std::int64_t{undelivered_only ? 1 : 0});
    select.Bind(2, std::int64_t{kHistoryLimit});
    std::vector<TicketRow> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        TicketRow& t = rows.emplace_back();
        ReadTicketColumns(select, &t);
        t.node = select.Text(10);
        t.opened = select.Int(11);
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": tickets: " + Describe(db_));
    }
    return rows;
}

Result<bool> IncidentStore::RecordGpuTelemetry(const std::string& job, int run,
                                               const std::string& node, std::int64_t time,
                                               const diag::EvidenceSet& evidence) {
    Statement insert(
        db_,
        "INSERT OR REPLACE INTO gpu_telemetry (job, run, node, gpu, time, seconds, "
        "power_throttle_pct, thermal_throttle_pct, hw_slowdown_pct, power_p5, power_p95, "
        "temp_max, temp_mean, sm_clock_mean, clock_vs_peers, straggler) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    bool added = false;
    for (const diag::Evidence& e : evidence.items) {
        if (e.signature != diag::kGpuTelemetrySignature) continue;
        const diag::GpuTelemetrySummary g = diag::SummaryFromEvidence(e);
        insert.Reset();
        insert.Bind(1, job);
        insert.Bind(2, std::int64_t{run});
        insert.Bind(3, node);
        insert.Bind(4, g.gpu);
        insert.Bind(5, time);
        insert.Bind(6, g.seconds);
        const std::int64_t numbers[] = {g.power_throttle_pct, g.thermal_throttle_pct,
                                        g.hw_slowdown_pct,    g.power_p5,
                                        g.power_p95,          g.temp_max,
                                        g.temp_mean,          g.sm_clock_mean};
        for (int i = 0; i < 8; ++i) insert.Bind(7 + i, numbers[i]);
        insert.Bind(15, std::int64_t{std::atoi(
                            std::string(e.Field("clock_vs_peers").value_or("100")).c_str())});
        insert.Bind(16, std::int64_t{e.Field("straggler") == "yes"});
        if (insert.Step() != SQLITE_DONE) {
            return MakeError("incident store " + path_ + ": gpu telemetry: " + Describe(db_));
        }
        added = true;
    }
    return added;
}

Result<std::vector<GpuTelemetryRow>> IncidentStore::GpuTelemetry(std::int64_t since,
                                                                 const std::string& node) {
    Statement select(db_,
                     "SELECT job, run, node, gpu, time, seconds, power_throttle_pct, "
                     "thermal_throttle_pct, hw_slowdown_pct, power_p5, power_p95, temp_max, "
                     "temp_mean, sm_clock_mean, clock_vs_peers, straggler FROM gpu_telemetry "
                     "WHERE time >= ?1 AND (?2 = '' OR node = ?2) "
                     "ORDER BY time DESC, job, node, gpu LIMIT ?3");
    select.Bind(1, since);
    select.Bind(2, node);
    select.Bind(3, std::int64_t{kRunsLimit});
    std::vector<GpuTelemetryRow> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        GpuTelemetryRow& r = rows.emplace_back();
        r.job = select.Text(0);
        r.run = static_cast<int>(select.Int(1));
        r.node = select.Text(2);
        r.summary.gpu = select.Text(3);
        r.time = select.Int(4);
        r.summary.seconds = select.Int(5);
        unsigned* numbers[] = {&r.summary.power_throttle_pct,
                               &r.summary.thermal_throttle_pct,
                               &r.summary.hw_slowdown_pct,
                               &r.summary.power_p5,
                               &r.summary.power_p95,
                               &r.summary.temp_max,
                               &r.summary.temp_mean,
                               &r.summary.sm_clock_mean,
                               &r.clock_vs_peers};
        for (int i = 0; i < 9; ++i) *numbers[i] = static_cast<unsigned>(select.Int(6 + i));
        r.straggler = select.Int(15) != 0;
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": gpu telemetry: " + Describe(db_));
    }
    return rows;
}

Result<std::vector<RunRecord>> IncidentStore::Runs(std::int64_t since) {
    Statement select(db_,
                     "SELECT job, run, nodes, node_list, start_time, end_time, decided_at, "
                     "outcome, cause, culprits, requeued FROM runs WHERE end_time >= ?1 "
                     "ORDER BY end_time, job, run LIMIT ?2");
    select.Bind(1, since);
    select.Bind(2, std::int64_t{kRunsLimit});
    std::vector<RunRecord> rows;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
        RunRecord& r = rows.emplace_back();
        r.job = select.Text(0);
        r.run = static_cast<int>(select.Int(1));
        r.nodes = static_cast<int>(select.Int(2));
        r.node_list = select.Text(3);
        r.start_time = select.Int(4);
        r.end_time = select.Int(5);
        r.decided_at = select.Int(6);
        r.outcome = select.Text(7);
        r.cause = select.Text(8);
        r.culprits = select.Text(9);
        r.requeued = select.Int(10) != 0;
    }
    if (rc != SQLITE_DONE) {
        return MakeError("incident store " + path_ + ": runs: " + Describe(db_));
    }
    return rows;
}

namespace {

Result<std::vector<std::pair<std::string, std::int64_t>>> CountGroups(sqlite3* db, const char* sql,
                                                                      const std::string& path) {
    Statement select(db, sql);
    std::vector<std::pair<std::string, std::int64_t>> out;
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) out.emplace_back(select.Text(0), select.Int(1));
    if (rc != SQLITE_DONE) return MakeError("incident store " + path + ": count: " + Describe(db));
    return out;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::int64_t>>> IncidentStore::CountIncidentsByCause() {
    return CountGroups(db_,
                       "SELECT cause, count(*) FROM incidents WHERE node != '' GROUP BY cause "
                       "ORDER BY cause",
                       path_);
}

Result<std::vector<std::pair<std::string, std::int64_t>>> IncidentStore::CountTicketsByState() {
    return CountGroups(db_, "SELECT state, count(*) FROM tickets GROUP BY state ORDER BY state",
                       path_);
}

std::string GiveStoreToStateDirOwner(const std::string& state_dir, const std::string& path) {
    struct stat dir {};
    if (::geteuid() != 0 || ::stat(state_dir.c_str(), &dir) != 0 || dir.st_uid == 0) return "";
    std::string failed;
    for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
        struct stat st {};
        if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) continue;
        if (::lchown(file.c_str(), dir.st_uid, dir.st_gid) != 0) {
            failed += (failed.empty() ? "" : "; ") + file + ": cannot hand it to uid " +
                      std::to_string(dir.st_uid) + ": " + std::strerror(errno);
        }
    }
    return failed;
}

}  // namespace autoheal::remediation
