#include "autoheal/remediation/evidence_sources.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

#include "autoheal/core/files.h"
#include "autoheal/diag/log_line.h"

namespace autoheal::remediation {
namespace {

struct KmsgRecord {
    std::uint64_t seq = 0;
    bool kernel = false;  // facility 0
    std::string line;
};

// Reads every record /dev/kmsg still holds (non-blocking), calling `f` for each of the kernel's
// own (facility 0: a process that writes to /dev/kmsg gets another facility, LOG_USER by
// default, and its records are not kernel evidence).
template <typename F>
bool ForEachKmsgRecord(F f) {
    UniqueFd fd(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) return false;
    std::string buf(8192, '\0');
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EPIPE) continue;  // records were overwritten: go on with the next
            break;                         // EAGAIN: no more records
        }
        if (n == 0) break;
        std::string_view rec(buf.data(), static_cast<std::size_t>(n));
        const auto prefix = diag::ParseKmsgPrefix(rec);
        if (!prefix) continue;
        std::string_view msg = rec.substr(prefix->message);
        const std::size_t nl = msg.find('\n');  // continuation lines (" KEY=value") follow
        if (nl != std::string_view::npos) msg = msg.substr(0, nl);
        char stamp[48];
        std::snprintf(stamp, sizeof stamp, "[%llu.%06llu] ",
                      static_cast<unsigned long long>(prefix->usec / 1000000),
                      static_cast<unsigned long long>(prefix->usec % 1000000));
        KmsgRecord r{prefix->seq, prefix->facility == 0, std::string(stamp) + std::string(msg)};
        f(r);
    }
    return true;
}

void KeepTail(std::string* text, std::uint64_t max_bytes) {
    if (text->size() <= max_bytes) return;
    std::size_t cut = text->size() - max_bytes;
    const std::size_t nl = text->find('\n', cut);
    cut = nl == std::string::npos ? cut : nl + 1;
    text->erase(0, cut);
}

Result<std::string> ReadRange(int fd, std::uint64_t from, std::uint64_t to) {
    std::string out;
    out.resize(static_cast<std::size_t>(to - from));
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t n =
            ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
        if (n < 0) {
            if (errno == EINTR) continue;
            return MakeError(std::string("read: ") + std::strerror(errno));
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    out.resize(got);
    return out;
}

}  // namespace

std::string KernelLogCursor(const std::string& source) {
    if (source == "kmsg") {
        std::uint64_t last = 0;
        bool any = false;
        if (!ForEachKmsgRecord([&](const KmsgRecord& r) {
                last = r.seq;
                any = true;
            })) {
            return "";
        }
        return "kmsg:" + std::to_string(any ? last : 0);
    }
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0) return "file:0:0";  // not there yet: all of it
    return "file:" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size);
}

Result<std::string> ReadKernelLogSince(const std::string& source, const std::string& cursor,
                                       std::uint64_t max_bytes) {
    if (source == "kmsg") {
        std::uint64_t after = 0;
        bool have_cursor = cursor.rfind("kmsg:", 0) == 0;
        if (have_cursor) after = std::strtoull(cursor.c_str() + 5, nullptr, 10);
        std::string text;
        if (!ForEachKmsgRecord([&](const KmsgRecord& r) {
                if ((have_cursor && r.seq <= after) || !r.kernel) return;
                text += r.line;
                text += '\n';
                if (text.size() > 2 * max_bytes) KeepTail(&text, max_bytes);
            })) {
            return MakeError(std::string("/dev/kmsg: ") + std::strerror(errno));
        }
        KeepTail(&text, max_bytes);
        return text;
    }
    UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) {
        if (errno == ENOENT) return std::string();
        return MakeError(source + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return MakeError(source + ": not a regular file");
    }
    std::uint64_t from = 0;
    unsigned long long ino = 0, size = 0;
    if (std::sscanf(cursor.c_str(), "file:%llu:%llu", &ino, &size) == 2 && ino == st.st_ino &&
        size <= static_cast<unsigned long long>(st.st_size)) {
        from = size;
    }
    const auto end = static_cast<std::uint64_t>(st.st_size);
    if (end - from > max_bytes) from = end - max_bytes;
    auto text = ReadRange(fd.get(), from, end);
    if (!text) return MakeError(source + ": " + text.error());
    std::string out = std::move(text).value();
    if (from > 0 && from != size) {  // cut mid-line: drop the partial first line
        const std::size_t nl = out.find('\n');
        out.erase(0, nl == std::string::npos ? out.size() : nl + 1);
    }
    return out;
}

