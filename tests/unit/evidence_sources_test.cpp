// The node epilog's evidence sources (remediation/evidence_sources.h) on real files, and the
// remediation section of autoheal.yaml.
#include "autoheal/remediation/evidence_sources.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "autoheal/core/config.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/tickets.h"

namespace autoheal::remediation {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class TempDir {
  public:
    TempDir() {
        char tmpl[] = "/tmp/autoheal-evidence-XXXXXX";
        path_ = ::mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(path_); }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

TEST(JobOutput, TailOfARegularFileIsReadFromALineStart) {
    TempDir dir;
    std::ofstream(dir / "out") << "first line\nsecond line\nthird line\n";
    auto tail = ReadFileTailSafely(dir / "out", 15);
    ASSERT_TRUE(tail) << tail.error();
    EXPECT_EQ(*tail, "third line\n");
}

TEST(JobOutput, SymlinksFifosAndFoldersAreRefused) {
    TempDir dir;
    std::ofstream(dir / "secret") << "root only\n";
    fs::create_symlink(dir / "secret", dir / "link");
    auto link = ReadFileTailSafely(dir / "link", 1000);
    ASSERT_FALSE(link);
    EXPECT_THAT(link.error(), HasSubstr("symlink"));
    // A symlink earlier in the path is refused too.
    fs::create_directory(dir / "real");
    std::ofstream(dir / "real/out") << "x\n";
    fs::create_directory_symlink(dir / "real", dir / "dirlink");
    EXPECT_FALSE(ReadFileTailSafely(dir / "dirlink/out", 1000));
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    auto fifo = ReadFileTailSafely(dir / "fifo", 1000);  // must not block
    ASSERT_FALSE(fifo);
    EXPECT_THAT(fifo.error(), HasSubstr("not a regular file"));
    EXPECT_FALSE(ReadFileTailSafely(dir / "real", 1000));
    EXPECT_FALSE(ReadFileTailSafely("relative/out", 1000));
}

// The fallback for kernels without openat2 (RHEL 8's 4.18): every component is opened without
// following a link, so a symlinked folder anywhere in the path is refused, not followed.
TEST(JobOutput, TheNoOpenat2FallbackRefusesASymlinkedComponent) {
    TempDir dir;
    fs::create_directories(dir / "real/sub");
    std::ofstream(dir / "real/sub/out") << "x\n";
    fs::create_directory_symlink(dir / "real", dir / "dirlink");
    constexpr int kFlags = O_RDONLY | O_NONBLOCK;
    const int ok = OpenEachComponentNoFollow(dir / "real/sub/out", kFlags);
    ASSERT_GE(ok, 0) << std::strerror(errno);
    ::close(ok);
    errno = 0;
    EXPECT_EQ(OpenEachComponentNoFollow(dir / "dirlink/sub/out", kFlags), -1);
    EXPECT_EQ(errno, ELOOP);
    fs::create_symlink(dir / "real/sub/out", dir / "real/sub/link");
    EXPECT_EQ(OpenEachComponentNoFollow(dir / "real/sub/link", kFlags), -1);
    EXPECT_EQ(errno, ELOOP);
    EXPECT_EQ(OpenEachComponentNoFollow(dir / "real/sub/out/x", kFlags), -1);
    EXPECT_EQ(errno, ENOTDIR);
    EXPECT_EQ(OpenEachComponentNoFollow(dir / "real/../real/sub/out", kFlags), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(OpenEachComponentNoFollow("relative/out", kFlags), -1);
}

TEST(JobOutput, SlurmFilenamePatternsExpand) {
    OutputPatternValues v{"123", "120", "3", "alice", "train", "node7"};
    EXPECT_EQ(ExpandOutputPattern("/out/%x-%j-%u-%N.log", v), "/out/train-123-alice-node7.log");
    EXPECT_EQ(ExpandOutputPattern("%A_%a_%5j_%%", v), "120_3_00123_%");
    EXPECT_EQ(ExpandOutputPattern("slurm-\\%j.out", v), "slurm-%j.out");
}

TEST(KernelLog, FileCursorReadsOnlyWhatCameAfterIt) {
    TempDir dir;
    const std::string log = dir / "kern.log";
    std::ofstream(log) << "before the job\n";
    const std::string cursor = KernelLogCursor(log);
    std::ofstream(log, std::ios::app) << "NVRM: Xid during the job\n";
    auto text = ReadKernelLogSince(log, cursor, 1 << 20);
    ASSERT_TRUE(text) << text.error();
    EXPECT_EQ(*text, "NVRM: Xid during the job\n");
    // Rotated as logrotate does (renamed, a new file: another inode): all of the new file.
    fs::rename(log, log + ".1");
    std::ofstream(log) << "after rotation\n";
    EXPECT_EQ(*ReadKernelLogSince(log, cursor, 1 << 20), "after rotation\n");
    // Not there yet: nothing, no error.
    EXPECT_EQ(*ReadKernelLogSince(dir / "missing.log", "", 1 << 20), "");
}

TEST(Nvml, CountersThatGrewFlagsLinksAndLostGpusBecomeTypedItems) {
    health::NodeSnapshot before, after;
    before.driver_present = after.driver_present = true;
    health::GpuSnapshot a;
    a.pci_bus_id = "0000:3b:00.0";
    a.ecc_uncorrected_volatile = 0;
    a.remapped_rows = health::RemappedRows{};
    a.nvlinks = {health::NvLinkState{}};
    a.nvlinks[0].link = 2;
    a.nvlinks[0].active = true;
    health::GpuSnapshot b = a;
    b.pci_bus_id = "0000:5d:00.0";
    before.gpus = {a, b};
    a.ecc_uncorrected_volatile = 3;
    a.remapped_rows->failure = true;
    a.nvlinks[0].active = false;
    after.gpus = {a};  // b is gone
    const auto items = NvmlDeltaEvidence(before, after, DeltaSpan::kJob);
    ASSERT_EQ(items.size(), 4u);
    using Fields = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(items[0].signature, "nvml-delta");
    EXPECT_EQ(items[0].fields, (Fields{{"gpu", "0000:3b:00.0"},
                                       {"counter", "ecc_uncorrected_volatile"},
                                       {"before", "0"},
                                       {"after", "3"}}));
    EXPECT_EQ(items[0].text,
              "gpu 0000:3b:00.0 ecc_uncorrected_volatile increased by 3 (from 0 to 3) during the "
              "job");
    EXPECT_EQ(items[0].line, 1u);
    EXPECT_EQ(items[1].Field("counter"), "remapped_rows_failure");
    EXPECT_EQ(items[2].fields, (Fields{{"gpu", "0000:3b:00.0"},
                                       {"counter", "nvlink"},
                                       {"link", "2"},
                                       {"before", "up"},
                                       {"after", "down"}}));
    EXPECT_EQ(items[3].fields, (Fields{{"gpu", "0000:5d:00.0"}, {"counter", "gpu_lost"}}));
    EXPECT_EQ(items[3].line, 4u);
    EXPECT_EQ(
        items[3].text,
        "gpu 0000:5d:00.0 is lost: NVML no longer finds it (it was there at the job's start)");
    // The agent's counter watch compares two readings, not a job's start and end.
    const auto read = NvmlDeltaEvidence(before, after, DeltaSpan::kReadings);
    ASSERT_EQ(read.size(), 4u);
    EXPECT_EQ(read[0].text,
              "gpu 0000:3b:00.0 ecc_uncorrected_volatile increased by 3 (from 0 to 3) since the "
              "previous reading");
    EXPECT_EQ(read[2].text, "gpu 0000:3b:00.0 nvlink 2 went down since the previous reading");
    EXPECT_EQ(read[3].text,
              "gpu 0000:5d:00.0 is lost: NVML no longer finds it (it was there before)");
    after.driver_present = false;
    EXPECT_THAT(NvmlDeltaEvidence(before, after, DeltaSpan::kJob), IsEmpty());
}

TEST(Health, FailedChecksBecomeTypedItemsWithTheirReason) {
    health::HealthReport report;
    report.results = {{"gemm-bf16",
                       "0000:3b:00.0",
                       health::Status::kFail,
                       "GEMM result wrong",
                       {},
                       0,
                       "wrong-result"},
                      {"thermal", "0000:3b:00.0", health::Status::kWarn, "warm", {}, 0, ""},
                      {"gpu-count", "", health::Status::kFail, "1 of 2 GPUs\nseen", {}, 0, ""}};
    const auto items = HealthCheckEvidence(report);
    ASSERT_EQ(items.size(), 2u);
    using Fields = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(items[0].signature, "health-check");
    EXPECT_EQ(items[0].fields, (Fields{{"check", "gemm-bf16"},
                                       {"gpu", "0000:3b:00.0"},
                                       {"verdict", "fail"},
                                       {"reason", "wrong-result"}}));
    EXPECT_EQ(items[1].fields, (Fields{{"check", "gpu-count"}, {"verdict", "fail"}}));
    EXPECT_EQ(items[1].text, "check gpu-count failed: 1 of 2 GPUs seen");
}

// YAML's .nan passed every range check (comparisons with NaN are false), and the node epilog
// then converted (NaN + 10) * 1000 to int milliseconds: undefined behaviour. Non-finite numbers
// are refused wherever a setting is read (YamlRead).
TEST(RemediationConfig, RefusesNonFiniteNumbers) {
    for (const char* text : {"results_wait_seconds: .nan\n", "results_wait_seconds: .inf\n",
                             "quarantine_hours: .NaN\n", "breaker: {max_fraction: .nan}\n"}) {
        auto r = ParseRemediationConfig(YAML::Load(text), "a.yaml");
        EXPECT_FALSE(r) << text;
    }
}

TEST(RemediationConfig, DefaultsAndErrorsWithLineAndColumn) {
    auto defaults = ParseRemediationConfig(YAML::Node(), "autoheal.yaml");
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->kernel_log, "kmsg");
    EXPECT_FALSE(defaults->dry_run);
    auto good = ParseRemediationConfig(
        YAML::Load("dry_run: true\nkernel_log: /var/log/kern-%n.log\n"
                   "breaker: {max_fraction: 0.2, max_nodes: 5, window: 2h}\n"),
        "autoheal.yaml");
    ASSERT_TRUE(good) << good.error();
    EXPECT_TRUE(good->dry_run);
    EXPECT_EQ(KernelLogFor(*good, "gpu7"), "/var/log/kern-gpu7.log");
    EXPECT_EQ(good->breaker.max_nodes, 5);  // window: accepted, no effect
    auto lemon = ParseRemediationConfig(YAML::Load("lemon: {failures: 4, window: 2d}\n"), "a.yaml");
    ASSERT_TRUE(lemon) << lemon.error();
    EXPECT_EQ(lemon->lemon.failures, 4);
    EXPECT_EQ(lemon->lemon.window_seconds, 2 * 86400);
    auto bad_lemon = ParseRemediationConfig(YAML::Load("lemon: {failures: -1}\n"), "a.yaml");
    ASSERT_FALSE(bad_lemon);
    EXPECT_THAT(bad_lemon.error(), HasSubstr("a.yaml:1:19: remediation.lemon.failures"));
    auto bad = ParseRemediationConfig(YAML::Load("dry_run: true\nbreaker: {window: soon}\n"),
                                      "autoheal.yaml");
    ASSERT_FALSE(bad);
    EXPECT_THAT(bad.error(), HasSubstr("autoheal.yaml:2:19: remediation.breaker.window"));
    auto unknown = ParseRemediationConfig(YAML::Load("dryrun: true\n"), "autoheal.yaml");
    ASSERT_FALSE(unknown);
    EXPECT_THAT(unknown.error(), HasSubstr("autoheal.yaml:1:1: remediation.dryrun: unknown"));
}

}  // namespace
}  // namespace autoheal::remediation
