// Ticket sinks and their delivery from the incident store, against real parts: a real SQLite
// store and spool folder under /tmp, a small HTTP server on 127.0.0.1 run by the test, and real
// programs for the command sink (/bin/sh appears only here, as a configured argv: the sink itself
// never runs a shell).
#include "autoheal/remediation/tickets.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http_server.h"

namespace autoheal::remediation {
namespace {

namespace fs = std::filesystem;
using autoheal::testing::HttpRequest;
using autoheal::testing::HttpServer;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kPayload =
    R"({"kind":"rma","node":"gpu-node-7","gpu":"0000:3b:00.0","cause":"faulty_gpu","inc":42})";

// A port on 127.0.0.1 where nothing listens (bound once to find it, then closed).
int FreePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string ReadFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void WriteFile(const fs::path& path, const std::string& text, fs::perms mode) {
    std::ofstream(path, std::ios::binary) << text;
    fs::permissions(path, mode);
}

unsigned Mode(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
}

std::vector<fs::path> Files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
    return out;
}

// ---- fixture: a real store in a temporary folder ----

class TicketsTest : public ::testing::Test {
  protected:
    static constexpr std::int64_t kNow = 1'700'000'000;

    void SetUp() override {
        // The webhook tests talk to 127.0.0.1: never through a proxy from the environment.
        ::setenv("no_proxy", "127.0.0.1,localhost", 1);
        ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
        static std::atomic<int> counter{0};
        dir_ = fs::temp_directory_path() /
               ("tickets_test." + std::to_string(::getpid()) + "." + std::to_string(counter++));
        fs::remove_all(dir_);
        ASSERT_TRUE(fs::create_directories(dir_));
        auto store = IncidentStore::Open((dir_ / "incidents.sqlite").string());
        ASSERT_TRUE(store.ok()) << store.error();
        store_ = std::move(store).value();
        auto incident = store_->RecordIncident(
            IncidentRecord{kNow, "77", "gpu-node-7", "0000:3b:00.0", "faulty_gpu", "xid-79", 0.9,
                           "[]", "77/gpu-node-7/xid-79/0000:3b:00.0"});
        ASSERT_TRUE(incident.ok()) << incident.error();
        incident_ = *incident;
    }
    void TearDown() override {
        store_.reset();
        fs::remove_all(dir_);
    }

    static TicketConfig Config(std::vector<TicketSinkConfig> sinks, std::int64_t initial = 30,
                               std::int64_t max = 3600) {
        TicketConfig config;
        config.retry_initial_seconds = initial;
        config.retry_max_seconds = max;
        config.sinks = std::move(sinks);
        return config;
    }
    static TicketSinkConfig Spool(const fs::path& dir, const std::string& name = "spool") {
        TicketSinkConfig s;
        s.type = TicketSinkType::kSpool;
        s.name = name;
        s.dir = dir.string();
        return s;
    }
    static TicketSinkConfig Webhook(const std::string& url, const std::string& secret_file = "",
                                    double timeout = 5) {
        TicketSinkConfig s;
        s.type = TicketSinkType::kWebhook;
        s.name = "tickets";
        s.url = url;
        s.secret_file = secret_file;
        s.timeout_seconds = timeout;
        return s;
    }
    static TicketSinkConfig Command(std::vector<std::string> argv, double timeout = 10) {
        TicketSinkConfig s;
        s.type = TicketSinkType::kCommand;
        s.name = "cmd";
        s.argv = std::move(argv);
        s.timeout_seconds = timeout;
        return s;
    }

    // Opens the tickets for the fault "xid-79 on gpu-node-7 0000:3b:00.0" in every sink.
    std::vector<std::int64_t> Open(const TicketConfig& config,
                                   const std::string& key = "gpu-node-7/0000:3b:00.0/rma") {
        auto ids = OpenTickets(*store_, incident_, "rma", key, kPayload, config);
        EXPECT_TRUE(ids.ok()) << ids.error();
        return ids.ok() ? *ids : std::vector<std::int64_t>{};
    }

    TicketDeliverySummary Deliver(const TicketConfig& config, std::int64_t now, int limit = 100,
                                  double budget = 60) {
        auto summary = DeliverDueTickets(*store_, config, now, limit, budget);
        EXPECT_TRUE(summary.ok()) << summary.error();
        return summary.ok() ? *summary : TicketDeliverySummary{};
    }

