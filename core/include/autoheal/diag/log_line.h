// Reading one log line as kernels, loggers and people write it: the prefix that says who wrote
// the line, on which host and when is parsed into a typed record, so that rules about the
// kernel see only the message of the kernel's own records.
//
// Prefixes read (they may nest: a syslog line may carry a dmesg timestamp):
//   kmsg        "6,1234,5678901,-;NVRM: Xid ..."           facility and level from PRI
//   <PRI>       "<6>[ 12.3] NVRM: ..." (dmesg -r)           facility and level from PRI
//   syslog      "Dec  1 10:00:00 node1 kernel: ..."         host, tag (the writing program)
//   journald    "2026-12-01T10:00:00+0000 node1 kernel: ..." (short-iso, short-precise too)
//   ISO 8601    "2026-12-01T10:00:00.123Z ..." / "2026-12-01 10:00:00,123 ..." (in "...: E
//               file.cc:12] ", the logging of TensorFlow, XLA and absl, the letter is a severity)
//   clock       "19:14:43  NVRM: ..." (a time of day alone, as some pastes keep it)
//   dmesg -T    "[Tue Dec  1 10:00:00 2026] ..."
//   dmesg       "[12345.678901] ..." and the printk caller id "[T4242] " after it
//   pdsh        "node1: " before one of the above
//   collector   "2026-12-06T02:20:26.123456789Z " (kubectl logs --timestamps) before syslog's
//               or dmesg's prefix: the record's own time, host and tag are read
// and before any of them: leading blanks, "> " quote marks, ANSI colours; a CR at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace autoheal::diag {

// Who wrote a line, as far as its prefix says. kUnknown: no prefix says (a bare line).
enum class LineOrigin { kUnknown, kKernel, kProcess };

struct LogLine {
    LineOrigin origin = LineOrigin::kUnknown;
    int facility = -1;        // from a kmsg or <PRI> prefix; 0 is the kernel
    int level = -1;           // 0 (emerg) .. 7 (debug)
    std::string_view host;    // syslog, journald or pdsh host, when named
    std::string_view tag;     // syslog/journald program ("kernel", "slurmd"), when named
    std::string_view time;    // the timestamp as written, when there is one
    std::size_t message = 0;  // where the message starts in the line
    std::size_t end = 0;      // where it ends (before a CR)
};

// The kmsg record prefix "PRI,SEQ,USEC,FLAGS[,...];" (Documentation/ABI/testing/dev-kmsg).
struct KmsgPrefix {
    int facility = 0;
    int level = 0;
    std::uint64_t seq = 0;
    std::uint64_t usec = 0;
    std::size_t message = 0;  // offset just past the ';'
};
std::optional<KmsgPrefix> ParseKmsgPrefix(std::string_view record);

// Parses `line` (one line, no '\n'). Never fails: a line with no prefix it knows is a bare
// message (origin kUnknown) starting after its blanks, quote marks and colours.
LogLine ParseLogLine(std::string_view line);

// Where a line's own text starts past the label pdsh or clush -L ("gpu07: ") or srun --label
// ("  3: ") put before it, which ParseLogLine keeps in a bare line's message (a word and a colon
// start many messages too); 0 when it has none. `label` gets the label's text ("gpu07", "3").
std::size_t PastLineLabel(std::string_view line, std::string_view* label);

// The blanks before `message` (where a prefix ends in `line`) that belong to the message: all
// but the one that ends the prefix, when there are two or more ("2026-12-06T02:20:26Z
// Physical state: LinkUp", a collector's time before a tool's indented output); else 0.
std::size_t Indentation(std::string_view line, std::size_t message);

// Where the text of `line` starts past its prefix: where the scanner also matches a pattern
// anchored to a line's start (diag/scanner.h HasLineAnchor). First past a logger's prefix (a
// time, host, tag or facility `parsed` read), keeping the message's own indentation (Indentation);
// then past a pdsh or clush -L host ("gpu07: ", a name with a digit, as a cluster's nodes' names
// have) or an srun --label task number ("  3: "). A word before a colon is no label ("Error:").
struct TextStart {
    std::size_t at = 0;     // offset in the line
    std::string_view host;  // the pdsh host passed, if any (a task number names no host)
};
struct TextStarts {
    TextStart at[2];
    std::size_t count = 0;
};
TextStarts FindTextStarts(std::string_view line, const LogLine& parsed);

// Byte ranges [first, second) of `message` (a kernel message) that quote names a user chooses:
// the task name and file name of a segfault or trap line, the task of an OOM kill, a hung task
// or a soft lockup, comm= and exe= of an audit record. Evidence matched there is not evidence.
std::vector<std::pair<std::size_t, std::size_t>> UserNamedSpans(std::string_view message);

// Whether a signature match at [begin, end) of `line` (parsed as `parsed`) is evidence. Driver
// text (a match that is or follows "NVRM:", "nvidia-nvswitch", "mlx5_core" ...) counts only
// where the message starts, in a record no other program wrote; no match counts inside a name
// a user chose; with `kernel_only` (the node's kernel log), only kernel records count.
bool IsAdmissible(std::string_view line, const LogLine& parsed, std::size_t begin, std::size_t end,
                  bool kernel_only);

// Where `line` relays a kernel record after words of its own ("Xid errors on instance: node7,
// Error: May 29 01:37:38 node7 kernel: [257087.8] NVRM: Xid ...", a health check's "GPU Xid
// errors detected: [ 3606.832215] NVRM: Xid ...", GPUd's "[XID found] (54 minutes ago) \"NVRM:
// Xid ...\"", journald's MESSAGE field as exports and collectors print it, "MESSAGE=NVRM: Xid"
// or "\"MESSAGE\":\"NVRM: Xid"): the offset of that record, which parses as the kernel's own;
// npos when there is none. Only a bare line relays (one whose prefix names a
// program or the kernel is that writer's words), and only in pasted text: in a node's kernel log
// a record quoted by another program is that program's words.
std::size_t RelayedKernelRecord(std::string_view line, const LogLine& parsed);

// The host a collector put before a node's own line ("mynode-066 | ERROR: nhc: ...", Azure's
// distributed health checks' health.log): a name with a digit, then " | ", and no other column;
// empty when `line` has none.
std::string_view CollectedHost(std::string_view line);

// Where the evidence for a match at [begin, end) of `line` starts: 0 where the line admits it
// (IsAdmissible), the relayed record's offset where, in pasted text (not `kernel_only`), the
// line relays a kernel record that admits it (RelayedKernelRecord); npos where it is no evidence.
std::size_t EvidenceStart(std::string_view line, const LogLine& parsed, std::size_t begin,
                          std::size_t end, bool kernel_only);

// Whether `line` is the kernel's own record by its prefix (kmsg facility 0, a `kernel` tag, a
// bare dmesg time) or a driver speaking where its message starts ("NVRM: ...", "mlx5_core ...").
// The strongest kind of evidence: the driver itself saw the fault.
bool IsKernelRecord(std::string_view line);
// The same for a line already parsed.
bool IsKernelRecord(std::string_view line, const LogLine& parsed);

}  // namespace autoheal::diag
