// The breaker lock (remediation/breaker_lock.h): the prologs of one large job that fail their
// health checks together drain no more nodes than the breaker allows (issue 13.2), and a
// decision whose lock was not taken takes no node out.
#include "autoheal/remediation/breaker_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "epilog_test_env.h"

namespace autoheal::remediation::testing {
namespace {

using ::testing::HasSubstr;

// Slurm as the prologs of many nodes see it at once: one shared set of node states, read and
// changed from several threads. Reading the states takes a while (as an RPC does), so that
// prologs not serialized by the lock all read the states before any of them drains.
class SharedCluster final : public SlurmClient {
  public:
    explicit SharedCluster(int nodes) {
        for (int i = 0; i < nodes; ++i) {
            NodeInfo n;
            n.name = "node" + std::to_string(i);
            n.state = "IDLE";
            nodes_[n.name] = n;
        }
    }
    int Drained() {
        std::lock_guard<std::mutex> guard(mutex_);
        int n = 0;
        for (const auto& [name, node] : nodes_) n += node.drained ? 1 : 0;
        return n;
    }
    Result<NodeInfo> GetNode(const std::string& name) override {
        std::lock_guard<std::mutex> guard(mutex_);
        return nodes_.at(name);
    }
    Result<std::vector<NodeInfo>> ListNodes() override {
        std::vector<NodeInfo> out;
        {
            std::lock_guard<std::mutex> guard(mutex_);
            for (const auto& [name, node] : nodes_) out.push_back(node);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return out;
    }
    Result<JobInfo> GetJob(std::uint32_t) override { return MakeError("no jobs"); }
    Result<bool> Requeue(std::uint32_t) override { return MakeError("no jobs"); }
    Result<bool> UpdateJob(std::uint32_t, const JobUpdate&) override { return MakeError("no"); }
    Result<std::vector<JobInfo>> RunningJobsOn(const std::string&) override {
        return std::vector<JobInfo>{};
    }
    Result<bool> EndJob(std::uint32_t) override { return MakeError("no jobs"); }
    Result<std::vector<SwitchInfo>> Topology() override { return std::vector<SwitchInfo>{}; }

  protected:
    Result<bool> SetDrain(const std::string& node, const std::string& reason) override {
        std::lock_guard<std::mutex> guard(mutex_);
        nodes_.at(node).drained = true;
        nodes_.at(node).state = "IDLE+DRAIN";
        nodes_.at(node).reason = reason;
        return true;
    }
    Result<bool> RequestReboot(const std::string&, const std::string&) override {
        return MakeError("no reboots");
    }
    Result<bool> SetResume(const std::string&) override { return MakeError("no resumes"); }

  private:
    std::mutex mutex_;
    std::map<std::string, NodeInfo> nodes_;
};

class BreakerLockTest : public ::testing::Test {
  protected:
    BreakerLockTest() {
        char tmpl[] = "/tmp/autoheal-breaker-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        std::filesystem::create_directories(dir_ + "/jobs");
    }
    ~BreakerLockTest() override { std::filesystem::remove_all(dir_); }
    std::string dir_;
};

const std::string kReason = "autoheal: health check=gpu-count gpu=0000:3b:00.0";

TEST_F(BreakerLockTest, PrologsOfOneJobFailingTogetherDrainNoMoreThanTheLimit) {
    SharedCluster cluster(8);
    const BreakerConfig breaker{1.0, 2};  // at most 2 nodes out at once
    std::vector<BreakerDrain::Outcome> outcomes(8);
    std::vector<std::thread> prologs;
    prologs.reserve(8);
    for (int i = 0; i < 8; ++i) {
        prologs.emplace_back([&, i] {
            outcomes[i] =
                DrainWithinBreaker(cluster, dir_, breaker, "node" + std::to_string(i), kReason)
                    .outcome;
        });
    }
    for (std::thread& t : prologs) t.join();
    EXPECT_EQ(cluster.Drained(), 2);
    EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), BreakerDrain::Outcome::kDrained), 2);
    EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), BreakerDrain::Outcome::kHeld), 6);
}

TEST_F(BreakerLockTest, ALockHeldElsewhereOrAFolderMissingTakesNoNodeOut) {
    SharedCluster cluster(4);
    const BreakerConfig breaker{1.0, 4};
    {
        const BreakerLock other(dir_, 1);
        ASSERT_TRUE(other.held()) << other.error();
        const BreakerDrain d = DrainWithinBreaker(cluster, dir_, breaker, "node1", kReason, 0.1);
        EXPECT_EQ(d.outcome, BreakerDrain::Outcome::kHeld);
        EXPECT_THAT(d.detail, HasSubstr("still locked by another"));
        EXPECT_EQ(cluster.Drained(), 0);
    }
    const BreakerDrain missing =
        DrainWithinBreaker(cluster, dir_ + "/nonexistent", breaker, "node1", kReason, 0.1);
    EXPECT_EQ(missing.outcome, BreakerDrain::Outcome::kHeld);
    EXPECT_THAT(missing.detail, HasSubstr("cannot open"));
    EXPECT_EQ(DrainWithinBreaker(cluster, dir_, breaker, "node1", kReason).outcome,
              BreakerDrain::Outcome::kDrained);
    EXPECT_EQ(DrainWithinBreaker(cluster, dir_, breaker, "node1", kReason).outcome,
              BreakerDrain::Outcome::kAlreadyOurs);
}

}  // namespace
}  // namespace autoheal::remediation::testing
