#include "autoheal/diag/log_line.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

#include "autoheal/diag/pattern.h"

namespace autoheal::diag {
namespace {

using Span = std::pair<std::size_t, std::size_t>;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Leading blanks, "> " quote marks (any depth) and ANSI CSI sequences ("\x1b[1;31m").
std::size_t SkipNoise(std::string_view s, std::size_t pos) {
    for (;;) {
        const std::size_t start = pos;
        while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '>')) ++pos;
        if (pos + 1 < s.size() && s[pos] == '\x1b' && s[pos + 1] == '[') {
            pos += 2;
            while (pos < s.size() && (IsDigit(s[pos]) || s[pos] == ';' || s[pos] == '?')) ++pos;
            if (pos < s.size()) ++pos;  // the final byte, 'm' for colours
        }
        if (pos == start) return pos;
    }
}

bool ParseUint(std::string_view s, std::uint64_t* out) {
    if (s.empty() || s.size() > 20) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size();
}

// What follows a prefix is matched from `pos` with an anchored RE2; on a match `pos` moves past
// it. `args` receive the groups.
template <typename... Args>
bool Consume(std::string_view line, std::size_t* pos, const RE2& re, Args*... args) {
    re2::StringPiece in(line.data() + *pos, line.size() - *pos);
    if (!RE2::Consume(&in, re, args...)) return false;
    *pos = static_cast<std::size_t>(in.data() - line.data());
    return true;
}

std::string_view View(const re2::StringPiece& p) { return {p.data(), p.size()}; }

// An ISO 8601 / RFC 3339 time as loggers and collectors write it: "2026-12-01T10:00:00Z",
// "2026-12-01 10:00:00,123", "2026-12-06T02:20:26.123456789+01:00".
const std::string& IsoTime() {
    static const std::string re =
        R"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)";
    return re;
}

// "host tag[pid]: " after a syslog or journald time: the host, the tag and its pid.
const RE2& HostTag() {
    static const RE2 re(R"(([A-Za-z0-9][A-Za-z0-9._-]*) ([A-Za-z0-9_./-]+)(\[\d+\])?: ?)",
                        PatternOptions());
    return re;
}

// "Dec  1 10:00:00[.123456] host tag[pid]: " (RFC 3164, journald short and short-precise; the
// month is the locale's abbreviation, strftime's %b, in UTF-8: "kwi", "Dez", "janv.") or
// "2026-12-01T10:00:00[.123][Z|+0000] host tag[pid]: " (journald short-iso, RFC 3339), the host
// and tag optional after an ISO time ("2026-12-01 10:00:00,123 message") or after a time of day
// alone ("19:14:43  NVRM: Xid ...", a paste that kept only the clock); journald's short-full
// ("Tue 2026-12-01 10:00:00 UTC host tag: ") and short-unix ("1764583200.123456 host tag: ").
// Blanks past one after the time indent what follows ("2026-12-06T02:20:26Z         Physical
// state: LinkUp", a collector's time before a tool's indented output): no host or tag there.
bool ConsumeTimeHostTag(std::string_view line, std::size_t* pos, LogLine* out) {
    static const RE2 kBsd(R"(([A-Za-z\x80-\xff]{2,8}\.? {1,2}\d{1,2} )"
                          R"(\d\d:\d\d:\d\d(?:\.\d+)?) +)",
                          PatternOptions());
    static const RE2 kIso("(" + IsoTime() + R"()(?: +|:? +|$))", PatternOptions());
    static const RE2 kClock(R"((\d\d:\d\d:\d\d(?:[.,]\d+)?) +)", PatternOptions());
    static const RE2 kFull(R"(([A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )"
                           R"([A-Za-z+-][A-Za-z0-9+/_-]*) +)",
                           PatternOptions());
    static const RE2 kUnix(R"((\d{9,10}\.\d{6}) +)", PatternOptions());
    re2::StringPiece time, host, tag, pid;
    const bool bsd = Consume(line, pos, kBsd, &time);
    if (!bsd && !Consume(line, pos, kIso, &time) && !Consume(line, pos, kClock, &time) &&
        !Consume(line, pos, kFull, &time) && !Consume(line, pos, kUnix, &time)) {
        return false;
    }
    out->time = View(time);
    if (Indentation(line, *pos) > 0) return true;
    const std::size_t before_host = *pos;
    if (Consume(line, pos, HostTag(), &host, &tag, &pid)) {
        // "amdgpu 0000:29:00.0: " (a driver and its device) is not "host tag:".
        if (line[*pos - 1] == ':' && *pos < line.size() && IsDigit(line[*pos])) {
            *pos = before_host;
            return true;
        }
        // "2024-10-09 15:47:38.568412: E path/file.cc:1170] " (TensorFlow, XLA, absl logging):
        // a severity letter and a source line, no host.
        // "2024-10-09 15:47:38,123 INFO trainer: " (Python's logging, "%(asctime)s %(levelname)s
        // %(name)s: "): a level and a logger, no host.
        static const RE2 kSourceLine(R"(\d+\] )", PatternOptions());
        static const RE2 kLevel(
            R"((?i)(?:trace|debug|info|notice|warn|warning|error|critical|fatal))",
            PatternOptions());
        std::size_t after = *pos;
        if ((host.size() == 1 && Consume(line, &after, kSourceLine)) ||
            RE2::FullMatch(host, kLevel)) {
            *pos = before_host;
            return true;
        }
        out->host = View(host);
        out->tag = View(tag);
    }
    return true;
}

