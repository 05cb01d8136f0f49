// The line reader (autoheal/diag/log_line.h): prefixes parsed into typed records, and the
// admission of a signature's match: driver text only where a kernel record's message starts,
// never inside a name a user chose.
#include "autoheal/diag/log_line.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "diag_test_util.h"

namespace autoheal::diag::testing {
namespace {

std::string_view Message(std::string_view line, const LogLine& l) {
    return line.substr(l.message, l.end - l.message);
}

TEST(LogLine, KmsgRecordCarriesFacilityAndLevel) {
    const std::string line = "6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen";
    LogLine l = ParseLogLine(line);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.facility, 0);
    EXPECT_EQ(l.level, 6);
    EXPECT_EQ(Message(line, l), "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen");
    auto k = ParseKmsgPrefix("14,99,12,-;hello");  // facility 1 (user), level 6
    ASSERT_TRUE(k.has_value());
    EXPECT_EQ(k->facility, 1);
    EXPECT_EQ(k->seq, 99u);
    EXPECT_EQ(k->usec, 12u);
    EXPECT_EQ(ParseLogLine("14,99,12,-;NVRM: Xid").origin, LineOrigin::kProcess);
    EXPECT_FALSE(ParseKmsgPrefix("no prefix; here").has_value());
    EXPECT_FALSE(ParseKmsgPrefix("1,2;short").has_value());
}

TEST(LogLine, SyslogAndJournaldNameHostAndTag) {
    const std::string bsd = "Dec  1 10:00:00 node7 kernel: [ 12.5] NVRM: Xid 79";
    LogLine l = ParseLogLine(bsd);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.host, "node7");
    EXPECT_EQ(l.tag, "kernel");
    EXPECT_EQ(l.time, "Dec  1 10:00:00");
    EXPECT_EQ(Message(bsd, l), "NVRM: Xid 79");

    const std::string logger = "Dec  1 10:00:00 node7 alice[4242]: NVRM: Xid 79";
    l = ParseLogLine(logger);
    EXPECT_EQ(l.origin, LineOrigin::kProcess);
    EXPECT_EQ(l.tag, "alice");
    EXPECT_EQ(Message(logger, l), "NVRM: Xid 79");

    const std::string iso = "2026-12-01T10:00:00.123456+0000 node7 kernel: NVRM: Xid 79";
    l = ParseLogLine(iso);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.host, "node7");
    EXPECT_EQ(l.time, "2026-12-01T10:00:00.123456+0000");
    EXPECT_EQ(Message(iso, l), "NVRM: Xid 79");

    // journald and rsyslog print the month in the locale's language (strftime %b).
    for (const std::string month : {"kwi", "Dez", "d\u00e9c."}) {
        const std::string local = month + " 15 07:56:59 node7 kernel: NVRM: Xid 109";
        l = ParseLogLine(local);
        EXPECT_EQ(l.origin, LineOrigin::kKernel) << local;
        EXPECT_EQ(l.host, "node7") << local;
        EXPECT_EQ(Message(local, l), "NVRM: Xid 109") << local;
    }

    const std::string collapsed = "Dec 1 10:00:00 node7 kernel: NVRM: Xid 79";
    l = ParseLogLine(collapsed);
    EXPECT_EQ(l.host, "node7");
    EXPECT_EQ(Message(collapsed, l), "NVRM: Xid 79");

    const std::string precise = "Dec 01 10:00:00.123456 node7 slurmd[99]: error: x";
    l = ParseLogLine(precise);
    EXPECT_EQ(l.tag, "slurmd");
    EXPECT_EQ(Message(precise, l), "error: x");
}

