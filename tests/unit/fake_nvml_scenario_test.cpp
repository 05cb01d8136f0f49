// The fake NVML's scenario parser: bad scenarios are errors with a message (nvmlInit_v2 then
// fails), never a crash, a wrapped number or an allocation of gigabytes. Found by
// fuzz_nvml_scenario.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "scenario.h"

namespace autoheal::fake_nvml {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text) {
    try {
        ParseScenario(text);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

TEST(FakeNvmlScenario, DefaultsAndExample) {
    Scenario s = ParseScenario("{}");
    ASSERT_EQ(s.gpus.size(), 8u);
    EXPECT_EQ(s.gpus[3].pci_bus, 0x13u);
    EXPECT_EQ(s.gpus[3].links.size(), 18u);
    s = ParseScenario(R"({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED",
                          "hang": {"call": "nvmlDeviceGetTemperature", "gpu": 1, "seconds": 600},
                          "gpus": [{"pci_bus_id": "0000:3b:00.0", "nvlink_count": 4,
                                    "ecc": {"volatile_uncorrected": 4}}]})");
    EXPECT_EQ(*s.init_error, NVML_ERROR_DRIVER_NOT_LOADED);
    EXPECT_EQ(*s.hang->gpu, 1u);
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_EQ(s.gpus[0].pci_bus, 0x3bu);
    EXPECT_EQ(s.gpus[0].links.size(), 4u);
    EXPECT_EQ(s.gpus[0].ecc_volatile, 4u);
}

// Used to allocate 4 billion links (out of memory under ASan).
TEST(FakeNvmlScenario, RefusesHugeLinkCounts) {
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"nvlink_count": 4294967295}]})"), HasSubstr("nvlink_count"));
}

// A float into an unsigned field was a cast out of range (undefined behaviour); a negative or
// oversized number wrapped.
TEST(FakeNvmlScenario, RefusesNumbersOutOfTheirFieldsRange) {
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"minor": 1e300}]})"), HasSubstr("minor"));
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"temperature_c": -5}]})"), HasSubstr("temperature_c"));
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"processes": 4294967296}]})"), HasSubstr("processes"));
    EXPECT_THAT(ErrorOf(R"({"init_error": 100000})"), HasSubstr("init_error"));
    EXPECT_THAT(ErrorOf(R"({"init_error": -1})"), HasSubstr("init_error"));
}

// sleep_for(duration<double>) overflows converting a huge or infinite number of seconds.
TEST(FakeNvmlScenario, RefusesHangsOutOfRange) {
    EXPECT_THAT(ErrorOf(R"({"hang": {"call": "nvmlInit_v2", "seconds": 1e300}})"),
                HasSubstr("hang.seconds"));
    EXPECT_THAT(ErrorOf(R"({"hang": {"call": "nvmlInit_v2", "seconds": -1}})"),
                HasSubstr("hang.seconds"));
    EXPECT_THAT(ErrorOf(R"({"hang": {"seconds": 1}})"), HasSubstr("hang.call"));
}

TEST(FakeNvmlScenario, RefusesMistypedSections) {
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"ecc": 3}]})"), HasSubstr("ecc"));
    EXPECT_THAT(ErrorOf(R"({"gpus": {"a": 1}})"), HasSubstr("gpus"));
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"unsupported": [1]}]})"), HasSubstr("unsupported"));
    EXPECT_NE(ErrorOf("[1"), "");
}

}  // namespace
}  // namespace autoheal::fake_nvml

namespace autoheal::fake_nvml {
namespace {

TEST(FakeNvmlScenario, ReadsTelemetryAndRefusesItOutOfRange) {
    Scenario s = ParseScenario(R"({"gpus": [{"telemetry": {"power_watts": 500,
        "power_swing_watts": 100, "thermal_violation_percent": 80, "sm_clock_mhz": 1400}}]})");
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_DOUBLE_EQ(s.gpus[0].telemetry.power_watts, 500);
    EXPECT_DOUBLE_EQ(s.gpus[0].telemetry.thermal_violation_percent, 80);
    EXPECT_EQ(s.gpus[0].telemetry.sm_clock_mhz, 1400u);
    EXPECT_DOUBLE_EQ(ParseScenario("{}").gpus[0].telemetry.power_watts, 350);
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"telemetry": {"thermal_violation_percent": 101}}]})"),
                ::testing::HasSubstr("telemetry"));
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"telemetry": {"power_watts": 100,
                                       "power_swing_watts": 200}}]})"),
                ::testing::HasSubstr("power_watts"));
    EXPECT_THAT(ErrorOf(R"({"gpus": [{"telemetry": {"period_seconds": 0}}]})"),
                ::testing::HasSubstr("period_seconds"));
}

}  // namespace
}  // namespace autoheal::fake_nvml