    // A ticket's row read with SQLite directly (any state).
    TicketRow Row(std::int64_t id) {
        sqlite3* db = nullptr;
        EXPECT_EQ(sqlite3_open((dir_ / "incidents.sqlite").c_str(), &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        sqlite3_stmt* stmt = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db,
                                     "SELECT state, attempts, next_attempt, last_error, sink, "
                                     "dedup_key, kind FROM tickets WHERE id = ?1",
                                     -1, &stmt, nullptr),
                  SQLITE_OK);
        sqlite3_bind_int64(stmt, 1, id);
        TicketRow row;
        auto text = [&](int col) {
            const auto* t = sqlite3_column_text(stmt, col);
            return t != nullptr ? std::string(reinterpret_cast<const char*>(t)) : std::string();
        };
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            row.id = id;
            row.state = text(0);
            row.attempts = sqlite3_column_int(stmt, 1);
            row.next_attempt = sqlite3_column_int64(stmt, 2);
            row.last_error = text(3);
            row.sink = text(4);
            row.dedup_key = text(5);
            row.kind = text(6);
        } else {
            ADD_FAILURE() << "no ticket " << id;
        }
        sqlite3_finalize(stmt);
        sqlite3_close(db);
        return row;
    }

    // Puts a ticket back to "pending" behind the store's back: what a crash between a delivery
    // and its record leaves.
    void ForgetDelivery(std::int64_t id) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((dir_ / "incidents.sqlite").c_str(), &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        const std::string sql =
            "UPDATE tickets SET state = 'pending' WHERE id = " + std::to_string(id);
        EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
    }

    fs::path dir_;
    std::unique_ptr<IncidentStore> store_;
    std::int64_t incident_ = 0;
};

// ---- configuration ----

Result<TicketConfig> ParseText(const std::string& yaml) {
    return ParseTicketConfig(YAML::Load(yaml)["tickets"], "autoheal.yaml", "/var/lib/autoheal");
}

TEST(TicketConfigTest, AbsentSectionIsOneSpoolSinkUnderStateDir) {
    auto config = ParseTicketConfig(YAML::Node(), "autoheal.yaml", "/var/lib/autoheal");
    ASSERT_TRUE(config.ok()) << config.error();
    EXPECT_EQ(config->retry_initial_seconds, 30);
    EXPECT_EQ(config->retry_max_seconds, 3600);
    ASSERT_EQ(config->sinks.size(), 1u);
    EXPECT_EQ(config->sinks[0].type, TicketSinkType::kSpool);
    EXPECT_EQ(config->sinks[0].name, "spool");
    EXPECT_EQ(config->sinks[0].dir, "/var/lib/autoheal/tickets");

    auto null_node = ParseText("tickets:\n");
    ASSERT_TRUE(null_node.ok()) << null_node.error();
    ASSERT_EQ(null_node->sinks.size(), 1u);
    EXPECT_EQ(null_node->sinks[0].dir, "/var/lib/autoheal/tickets");
}

TEST(TicketConfigTest, ParsesTheDocumentedExample) {
    auto config = ParseText(R"(
tickets:
  retry_initial_seconds: 20
  retry_max_seconds: 600
  sinks:
    - type: spool
      dir: /var/spool/autoheal/tickets
    - type: webhook
      name: tickets
      url: https://tickets.example.com/api/autoheal
      secret_file: /etc/autoheal/webhook.secret
      timeout_seconds: 7
    - type: command
      argv: [/usr/local/bin/open-ticket, --queue, gpu]
    - type: spool
      name: second
)");
    ASSERT_TRUE(config.ok()) << config.error();
    EXPECT_EQ(config->retry_initial_seconds, 20);
    EXPECT_EQ(config->retry_max_seconds, 600);
    ASSERT_EQ(config->sinks.size(), 4u);
    EXPECT_EQ(config->sinks[0].name, "spool");
    EXPECT_EQ(config->sinks[0].dir, "/var/spool/autoheal/tickets");
    EXPECT_EQ(config->sinks[1].type, TicketSinkType::kWebhook);
    EXPECT_EQ(config->sinks[1].name, "tickets");
    EXPECT_EQ(config->sinks[1].url, "https://tickets.example.com/api/autoheal");
    EXPECT_EQ(config->sinks[1].secret_file, "/etc/autoheal/webhook.secret");
    EXPECT_EQ(config->sinks[1].timeout_seconds, 7);
    EXPECT_EQ(config->sinks[2].type, TicketSinkType::kCommand);
    EXPECT_EQ(config->sinks[2].name, "command");
    EXPECT_EQ(config->sinks[2].argv,
              (std::vector<std::string>{"/usr/local/bin/open-ticket", "--queue", "gpu"}));
    EXPECT_EQ(config->sinks[2].timeout_seconds, kDefaultCommandTimeoutSeconds);
    EXPECT_EQ(config->sinks[3].dir, "/var/lib/autoheal/tickets");

    auto none = ParseText("tickets:\n  sinks: []\n");
    ASSERT_TRUE(none.ok()) << none.error();
    EXPECT_TRUE(none->sinks.empty());
}

