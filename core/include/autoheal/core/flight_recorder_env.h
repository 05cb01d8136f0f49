// PyTorch's NCCL flight recorder for opted-in jobs: the variables the SPANK plugin sets in each
// task (only those the job has not set itself) and the per-run folder the dumps go to, which the
// batch host's node epilog reads back (as the job's user) when the job failed.
//
// Variables, from PyTorch's source (ProcessGroupNCCL.cpp/.hpp, FlightRecorder.hpp) and docs:
//   TORCH_NCCL_TRACE_BUFFER_SIZE    entries kept in the ring buffer (documented from 2.4; 0 =
//                                   off, the default until 2.6); TORCH_FR_BUFFER_SIZE is its
//                                   newer name (2.8+, read first)
//   TORCH_NCCL_DUMP_ON_TIMEOUT      write the buffer when the watchdog times out (from 2.4)
//   TORCH_NCCL_DEBUG_INFO_TEMP_FILE the dump's path prefix, <prefix><rank> (from 2.4; default
//                                   /tmp/nccl_trace_rank_); TORCH_FR_DUMP_TEMP_FILE its newer
//                                   name (2.8+)
//   TORCH_NCCL_DEBUG_INFO_PIPE_FILE a FIFO prefix, <prefix><rank>.pipe, that makes a rank dump
//                                   when anything is written to it (ProcessGroupNCCL DumpPipe)
// Both names of a pair are set to the same value, so every release reads one of them. A job that
// sets any variable of a pair keeps its own value (and a job that sets its own dump prefix gets
// no pipe from us either: the dumps are then where it put them); a buffer size of 0 turns the
// whole recorder off for the job.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoheal {

// state_dir/jobs/<job>/run<restart>/flight-recorder: one folder per node below it, owned by the
// job's user (mode 0700), holding the dumps of the ranks that ran there.
std::string FlightRecorderDir(std::string_view state_dir, std::string_view job, int restart);

inline constexpr std::string_view kFrDumpPrefix = "nccl_trace_rank_";
inline constexpr std::string_view kFrPipePrefix = "nccl_trace_pipe_rank_";
inline constexpr std::string_view kFrBufferEntries = "2000";  // PyTorch's recommended size

// The variables to set in a task whose environment `lookup` reads, its dumps going to
// `node_dir` (FlightRecorderDir/<node>); empty when the job set a buffer size of 0.
// `dump_dir_needed` is set when the dump prefix is ours (the folder must then exist). A path
// variable whose value is inside this run's folder (the parent of `node_dir`) was set by us for
// another node (an srun task inherits the batch step's environment): it is set again for this
// node.
using TaskEnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
std::vector<std::pair<std::string, std::string>> FlightRecorderEnv(const TaskEnvLookup& lookup,
                                                                   const std::string& node_dir,
                                                                   bool* dump_dir_needed);

}  // namespace autoheal