TEST(LogLine, DmesgTimesCallerIdsAndPlainIso) {
    const std::string human = "[Tue Dec  1 10:00:00 2026] NVRM: Xid 79";
    LogLine l = ParseLogLine(human);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "Tue Dec  1 10:00:00 2026");
    EXPECT_EQ(Message(human, l), "NVRM: Xid 79");

    // A web page collapses the space that pads a one-digit day.
    const std::string pasted = "[Mon Feb 2 22:52:45 2026] NVRM: Xid 94";
    l = ParseLogLine(pasted);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "Mon Feb 2 22:52:45 2026");
    EXPECT_EQ(Message(pasted, l), "NVRM: Xid 94");

    const std::string mono = "[12345.678901] [T4242] NVRM: Xid 79";
    l = ParseLogLine(mono);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(mono, l), "NVRM: Xid 79");

    // dmesg's other time formats, as this machine's util-linux 2.38 prints them: -H (a minute,
    // then each record's gap to the one before), -d, --time-format delta, -T -d.
    for (const std::string prefix :
         {"[Dec 4 19:42] ", "[Dec14 19:42] ", "[  +0.000012] ", "[   12.000000 <    0.000012>] ",
          "[<    0.000012>] ", "[Tue Dec  1 10:00:00 2026 <    0.000012>] "}) {
        const std::string line = prefix + "NVRM: Xid 79";
        l = ParseLogLine(line);
        EXPECT_EQ(l.origin, LineOrigin::kKernel) << line;
        EXPECT_EQ(Message(line, l), "NVRM: Xid 79") << line;
    }

    // RFC 5424 (rsyslog's RSYSLOG_SyslogProtocol23Format): the PRI's facility names the writer.
    const std::string ietf =
        "<4>1 2026-12-01T10:00:00.123456+00:00 node7 kernel - - - NVRM: Xid (PCI:0000:3b:00): 79";
    l = ParseLogLine(ietf);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.host, "node7");
    EXPECT_EQ(l.time, "2026-12-01T10:00:00.123456+00:00");
    EXPECT_EQ(Message(ietf, l), "NVRM: Xid (PCI:0000:3b:00): 79");
    const std::string ietf_user =
        "<14>1 2026-12-01T10:00:00Z node7 python 4242 - [meta x=\"1\"] NVRM: Xid 79";
    l = ParseLogLine(ietf_user);
    EXPECT_EQ(l.origin, LineOrigin::kProcess);
    EXPECT_EQ(l.tag, "python");
    EXPECT_EQ(Message(ietf_user, l), "NVRM: Xid 79");

    const std::string pri = "<4>[  12.000000] mlx5_core 0000:17:00.0: Port: 1 Link DOWN";
    l = ParseLogLine(pri);
    EXPECT_EQ(l.facility, 0);
    EXPECT_EQ(l.level, 4);
    EXPECT_EQ(Message(pri, l), "mlx5_core 0000:17:00.0: Port: 1 Link DOWN");

    const std::string plain = "2026-12-01 10:00:00,123 RuntimeError: boom";
    l = ParseLogLine(plain);
    EXPECT_EQ(l.origin, LineOrigin::kUnknown);
    EXPECT_EQ(Message(plain, l), "RuntimeError: boom");

    // A time of day alone.
    const std::string clock =
        "19:14:43  NVRM: Xid (PCI:0000:1a:00): 79, GPU has fallen off the bus.";
    l = ParseLogLine(clock);
    EXPECT_EQ(l.time, "19:14:43");
    EXPECT_EQ(Message(clock, l), "NVRM: Xid (PCI:0000:1a:00): 79, GPU has fallen off the bus.");
    // Python's logging puts a level and a logger's name where a host and a tag would be.
    const std::string logging = "2024-10-09 15:47:38,123 INFO trainer: step 12 done";
    l = ParseLogLine(logging);
    EXPECT_EQ(l.host, "");
    EXPECT_EQ(Message(logging, l), "INFO trainer: step 12 done");
    const std::string clock_logging = "12:00:01 WARNING root: retrying";
    EXPECT_EQ(ParseLogLine(clock_logging).host, "");
    // journald's other short forms: -o short-full, short-unix, short-monotonic, short-delta.
    for (const std::string prefix :
         {"Tue 2026-12-01 10:00:00 UTC node7 kernel: ",
          "Tue 2026-12-01 10:00:00.123456 CET node7 kernel: ", "1764583200.123456 node7 kernel: ",
          "[ 1234.567890] node7 kernel: ", "[ 1234.567890 <    0.000012>] node7 kernel: "}) {
        const std::string line = prefix + "NVRM: Xid 79";
        l = ParseLogLine(line);
        EXPECT_EQ(l.host, "node7") << line;
        EXPECT_EQ(l.origin, LineOrigin::kKernel) << line;
        EXPECT_EQ(Message(line, l), "NVRM: Xid 79") << line;
    }
    const std::string journal_process = "[ 1234.567890] node7 slurmd[4242]: error: boom";
    l = ParseLogLine(journal_process);
    EXPECT_EQ(l.origin, LineOrigin::kProcess);
    EXPECT_EQ(Message(journal_process, l), "error: boom");
    // The kernel's own "subsystem device: " after a dmesg time is the message, not a host.
    const std::string aer = "[ 1234.567890] pcieport 0000:00:01.0: AER: Uncorrected error";
    l = ParseLogLine(aer);
    EXPECT_EQ(l.host, "");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(aer, l), "pcieport 0000:00:01.0: AER: Uncorrected error");
    const std::string clock_host = "19:14:43.250 node7 kernel: NVRM: Xid 79";
    l = ParseLogLine(clock_host);
    EXPECT_EQ(l.host, "node7");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(clock_host, l), "NVRM: Xid 79");
}