// "[Tue Dec  1 10:00:00 2026] " (dmesg -T; a web page collapses the day's padding, "Dec 1") or
// "[12345.678901] " (dmesg), each with the gap to the record before when -d adds it
// ("[12345.678901 <    0.000012>] ", "[<    0.000012>] " for --time-format delta), or dmesg -H's
// relative times ("[Dec 4 19:42] " opens each minute, "[  +0.000012] " follows), then the printk
// caller id "[T4242] " / "[C3] " that CONFIG_PRINTK_CALLER adds: the kernel's own times, true. An
// ISO time in brackets is consumed too but says nothing of who wrote the line, false: Talos prints
// it after the kernel's decoded facility ("kern: warning: [2026-04-22T21:26:20.599488292Z]: "),
// Slurm's daemons before their own messages ("[2026-12-01T10:00:00.123] error: ...").
bool ConsumeDmesgTime(std::string_view line, std::size_t* pos, LogLine* out) {
    static const RE2 kHuman(R"(\[([A-Z][a-z]{2} [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}))"
                            R"((?: < *\d+\.\d+>)?\] ?)",
                            PatternOptions());
    static const RE2 kMono(R"(\[ *\+?(\d+\.\d+)(?: < *\d+\.\d+>)?\] ?)", PatternOptions());
    static const RE2 kDelta(R"(\[< *(\d+\.\d+)>\] ?)", PatternOptions());
    static const RE2 kMinute(R"(\[([A-Z][a-z]{2} ?\d{1,2} \d\d:\d\d)\] ?)", PatternOptions());
    static const RE2 kIso(
        R"(\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]:? ?)",
        PatternOptions());
    static const RE2 kCaller(R"(\[ *[TC]\d+\] ?)", PatternOptions());
    re2::StringPiece time;
    if (Consume(line, pos, kIso, &time)) {
        if (out->time.empty()) out->time = View(time);
        return false;
    }
    if (!Consume(line, pos, kMono, &time) && !Consume(line, pos, kHuman, &time) &&
        !Consume(line, pos, kDelta, &time) && !Consume(line, pos, kMinute, &time)) {
        return false;
    }
    if (out->time.empty()) out->time = View(time);
    Consume(line, pos, kCaller);
    return true;
}

