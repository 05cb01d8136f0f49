// libFuzzer target: checkpoint discovery (core/checkpoint.h) over a real directory tree built
// from the input, as a training job's --ckpt-dir could look after a crash: half-written saves,
// empty files, trackers naming anything, symbolic links pointing anywhere, deep nesting.
//
// Input, one entry a line (a tree is built under a fresh folder on tmpfs, removed after each
// run; parents are created as needed):
//   d PATH                 a directory
//   f PATH [SIZE] [@T]     a file of SIZE bytes (default 1, at most 65536), mtime base+T seconds
//   t PATH TEXT            a file holding TEXT (a tracker: "1200", "release", "global_step12")
//   l PATH TARGET          a symbolic link to TARGET (never followed by discovery)
//   limits DEPTH ENTRIES   CheckpointLimits for the search (DEPTH 0..6, ENTRIES 1..20000)
// PATH is relative, '/'-separated; entries with an empty, "." or ".." component are ignored.
// Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (discovery runs in the job's tasks
//     inside slurmstepd and promises not to throw);
//   - two searches of one tree that disagree;
//   - a chosen checkpoint outside ckpt_dir, reached through a symbolic link, deeper than the
//     limits allow, of an unknown format, or not complete by its format's rule
//     (docs/checkpoints.md): no non-empty regular .metadata / trainer_state.json, a Lightning
//     file that is empty or not regular, a generic save without a regular marker, a Megatron
//     or DeepSpeed directory that is empty or has an empty model state;
//   - StepFromName below -1, or wrong on an all-digits name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "autoheal/core/checkpoint.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kBaseTime = 1700000000;
constexpr std::size_t kMaxEntries = 256;
constexpr std::size_t kMaxFileBytes = 65536;
constexpr std::size_t kMaxComponents = 7;

const fs::path& Base() {
    static const fs::path base = [] {
        std::error_code ec;
        fs::path dir =
            fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path(ec);
        dir /= "autoheal-fuzz-ckpt-" + std::to_string(::getpid());
        fs::create_directories(dir, ec);
        std::atexit([] {
            std::error_code ignored;
            fs::remove_all(Base(), ignored);
        });
        return dir;
    }();
    return base;
}

// "a/b/c" -> its components, or empty when a component is empty, "." or "..".
std::vector<std::string> Components(std::string_view path) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= path.size()) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        std::string_view c = path.substr(pos, slash - pos);
        if (c.empty() || c == "." || c == ".." || c.size() > 80 ||
            c.find('\0') != std::string_view::npos) {
            return {};
        }
        out.emplace_back(c);
        pos = slash + 1;
    }
    if (out.size() > kMaxComponents) return {};
    return out;
}

bool ToNumber(std::string_view s, std::int64_t* out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

void SetMtime(const fs::path& p, std::int64_t t) {
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(t);
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

// Builds the tree; returns the limits to search with.
autoheal::CheckpointLimits Build(const fs::path& root, const std::vector<std::string>& lines) {
    autoheal::CheckpointLimits limits;
    std::error_code ec;
    fs::create_directory(root, ec);
    std::size_t entries = 0;
    for (const std::string& line : lines) {
        if (entries++ >= kMaxEntries) break;
        const std::size_t sp = line.find(' ');
        if (sp == std::string::npos) continue;
        const std::string_view kind(line.data(), sp);
        std::string_view rest(line.data() + sp + 1, line.size() - sp - 1);
        if (kind == "limits") {
            const std::size_t sp2 = rest.find(' ');
            std::int64_t depth = 0, max = 0;
            if (sp2 != std::string_view::npos && ToNumber(rest.substr(0, sp2), &depth) &&
                ToNumber(rest.substr(sp2 + 1), &max) && depth >= 0 && depth <= 6 && max >= 1 &&
                max <= 20000) {
                limits.max_depth = static_cast<int>(depth);
                limits.max_entries = static_cast<std::size_t>(max);
            }
            continue;
        }
        const std::size_t sp2 = rest.find(' ');
        const std::string_view path = rest.substr(0, sp2);
        const std::string_view arg =
            sp2 == std::string_view::npos ? std::string_view() : rest.substr(sp2 + 1);
        const std::vector<std::string> parts = Components(path);
        if (parts.empty()) continue;
        fs::path p = root;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) p /= parts[i];
        fs::create_directories(p, ec);
        p /= parts.back();
        if (kind == "d") {
            fs::create_directory(p, ec);
        } else if (kind == "f" || kind == "t") {
            std::string content;
            std::int64_t mtime = 0;
            if (kind == "t") {
                content = std::string(arg);
            } else {
                std::int64_t n = 1;
                std::string_view a = arg;
                const std::size_t at = a.find('@');
                if (at != std::string_view::npos) {
                    if (!ToNumber(a.substr(at + 1), &mtime) || mtime < -kBaseTime ||
                        mtime > kBaseTime) {
                        mtime = 0;
                    }
                    a = a.substr(0, at);
                    while (!a.empty() && a.back() == ' ') a.remove_suffix(1);
                }
                if (!a.empty() && (!ToNumber(a, &n) || n < 0)) n = 1;
                content.assign(static_cast<std::size_t>(std::min<std::int64_t>(
                                   n, static_cast<std::int64_t>(kMaxFileBytes))),
                               'x');
            }
            const int fd =
                ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0) continue;
            std::size_t off = 0;
            while (off < content.size()) {
                const ssize_t w = ::write(fd, content.data() + off, content.size() - off);
                if (w <= 0) break;
                off += static_cast<std::size_t>(w);
            }
            ::close(fd);
            SetMtime(p, kBaseTime + mtime);
        } else if (kind == "l") {
            if (arg.empty() || arg.find('\0') != std::string_view::npos) continue;
            fs::create_symlink(fs::path(std::string(arg)), p, ec);
        }
    }
    return limits;
}