TEST(LogLine, NoiseBeforeThePrefixAndPdshHosts) {
    const std::string quoted = ">  > \x1b[1;31m[ 5.0] NVRM: Xid 79\x1b[0m\r";
    LogLine l = ParseLogLine(quoted);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(quoted, l), "NVRM: Xid 79\x1b[0m");

    const std::string pdsh = "gpu-node-3: [ 5.0] NVRM: Xid 79";
    l = ParseLogLine(pdsh);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(Message(pdsh, l), "NVRM: Xid 79");

    // srun --label's task number names no host.
    const std::string srun = "  3: [ 5.0] NVRM: Xid 79";
    l = ParseLogLine(srun);
    EXPECT_TRUE(l.host.empty());
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(srun, l), "NVRM: Xid 79");

    const std::string bare_pdsh = "gpu-node-3: NVRM: Xid 79";
    l = ParseLogLine(bare_pdsh);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(Message(bare_pdsh, l), "NVRM: Xid 79");
    // The kernel's tag with the host cut off names no host; grep's file name (and -n's line
    // number) before a syslog record is skipped, but not before other text.
    struct Case {
        std::string line, host;
        LineOrigin origin;
        std::string message;
    };
    const std::string not_grep = "RuntimeError:CUDA error: an illegal memory access";
    for (const Case& c : {
             Case{"kernel: [ 3012.88410] NVRM: Xid 79", "", LineOrigin::kKernel, "NVRM: Xid 79"},
             Case{"messages:Jun 17 20:18:09 ip-172-31-27-211 kernel: NVRM: Xid 79",
                  "ip-172-31-27-211", LineOrigin::kKernel, "NVRM: Xid 79"},
             Case{"/var/log/kern.log:42:2026-03-01T10:00:00+00:00 gpu7 kernel: x", "gpu7",
                  LineOrigin::kKernel, "x"},
             Case{not_grep, "", LineOrigin::kUnknown, not_grep},
         }) {
        l = ParseLogLine(c.line);
        EXPECT_EQ(l.host, c.host) << c.line;
        EXPECT_EQ(l.origin, c.origin) << c.line;
        EXPECT_EQ(Message(c.line, l), c.message) << c.line;
    }
    // A collector's time (kubectl logs --timestamps) before the record's own prefix.
    const std::string collected =
        "2026-12-06T02:20:26.123456789Z Mar 29 15:38:59 gpu-node-3 kernel: NVRM: Xid 79";
    l = ParseLogLine(collected);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "Mar 29 15:38:59");
    EXPECT_EQ(Message(collected, l), "NVRM: Xid 79");
    // The kernel's tag without a host after the record's time ("Mar 29 15:38:59 kernel: ").
    const std::string collected_untagged =
        "2026-12-06T02:20:26.123456789Z Mar 29 15:38:59 kernel: NVRM: Xid 79";
    l = ParseLogLine(collected_untagged);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(collected_untagged, l), "NVRM: Xid 79");
    const std::string collected_dmesg =
        "2026-12-06T02:20:26.123Z [Sun Dec  1 14:54:40 2024] gpu-node-3 kernel: mlx5_core x";
    l = ParseLogLine(collected_dmesg);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(collected_dmesg, l), "mlx5_core x");
    // pdsh's host, the kernel's decoded facility and a bracketed time behind a collector's time.
    const std::string collected_talos =
        "2026-12-06T02:20:26.123Z 192.168.11.119: kern: warning: [2026-04-22T21:26:20.5Z]: NVRM: x";
    l = ParseLogLine(collected_talos);
    EXPECT_EQ(l.host, "192.168.11.119");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "2026-04-22T21:26:20.5Z");  // the record's own
    EXPECT_EQ(Message(collected_talos, l), "NVRM: x");
    // Behind it alone, pdsh's host keeps the collector's time.
    const std::string collected_pdsh = "2026-12-06T02:20:26.123Z gpu-node-3: NVRM: Xid 79";
    l = ParseLogLine(collected_pdsh);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(l.time, "2026-12-06T02:20:26.123Z");
    EXPECT_EQ(Message(collected_pdsh, l), "NVRM: Xid 79");
    // A tool's indented output behind it names no host ("Physical state: " is no "host tag: ").
    const std::string collected_indented =
        "2026-12-06T02:20:26.123Z         Physical state: LinkUp";
    l = ParseLogLine(collected_indented);
    EXPECT_TRUE(l.host.empty());
    EXPECT_TRUE(l.tag.empty());
    EXPECT_EQ(Message(collected_indented, l), "Physical state: LinkUp");
    // Nor does a driver's device: "amdgpu 0000:29:00.0: " is no "host tag:".
    const std::string device = "2026-12-06T02:20:26.123Z amdgpu 0000:29:00.0: WARN: hot";
    l = ParseLogLine(device);
    EXPECT_TRUE(l.host.empty());
    EXPECT_EQ(Message(device, l), "amdgpu 0000:29:00.0: WARN: hot");
    const std::string collected_bare =
        "2026-12-06T02:20:26.123Z Traceback (most recent call last):";
    l = ParseLogLine(collected_bare);
    EXPECT_TRUE(l.host.empty());
    EXPECT_EQ(Message(collected_bare, l), "Traceback (most recent call last):");

    const std::string tagged_pdsh = "gpu-node-3: kernel: NVRM: Xid 79";
    l = ParseLogLine(tagged_pdsh);
    EXPECT_EQ(l.host, "gpu-node-3");
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(tagged_pdsh, l), "NVRM: Xid 79");

    const std::string decoded = "kern  :err   : [  12.000000] NVRM: Xid 79";
    l = ParseLogLine(decoded);
    EXPECT_EQ(l.facility, 0);
    EXPECT_EQ(l.level, 3);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(decoded, l), "NVRM: Xid 79");
    EXPECT_EQ(ParseLogLine("user  :notice: [  12.0] NVRM: Xid 79").origin, LineOrigin::kProcess);
    const std::string talos =
        "192.168.11.119: kern: warning: [2026-04-22T21:26:20.599488292Z]: NVRM: Xid 74";
    l = ParseLogLine(talos);
    EXPECT_EQ(l.host, "192.168.11.119");
    EXPECT_EQ(l.level, 4);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "2026-04-22T21:26:20.599488292Z");
    EXPECT_EQ(Message(talos, l), "NVRM: Xid 74");

    // Slurm's daemons stamp their lines with an ISO time in brackets too: not the kernel's.
    const std::string slurmd =
        "[2020-10-08T13:33:42.999] error: gres_device_major: stat(/dev/nvidia0): No such file";
    l = ParseLogLine(slurmd);
    EXPECT_NE(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(l.time, "2020-10-08T13:33:42.999");
    EXPECT_EQ(Message(slurmd, l), "error: gres_device_major: stat(/dev/nvidia0): No such file");

    // A word and a colon with no timestamp after it is the message, not a host.
    const std::string bare = "NVRM: Xid (PCI:0000:3b:00): 79";
    l = ParseLogLine(bare);
    EXPECT_TRUE(l.host.empty());
    EXPECT_EQ(l.message, 0u);
    EXPECT_EQ(l.origin, LineOrigin::kUnknown);
    const std::string tag = "kernel: NVRM: Xid 79";
    l = ParseLogLine(tag);
    EXPECT_EQ(l.origin, LineOrigin::kKernel);
    EXPECT_EQ(Message(tag, l), "NVRM: Xid 79");
}

