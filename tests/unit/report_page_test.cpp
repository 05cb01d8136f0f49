// `autoheal report --html` as an admin uses it: a store with a month of synthetic runs and
// incidents, the page written by the real program, then opened in headless Chromium (Debian's
// `chromium`, installed by scripts/deps.sh). A page passes when Chromium renders it with no
// console message (no script error, no Content-Security-Policy violation), no request for
// anything outside the file, and a DOM that holds the report's tables and charts.
//
// Chromium runs with its background services off, every host name resolving to nothing and a
// proxy on 127.0.0.1:9 (closed), so nothing leaves this machine; the net log shows what the page
// itself asked for (requests Chromium makes for itself have no initiator origin).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autoheal/remediation/incident_store.h"
#include "subprocess.h"

namespace autoheal::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kCli = AUTOHEAL_CLI;
constexpr std::int64_t kH = 3600;

std::string ReadAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool Has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

struct BrowserResult {
    int exit_code = -1;
    std::string dom;
    std::vector<std::string> problems;  // console messages and requests the page made
};

// Opens `page` in headless Chromium: --dump-dom (DOM, console, net log), then when asked
// --screenshot (the page is laid out and painted); each under a 60 s limit.
BrowserResult OpenInChromium(const fs::path& page, const fs::path& work, bool screenshot) {
    BrowserResult out;
    const fs::path profile = work / "chromium-profile";
    const fs::path net_log = work / "net-log.json";
    fs::remove_all(profile);
    fs::remove(net_log);
    const std::vector<std::string> common = {"timeout",
                                             "--kill-after=5",
                                             "60",
                                             "chromium",
                                             "--headless",
                                             "--no-sandbox",
                                             "--disable-gpu",
                                             "--enable-logging=stderr",
                                             "--v=0",
                                             "--user-data-dir=" + profile.string(),
                                             "--no-first-run",
                                             "--disable-extensions",
                                             "--disable-background-networking",
                                             "--disable-component-update",
                                             "--disable-sync",
                                             "--disable-default-apps",
                                             "--host-resolver-rules=MAP * ~NOTFOUND",
                                             "--proxy-server=127.0.0.1:9",
                                             "--window-size=1200,3000"};
    std::vector<std::string> dump = common;
    dump.push_back("--log-net-log=" + net_log.string());
    dump.push_back("--dump-dom");
    dump.push_back("file://" + page.string());
    CommandResult r = RunProcess(dump);
    out.exit_code = r.exit_code;
    out.dom = r.out;
    if (r.exit_code != 0) out.problems.push_back("chromium exited " + std::to_string(r.exit_code));
    std::istringstream err(r.err);
    for (std::string line; std::getline(err, line);) {
        // "[pid:tid:time:INFO:CONSOLE:1] "Uncaught ReferenceError: ...", source: file:///..."
        if (line.find(":CONSOLE") != std::string::npos) out.problems.push_back(line);
    }
    auto log = nlohmann::json::parse(ReadAll(net_log), nullptr, false);
    if (log.is_discarded() || !log.contains("events")) {
        out.problems.push_back("no readable net log at " + net_log.string());
    } else {
        for (const auto& e : log["events"]) {
            if (!e.contains("params") || !e["params"].is_object()) continue;
            const auto& p = e["params"];
            if (!p.contains("url") || !p.contains("initiator")) continue;
            if (p["initiator"] == "not an origin") continue;  // Chromium's own requests
            out.problems.push_back("the page requested " + p["url"].get<std::string>());
        }
    }

    if (!screenshot) return out;
    const fs::path png = work / "page.png";
    fs::remove(png);
    std::vector<std::string> shot = common;
    shot.push_back("--screenshot=" + png.string());
    shot.push_back("file://" + page.string());
    CommandResult s = RunProcess(shot);
    if (s.exit_code != 0 || !fs::exists(png) || fs::file_size(png) < 10000)
        out.problems.push_back("no screenshot (chromium exited " + std::to_string(s.exit_code) +
                               "): " + s.err.substr(0, 500));
    return out;
}

class ReportPageTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // The page does not depend on the Slurm release: the roots of the other releases
        // (scripts/slurm-root.sh) carry no browser, and the host's run checks the page. On the
        // host a missing chromium fails the tests (scripts/deps.sh installs it).
        if (fs::exists("/etc/autoheal-slurm-root") && !fs::exists("/usr/bin/chromium")) {
            GTEST_SKIP()
                << "no chromium in this Slurm release's root; the host's run checks the page";
        }
        dir_ = fs::temp_directory_path() / ("autoheal-report-page-" + std::to_string(getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "state");
        std::ofstream(dir_ / "autoheal.yaml") << "state_dir: " << (dir_ / "state").string() << "\n";
    }
    void TearDown() override {
        if (!HasFailure()) fs::remove_all(dir_);
    }

    std::vector<std::string> Env() const {
        return {"AUTOHEAL_CONFIG=" + (dir_ / "autoheal.yaml").string()};
    }

    // A month of runs on 16 nodes: 17 interruptions of 7 causes (GPU first, as in Llama 3's
    // Table 5), 3 of the jobs' own errors, 20 good runs; requeued runs restart 3 to 12 minutes
    // later; a node named "<script>alert(1)</script>" is blamed twice.
    void FillStore() {
        auto opened = remediation::IncidentStore::Open((dir_ / "state/incidents.sqlite").string());
        ASSERT_TRUE(opened.ok()) << opened.error();
        auto& store = *opened.value();
        const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
        const std::int64_t t0 = now - 29LL * 24 * kH;
        struct Failure {
            const char* cause;
            const char* outcome;
        };
        const std::vector<Failure> failures = {
            {"faulty_gpu", "blamed"},
            {"faulty_gpu", "blamed"},
            {"faulty_gpu", "blamed"},
            {"faulty_gpu", "blamed"},
            {"faulty_gpu", "blamed"},
            {"faulty_gpu", "blamed"},
            {"gpu_hbm_memory", "blamed"},
            {"gpu_hbm_memory", "blamed"},
            {"gpu_hbm_memory", "blamed"},
            {"dependency", "other"},
            {"dependency", "other"},
            {"network_switch_cable", "blamed"},
            {"network_switch_cable", "blamed"},
            {"host_maintenance", "blamed"},
            {"nccl_timeout", "unexplained"},
            {"nic", "blamed"},
            {"gpu_sram_memory", "blamed"},
        };
        int job = 1000;
        for (std::size_t i = 0; i < failures.size(); ++i) {
            const std::int64_t start = t0 + static_cast<std::int64_t>(i) * 40 * kH;
            const std::int64_t end = start + (5 + static_cast<std::int64_t>(i % 7)) * kH;
            const std::string id = std::to_string(job++);
            std::string node = "gpu-a" + std::to_string(10 + i % 16);
            if (i == 3 || i == 8) node = "<script>alert(1)</script>";
            if (i == 0 || i == 5) node = "gpu-a01";
            remediation::RunRecord r;
            r.job = id;
            r.run = 0;
            r.nodes = 16 + static_cast<int>(i % 4) * 16;
            r.node_list = "gpu-a[01-64]";
            r.start_time = start;
            r.end_time = end;
            r.decided_at = end + 5;
            r.outcome = failures[i].outcome;
            r.cause = failures[i].cause;
            r.culprits = std::string(failures[i].outcome) == "blamed" ? node : "";
            r.requeued = i % 3 != 2;
            ASSERT_TRUE(store.RecordRun(r).ok());
            if (r.requeued) {
                remediation::RunRecord next = r;
                next.run = 1;
                next.start_time = end + (3 + static_cast<std::int64_t>(i % 10)) * 60;
                next.end_time = next.start_time + 20 * kH;
                next.decided_at = next.end_time + 5;
                next.outcome = "ok";
                next.cause = "unknown";
                next.culprits = "";
                next.requeued = false;
                ASSERT_TRUE(store.RecordRun(next).ok());
            }
            if (r.culprits.empty()) continue;
            remediation::IncidentRecord inc;
            inc.time = end + 5;
            inc.job = id;
            inc.node = node;
            inc.gpu = "0000:3b:00.0";
            inc.gpu_serial = node == "gpu-a01" ? "1654024197323" : "";
            inc.cause = failures[i].cause;
            inc.rule = "test-rule";
            inc.confidence = 0.9;
            inc.evidence_json = R"([{"line":1,"signature":"xid","text":"<script>x</script>"}])";
            inc.dedup_key = id + "/run0/" + node;
            ASSERT_TRUE(store.RecordIncident(inc).ok());
        }
        for (int i = 0; i < 23; ++i) {
            remediation::RunRecord r;
            r.job = std::to_string(job++);
            r.nodes = 8 + i % 5;
            r.start_time = t0 + static_cast<std::int64_t>(i) * 25 * kH;
            r.end_time = r.start_time + 12 * kH;
            r.decided_at = r.end_time + 5;
            r.outcome = i % 8 == 0 ? "own" : "ok";
            r.cause = i % 8 == 0 ? "user_error" : "unknown";
            ASSERT_TRUE(store.RecordRun(r).ok());
        }
    }

    fs::path dir_;
};