bool IsLink(const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A regular file (not a link), and its size.
bool Regular(const fs::path& p, std::int64_t* size = nullptr) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (size != nullptr) *size = st.st_size;
    return true;
}

bool NonEmptyRegular(const fs::path& p) {
    std::int64_t size = 0;
    return Regular(p, &size) && size > 0;
}

void CheckChosen(const fs::path& root, const autoheal::Checkpoint& c,
                 const autoheal::CheckpointLimits& limits) {
    const std::string r = root.string();
    if (c.path != r && !autoheal::fuzz::StartsWith(c.path, r + "/")) {
        Fail("checkpoint outside ckpt_dir: " + c.path);
    }
    const fs::path rel = fs::path(c.path).lexically_relative(root);
    int depth = 0;
    fs::path walk = root;
    for (const fs::path& part : rel) {
        if (part == ".") continue;
        if (part == "..") Fail("checkpoint path climbs out: " + c.path);
        walk /= part;
        ++depth;
        if (IsLink(walk)) Fail("checkpoint reached through a symbolic link: " + c.path);
    }
    if (depth > limits.max_depth + 1) Fail("checkpoint deeper than the limits: " + c.path);
    const fs::path p(c.path);
    std::error_code ec;
    if (c.format == autoheal::kCkptFormatTorchDcp) {
        if (!NonEmptyRegular(p / ".metadata")) Fail("DCP save without .metadata: " + c.path);
    } else if (c.format == autoheal::kCkptFormatHfTrainer) {
        if (!NonEmptyRegular(p / "trainer_state.json")) Fail("HF save without state: " + c.path);
    } else if (c.format == autoheal::kCkptFormatLightning) {
        if (!NonEmptyRegular(p) || p.extension() != ".ckpt") Fail("bad Lightning file: " + c.path);
    } else if (c.format == autoheal::kCkptFormatGeneric) {
        if (!Regular(p / ".autoheal_complete") && !Regular(p / "COMPLETE")) {
            Fail("generic save without a marker: " + c.path);
        }
    } else if (c.format == autoheal::kCkptFormatMegatron) {
        if (!fs::is_directory(fs::symlink_status(p, ec)) || fs::is_empty(p, ec)) {
            Fail("empty Megatron save: " + c.path);
        }
    } else if (c.format == autoheal::kCkptFormatDeepSpeed) {
        bool any = false;
        for (const auto& e : fs::directory_iterator(p, ec)) {
            const std::string name = e.path().filename().string();
            if (name.size() >= 15 && name.compare(name.size() - 15, 15, "model_states.pt") == 0) {
                std::int64_t size = 0;
                if (!Regular(e.path(), &size)) continue;
                if (size == 0) Fail("DeepSpeed save with an empty model state: " + c.path);
                any = true;
            }
        }
        if (!any) Fail("DeepSpeed save without a model state: " + c.path);
    } else {
        Fail("unknown checkpoint format '" + c.format + "'");
    }
}

void CheckStep(std::string_view name) {
    const std::int64_t step = autoheal::StepFromName(name);
    if (step < -1) Fail("StepFromName below -1");
    if (!name.empty() && name.size() <= 18 &&
        name.find_first_not_of("0123456789") == std::string_view::npos) {
        std::int64_t n = 0;
        ToNumber(name, &n);
        if (step != n) Fail("StepFromName wrong on an all-digits name: " + std::string(name));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::string> lines =
        autoheal::fuzz::Lines(autoheal::fuzz::AsText(data, size));
    for (const std::string& line : lines) {
        CheckStep(line);
        const std::size_t sp = line.find(' ');
        if (sp != std::string::npos) {
            std::string_view path(line.data() + sp + 1, line.size() - sp - 1);
            path = path.substr(0, path.find(' '));
            const std::size_t slash = path.rfind('/');
            CheckStep(slash == std::string_view::npos ? path : path.substr(slash + 1));
        }
    }
    const fs::path root = Base() / "ckpt";
    std::error_code ec;
    fs::remove_all(root, ec);
    const autoheal::CheckpointLimits limits = Build(root, lines);
    const autoheal::CheckpointSearch a = autoheal::FindNewestCheckpoint(root.string(), limits);
    const autoheal::CheckpointSearch b = autoheal::FindNewestCheckpoint(root.string(), limits);
    if (a.newest != b.newest || a.skipped != b.skipped) Fail("two searches disagree");
    if (a.newest) CheckChosen(root, *a.newest, limits);
    fs::remove_all(root, ec);
    return 0;
}