// "host kernel: " or "host tag[pid]: " after a monotonic time: journald's short-monotonic
// ("[ 1234.567890] host kernel: ") and short-delta. Only the tag `kernel` or a tag with a pid is
// taken, as the kernel's own messages have the shape "word word: " too ("usb 1-1: ",
// "pcieport 0000:00:01.0: ").
bool ConsumeJournalHostTag(std::string_view line, std::size_t* pos, LogLine* out) {
    std::size_t after = *pos;
    re2::StringPiece host, tag, pid;
    if (!Consume(line, &after, HostTag(), &host, &tag, &pid)) return false;
    if (View(tag) != "kernel" && pid.empty()) return false;
    out->host = View(host);
    out->tag = View(tag);
    *pos = after;
    return true;
}

// "node1: " (pdsh, clush -L: several hosts' logs interleaved); the caller keeps it only when a
// timestamp follows. A number alone is srun --label's task ("  3: "), which names no host, and
// "kernel: " is the kernel's tag with the host cut off ("kernel: [ 5.0] NVRM: ...").
bool ConsumePdshHost(std::string_view line, std::size_t* pos, LogLine* out) {
    static const RE2 kHost(R"(([A-Za-z0-9][A-Za-z0-9._-]*): )", PatternOptions());
    if (line.substr(*pos).starts_with("kernel: ")) return false;
    re2::StringPiece host;
    if (!Consume(line, pos, kHost, &host)) return false;
    if (!std::all_of(host.begin(), host.end(), IsDigit)) out->host = View(host);
    return true;
}

// "messages:Jun 17 20:18:09 node1 kernel: ..." (grep over several files; with -n the line's
// number follows, "kern.log:42:"): the file's name names no host and is skipped only where a
// syslog time, host and tag follow it.
bool ConsumeGrepFile(std::string_view line, std::size_t* pos) {
    static const RE2 kFile(R"([A-Za-z0-9_./-]+:(?:\d+:)?)", PatternOptions());
    std::size_t after = *pos;
    if (!Consume(line, &after, kFile) || after >= line.size() || line[after] == ' ') return false;
    LogLine stamped;
    std::size_t stamped_pos = after;
    if (!ConsumeTimeHostTag(line, &stamped_pos, &stamped) || stamped.host.empty()) return false;
    *pos = after;
    return true;
}

// "<6>" (dmesg -r, RFC 5424): facility * 8 + level.
bool ConsumePri(std::string_view line, std::size_t* pos, LogLine* out) {
    if (*pos >= line.size() || line[*pos] != '<') return false;
    const std::size_t close = line.find('>', *pos);
    std::uint64_t pri = 0;
    if (close == std::string_view::npos || close - *pos > 4 ||
        !ParseUint(line.substr(*pos + 1, close - *pos - 1), &pri) || pri > 191) {
        return false;
    }
    out->facility = static_cast<int>(pri >> 3);
    out->level = static_cast<int>(pri & 7);
    *pos = close + 1;
    return true;
}

// RFC 5424's header after its "<PRI>": "1 2026-12-01T10:00:00.123+00:00 host app procid msgid
// [structured data] " ("-" for a field left out), as rsyslog's RSYSLOG_SyslogProtocol23Format and
// syslog-ng's IETF syslog write it: the time, the host and the writer (the facility of the PRI
// decides whether it is the kernel).
bool ConsumeRfc5424Header(std::string_view line, std::size_t* pos, LogLine* out) {
    static const RE2 kHeader(R"(1 (\d{4}-\d\d-\d\dT\S+|-) (\S+) (\S+) \S+ \S+ )"
                             R"((?:-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: |$))",
                             PatternOptions());
    re2::StringPiece time, host, app;
    if (!Consume(line, pos, kHeader, &time, &host, &app)) return false;
    if (time != "-") out->time = View(time);
    if (host != "-") out->host = View(host);
    if (app != "-") out->tag = View(app);
    return true;
}