TEST_F(ReportPageTest, RendersInChromiumWithNoErrors) {
    FillStore();
    const fs::path page = dir_ / "report.html";
    CommandResult r =
        RunProcess({kCli, "report", "--since", "30d", "--html", page.string()}, Env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("17 interruptions"));
    const std::string html = ReadAll(page);
    EXPECT_TRUE(Has(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    for (const char* banned : {"<script", "http:", "https:", "url(", "@import"})
        EXPECT_FALSE(Has(html, banned)) << "the page holds " << banned;

    BrowserResult b = OpenInChromium(page, dir_, true);
    EXPECT_TRUE(b.problems.empty()) << ::testing::PrintToString(b.problems);
    for (const char* expected :
         {"<table id=\"causes\">", "<table id=\"categories\">", "<table id=\"mtbf-table\">",
          "<table id=\"node-offenders\">", "<table id=\"gpu-offenders\">",
          "<table id=\"ettr-table\">", "<svg", "Faulty GPU", "Content-Security-Policy",
          // The hostile node name is text in a cell, not an element.
          "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"})
        EXPECT_TRUE(Has(b.dom, expected)) << "the DOM lacks " << expected;
    EXPECT_FALSE(Has(b.dom, "<script")) << "the DOM has a script element";
}

TEST_F(ReportPageTest, PlainTextAndJsonFromTheSameStore) {
    FillStore();
    CommandResult t = RunProcess({kCli, "report", "--since", "30d", "--job-nodes", "512"}, Env());
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_THAT(t.out, HasSubstr("Faulty GPU"));
    EXPECT_THAT(t.out, HasSubstr("ETTR for a 512-node job (--job-nodes)"));
    CommandResult j = RunProcess({kCli, "report", "--json"}, Env());
    ASSERT_EQ(j.exit_code, 0) << j.err;
    auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["interruptions"], 17);
    EXPECT_EQ(doc["outcomes"]["own"], 3);
    EXPECT_EQ(doc["causes"][0]["cause"], "faulty_gpu");
    EXPECT_EQ(doc["causes"][0]["interruptions"], 6);
    EXPECT_TRUE(doc["ettr"]["restart_overhead_measured"].get<bool>());
    EXPECT_EQ(doc["node_offenders"][0]["incidents"], 2);
    EXPECT_EQ(RunProcess({kCli, "report", "--since", "soon"}, Env()).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "report", "--ckpt-interval", "0"}, Env()).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "report", "--job-nodes", "-3"}, Env()).exit_code, 2);
}

// The check itself must be able to fail: pages with a blocked load, a script error and, without
// the page's policy, a request for a remote image are each caught.
TEST_F(ReportPageTest, TheBrowserCheckCatchesBrokenPages) {
    const std::string csp =
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">";
    struct Case {
        const char* name;
        std::string html;
        const char* expect;
    };
    const std::vector<Case> cases = {
        {"blocked-image",
         "<!DOCTYPE html><html><head>" + csp +
             "</head><body><svg></svg><img src=\"http://report-test.invalid/x.png\"></body></html>",
         "Content Security Policy"},
        {"script-error",
         "<!DOCTYPE html><html><head></head><body><script>no_such_function()</script></body>"
         "</html>",
         "no_such_function"},
        {"remote-image",
         "<!DOCTYPE html><html><head></head><body><img "
         "src=\"http://report-test.invalid/y.png\"></body></html>",
         "the page requested http://report-test.invalid/y.png"},
    };
    for (const Case& c : cases) {
        const fs::path page = dir_ / (std::string(c.name) + ".html");
        std::ofstream(page) << c.html;
        BrowserResult b = OpenInChromium(page, dir_, false);
        EXPECT_THAT(::testing::PrintToString(b.problems), HasSubstr(c.expect)) << c.name;
    }
}

}  // namespace
}  // namespace autoheal::testing