int OpenEachComponentNoFollow(const std::string& path, int flags) {
    if (path.empty() || path.front() != '/') {
        errno = EINVAL;
        return -1;
    }
    UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) return -1;
    std::size_t at = 1;
    for (;;) {
        const std::size_t slash = path.find('/', at);
        const std::string part = path.substr(at, slash == std::string::npos ? slash : slash - at);
        if (slash == std::string::npos) {  // the file itself
            if (part.empty() || part == "." || part == "..") {
                errno = EISDIR;
                return -1;
            }
            return ::openat(dir.get(), part.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
        }
        at = slash + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") {  // would climb back over a component already checked
            errno = EINVAL;
            return -1;
        }
        // O_PATH|O_NOFOLLOW opens a symlink itself instead of failing: fstat tells which.
        UniqueFd next(::openat(dir.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (next.get() < 0) return -1;
        struct stat st {};
        if (::fstat(next.get(), &st) != 0) return -1;
        if (S_ISLNK(st.st_mode)) {
            errno = ELOOP;
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        dir = std::move(next);
    }
}

Result<std::string> ReadFileTailSafely(const std::string& path, std::uint64_t max_bytes) {
    if (path.empty() || path.front() != '/') return MakeError(path + ": not an absolute path");
    constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    open_how how{};
    how.flags = kFlags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int raw = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
    if (raw < 0 && (errno == ENOSYS || errno == EPERM)) {  // pre-5.6 kernel or seccomp
        raw = OpenEachComponentNoFollow(path, kFlags);
    }
    if (raw < 0) {
        if (errno == ELOOP) return MakeError(path + ": is or passes through a symlink: not read");
        return MakeError(path + ": " + std::strerror(errno));
    }
    UniqueFd fd(raw);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return MakeError(path + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return MakeError(path + ": not a regular file: not read");
    const auto end = static_cast<std::uint64_t>(st.st_size);
    const std::uint64_t from = end > max_bytes ? end - max_bytes : 0;
    auto text = ReadRange(fd.get(), from, end);
    if (!text) return MakeError(path + ": " + text.error());
    std::string out = std::move(text).value();
    if (from > 0) {
        const std::size_t nl = out.find('\n');
        out.erase(0, nl == std::string::npos ? out.size() : nl + 1);
    }
    return out;
}

std::string ExpandOutputPattern(const std::string& pattern, const OutputPatternValues& v) {
    if (pattern.find('\\') != std::string::npos) {  // Slurm: a backslash disables expansion
        std::string out;
        for (char c : pattern) {
            if (c != '\\') out += c;
        }
        return out;
    }
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 >= pattern.size()) {
            out += pattern[i];
            continue;
        }
        // Optional zero-padding width: %5j.
        std::size_t j = i + 1;
        int width = 0;
        while (j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9' && width < 10) {
            width = width * 10 + (pattern[j] - '0');
            ++j;
        }
        if (j >= pattern.size()) {
            out += pattern.substr(i);
            break;
        }
        auto pad = [&](const std::string& s) {
            return s.size() < static_cast<std::size_t>(width)
                       ? std::string(static_cast<std::size_t>(width) - s.size(), '0') + s
                       : s;
        };
        switch (pattern[j]) {
            case 'j':
            case 'J':
                out += pad(v.job_id);
                break;
            case 'A':
                out += pad(v.array_job_id.empty() ? v.job_id : v.array_job_id);
                break;
            case 'a':
                out += pad(v.array_task_id);
                break;
            case 'u':
                out += v.user;
                break;
            case 'x':
                out += v.job_name;
                break;
            case 'N':
            case 'n':
                out += v.first_node;
                break;
            case '%':
                out += '%';
                break;
            default:
                out += pattern.substr(i, j - i + 1);
                break;
        }
        i = j;
    }
    return out;
}

namespace {

diag::Evidence NvmlDelta(const std::string& gpu, const char* counter, std::string text) {
    diag::Evidence e;
    e.signature = diag::kNvmlDeltaSignature;
    e.text = "gpu " + gpu + " " + std::move(text);
    e.SetField("gpu", gpu);
    e.SetField("counter", counter);
    return e;
}

// Counters that grew, flags that appeared and links that went down on one GPU.
void GpuDeltas(const health::GpuSnapshot& g, const health::GpuSnapshot& a, const char* when,
               std::vector<diag::Evidence>* out) {
    const std::string& pci = g.pci_bus_id;
    auto grew = [&](const char* counter, std::uint64_t x, std::uint64_t y) {
        if (y <= x) return;
        diag::Evidence e =
            NvmlDelta(pci, counter,
                      std::string(counter) + " increased by " + std::to_string(y - x) + " (from " +
                          std::to_string(x) + " to " + std::to_string(y) + ") " + when);
        e.SetField("before", std::to_string(x));
        e.SetField("after", std::to_string(y));
        out->push_back(std::move(e));
    };
    auto cmp = [&](const char* name, const std::optional<std::uint64_t>& x,
                   const std::optional<std::uint64_t>& y) {
        if (x && y) grew(name, *x, *y);
    };
    cmp("ecc_uncorrected_volatile", g.ecc_uncorrected_volatile, a.ecc_uncorrected_volatile);
    cmp("ecc_uncorrected_sram", g.ecc_uncorrected_sram, a.ecc_uncorrected_sram);
    cmp("ecc_uncorrected_dram", g.ecc_uncorrected_dram, a.ecc_uncorrected_dram);
    cmp("retired_pages_dbe", g.retired_pages_dbe, a.retired_pages_dbe);
    if (g.remapped_rows && a.remapped_rows) {
        grew("remapped_rows_uncorrectable", g.remapped_rows->uncorrectable,
             a.remapped_rows->uncorrectable);
        if (!g.remapped_rows->failure && a.remapped_rows->failure) {
            diag::Evidence e = NvmlDelta(pci, "remapped_rows_failure",
                                         std::string("remapped_rows_failure appeared ") + when);
            e.SetField("before", "0");
            e.SetField("after", "1");
            out->push_back(std::move(e));
        }
    }
    if (a.recovery_action && *a.recovery_action != 0 &&
        (!g.recovery_action || *g.recovery_action == 0)) {
        const std::string action = std::to_string(*a.recovery_action);
        diag::Evidence e =
            NvmlDelta(pci, "recovery_action", "recovery_action " + action + " appeared " + when);
        e.SetField("before", "0");
        e.SetField("after", action);
        out->push_back(std::move(e));
    }
    for (const auto& link : g.nvlinks) {
        for (const auto& l2 : a.nvlinks) {
            if (l2.link != link.link || !link.active || l2.active) continue;
            const std::string n = std::to_string(link.link);
            diag::Evidence e = NvmlDelta(pci, "nvlink", "nvlink " + n + " went down " + when);
            e.SetField("link", n);
            e.SetField("before", "up");
            e.SetField("after", "down");
            out->push_back(std::move(e));
        }
    }
}

}  // namespace

std::vector<diag::Evidence> NvmlDeltaEvidence(const health::NodeSnapshot& before,
                                              const health::NodeSnapshot& after, DeltaSpan span) {
    const bool job = span == DeltaSpan::kJob;
    const char* when = job ? "during the job" : "since the previous reading";
    const char* was_there = job ? "(it was there at the job's start)" : "(it was there before)";
    std::vector<diag::Evidence> out;
    if (!before.driver_present || !after.driver_present) return out;
    std::map<std::string, const health::GpuSnapshot*> now;
    for (const auto& g : after.gpus) now[g.pci_bus_id] = &g;
    for (const auto& g : before.gpus) {
        auto it = now.find(g.pci_bus_id);
        if (it == now.end()) {
            out.push_back(NvmlDelta(g.pci_bus_id, "gpu_lost",
                                    std::string("is lost: NVML no longer finds it ") + was_there));
            continue;
        }
        GpuDeltas(g, *it->second, when, &out);
    }
    for (std::size_t i = 0; i < out.size(); ++i) out[i].line = i + 1;
    return out;
}

std::vector<diag::Evidence> HealthCheckEvidence(const health::HealthReport& report) {
    std::vector<diag::Evidence> out;
    for (const health::CheckResult& r : report.results) {
        if (r.status != health::Status::kFail) continue;
        diag::Evidence e;
        e.signature = diag::kHealthCheckSignature;
        e.line = out.size() + 1;
        e.text = "check " + r.check + " failed" + (r.gpu.empty() ? "" : " on gpu " + r.gpu) + ": " +
                 r.summary;
        for (char& c : e.text) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        e.SetField("check", r.check);
        if (!r.gpu.empty()) e.SetField("gpu", r.gpu);
        e.SetField("verdict", std::string(health::StatusName(r.status)));
        if (!r.reason.empty()) e.SetField("reason", r.reason);
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace autoheal::remediation