// "kern  :err   : " (dmesg -x), "kern: warning: " (Talos): facility and level by name.
bool ConsumeDmesgFacility(std::string_view line, std::size_t* pos, LogLine* out) {
    static const RE2 kDecoded(R"((kern|user|mail|daemon|auth|syslog|lpr|news) *: *)"
                              R"((emerg|alert|crit|err|warn|notice|info|debug)\w* *: )",
                              PatternOptions());
    static constexpr std::string_view kFacilities[] = {"kern", "user",   "mail", "daemon",
                                                       "auth", "syslog", "lpr",  "news"};
    static constexpr std::string_view kLevels[] = {"emerg", "alert",  "crit", "err",
                                                   "warn",  "notice", "info", "debug"};
    re2::StringPiece facility, level;
    if (!Consume(line, pos, kDecoded, &facility, &level)) return false;
    for (int i = 0; i < 8; ++i) {
        if (View(facility) == kFacilities[i]) out->facility = i;
        if (View(level) == kLevels[i]) out->level = i;
    }
    return true;
}

// Text a driver starts its messages with. Found anywhere but where the message starts, it is a
// quotation (a task or file name), not the driver speaking. amdgpu's dev_* messages start with
// the driver and the device ("amdgpu 0000:c1:00.0: ..."), its pr_* messages with its pr_fmt
// ("amdgpu: [powerplay] ...").
constexpr std::array<std::string_view, 10> kDriverPrefixes = {
    "NVRM:",       "nvidia-nvswitch", "mlx5_core", "mlx5_ib",  "nvidia-peermem",
    "nvidia-uvm:", "nvidia-modeset:", "NVSwitch:", "amdgpu 0", "amdgpu: "};

// A device file named after its driver ("lstat /dev/nvidia-uvm: no such file or directory") is a
// path, and an InfiniBand device named after it (Azure's HPC images name theirs mlx5_ib0 to
// mlx5_ib7: "check_hw_ib: No IB port mlx5_ib7:1 is ACTIVE") a device, not the driver speaking.
std::size_t FirstDriverText(std::string_view line, std::size_t from, std::size_t to) {
    std::size_t best = std::string_view::npos;
    std::string_view s = line.substr(0, std::min(to + 16, line.size()));
    for (std::string_view p : kDriverPrefixes) {
        const auto named = [&](std::size_t at) {
            return (at > 0 && s[at - 1] == '/' && p.starts_with("nvidia-")) ||
                   (p == "mlx5_ib" && at + p.size() < s.size() && IsDigit(s[at + p.size()]));
        };
        std::size_t at = s.find(p, from);
        while (at != std::string_view::npos && named(at)) at = s.find(p, at + 1);
        if (at < best && at < to) best = at;
    }
    return best;
}

void AddSpan(std::vector<Span>* out, std::size_t begin, std::size_t end) {
    if (end > begin) out->emplace_back(begin, end);
}

}  // namespace

std::optional<KmsgPrefix> ParseKmsgPrefix(std::string_view record) {
    const std::size_t semi = record.find(';');
    if (semi == std::string_view::npos || semi > 96) return std::nullopt;
    std::string_view prefix = record.substr(0, semi);
    std::uint64_t values[3] = {0, 0, 0};
    for (std::uint64_t& v : values) {
        const std::size_t comma = prefix.find(',');
        if (comma == std::string_view::npos || !ParseUint(prefix.substr(0, comma), &v)) {
            return std::nullopt;
        }
        prefix.remove_prefix(comma + 1);
    }
    if (values[0] > 1023) return std::nullopt;  // facility is 8 bits wide in printk's PRI
    KmsgPrefix out;
    out.facility = static_cast<int>(values[0] >> 3);
    out.level = static_cast<int>(values[0] & 7);
    out.seq = values[1];
    out.usec = values[2];
    out.message = semi + 1;
    return out;
}

std::size_t Indentation(std::string_view line, std::size_t message) {
    std::size_t blanks = 0;
    while (blanks < message &&
           (line[message - blanks - 1] == ' ' || line[message - blanks - 1] == '\t')) {
        ++blanks;
    }
    return blanks >= 2 ? blanks - 1 : 0;
}

