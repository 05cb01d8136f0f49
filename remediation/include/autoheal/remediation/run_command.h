// The epilogs' uses of a child process, on the one Subprocess (os/subprocess.h): a command an
// admin configured (the GPU reset), and the reads of and appends to a job user's file done as
// that user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

// Runs argv (no shell; argv[0] absolute) with a time limit; returns "ok" or the failure
// ("/usr/bin/nvidia-smi: exit 3", "...: killed by signal 9", "...: timed out after 60.0 s ...",
// "...: not an absolute path"). The child's process group is killed at the deadline and its reap is
// bounded.
std::string RunCommand(const std::vector<std::string>& argv, double timeout_seconds);

// Appends `text` to the user's file as that user (a child process with the user's ids and no
// supplementary groups), so root never writes through a link or into a file the user could not
// write: the file is opened O_NOFOLLOW and must be a regular file. Bounded to 10 s.
Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid);

// Runs `work` in a forked child, as the job's user (its ids, no supplementary groups) when this
// process is root and the user is not, killed at `timeout` (bounded reap): what work returned
// (at most max_bytes of text), or an error: work's (kIo, as uid N), a child that failed or did not
// finish in time (kUnavailable). The caller must be single-threaded (it forks).
Result<std::string> RunAsUser(uid_t uid, std::chrono::milliseconds timeout, std::size_t max_bytes,
                              const std::function<Result<std::string>()>& work);

// The last `max_bytes` of the user's file, read as that user (ReadFileTailSafely in a child
// with the user's ids and no supplementary groups), so root never reads a file the user could
// not: the job's output names a path the user chose. Run as uid 0 (or not as root), read in this
// process. Bounded to 10 s.
Result<std::string> ReadFileTailAsUser(const std::string& path, std::uint64_t max_bytes, uid_t uid);

}  // namespace autoheal::remediation