TEST(TicketConfigTest, ErrorsNameLineAndColumn) {
    struct Case {
        std::string yaml;
        std::string error;  // expected prefix of the message
    };
    const std::vector<Case> cases = {
        {"tickets:\n  retry_initial: 5\n",
         "autoheal.yaml:2:3: unknown setting 'remediation.tickets.retry_initial'"},
        {"tickets:\n  retry_max_seconds: soon\n",
         "autoheal.yaml:2:22: remediation.tickets.retry_max_seconds: expected whole seconds"},
        {"tickets:\n  retry_initial_seconds: 60\n  retry_max_seconds: 30\n",
         "autoheal.yaml:2:3: remediation.tickets: retry_max_seconds is below"},
        {"tickets:\n  sinks:\n    - type: spool\n      url: http://x\n",
         "autoheal.yaml:4:7: unknown setting 'remediation.tickets.sinks[0].url' for a spool"},
        {"tickets:\n  sinks:\n    - type: email\n",
         "autoheal.yaml:3:13: remediation.tickets.sinks[0].type: expected spool, webhook or"},
        {"tickets:\n  sinks:\n    - dir: /x\n",
         "autoheal.yaml:3:7: remediation.tickets.sinks[0]: "
         "needs a type"},
        {"tickets:\n  sinks:\n    - type: spool\n    - type: webhook\n      url: ftp://x/y\n",
         "autoheal.yaml:5:12: remediation.tickets.sinks[1].url: expected an http:// or https://"},
        {"tickets:\n  sinks:\n    - type: webhook\n      timeout_seconds: 10\n",
         "autoheal.yaml:3:7: remediation.tickets.sinks[0]: a webhook sink needs url"},
        {"tickets:\n  sinks:\n    - {type: webhook, url: 'http://x', timeout_seconds: -1}\n",
         "autoheal.yaml:3:57: remediation.tickets.sinks[0].timeout_seconds: expected seconds"},
        {"tickets:\n  sinks:\n    - type: command\n      argv: [open-ticket, --queue]\n",
         "autoheal.yaml:4:14: remediation.tickets.sinks[0].argv: the program must be an "
         "absolute path"},
        {"tickets:\n  sinks:\n    - type: command\n      argv: []\n",
         "autoheal.yaml:4:13: remediation.tickets.sinks[0].argv: expected a list"},
        {"tickets:\n  sinks:\n    - type: spool\n    - type: spool\n      dir: /x\n",
         "autoheal.yaml:4:7: remediation.tickets.sinks: duplicate sink name 'spool'"},
        {"tickets:\n  sinks:\n    - type: spool\n      name: 'a b'\n",
         "autoheal.yaml:4:13: remediation.tickets.sinks[0].name: expected a name"},
        {"tickets:\n  sinks:\n    - type: spool\n      dir: relative/tickets\n",
         "autoheal.yaml:4:12: remediation.tickets.sinks[0].dir: expected an absolute path"},
        {"tickets:\n  sinks: {type: spool}\n",
         "autoheal.yaml:2:10: remediation.tickets.sinks: expected a list of sinks"},
        {"tickets: [spool]\n", "autoheal.yaml:1:10: remediation.tickets: expected a mapping"},
    };
    for (const Case& c : cases) {
        auto config = ParseText(c.yaml);
        ASSERT_FALSE(config.ok()) << c.yaml;
        EXPECT_THAT(config.error(), StartsWith(c.error)) << c.yaml;
    }
}

// ---- opening ----