namespace {

// Reads the prefix of the record that starts at `pos` of `line`. A collector's own time may come
// first (kubectl logs --timestamps, a log shipper's export): the record's own prefix after it
// ("2026-12-06T02:20:26.123456789Z Mar 29 15:38:59 node1 kernel: ", "... node1: kern: warning:
// [time]: ", "... [12345.678] ") is the line's (`collected`: read behind one, look no further).
LogLine ParseFrom(std::string_view line, std::size_t pos, bool collected) {
    static const RE2 kCollector("(" + IsoTime() + ") +", PatternOptions());
    LogLine out;
    out.end = line.size();
    if (out.end > 0 && line[out.end - 1] == '\r') --out.end;
    pos = SkipNoise(line, pos);
    re2::StringPiece collector_time;
    if (std::size_t inner_pos = pos;
        !collected && Consume(line, &inner_pos, kCollector, &collector_time)) {
        LogLine inner = ParseFrom(line, inner_pos, true);
        if (!inner.time.empty() || !inner.host.empty() || !inner.tag.empty() ||
            inner.facility >= 0 || inner.origin != LineOrigin::kUnknown) {
            if (inner.time.empty()) inner.time = View(collector_time);
            return inner;
        }
    }
    if (pos < line.size() && IsDigit(line[pos])) {
        if (auto kmsg = ParseKmsgPrefix(line.substr(pos))) {
            out.facility = kmsg->facility;
            out.level = kmsg->level;
            out.message = pos + kmsg->message;
            out.origin = kmsg->facility == 0 ? LineOrigin::kKernel : LineOrigin::kProcess;
            return out;
        }
    }
    ConsumeGrepFile(line, &pos);
    const std::size_t before_host = pos;
    const bool pdsh = ConsumePdshHost(line, &pos, &out);
    if (ConsumePri(line, &pos, &out)) ConsumeRfc5424Header(line, &pos, &out);
    ConsumeDmesgFacility(line, &pos, &out);
    const bool stamped = ConsumeTimeHostTag(line, &pos, &out);
    const bool dmesg = ConsumeDmesgTime(line, &pos, &out);
    // A host and tag after dmesg's time ("[Sun Dec  1 14:54:40 2024] node1 kernel: "); behind a
    // collector's time, the inner read above finds them.
    if (dmesg && !stamped) {
        ConsumeJournalHostTag(line, &pos, &out);
    }
    const bool decoded = out.facility >= 0;
    // "node1: NVRM: Xid ..." (pdsh over dmesg without times) and "node1: kernel: NVRM: ..."
    // (over a paste that kept the kernel's tag) name a host too; "NVRM: Xid ..." and
    // "kernel: ..." do not.
    const bool driver_next =
        (FirstDriverText(line, pos, pos + 1) == pos || line.substr(pos).starts_with("kernel: ")) &&
        out.host != "kernel";
    if (pdsh && !stamped && !dmesg && !decoded && !driver_next) {
        out = LogLine{};
        out.end = line.size() - (line.ends_with('\r') ? 1 : 0);
        pos = before_host;
    }
    if (out.tag.empty() && line.substr(pos).starts_with("kernel: ")) {
        out.tag = line.substr(pos, 6);
        pos += 8;
    }
    if (!out.tag.empty() && !dmesg) ConsumeDmesgTime(line, &pos, &out);
    out.message = SkipNoise(line, pos);
    if (out.facility >= 0) {
        out.origin = out.facility == 0 ? LineOrigin::kKernel : LineOrigin::kProcess;
    } else if (!out.tag.empty()) {
        out.origin = out.tag == "kernel" ? LineOrigin::kKernel : LineOrigin::kProcess;
    } else if (dmesg && !stamped) {
        out.origin = LineOrigin::kKernel;
    }
    return out;
}

}  // namespace

LogLine ParseLogLine(std::string_view line) { return ParseFrom(line, 0, false); }

std::size_t PastLineLabel(std::string_view line, std::string_view* label) {
    const std::size_t start = SkipNoise(line, 0);
    std::size_t pos = start;
    LogLine unused;
    if (!ConsumePdshHost(line, &pos, &unused)) return 0;
    *label = line.substr(start, pos - start - 2);  // without its ": "
    return pos;
}

