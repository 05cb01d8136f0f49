// What autoheal-agent's hang watch reads of a job's own files, always in a child process with a
// deadline (a hung shared file system cannot hang the agent) and as the job's user (root reads
// nothing for a user the user could not): metadata only (stat: size and mtime, no file opened),
// and the dump pipes PyTorch's flight recorder made, written without blocking.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::agent {

// The job's progress as its files show it.
struct FileProgress {
    std::uint64_t output_bytes = 0;  // the sizes of its output files, summed
    std::int64_t newest_mtime = 0;   // the newest mtime of its output and its checkpoint folder
                                     // (the folder and each entry directly in it), seconds
};

// Stats `outputs` (following a link as the user would) and `ckpt_dir` and at most 10,000 of its
// entries (not followed). A file that cannot be stat'ed adds nothing; an error only when the
// child failed or ran past `timeout`.
Result<FileProgress> ProbeJobFiles(const std::vector<std::string>& outputs,
                                   const std::optional<std::string>& ckpt_dir, uid_t uid,
                                   std::chrono::milliseconds timeout);

// Asks each rank whose dump pipe is in `node_dir` (FlightRecorderDir/<node>: PyTorch's
// `<prefix><rank>.pipe` FIFOs, kFrPipePrefix) for a dump: opens each FIFO write-only and
// non-blocking, never following a link, and writes one byte. Returns how many were asked.
Result<int> AskForDumps(const std::string& node_dir, uid_t uid, std::chrono::milliseconds timeout);

// Pipes and dumps under `fr_dir` (FlightRecorderDir: one folder per node): how many ranks made
// a dump pipe, and how many dumps were written at or after `since` (seconds).
struct DumpCount {
    int pipes = 0;
    int fresh_dumps = 0;
};
Result<DumpCount> CountDumps(const std::string& fr_dir, std::int64_t since, uid_t uid,
                             std::chrono::milliseconds timeout);

}  // namespace autoheal::agent
