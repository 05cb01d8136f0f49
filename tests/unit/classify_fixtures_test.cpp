// Golden tests: tests/fixtures/classify/NAME.log is classified and compared with NAME.json,
// which lists only the keys it cares about (cause, actions, requeue, rule, culprit.gpu,
// culprit.gpu_index, culprit.rank (null: none named), culprit.node, and "node" / "job" / "history"
// inputs).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "diag_test_util.h"

namespace autoheal::diag::testing {
namespace {

struct Fixture {
    std::string name;
    std::string log;
    nlohmann::json expect;
};

std::vector<Fixture> LoadFixtures() {
    std::vector<Fixture> out;
    const std::filesystem::path dir =
        std::filesystem::path(AUTOHEAL_SOURCE_DIR) / "tests/fixtures/classify";
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".log") continue;
        auto expect_path = entry.path();
        expect_path.replace_extension(".json");
        out.push_back(Fixture{entry.path().stem().string(), ReadFile(entry.path().string()),
                              nlohmann::json::parse(ReadFile(expect_path.string()))});
    }
    std::sort(out.begin(), out.end(),
              [](const Fixture& a, const Fixture& b) { return a.name < b.name; });
    return out;
}

DiagnoseOptions OptionsFor(const Fixture& f) {
    DiagnoseOptions options;
    options.now = 1'800'000'000;
    if (f.expect.contains("node")) options.node = f.expect["node"];
    if (f.expect.contains("job")) options.job = f.expect["job"];
    if (f.expect.contains("history")) {
        for (const auto& h : f.expect["history"]) {
            HistoryRecord r;
            r.time = options.now - h.value("age_seconds", 3600);
            r.node = h.value("node", "");
            r.gpu = h.value("gpu", "");
            r.rule = h.value("rule", "");
            r.job = h.value("job", "");
            options.history.push_back(r);
        }
    }
    return options;
}

// `text` with each line passed through `f` (the line without its '\n'; the '\n' kept).
std::string EachLine(const std::string& text, const std::function<std::string(std::string)>& f) {
    std::string out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::size_t end = nl == std::string::npos ? text.size() : nl;
        out += f(text.substr(pos, end - pos));
        if (nl != std::string::npos) out += '\n';
        pos = end + 1;
    }
    return out;
}

class ClassifyFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(ClassifyFixture, MatchesExpectation) {
    const Fixture& f = GetParam();
    const DiagnoseOptions options = OptionsFor(f);
    Diagnosis d = Classify(f.log, options);
    const nlohmann::json& e = f.expect;
    if (e.contains("cause")) {
        EXPECT_EQ(d.cause, e["cause"].get<std::string>());
    }
    if (e.contains("rule")) {
        EXPECT_EQ(d.rule, e["rule"].get<std::string>());
    }
    if (e.contains("actions")) {
        EXPECT_EQ(d.actions, e["actions"].get<std::vector<std::string>>());
    }
    if (e.contains("requeue")) {
        EXPECT_EQ(d.requeue, e["requeue"].get<bool>());
    }
    if (e.contains("culprit")) {
        const auto& c = e["culprit"];
        if (c.contains("gpu")) {
            EXPECT_EQ(d.culprit.gpu, c["gpu"].get<std::string>());
        }
        if (c.contains("node")) {
            EXPECT_EQ(d.culprit.node, c["node"].get<std::string>());
        }
        if (c.contains("gpu_index")) {
            ASSERT_TRUE(d.culprit.gpu_index.has_value());
            EXPECT_EQ(*d.culprit.gpu_index, c["gpu_index"].get<int>());
        }
        if (c.contains("rank") && c["rank"].is_null()) {
            EXPECT_FALSE(d.culprit.rank.has_value()) << "rank " << *d.culprit.rank;
        } else if (c.contains("rank")) {
            ASSERT_TRUE(d.culprit.rank.has_value());
            EXPECT_EQ(*d.culprit.rank, c["rank"].get<int>());
        }
    }
    if (e.contains("min_confidence")) {
        EXPECT_GE(d.confidence, e["min_confidence"].get<double>());
    }
    if (e.contains("max_confidence")) {
        EXPECT_LE(d.confidence, e["max_confidence"].get<double>());
    }
}

// `text` as an 80-column terminal or serial console shows it: each longer line in pieces.
std::string HardWrapped(const std::string& text) {
    return EachLine(text, [](std::string l) {
        std::string out;
        while (l.size() > 80) {
            out += l.substr(0, 80) + "\n";
            l.erase(0, 80);
        }
        return out + l;
    });
}

// A log reads the same as people paste it: quoted in a mail or an issue ("> "), coloured by a
// terminal, indented as a Markdown code block, with CRLF line ends, copied from an 80-column
// terminal that wrapped its long lines, or as kubelet logged a container's output (CRI format).
TEST_P(ClassifyFixture, ReadsTheSameQuotedColouredIndentedWrappedOrWithCrlf) {
    const Fixture& f = GetParam();
    const DiagnoseOptions options = OptionsFor(f);
    const Diagnosis want = Classify(f.log, options);
    const std::vector<std::pair<std::string, std::string>> pastes = {
        {"quoted", EachLine(f.log, [](const std::string& l) { return "> " + l; })},
        {"coloured",
         EachLine(f.log, [](const std::string& l) { return "\x1b[1;31m" + l + "\x1b[0m"; })},
        {"indented", EachLine(f.log, [](const std::string& l) { return "    " + l; })},
        {"crlf", EachLine(f.log, [](const std::string& l) { return l + "\r"; })},
        {"wrapped at 80 columns", HardWrapped(f.log)},
        {"in a container's log",
         EachLine(f.log,
                  [](const std::string& l) { return "2026-12-01T10:00:00.1234Z stdout F " + l; })},
    };
    for (const auto& [how, text] : pastes) {
        const Diagnosis got = Classify(text, options);
        EXPECT_EQ(got.rule, want.rule) << how;
        EXPECT_EQ(got.cause, want.cause) << how;
        EXPECT_EQ(got.actions, want.actions) << how;
        EXPECT_EQ(got.requeue, want.requeue) << how;
        EXPECT_EQ(got.culprit.gpu, want.culprit.gpu) << how;
        EXPECT_EQ(got.culprit.node, want.culprit.node) << how;
    }
}

INSTANTIATE_TEST_SUITE_P(Logs, ClassifyFixture, ::testing::ValuesIn(LoadFixtures()),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                             std::string n = info.param.name;
                             for (char& c : n) {
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             }
                             return n;
                         });

}  // namespace
}  // namespace autoheal::diag::testing