TextStarts FindTextStarts(std::string_view line, const LogLine& parsed) {
    TextStarts out;
    const bool prefixed =
        !parsed.time.empty() || !parsed.host.empty() || !parsed.tag.empty() || parsed.facility >= 0;
    if (prefixed && parsed.message < line.size()) {
        out.at[out.count++] = {parsed.message - Indentation(line, parsed.message), {}};
    }
    std::string_view named;
    const std::size_t past = PastLineLabel(line, &named);
    if (past == 0 || (prefixed && past == parsed.message)) return out;
    if (std::all_of(named.begin(), named.end(), IsDigit)) {
        out.at[out.count++] = {past, {}};
    } else if (std::any_of(named.begin(), named.end(), IsDigit)) {
        out.at[out.count++] = {past, named};
    }
    return out;
}

std::vector<Span> UserNamedSpans(std::string_view message) {
    std::vector<Span> out;
    // "comm[pid]: segfault at ... in FILE[base+size]", "traps: comm[pid] trap ... in FILE[...]",
    // "comm[pid] general protection fault ...": the task's name, then the file's.
    static const RE2 kTask(R"(^(?:traps: )?(.*)\[\d+\]:? (?:segfault at|trap |general protection|)"
                           R"(potentially unexpected fatal signal|bad frame in))",
                           PatternOptions());
    // The OOM killer and friends quote the task's name in parentheses or after task=.
    static const RE2 kNamed(
        R"((?:Killed process|reaped process|pid) \d+ \((.*)\)|^(.*) invoked oom-killer:|)"
        R"(INFO: task (.*):\d+ blocked for|soft lockup - CPU#\d+ stuck for \d+s! \[(.*):\d+\]|)"
        R"(PID: \d+ Comm: (.*?) (?:Not )?[Tt]ainted|process '(.*)' started with)",
        PatternOptions());
    re2::StringPiece m(message.data(), message.size());
    re2::StringPiece task;
    const auto offset = [&](const re2::StringPiece& p) {
        return static_cast<std::size_t>(p.data() - message.data());
    };
    if (RE2::PartialMatch(m, kTask, &task)) {
        AddSpan(&out, 0, task.size());
        const std::size_t in = message.find(" in ", task.size());
        if (in != std::string_view::npos) AddSpan(&out, in + 4, message.size());
    }
    re2::StringPiece groups[7];
    if (kNamed.Match(m, 0, m.size(), RE2::UNANCHORED, groups, 7)) {
        for (int g = 1; g < 7; ++g) {
            if (groups[g].data() != nullptr) {
                AddSpan(&out, offset(groups[g]), offset(groups[g]) + groups[g].size());
            }
        }
    }
    // "oom-kill:constraint=...,task_memcg=PATH,task=COMM,pid=..." and audit records: names and
    // paths a user chose, all the way to the end.
    for (std::string_view key : {std::string_view("oom-kill:"), std::string_view("audit")}) {
        const std::size_t at = message.find(key);
        if (at != std::string_view::npos && at < 32) AddSpan(&out, at + key.size(), message.size());
    }
    return out;
}

bool IsAdmissible(std::string_view line, const LogLine& parsed, std::size_t begin, std::size_t end,
                  bool kernel_only) {
    if (kernel_only && parsed.origin == LineOrigin::kProcess) return false;
    const std::size_t message = std::min(parsed.message, line.size());
    const std::size_t driver = FirstDriverText(line, message, std::max(end, begin + 1));
    if (driver != std::string_view::npos &&
        (driver != message || parsed.origin == LineOrigin::kProcess)) {
        return false;
    }
    if (begin < message) return true;
    const std::string_view text = line.substr(message, parsed.end - std::min(message, parsed.end));
    for (const auto& [from, to] : UserNamedSpans(text)) {
        if (begin - message >= from && begin - message < to) return false;
    }
    return true;
}

