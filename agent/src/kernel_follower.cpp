#include "autoheal/agent/kernel_follower.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <utility>

#include "autoheal/core/files.h"
#include "autoheal/remediation/evidence_sources.h"

namespace autoheal::agent {
namespace {

// "[123.000456]" of a dmesg-style line; "" when it has none.
std::string Stamp(std::string_view line) {
    if (line.empty() || line.front() != '[') return "";
    const std::size_t end = line.find(']');
    return end == std::string_view::npos ? "" : std::string(line.substr(0, end + 1));
}

// Orders stamps "[s.us]" by their numbers (the seconds are not zero-padded).
bool StampAfter(const std::string& a, const std::string& b) {
    unsigned long long as = 0, au = 0, bs = 0, bu = 0;
    if (std::sscanf(a.c_str(), "[%llu.%llu]", &as, &au) != 2) return true;
    if (std::sscanf(b.c_str(), "[%llu.%llu]", &bs, &bu) != 2) return true;
    return as != bs ? as > bs : au > bu;
}

// This boot's id ("" where the kernel does not say).
std::string BootId() {
    auto id = ReadSmallFile("/proc/sys/kernel/random/boot_id", 256);
    if (!id) return "";
    std::string out = *id;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

}  // namespace

KernelFollower::KernelFollower(std::string source, std::uint64_t max_bytes, std::string state_file)
    : source_(std::move(source)), max_bytes_(max_bytes), state_file_(std::move(state_file)) {
    if (Restore()) return;
    cursor_ = remediation::KernelLogCursor(source_);
    if (source_ == "kmsg") {
        // The newest record's stamp: what is there now was before the agent.
        auto text = remediation::ReadKernelLogSince(source_, "", std::uint64_t{64} * 1024);
        if (text) {
            const std::size_t last = text->rfind('\n', text->size() >= 2 ? text->size() - 2 : 0);
            last_stamp_ =
                Stamp(std::string_view(*text).substr(last == std::string::npos ? 0 : last + 1));
        }
    }
}

// "boot <id>\nsource <source>\ncursor <cursor>\nstamp <stamp>\n": a position holds for one
// source and one boot only (kmsg's stamps start again at a boot).
std::string KernelFollower::StateText() const {
    return "boot " + BootId() + "\nsource " + source_ + "\ncursor " + cursor_ + "\nstamp " +
           last_stamp_ + "\n";
}

namespace {
// A position kept longer ago than this is not resumed: an agent stopped for long (not restarted
// after a crash) starts at the end, as on its first start, rather than act on old faults. Save
// rewrites the file at least this often while it runs.
constexpr std::int64_t kResumeWithinSeconds = 300;
constexpr std::int64_t kRefreshSeconds = 60;

std::int64_t AgeOf(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return INT64_MAX;
    return static_cast<std::int64_t>(::time(nullptr)) - static_cast<std::int64_t>(st.st_mtime);
}
}  // namespace

bool KernelFollower::Restore() {
    if (state_file_.empty() || AgeOf(state_file_) > kResumeWithinSeconds) return false;
    auto text = ReadSmallFile(state_file_, 1 << 16);
    if (!text) return false;
    std::map<std::string, std::string> fields;
    std::size_t pos = 0;
    while (pos < text->size()) {
        std::size_t nl = text->find('\n', pos);
        if (nl == std::string::npos) nl = text->size();
        const std::string line = text->substr(pos, nl - pos);
        const std::size_t sp = line.find(' ');
        fields[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
        pos = nl + 1;
    }
    if (fields["boot"] != BootId() || fields["source"] != source_ || fields["cursor"].empty()) {
        return false;
    }
    cursor_ = fields["cursor"];
    last_stamp_ = fields["stamp"];
    saved_ = *text;
    return true;
}

Result<bool> KernelFollower::Save() {
    if (state_file_.empty()) return false;
    const std::string text = StateText();
    if (text == saved_ && AgeOf(state_file_) < kRefreshSeconds) return false;
    auto w = WriteFileAtomically(state_file_, text, 0600, 0755);
    if (!w) return w;
    saved_ = text;
    return true;
}

Result<std::string> KernelFollower::Poll() { return source_ == "kmsg" ? PollKmsg() : PollFile(); }

Result<std::string> KernelFollower::PollFile() {
    struct stat st {};
    if (::stat(source_.c_str(), &st) != 0) return std::string();  // not there yet
    unsigned long long ino = 0, size = 0;
    const bool have = std::sscanf(cursor_.c_str(), "file:%llu:%llu", &ino, &size) == 2;
    const bool same =
        have && ino == st.st_ino && size <= static_cast<unsigned long long>(st.st_size);
    if (same && size == static_cast<unsigned long long>(st.st_size)) return std::string();
    const std::string from = same ? cursor_ : "file:0:0";  // rotated or truncated: from the start
    auto text = remediation::ReadKernelLogSince(source_, from, max_bytes_);
    if (!text) return text;
    std::string out = std::move(text).value();
    const std::size_t complete = out.rfind('\n');
    out.resize(complete == std::string::npos ? 0 : complete + 1);
    const unsigned long long base = same ? size : 0;
    // A read capped at max_bytes skipped the oldest bytes: go on from the file's end.
    const unsigned long long next =
        out.size() >= max_bytes_ ? static_cast<unsigned long long>(st.st_size) : base + out.size();
    cursor_ = "file:" + std::to_string(st.st_ino) + ":" + std::to_string(next);
    return out;
}

Result<std::string> KernelFollower::PollKmsg() {
    const std::string next = remediation::KernelLogCursor(source_);
    auto text = remediation::ReadKernelLogSince(source_, cursor_, max_bytes_);
    if (!text) return text;
    cursor_ = next;
    std::string out;
    std::size_t pos = 0;
    while (pos < text->size()) {
        std::size_t nl = text->find('\n', pos);
        if (nl == std::string::npos) nl = text->size();
        const std::string_view line = std::string_view(*text).substr(pos, nl - pos);
        const std::string stamp = Stamp(line);
        if (last_stamp_.empty() || StampAfter(stamp, last_stamp_)) {
            out.append(line);
            out += '\n';
            if (!stamp.empty()) last_stamp_ = stamp;
        }
        pos = nl + 1;
    }
    return out;
}

}  // namespace autoheal::agent