// Where an anchored pattern is matched again: past a logger's prefix (keeping the message's own
// indentation), past a pdsh host (named) or an srun task number (no host), never past a word.
TEST(LogLine, TextStartsPastLoggerPrefixAndLabels) {
    auto starts = [](std::string_view line) {
        std::vector<std::pair<std::string, std::string>> out;
        const TextStarts t = FindTextStarts(line, ParseLogLine(line));
        for (std::size_t i = 0; i < t.count; ++i) {
            out.emplace_back(std::string(line.substr(t.at[i].at)), std::string(t.at[i].host));
        }
        return out;
    };
    using V = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(starts("gpu07:     State: Down"), (V{{"    State: Down", "gpu07"}}));
    EXPECT_EQ(starts("  3: Attached GPUs : 8"), (V{{"Attached GPUs : 8", ""}}));
    EXPECT_EQ(starts("Error: no such device"), V{});
    EXPECT_EQ(starts("plain text"), V{});
    EXPECT_EQ(starts("2026-12-06T02:20:26Z         State : Active"),
              (V{{"        State : Active", ""}}));
    const V logged = starts("Dec  1 10:00:00 node7 kernel: NVRM: GPU 0000:3b:00.0: fallen");
    ASSERT_FALSE(logged.empty());
    EXPECT_EQ(logged.front(),
              (std::pair<std::string, std::string>{"NVRM: GPU 0000:3b:00.0: fallen", ""}));
}

