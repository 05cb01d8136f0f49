// Where a node epilog finds the evidence of a job's lifetime, read safely as root:
// - the kernel log since the job started: the prolog records a cursor (the /dev/kmsg sequence
//   number, or a log file's inode and size) and the epilog reads what came after it, capped;
// - the tail of the job's stdout/stderr: opened without following any symlink (openat2
//   RESOLVE_NO_SYMLINKS, else O_NOFOLLOW), only a regular file, never blocking on a FIFO,
//   at most `max_bytes` from its end;
// - NVML deltas: counters that grew between the prolog's snapshot and the epilog's, flags that
//   appeared, NVLinks that went down and GPUs that disappeared, as typed nvml-delta evidence;
// - the post-job health check's failures, as typed health-check evidence.
// Typed evidence is matched by rules on its fields (docs/rules.md); its text is for people.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/diag/rules.h"
#include "autoheal/health/check.h"
#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::remediation {

// "kmsg:<seq>" or "file:<inode>:<size>"; empty when the log cannot be read.
std::string KernelLogCursor(const std::string& source);

// The kernel log after `cursor` (from `source`: "kmsg" or a file path), at most `max_bytes`
// (the newest are kept). An empty or stale cursor (log rotated): everything readable, capped.
// kmsg records of the kernel's own (facility 0) become dmesg-style lines "[seconds.micro]
// message"; records other programs wrote to /dev/kmsg are left out. A file is returned as it
// is: its lines are read by their prefix when scanned (a file in /dev/kmsg's own format keeps
// each record's facility, see autoheal/diag/log_line.h).
Result<std::string> ReadKernelLogSince(const std::string& source, const std::string& cursor,
                                       std::uint64_t max_bytes);

// The last `max_bytes` of a regular file, opened as described above. Refuses symlinks (in any
// component), FIFOs, devices and folders with an error naming the reason. Opened with openat2
// (RESOLVE_NO_SYMLINKS); where the kernel has none (before 5.6: RHEL 8's 4.18) or a filter
// refuses it, with OpenEachComponentNoFollow.
Result<std::string> ReadFileTailSafely(const std::string& path, std::uint64_t max_bytes);

// openat2's RESOLVE_NO_SYMLINKS by hand: opens the absolute `path` one component at a time from
// "/", each folder without following a link (a symlinked component fails with ELOOP, a file
// where a folder should be with ENOTDIR, a ".." with EINVAL), the last with `flags` |
// O_NOFOLLOW. Returns the descriptor, or -1 with errno set.
int OpenEachComponentNoFollow(const std::string& path, int flags);

// Slurm's filename patterns in --output/--error: %j %J %A %a %u %x %N %%; "\\" stops expansion.
struct OutputPatternValues {
    std::string job_id, array_job_id, array_task_id, user, job_name, first_node;
};
std::string ExpandOutputPattern(const std::string& pattern, const OutputPatternValues& v);

// What two snapshots span, as the items' text says it: the node epilog compares the job's start
// with its end, the agent one reading of its counter watch with the next.
enum class DeltaSpan { kJob, kReadings };

// One nvml-delta item per change: fields gpu, counter and, where they apply, before/after
// (numbers; up/down for an NVLink) and link. A GPU of `before` that `after` lacks is
// counter=gpu_lost. Nothing when either snapshot has no driver. Lines number the items from 1.
std::vector<diag::Evidence> NvmlDeltaEvidence(const health::NodeSnapshot& before,
                                              const health::NodeSnapshot& after, DeltaSpan span);

// One health-check item per failed check: fields check, verdict=fail, gpu (per-GPU checks)
// and reason (when the check gives one, CheckResult::reason).
std::vector<diag::Evidence> HealthCheckEvidence(const health::HealthReport& report);

}  // namespace autoheal::remediation