std::size_t RelayedKernelRecord(std::string_view line, const LogLine& parsed) {
    // A syslog or journald time, a host and the kernel's tag; a dmesg time (seconds with the
    // six decimals printk writes, or dmesg -T's date); dmesg --decode's "kern  :err   : "; a
    // double quote, where a driver's own words follow it (GPUd's scan, "[XID found] (54 minutes
    // ago) \"NVRM: Xid ...\"").
    static const RE2 kRecord(
        R"((?:[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)? [A-Za-z0-9][A-Za-z0-9._-]* kernel: |)" +
            IsoTime() +
            R"( [A-Za-z0-9][A-Za-z0-9._-]* kernel: |\[ *\d+\.\d{6}\] |)"
            R"(\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] |kern *:[a-z]+ *: |"))",
        PatternOptions());
    // journald's MESSAGE field (systemd.journal-fields(7)) as journalctl -o verbose and -o
    // export print it, or -o json and the collectors that embed a journal entry in their own
    // JSON ("MESSAGE":"..."), where a driver's words start it.
    static const RE2 kMessageField(R"(\bMESSAGE(?:=|"\s*:\s*"))", PatternOptions());
    // Only a bare line relays: a record whose prefix names its writer (a program, or the kernel
    // quoting a task or file name) is that writer's words.
    if (parsed.origin != LineOrigin::kUnknown) return std::string_view::npos;
    re2::StringPiece field;
    if (kMessageField.Match(re2::StringPiece(line.data(), line.size()),
                            std::min(parsed.message, line.size()), line.size(), RE2::UNANCHORED,
                            &field, 1)) {
        const auto at = static_cast<std::size_t>(field.data() - line.data()) + field.size();
        if (FirstDriverText(line, at, at + 1) == at) return at;
    }
    // A few quotes are looked past, not all: a JSON line has thousands, and each look scans on.
    int quotes = 0;
    for (std::size_t from = std::min(parsed.message + 1, line.size()); from < line.size();) {
        re2::StringPiece rest(line.data() + from, line.size() - from);
        re2::StringPiece found;
        if (!kRecord.Match(rest, 0, rest.size(), RE2::UNANCHORED, &found, 1)) break;
        // The kernel's tag or facility, or a driver speaking after a bare dmesg time or in
        // quotes; a quote before other words is looked past.
        const bool quoted = found == "\"";
        const auto at = static_cast<std::size_t>(found.data() - line.data()) + (quoted ? 1 : 0);
        const std::string_view record = line.substr(at);
        const LogLine inner = ParseLogLine(record);
        const bool driver =
            FirstDriverText(record, inner.message, inner.message + 1) == inner.message;
        if (driver || (!quoted && (inner.tag == "kernel" || inner.facility == 0))) return at;
        if (!quoted || ++quotes == 4) break;
        from = at;
    }
    return std::string_view::npos;
}

std::string_view CollectedHost(std::string_view line) {
    // A table's row has more columns; a host has a digit, as a cluster's nodes' names do.
    static const RE2 kColumn(R"(^\s*([A-Za-z][A-Za-z0-9._-]*) \| [^|]*$)");
    re2::StringPiece host;
    if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kColumn, &host)) return {};
    const std::string_view name(host.data(), host.size());
    return name.find_first_of("0123456789") == std::string_view::npos ? std::string_view() : name;
}

std::size_t EvidenceStart(std::string_view line, const LogLine& parsed, std::size_t begin,
                          std::size_t end, bool kernel_only) {
    if (IsAdmissible(line, parsed, begin, end, kernel_only)) return 0;
    if (kernel_only) return std::string_view::npos;
    const std::size_t from = RelayedKernelRecord(line, parsed);
    if (from == std::string_view::npos || begin < from) return std::string_view::npos;
    const std::string_view relayed = line.substr(from);
    return IsAdmissible(relayed, ParseLogLine(relayed), begin - from, end - from, false)
               ? from
               : std::string_view::npos;
}

bool IsKernelRecord(std::string_view line) { return IsKernelRecord(line, ParseLogLine(line)); }

bool IsKernelRecord(std::string_view line, const LogLine& parsed) {
    if (parsed.origin == LineOrigin::kKernel) return true;
    if (parsed.origin == LineOrigin::kProcess) return false;
    const std::size_t message = std::min(parsed.message, line.size());
    return FirstDriverText(line, message, message + 1) == message;
}

}  // namespace autoheal::diag