TEST_F(TicketsTest, OpenTicketsOncePerSinkEvenWhenRunTwice) {
    const TicketConfig config =
        Config({Spool(dir_ / "spool"), Webhook("http://127.0.0.1:9/x"), Command({"/bin/true"})});
    const auto first = Open(config);
    ASSERT_EQ(first.size(), 3u);
    EXPECT_NE(first[0], first[1]);
    EXPECT_NE(first[1], first[2]);
    EXPECT_EQ(Row(first[0]).dedup_key, "gpu-node-7/0000:3b:00.0/rma@spool");
    EXPECT_EQ(Row(first[0]).sink, "spool");
    EXPECT_EQ(Row(first[1]).dedup_key, "gpu-node-7/0000:3b:00.0/rma@tickets");
    EXPECT_EQ(Row(first[2]).sink, "cmd");

    // The epilog runs again for the same fault: nothing new.
    EXPECT_EQ(Open(config), first);
    auto due = store_->DueTickets(kNow, 100);
    ASSERT_TRUE(due.ok()) << due.error();
    EXPECT_EQ(due->size(), 3u);

    EXPECT_FALSE(OpenTickets(*store_, incident_, "rma", "", kPayload, config).ok());
}

// ---- spool ----

TEST_F(TicketsTest, SpoolWritesOneJsonFilePerTicketEvenWhenDeliveredTwice) {
    const fs::path spool = dir_ / "var" / "spool" / "tickets";  // missing: created 0750
    const TicketConfig config = Config({Spool(spool)});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);

    const auto summary = Deliver(config, kNow);
    EXPECT_EQ(summary.delivered, 1);
    EXPECT_EQ(summary.failed, 0);
    EXPECT_TRUE(summary.errors.empty()) << summary.errors[0];
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    EXPECT_EQ(Mode(spool), 0750u);
    auto files = Files(spool);
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(ReadFile(files[0]), kPayload);
    EXPECT_EQ(Mode(files[0]), 0640u);
    EXPECT_THAT(files[0].filename().string(), StartsWith("rma-"));
    EXPECT_EQ(files[0].extension(), ".json");
    EXPECT_EQ(files[0].string(), SpoolFilePath(config.sinks[0], Row(ids[0])));

    // Delivered tickets are not delivered again...
    EXPECT_EQ(Deliver(config, kNow + 1000).delivered, 0);
    // ...and one delivered again after a crash lost its record writes the same file.
    ForgetDelivery(ids[0]);
    EXPECT_EQ(Deliver(config, kNow + 2000).delivered, 1);
    files = Files(spool);
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(ReadFile(files[0]), kPayload);
}

TEST_F(TicketsTest, SpoolFileNamesAreSafeAndDistinct) {
    TicketSinkConfig sink = Spool("/spool");
    TicketRow plain;
    plain.kind = "rma";
    plain.dedup_key = "gpu-node-7_0000:3b:00.0@spool";
    EXPECT_EQ(SpoolFilePath(sink, plain), "/spool/rma-gpu-node-7_0000:3b:00.0@spool.json");

    TicketRow slash = plain;
    slash.dedup_key = "77/gpu-node-7/../0000:3b:00.0@spool";
    TicketRow underscore = plain;
    underscore.dedup_key = "77_gpu-node-7_.._0000:3b:00.0@spool";
    TicketRow long_key = plain;
    long_key.dedup_key = std::string(300, 'a');
    for (const TicketRow* t : {&slash, &underscore, &long_key}) {
        const std::string path = SpoolFilePath(sink, *t);
        const std::string name = path.substr(std::string("/spool/").size());
        EXPECT_THAT(path, StartsWith("/spool/rma-"));
        EXPECT_EQ(name.find('/'), std::string::npos) << path;
        EXPECT_LT(name.size(), 200u) << path;
    }
    EXPECT_NE(SpoolFilePath(sink, slash), SpoolFilePath(sink, underscore));
}

TEST_F(TicketsTest, SpoolUnwritableFolderIsAFailureRetriedNotLost) {
    const fs::path blocker = dir_ / "blocker";
    WriteFile(blocker, "a file where the spool's parent should be", fs::perms::owner_all);
    const TicketConfig config = Config({Spool(blocker / "tickets")});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);

    const auto failed = Deliver(config, kNow);
    EXPECT_EQ(failed.delivered, 0);
    EXPECT_EQ(failed.failed, 1);
    TicketRow row = Row(ids[0]);
    EXPECT_EQ(row.state, "failed");
    EXPECT_EQ(row.attempts, 1);
    EXPECT_EQ(row.next_attempt, kNow + 30);
    EXPECT_THAT(row.last_error, StartsWith("spool spool: "));
    EXPECT_THAT(row.last_error, HasSubstr((blocker / "tickets").string()));

    fs::remove(blocker);
    EXPECT_EQ(Deliver(config, kNow + 29).delivered, 0);  // not due yet
    EXPECT_EQ(Deliver(config, kNow + 30).delivered, 1);
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    EXPECT_EQ(Files(blocker / "tickets").size(), 1u);
}

