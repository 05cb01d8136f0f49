// PyTorch's NCCL flight recorder: the dumps each rank writes (on a watchdog timeout with
// TORCH_NCCL_DUMP_ON_TIMEOUT, or when asked through its pipe), read as data, and the culprit named
// as PyTorch's own analysis (tools/flight_recorder, fr_trace) does.
//
// A dump is the dict PyTorch's FlightRecorder::dump() pickles (torch/csrc/distributed/c10d/
// FlightRecorder*.{hpp,cpp}; dump_json() writes the same keys as JSON, with pg_status values as
// strings and no null times):
//   version "2.x"; comm_lib_version; pg_config {group name: {name, desc, ranks: "[0, 1]"}};
//   pg_status {pg id: {last_enqueued_collective, last_started_collective,
//   last_completed_collective}}; entries [{record_id, pg_id, process_group: (name, desc),
//   collective_seq_id, p2p_seq_id, op_id, profiling_name ("nccl:all_reduce"), time_created_ns,
//   input_sizes [[..]], input_dtypes, output_sizes, output_dtypes, state ("scheduled",
//   "started", "completed"), time_discovered_started_ns, time_discovered_completed_ns,
//   retired, timeout_ms, is_p2p, duration_ms?, frames?}]; nccl_comm_state (not read).
// The dump does not say its rank: the file name does, `<prefix><rank>` (TORCH_NCCL_DEBUG_INFO_
// TEMP_FILE / TORCH_FR_DUMP_TEMP_FILE, default /tmp/nccl_trace_rank_), as fr_trace reads it.
//
// Every dump is written by the job's own processes: evidence a user could forge. It may name a
// rank (and so a node) to leave out of the job's next run, never a node to take out of service.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/diag/data_tree.h"
#include "autoheal/diag/evidence.h"

namespace autoheal::diag {

// The states an entry goes through; kOther for a word this reader does not know.
enum class FrState : std::uint8_t { kOther, kScheduled, kStarted, kCompleted };

// 64 bytes: a job's dumps hold millions of entries. Texts are indexes into the dump's `texts`.
struct FrEntry {
    std::int64_t record_id = 0;
    std::int64_t pg_id = 0;
    std::int64_t collective_seq_id = 0;
    std::int64_t p2p_seq_id = 0;
    std::int64_t op_id = 0;
    std::int64_t time_created_ns = 0;
    std::uint32_t pg_name = 0;         // process_group[0]
    std::uint32_t profiling_name = 0;  // "nccl:all_reduce"
    std::uint32_t input_sizes = 0;     // "[[1024,1024]]", compared between ranks
    FrState state = FrState::kOther;
    bool is_p2p = false;
};

struct FrProcessGroup {
    std::string name;
    std::string desc;
    std::vector<int> ranks;  // from "[0, 1, 2]"; empty when unreadable
};

struct FrPgStatus {
    std::int64_t last_enqueued = -1;
    std::int64_t last_started = -1;
    std::int64_t last_completed = -1;
};

struct FrDump {
    int rank = -1;  // from the file name
    std::string version;
    std::map<std::string, FrProcessGroup> pg_config;  // by group name
    std::map<std::int64_t, FrPgStatus> pg_status;     // by pg id
    std::vector<FrEntry> entries;                     // as recorded, oldest first
    // The texts entries name, each once (a dump repeats a few op names, sizes and groups
    // thousands of times); texts[0] is "".
    std::vector<std::string> texts{std::string()};
    const std::string& Text(std::uint32_t id) const { return texts[id < texts.size() ? id : 0]; }
};

// A dump's bytes: a pickle (first byte 0x80, or protocol 0/1 opcodes) or JSON ('{'). Bounded by
// `limits`; at most kMaxFrEntries entries are kept (PyTorch's ring buffer holds 2,000 by default).
inline constexpr std::size_t kMaxFrEntries = 100'000;
Result<FrDump> ParseFrDump(std::string_view bytes, const DataLimits& limits = {});

// The rank in a dump's file name: the decimal digits it ends with ("nccl_trace_rank_13" -> 13,
// "rank_7.json" -> 7); nullopt when there are none or too many.
std::optional<int> FrRankFromFileName(std::string_view name);

// One finding of the analysis, per process group.
struct FrFinding {
    enum class Kind { kHang, kDesync };
    Kind kind = Kind::kHang;
    std::int64_t pg_id = 0;
    std::string pg_name;
    std::int64_t seq = 0;    // the collective sequence number the others wait in
    std::string op;          // its profiling name ("nccl:all_reduce")
    std::vector<int> ranks;  // kHang: the culprits; kDesync: the ranks in another collective
    std::string why;         // kHang: "never-entered", "not-completed", "no-dump"
    std::string other_op;    // kDesync: what those ranks run at `seq`
    int waiting = 0;         // ranks at `seq` that did not complete it
    int members = 0;         // ranks of the process group
};

// Per process group (collectives only): the sequence number each rank reached and its state.
// A rank behind the others' collective is a culprit: "never-entered" when its last collective
// completed (it is elsewhere: data loading, a host hang), "not-completed" when that one is still
// scheduled or started (its GPU or link stopped). A member with no dump is a culprit
// ("no-dump") only when every dumped rank waits in the same collective. Ranks that ran a
// different collective, or the same with other sizes, at a sequence number others ran too
// are a desync: the job's own bug. When every rank waits in the same collective, nothing is
// found (the fabric, not one rank).
std::vector<FrFinding> AnalyzeFlightRecorder(const std::vector<FrDump>& dumps);

// The findings as typed evidence (built-in kinds nccl-fr-culprit, nccl-fr-desync): fields
// rank (the first culprit), ranks, pg, seq, op, state, waiting, and host when `rank_nodes`
// names the culprit's node. `source` names the input in the set.
inline constexpr std::string_view kFrCulpritSignature = "nccl-fr-culprit";
inline constexpr std::string_view kFrDesyncSignature = "nccl-fr-desync";
void AddFlightRecorderEvidence(const std::vector<FrFinding>& findings,
                               const std::map<int, std::string>& rank_nodes,
                               std::string_view source, EvidenceSet* set);

// "nccl:all_reduce" -> "ALLREDUCE" (the words NCCL's own logs use).
std::string FrOpWord(std::string_view profiling_name);

// The dumps of a folder: its files named `<prefix><rank>` (ReadSmallFile: no link followed, at
// most max_file_bytes each, at most max_files and max_total_bytes in all), and those of its
// subfolders one level down, each named after the node its ranks ran on (the layout the SPANK
// plugin gives TORCH_*_TEMP_FILE: <run folder>/<node>/nccl_trace_rank_<rank>); `rank_nodes` gets
// rank -> node for those. A file that is not a dump is reported in `problems` and skipped.
struct FrFolder {
    std::vector<FrDump> dumps;
    std::map<int, std::string> rank_nodes;
    std::vector<std::string> problems;
    std::uint64_t bytes = 0;  // read in all
};
// Files are read by up to 8 threads. `access`, when given, runs the listing and each thread's
// reads inside it: a caller that reads as the job's user passes what switches the thread's file
// access (setfsuid and setfsgid hold for the calling thread only).
using FrFileAccess = std::function<void(const std::function<void()>& read)>;
inline constexpr std::size_t kMaxFrFiles = 16'384;
FrFolder ReadFrFolder(const std::string& path, const FrFileAccess& access = nullptr,
                      std::size_t max_file_bytes = 64u << 20, std::size_t max_files = kMaxFrFiles,
                      std::uint64_t max_total_bytes = std::uint64_t{4} << 30);

}  // namespace autoheal::diag