TEST(LogLine, UserNamedSpansCoverTaskAndFileNames) {
    const std::string segv =
        "x[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5d2c8e70 error 6 in NVRM: Xid "
        "(PCI:0000:3b:00): 64, x[401000+1000]";
    auto spans = UserNamedSpans(segv);
    const std::size_t at = segv.find("NVRM");
    bool covered = false;
    for (auto [from, to] : spans) covered |= at >= from && at < to;
    EXPECT_TRUE(covered);

    const std::string oom = "Memory cgroup out of memory: Killed process 4242 (GPU is lost)";
    spans = UserNamedSpans(oom);
    ASSERT_FALSE(spans.empty());
    EXPECT_EQ(oom.substr(spans[0].first, spans[0].second - spans[0].first), "GPU is lost");

    const std::string hung = "INFO: task NVRM: Xid 79:4242 blocked for more than 120 seconds.";
    spans = UserNamedSpans(hung);
    ASSERT_FALSE(spans.empty());
    EXPECT_EQ(hung.substr(spans[0].first, spans[0].second - spans[0].first), "NVRM: Xid 79");
    EXPECT_TRUE(UserNamedSpans("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x").empty());
}

bool Admits(const std::string& line, std::string_view needle, bool kernel_only = false) {
    const std::size_t at = line.find(needle);
    return IsAdmissible(line, ParseLogLine(line), at, at + needle.size(), kernel_only);
}