// ---- webhook ----

TEST_F(TicketsTest, WebhookPostsThePayloadWithTheBearerSecret) {
    HttpServer server({200});
    const fs::path secret = dir_ / "webhook.secret";
    WriteFile(secret, "s3cret-token\n", fs::perms::owner_read | fs::perms::owner_write);
    const TicketConfig config = Config({Webhook(server.url(), secret.string())});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);

    const auto summary = Deliver(config, kNow);
    EXPECT_EQ(summary.delivered, 1);
    EXPECT_EQ(summary.failed, 0);
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/api/autoheal");
    EXPECT_EQ(requests[0].body, kPayload);
    EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
    EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer s3cret-token");
}

TEST_F(TicketsTest, WebhookDownDuringTheFaultIsDeliveredOnceItIsBack) {
    HttpServer server({503, 200});
    const TicketConfig config = Config({Webhook(server.url())});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);

    const auto down = Deliver(config, kNow);
    EXPECT_EQ(down.delivered, 0);
    EXPECT_EQ(down.failed, 1);
    ASSERT_EQ(down.errors.size(), 1u);
    EXPECT_THAT(down.errors[0], HasSubstr("webhook tickets: HTTP 503"));
    TicketRow row = Row(ids[0]);
    EXPECT_EQ(row.state, "failed");
    EXPECT_EQ(row.attempts, 1);
    EXPECT_EQ(row.next_attempt, kNow + 30);
    EXPECT_EQ(row.last_error, "webhook tickets: HTTP 503");

    EXPECT_EQ(Deliver(config, kNow + 10).delivered, 0);  // backing off
    EXPECT_EQ(server.requests().size(), 1u);

    const auto back = Deliver(config, kNow + 30);
    EXPECT_EQ(back.delivered, 1);
    EXPECT_EQ(back.failed, 0);
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    EXPECT_EQ(Deliver(config, kNow + 100000).delivered, 0);
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0].body, kPayload);
    EXPECT_EQ(requests[1].body, kPayload);
}

// The ticket system is down for an hour of (simulated) time while faults keep coming: the
// controller epilog tries the due tickets after every job (here every minute), each attempt
// fails with a clear reason and backs off, nothing is lost, and once the system is back every
// ticket is delivered exactly once.
TEST_F(TicketsTest, WebhookDownForAnHourLosesNothingAndDeliversEachOnce) {
    int port = 0;
    {
        HttpServer probe({200});
        port = probe.port();  // a free port, closed again: nothing listens there for the hour
    }
    const TicketConfig config =
        Config({Webhook("http://127.0.0.1:" + std::to_string(port) + "/t")});
    std::vector<std::int64_t> ids = Open(config, "fault-1");
    int attempts = 0;
    for (std::int64_t t = kNow; t < kNow + 3600; t += 60) {
        if (t == kNow + 1800) {  // a second fault half-way through the outage
            for (std::int64_t id : Open(config, "fault-2")) ids.push_back(id);
        }
        const auto summary = Deliver(config, t);
        EXPECT_EQ(summary.delivered, 0);
        attempts += summary.failed;
        for (const std::string& e : summary.errors) {
            EXPECT_THAT(e, HasSubstr("webhook tickets: "));  // names the sink and the reason
        }
    }
    ASSERT_EQ(ids.size(), 2u);
    // Backed off (30 s doubling, capped): far fewer attempts than the 60 epilog runs.
    EXPECT_GE(attempts, 8);
    EXPECT_LE(attempts, 14);
    for (std::int64_t id : ids) EXPECT_EQ(Row(id).state, "failed");

    HttpServer server({200}, port);
    int delivered = 0;
    for (std::int64_t t = kNow + 3600; t < kNow + 3LL * 3600; t += 60) {
        delivered += Deliver(config, t).delivered;
    }
    EXPECT_EQ(delivered, 2);
    for (std::int64_t id : ids) EXPECT_EQ(Row(id).state, "delivered");
    EXPECT_EQ(server.requests().size(), 2u);
}

