// The epilogs' uses of a child process, on the one Subprocess (os/subprocess.h): a command an
// admin configured (the GPU reset), and the reads of and appends to a job user's file done as
// that user.
#pragma once

#include <sys/types.h>

#include <cstdint>
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

// The last `max_bytes` of the user's file, read as that user (ReadFileTailSafely in a child
// with the user's ids and no supplementary groups), so root never reads a file the user could
// not: the job's output names a path the user chose. Run as uid 0 (or not as root), read in this
// process. Bounded to 10 s.
Result<std::string> ReadFileTailAsUser(const std::string& path, std::uint64_t max_bytes, uid_t uid);

}  // namespace autoheal::remediation