TEST(LogLine, DriverTextCountsOnlyWhereAKernelMessageStarts) {
    EXPECT_TRUE(Admits("[1.0] NVRM: Xid (PCI:0000:3b:00): 79, x", "NVRM: Xid"));
    EXPECT_TRUE(Admits("NVRM: Xid (PCI:0000:3b:00): 79, x", "NVRM: Xid"));
    EXPECT_TRUE(Admits("6,1,2,-;NVRM: Xid 79", "NVRM: Xid", true));
    EXPECT_TRUE(Admits("19:14:43  NVRM: Xid (PCI:0000:1a:00): 13, x", "NVRM: Xid"));
    // Quoted inside a segfault line, written by a program, or past the message start.
    EXPECT_FALSE(Admits("[1.0] x[42]: segfault at 0 ip 1 sp 2 error 6 in NVRM: Xid 64, x[1+2]",
                        "NVRM: Xid"));
    EXPECT_FALSE(Admits("Dec  1 10:00:00 n1 alice: NVRM: Xid 79", "NVRM: Xid"));
    EXPECT_FALSE(Admits("14,1,2,-;NVRM: Xid 79", "NVRM: Xid"));
    EXPECT_FALSE(Admits("[1.0] hello NVRM: Xid 79", "Xid 79"));
    // A device file named after its driver is a path.
    EXPECT_TRUE(Admits("lstat /dev/nvidia-uvm: no such file or directory", "no such file"));
    EXPECT_FALSE(Admits("hello nvidia-uvm: no such file or directory", "no such file"));
    // An InfiniBand device named after its driver (Azure's mlx5_ib0..7) is a device.
    EXPECT_TRUE(
        Admits("gpu7:1234:1300 [0] NCCL WARN NET/IB : mlx5_ib5:1 Got async event : port error",
               "Got async event"));
    EXPECT_FALSE(Admits("hello mlx5_ib: Got async event", "Got async event"));
    // In a kernel log, another program's record is never evidence.
    EXPECT_FALSE(Admits("Dec  1 10:00:00 n1 alice: GPU is lost", "GPU is lost", true));
    EXPECT_TRUE(Admits("Dec  1 10:00:00 n1 alice: GPU is lost", "GPU is lost", false));
    EXPECT_FALSE(
        Admits("Memory cgroup out of memory: Killed process 4242 (GPU is lost)", "GPU is lost"));
}

// The two forged lines of issue 12 point 4, through the shipped rules.
TEST(LogLine, ForgedKernelLinesPlanNoNodeAction) {
    Diagnosis d = Classify(
        "[12345.678901] x[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5d2c8e70 error 6 "
        "in NVRM: Xid (PCI:0000:3b:00): 64, x[401000+1000]\n");
    EXPECT_TRUE(d.actions.empty()) << d.rule;
    EXPECT_NE(d.cause, "gpu_hbm_memory");
    d = Classify("Memory cgroup out of memory: Killed process 4242 (GPU is lost)\n");
    EXPECT_TRUE(d.actions.empty()) << d.rule;
    EXPECT_NE(d.cause, "faulty_gpu");
    d = Classify(
        "Dec  1 10:00:00 node7 alice: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, "
        "GPU has fallen off the bus.\n");
    EXPECT_TRUE(d.actions.empty()) << d.rule;
    // The driver's own records still do.
    d = Classify(
        "Dec  1 10:00:00 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
        "name=x, GPU has fallen off the bus.\n");
    EXPECT_EQ(d.cause, "faulty_gpu");
    EXPECT_FALSE(d.actions.empty());
}