// The spool on a full disk: the delivery fails with the reason, leaves no partial file, and the
// ticket is delivered once there is room again.
TEST_F(TicketsTest, SpoolOnAFullDiskIsRetriedNotLost) {
    const fs::path mnt = dir_ / "full";
    fs::create_directories(mnt);
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
        GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                     << "): needs root";
    }
    struct Unmount {
        fs::path p;
        ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{mnt};
    fs::create_directories(mnt / "tickets");
    {
        std::ofstream filler(mnt / "filler", std::ios::binary);
        const std::string block(4096, 'x');
        while (filler.write(block.data(), static_cast<std::streamsize>(block.size()))) {
        }
    }
    const TicketConfig config = Config({Spool(mnt / "tickets")});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);
    const auto full = Deliver(config, kNow);
    EXPECT_EQ(full.failed, 1);
    EXPECT_THAT(Row(ids[0]).last_error, HasSubstr("No space left on device"));
    EXPECT_TRUE(Files(mnt / "tickets").empty());  // no partial ticket left behind

    fs::remove(mnt / "filler");
    EXPECT_EQ(Deliver(config, Row(ids[0]).next_attempt).delivered, 1);
    const auto files = Files(mnt / "tickets");
    ASSERT_EQ(files.size(), 1u);
    std::ifstream in(files[0]);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("gpu-node-7"));
}

TEST_F(TicketsTest, WebhookNotListeningThenListeningIsDelivered) {
    const int port = FreePort();
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/api/autoheal";
    const TicketConfig config = Config({Webhook(url)});
    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);

    const auto refused = Deliver(config, kNow);
    EXPECT_EQ(refused.failed, 1);
    TicketRow row = Row(ids[0]);
    EXPECT_EQ(row.attempts, 1);
    EXPECT_EQ(row.next_attempt, kNow + 30);
    // libcurl's own text for the error, which its releases word differently.
    EXPECT_THAT(row.last_error, StartsWith(std::string("webhook tickets: ") +
                                           curl_easy_strerror(CURLE_COULDNT_CONNECT)));

    HttpServer server({200}, port);
    ASSERT_EQ(server.port(), port);
    EXPECT_EQ(Deliver(config, kNow + 30).delivered, 1);
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    ASSERT_EQ(server.requests().size(), 1u);
    EXPECT_EQ(server.requests()[0].body, kPayload);
}

TEST_F(TicketsTest, WebhookThatNeverAnswersTimesOut) {
    HttpServer server({200}, 0, /*hang=*/true);
    const TicketConfig config = Config({Webhook(server.url(), "", 0.5)});
    const auto ids = Open(config);
    const auto start = std::chrono::steady_clock::now();
    const auto summary = Deliver(config, kNow);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(summary.failed, 1);
    EXPECT_LT(elapsed, std::chrono::seconds(5));
    EXPECT_THAT(Row(ids[0]).last_error, StartsWith("webhook tickets: Timeout was reached"));
}

TEST_F(TicketsTest, WebhookRedirectIsAFailureAndNotFollowed) {
    HttpServer server({302, 200});
    const TicketConfig config = Config({Webhook(server.url())});
    const auto ids = Open(config);
    EXPECT_EQ(Deliver(config, kNow).failed, 1);
    EXPECT_THAT(Row(ids[0]).last_error, StartsWith("webhook tickets: HTTP 302"));
    EXPECT_EQ(server.requests().size(), 1u);  // the Location was not fetched
}

TEST_F(TicketsTest, SecretFileTooOpenIsRefusedAndNeverSent) {
    HttpServer server({200});
    const fs::path secret = dir_ / "webhook.secret";
    WriteFile(secret, "s3cret-token\n",
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                  fs::perms::others_read);  // 0644

    auto read = ReadWebhookSecret(secret.string());
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error(), StartsWith("secret file " + secret.string() + ": "));
    EXPECT_THAT(read.error(), HasSubstr("0644"));
    EXPECT_THAT(read.error(), Not(HasSubstr("s3cret")));

    const TicketConfig config = Config({Webhook(server.url(), secret.string())});
    const auto ids = Open(config);
    const auto summary = Deliver(config, kNow);
    EXPECT_EQ(summary.failed, 1);
    EXPECT_EQ(server.requests().size(), 0u);
    const TicketRow row = Row(ids[0]);
    EXPECT_THAT(row.last_error, StartsWith("webhook tickets: secret file " + secret.string()));
    EXPECT_THAT(row.last_error, Not(HasSubstr("s3cret")));

    // Fixed by the admin: delivered at the next attempt.
    fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(Deliver(config, row.next_attempt).delivered, 1);
    ASSERT_EQ(server.requests().size(), 1u);
    EXPECT_EQ(server.requests()[0].headers.at("authorization"), "Bearer s3cret-token");
}

