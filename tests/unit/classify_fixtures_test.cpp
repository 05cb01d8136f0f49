// Golden tests: tests/fixtures/classify/NAME.log is classified and compared with NAME.json,
// which lists only the keys it cares about (cause, actions, requeue, rule, culprit.gpu,
// culprit.gpu_index, culprit.rank (null: none named), culprit.node, and "node" / "job" / "history"
// inputs).
#include <gtest/gtest.h>

#include <filesystem>
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

class ClassifyFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(ClassifyFixture, MatchesExpectation) {
    const Fixture& f = GetParam();
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