TEST(LogLine, BareLinesRelayKernelRecords) {
    const auto relayed = [](std::string_view line) {
        const std::size_t at = RelayedKernelRecord(line, ParseLogLine(line));
        return at == std::string_view::npos ? std::string_view() : line.substr(at);
    };
    EXPECT_EQ(relayed("Xid errors on instance: ip-1, Error: May 29 01:37:38 ip-1 kernel: "
                      "[257087.812628] NVRM: Xid (PCI:0000:90:1c): 64, ..."),
              "May 29 01:37:38 ip-1 kernel: [257087.812628] NVRM: Xid (PCI:0000:90:1c): 64, ...");
    EXPECT_EQ(relayed("node66 | ERROR: nhc: Health check failed: check_gpu_xid: GPU Xid errors "
                      "detected: [ 3606.832215] NVRM: Xid (PCI:0002:00:00): 119, pid=1"),
              "[ 3606.832215] NVRM: Xid (PCI:0002:00:00): 119, pid=1");
    EXPECT_EQ(relayed("line kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: "
                      "SXid (PCI:0000:84:00.0): 12028"),
              "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid "
              "(PCI:0000:84:00.0): 12028");
    // A driver's words in quotes (GPUd's scan), past a quote before other words.
    EXPECT_EQ(relayed("[XID found] (54 minutes ago) \"NVRM: Xid (PCI:0000:9b:00): 119, pid=7\""),
              "NVRM: Xid (PCI:0000:9b:00): 119, pid=7\"");
    EXPECT_EQ(relayed("scan \"dmesg\" found \"NVRM: Xid (PCI:0000:9b:00): 79, GPU\""),
              "NVRM: Xid (PCI:0000:9b:00): 79, GPU\"");
    // Not a kernel record after the time; a program's record; the kernel quoting a file name;
    // quoted words that are no driver's.
    EXPECT_EQ(relayed("he said \"Xid 79 is bad\""), "");
    EXPECT_EQ(relayed("took [ 3606.832215] seconds"), "");
    EXPECT_EQ(relayed("Dec  1 10:00:00 n1 alice: [ 3606.832215] NVRM: Xid 79, x"), "");
    EXPECT_EQ(relayed("[1.0] x[42]: segfault at 0 ip 1 sp 2 error 6 in [ 1.000000] NVRM: Xid 79"),
              "");
    EXPECT_EQ(relayed("[ 3606.832215] NVRM: Xid 79, at the start"), "");
}

TEST(LogLine, KernelRecordsAreTheKernelsOwnOrADriverSpeaking) {
    EXPECT_TRUE(IsKernelRecord("6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen"));
    EXPECT_TRUE(IsKernelRecord("Dec  1 10:00:00 node1 kernel: EDAC MC0: 1 UE on DIMM A1"));
    EXPECT_TRUE(
        IsKernelRecord("[12345.678901] mce: [Hardware Error]: Machine check events logged"));
    EXPECT_TRUE(IsKernelRecord("NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable DBE error"));
    EXPECT_TRUE(IsKernelRecord("node1: mlx5_core 0000:5e:00.0: device's health compromised"));
    EXPECT_TRUE(IsKernelRecord(
        "amdgpu 0000:c1:00.0: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!"));
    // amdgpu's pr_* messages carry its pr_fmt instead of a device.
    EXPECT_TRUE(IsKernelRecord("amdgpu: [powerplay] GPU over temperature range detected on PCIe"));
    // Another program's record, and a job's line quoting the driver, are not.
    EXPECT_FALSE(IsKernelRecord("Dec  1 10:00:00 node1 alice: NVRM: Xid (PCI:0000:3b:00): 79"));
    EXPECT_FALSE(IsKernelRecord("RuntimeError: CUDA error: an illegal memory access"));
    EXPECT_FALSE(IsKernelRecord("grep found: NVRM: Xid (PCI:0000:3b:00): 79"));
    EXPECT_FALSE(IsKernelRecord("[rank0]: amdgpu 0000:c1:00.0: uncorrectable hardware error"));
    EXPECT_FALSE(IsKernelRecord("[rank0]: amdgpu: GPU over temperature range detected on PCIe"));
}

}  // namespace
}  // namespace autoheal::diag::testing