TEST_F(TicketsTest, SecretFileMustBeAPlainFile) {
    const fs::path secret = dir_ / "webhook.secret";
    WriteFile(secret, "s3cret-token\n", fs::perms::owner_read);  // 0400 is stricter: fine
    auto ok = ReadWebhookSecret(secret.string());
    ASSERT_TRUE(ok.ok()) << ok.error();
    EXPECT_EQ(*ok, "s3cret-token");

    const fs::path link = dir_ / "link.secret";
    fs::create_symlink(secret, link);
    auto via_link = ReadWebhookSecret(link.string());
    ASSERT_FALSE(via_link.ok());
    EXPECT_THAT(via_link.error(), HasSubstr("symbolic link"));

    auto folder = ReadWebhookSecret(dir_.string());
    ASSERT_FALSE(folder.ok());
    EXPECT_THAT(folder.error(), StartsWith("secret file " + dir_.string()));

    const fs::path empty = dir_ / "empty.secret";
    WriteFile(empty, "\n", fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_FALSE(ReadWebhookSecret(empty.string()).ok());

    const fs::path two_lines = dir_ / "two.secret";
    WriteFile(two_lines, "abc\r\nAuthorization: x\n", fs::perms::owner_read);
    EXPECT_FALSE(ReadWebhookSecret(two_lines.string()).ok());

    EXPECT_FALSE(ReadWebhookSecret((dir_ / "missing").string()).ok());
}

// ---- backoff ----

TEST_F(TicketsTest, BackoffDoublesAndIsCapped) {
    const TicketConfig config = Config({Command({"/bin/false"})}, 30, 100);
    EXPECT_EQ(TicketRetryDelay(config, 0), 30);
    EXPECT_EQ(TicketRetryDelay(config, 1), 60);
    EXPECT_EQ(TicketRetryDelay(config, 2), 100);
    EXPECT_EQ(TicketRetryDelay(config, 1000000), 100);
    const TicketConfig wide = Config({}, 30, std::numeric_limits<std::int64_t>::max());
    EXPECT_GT(TicketRetryDelay(wide, 80), 0);  // no overflow

    const auto ids = Open(config);
    ASSERT_EQ(ids.size(), 1u);
    std::int64_t now = kNow;
    const std::vector<std::int64_t> waits = {30, 60, 100, 100};
    for (std::size_t i = 0; i < waits.size(); ++i) {
        EXPECT_EQ(Deliver(config, now).failed, 1) << "attempt " << i + 1;
        const TicketRow row = Row(ids[0]);
        EXPECT_EQ(row.attempts, static_cast<int>(i + 1));
        EXPECT_EQ(row.next_attempt, now + waits[i]) << "attempt " << i + 1;
        EXPECT_EQ(Deliver(config, row.next_attempt - 1).failed, 0);  // not due before
        now = row.next_attempt;
    }
}

// ---- command ----

TEST_F(TicketsTest, CommandGetsThePayloadOnStdin) {
    const fs::path out = dir_ / "ticket.json";
    const TicketConfig config = Config({Command({"/bin/sh", "-c", "cat > \"$0\"", out.string()})});
    const auto ids = Open(config);
    const auto summary = Deliver(config, kNow);
    EXPECT_EQ(summary.delivered, 1);
    EXPECT_EQ(Row(ids[0]).state, "delivered");
    EXPECT_EQ(ReadFile(out), kPayload);
}

TEST_F(TicketsTest, CommandGetsALargePayloadWhole) {
    const fs::path out = dir_ / "big.json";
    TicketRow ticket;
    ticket.id = 1;
    ticket.kind = "rma";
    ticket.dedup_key = "big";
    ticket.payload_json = "{\"evidence\":\"" + std::string(1 << 20, 'x') + "\"}";
    auto result = DeliverTicket(Command({"/bin/sh", "-c", "cat > \"$0\"", out.string()}), ticket);
    ASSERT_TRUE(result.ok()) << result.error();
    EXPECT_EQ(ReadFile(out), ticket.payload_json);
}

TEST_F(TicketsTest, CommandNonZeroExitIsAFailure) {
    const TicketConfig config = Config(
        {Command({"/bin/sh", "-c", "cat > /dev/null; echo 'queue gpu is full' >&2; exit 3"})});
    const auto ids = Open(config);
    const auto summary = Deliver(config, kNow);
    EXPECT_EQ(summary.delivered, 0);
    EXPECT_EQ(summary.failed, 1);
    const TicketRow row = Row(ids[0]);
    EXPECT_EQ(row.state, "failed");
    EXPECT_EQ(row.last_error, "command cmd: exit 3: queue gpu is full");
}

TEST_F(TicketsTest, CommandThatExitsWithoutReadingStdinStillCounts) {
    // A large payload the command never reads: no SIGPIPE kills this process.
    TicketRow ticket;
    ticket.payload_json = std::string(1 << 20, 'x');
    EXPECT_TRUE(DeliverTicket(Command({"/bin/true"}), ticket).ok());
    auto failed = DeliverTicket(Command({"/bin/false"}), ticket);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error(), "command cmd: exit 1");
}

TEST_F(TicketsTest, CommandPastItsTimeoutIsKilledWithItsProcessGroup) {
    const fs::path pid_file = dir_ / "grandchild.pid";
    const TicketConfig config = Config(
        {Command({"/bin/sh", "-c", "sleep 30 & echo $! > \"$0\"; wait", pid_file.string()}, 0.5)});
    const auto ids = Open(config);
    const auto start = std::chrono::steady_clock::now();
    const auto summary = Deliver(config, kNow);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(summary.failed, 1);
    EXPECT_THAT(Row(ids[0]).last_error,
                StartsWith("command cmd: /bin/sh: timed out after 0.5 s (process group killed)"));

    // The background sleep (same process group) is gone too: no process, or a zombie left for
    // init to reap.
    const std::string pid = ReadFile(pid_file);
    ASSERT_FALSE(pid.empty());
    const fs::path stat = "/proc/" + std::to_string(std::stol(pid)) + "/stat";
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        const std::string s = ReadFile(stat);
        const auto paren = s.rfind(')');
        gone = s.empty() ||
               (paren != std::string::npos && s.size() > paren + 2 && s[paren + 2] == 'Z');
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the grandchild " << pid << " survived";
}

TEST_F(TicketsTest, CommandThatCannotRunIsAFailure) {
    TicketRow ticket;
    auto result = DeliverTicket(Command({(dir_ / "no-such-program").string()}), ticket);
    ASSERT_FALSE(result.ok());
    EXPECT_THAT(result.error(), StartsWith("command cmd: " + (dir_ / "no-such-program").string() +
                                           ": cannot run: "));
    EXPECT_EQ(result.code(), ErrorCode::kNotFound);
}

// ---- the delivery loop ----

TEST_F(TicketsTest, TicketOfAnUnconfiguredSinkStaysPendingAndHidesNothing) {
    const TicketConfig before = Config({Webhook("http://127.0.0.1:9/x")});
    const auto old_ids = Open(before, "older-fault");
    ASSERT_EQ(old_ids.size(), 1u);
    const TicketConfig now_config = Config({Spool(dir_ / "spool")});
    const auto ids = Open(now_config);
    ASSERT_EQ(ids.size(), 1u);

    // limit 1: the older ticket of the removed sink comes first and must not use it up.
    const auto summary = Deliver(now_config, kNow, /*limit=*/1);
    EXPECT_EQ(summary.delivered, 1);
    EXPECT_EQ(summary.skipped, 1);
    ASSERT_EQ(summary.errors.size(), 1u);
    EXPECT_THAT(summary.errors[0], HasSubstr("sink=tickets"));
    EXPECT_THAT(summary.errors[0], HasSubstr("not configured"));
    const TicketRow old_row = Row(old_ids[0]);
    EXPECT_EQ(old_row.state, "pending");
    EXPECT_EQ(old_row.attempts, 0);
    EXPECT_EQ(Row(ids[0]).state, "delivered");

    // Configured again: delivered (nothing was lost).
    HttpServer server({200});
    TicketConfig again = Config({Webhook(server.url())});
    EXPECT_EQ(Deliver(again, kNow + 1).delivered, 1);
    EXPECT_EQ(Row(old_ids[0]).state, "delivered");
}

TEST_F(TicketsTest, LimitAndBudgetBoundTheRun) {
    const TicketConfig config = Config({Spool(dir_ / "a", "a"), Spool(dir_ / "b", "b")});
    ASSERT_EQ(Open(config).size(), 2u);

    const auto none = Deliver(config, kNow, 100, /*budget=*/0);
    EXPECT_EQ(none.delivered, 0);
    EXPECT_TRUE(none.budget_spent);

    const auto one = Deliver(config, kNow, /*limit=*/1);
    EXPECT_EQ(one.delivered, 1);
    EXPECT_FALSE(one.budget_spent);

    const auto rest = Deliver(config, kNow, 100);
    EXPECT_EQ(rest.delivered, 1);
    EXPECT_EQ(Files(dir_ / "a").size() + Files(dir_ / "b").size(), 2u);
}

}  // namespace
}  // namespace autoheal::remediation
