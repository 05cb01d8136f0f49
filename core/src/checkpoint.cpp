#include "autoheal/core/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

namespace autoheal {
namespace {

namespace fs = std::filesystem;

// Names the formats use for the files that matter.
constexpr std::string_view kDcpMetadata = ".metadata";
constexpr std::string_view kDcpShardSuffix = ".distcp";
constexpr std::string_view kMegatronTracker = "latest_checkpointed_iteration.txt";
constexpr std::string_view kMegatronRelease = "release";
constexpr std::string_view kDeepSpeedTracker = "latest";
constexpr std::string_view kDeepSpeedModelSuffix = "model_states.pt";
constexpr std::string_view kLightningLast = "last.ckpt";
constexpr std::string_view kLightningSuffix = ".ckpt";
constexpr std::string_view kHfPrefix = "checkpoint-";
constexpr std::string_view kHfState = "trainer_state.json";
constexpr std::string_view kMarkers[] = {".autoheal_complete", "COMPLETE"};

// A tracker file holds one short word; anything bigger is not a tracker.
constexpr std::uintmax_t kMaxTrackerBytes = 4096;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool AllDigits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

bool StartsWithCaseless(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (Lower(s[i]) != prefix[i]) return false;
    }
    return true;
}

// -1 when `digits` is not a number that fits.
std::int64_t ParseStep(std::string_view digits) {
    std::int64_t value = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return -1;
    return value;
}

std::int64_t ToEpochSeconds(fs::file_time_type t) {
    auto sys = std::chrono::file_clock::to_sys(t);
    return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

std::string Trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return std::string(s);
}

// A DeepSpeed tag names one directory next to the tracker: one plain path component.
bool IsPlainComponent(std::string_view s) {
    if (s.empty() || s.size() > 255 || s == "." || s == "..") return false;
    return std::none_of(s.begin(), s.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return c == '/' || u < 0x20 || u == 0x7f;
    });
}

enum class Kind { kFile, kDir, kOther };  // kOther: symbolic links, devices, sockets, ...

struct Entry {
    std::string name;
    Kind kind;
};

struct Listing {
    std::vector<Entry> entries;

    const Entry* Find(std::string_view name, Kind kind) const {
        for (const Entry& e : entries) {
            if (e.kind == kind && e.name == name) return &e;
        }
        return nullptr;
    }
};

struct FileInfo {
    std::uintmax_t size = 0;
    fs::file_time_type mtime;
};

// One checkpoint that a detector recognised. `rel` is relative to the search root ("" for the
// root itself).
struct Candidate {
    fs::path rel;
    std::string_view format;
    int priority = 0;  // when two detectors name the same path, the lower one names the format
    std::int64_t step = -1;
    fs::file_time_type mtime;
    bool is_dir = true;
    std::vector<std::string> problems;  // empty: complete
};

// Detector priorities (see Candidate::priority).
constexpr int kPrioMegatron = 0;
constexpr int kPrioDeepSpeed = 1;
constexpr int kPrioHf = 2;
constexpr int kPrioDcp = 3;
constexpr int kPrioGeneric = 4;
constexpr int kPrioLightning = 5;

class Searcher {
  public:
    Searcher(fs::path root, const CheckpointLimits& limits)
        : root_(std::move(root)), limits_(limits) {}

    CheckpointSearch Run();

  private:
    struct Dir {
        fs::path rel;
        int depth = 0;
    };

    fs::path Abs(const fs::path& rel) const { return rel.empty() ? root_ : root_ / rel; }

    void Problem(const fs::path& rel, std::string why) {
        out_.skipped.push_back(Abs(rel).string() + ": " + std::move(why));
    }

    // The complete listing of a directory, or nullptr when it could not be read (reported) or
    // the entry budget ran out before its end (reported once for the whole search).
    const Listing* List(const fs::path& rel);
    // Size and mtime of a regular file, or nullopt (reported).
    std::optional<FileInfo> Stat(const fs::path& rel);
    // The trimmed content of a small tracker file, or nullopt (reported).
    std::optional<std::string> ReadTracker(const fs::path& rel);
    // The listing of `rel` if it is a real (not linked) directory, else nullopt with the reason.
    // `*unjudged` is set when it could not be read in full (an I/O error, already reported, or
    // the budget).
    std::optional<const Listing*> TargetDir(const fs::path& rel, const std::string& tracker,
                                            bool* unjudged);

    void Walk();
    void DetectMegatron(const fs::path& dir, const Listing& listing);
    void DetectDeepSpeed(const fs::path& dir, const Listing& listing);
    void DetectLightning(const fs::path& dir, const Listing& listing);
    void DetectDirectory(const fs::path& dir, const Listing& listing);
    void Add(Candidate c) { candidates_.push_back(std::move(c)); }
    std::vector<Candidate> Merge();
    void Choose(const std::vector<Candidate>& merged);

    fs::path root_;
    CheckpointLimits limits_;
    CheckpointSearch out_;
    std::size_t entries_read_ = 0;
    bool budget_spent_ = false;
    std::map<fs::path, std::optional<Listing>> listings_;  // nullopt: unreadable or cut short
    std::vector<Dir> visited_;                             // in the order they were read
    std::vector<Candidate> candidates_;
    std::map<fs::path, std::int64_t> megatron_trackers_;  // directory -> tracked iteration
};

const Listing* Searcher::List(const fs::path& rel) {
    if (auto it = listings_.find(rel); it != listings_.end()) {
        return it->second ? &*it->second : nullptr;
    }
    auto& slot = listings_[rel];
    if (budget_spent_) return nullptr;
    Listing listing;
    std::error_code ec;
    fs::directory_iterator it(Abs(rel), fs::directory_options::none, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        if (entries_read_ >= limits_.max_entries) {
            budget_spent_ = true;
            out_.skipped.push_back(root_.string() + ": search stopped after " +
                                   std::to_string(limits_.max_entries) +
                                   " directory entries; older or deeper checkpoints not judged");
            return nullptr;
        }
        ++entries_read_;
        std::error_code sec;
        fs::file_status st = it->symlink_status(sec);
        Kind kind = Kind::kOther;
        if (!sec && st.type() == fs::file_type::regular) kind = Kind::kFile;
        if (!sec && st.type() == fs::file_type::directory) kind = Kind::kDir;
        listing.entries.push_back(Entry{it->path().filename().string(), kind});
    }
    if (ec) {
        Problem(rel, "cannot read directory: " + ec.message());
        return nullptr;
    }
    slot = std::move(listing);
    return &*slot;
}

std::optional<FileInfo> Searcher::Stat(const fs::path& rel) {
    std::error_code ec;
    FileInfo info;
    fs::path abs = Abs(rel);
    info.size = fs::file_size(abs, ec);
    if (!ec) info.mtime = fs::last_write_time(abs, ec);
    if (ec) {
        Problem(rel, "cannot stat: " + ec.message());
        return std::nullopt;
    }
    return info;
}

std::optional<std::string> Searcher::ReadTracker(const fs::path& rel) {
    auto info = Stat(rel);
    if (!info) return std::nullopt;
    if (info->size == 0) {
        Problem(rel, "tracker file is empty (save not finished)");
        return std::nullopt;
    }
    if (info->size > kMaxTrackerBytes) {
        Problem(rel, "too large for a tracker file (" + std::to_string(info->size) + " bytes)");
        return std::nullopt;
    }
    std::ifstream in(Abs(rel), std::ios::binary);
    std::string content(static_cast<std::size_t>(kMaxTrackerBytes), '\0');
    in.read(content.data(), static_cast<std::streamsize>(content.size()));
    if (in.bad() || (!in.eof() && in.fail()) || !in.is_open()) {
        Problem(rel, "cannot read tracker file");
        return std::nullopt;
    }
    content.resize(static_cast<std::size_t>(in.gcount()));
    return Trim(content);
}

std::optional<const Listing*> Searcher::TargetDir(const fs::path& rel, const std::string& tracker,
                                                  bool* unjudged) {
    *unjudged = false;
    std::error_code ec;
    fs::file_status st = fs::symlink_status(Abs(rel), ec);
    std::string why;
    if (ec && ec != std::errc::no_such_file_or_directory) {
        Problem(rel, "cannot stat: " + ec.message());
        *unjudged = true;
        return std::nullopt;
    }
    if (ec || st.type() == fs::file_type::not_found) {
        why = tracker + " points here but it does not exist";
    } else if (st.type() == fs::file_type::symlink) {
        why = tracker + " points here but it is a symbolic link (not followed)";
    } else if (st.type() != fs::file_type::directory) {
        why = tracker + " points here but it is not a directory";
    } else {
        const Listing* listing = List(rel);
        if (listing == nullptr) *unjudged = true;
        return listing;
    }
    Problem(rel, why);
    return std::nullopt;
}

void Searcher::Walk() {
    std::deque<Dir> queue{Dir{fs::path(), 0}};
    while (!queue.empty()) {
        Dir dir = std::move(queue.front());
        queue.pop_front();
        const Listing* listing = List(dir.rel);
        if (listing == nullptr) continue;
        visited_.push_back(dir);
        if (dir.depth >= limits_.max_depth) continue;
        std::vector<std::pair<std::int64_t, const std::string*>> children;
        for (const Entry& e : listing->entries) {
            if (e.kind == Kind::kDir) children.emplace_back(StepFromName(e.name), &e.name);
        }
        // Highest step first, so that the newest saves are read before the budget runs out.
        std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first > b.first : *a.second < *b.second;
        });
        for (const auto& [step, name] : children) {
            queue.push_back(Dir{dir.rel / *name, dir.depth + 1});
        }
    }
}

// Megatron-LM: latest_checkpointed_iteration.txt names iter_%07d (or release) next to it, and is
// written after every rank has saved.
void Searcher::DetectMegatron(const fs::path& dir, const Listing& listing) {
    if (listing.Find(kMegatronTracker, Kind::kFile) == nullptr) return;
    fs::path tracker_rel = dir / kMegatronTracker;
    auto content = ReadTracker(tracker_rel);
    if (!content) return;
    std::string name;
    std::int64_t step = -1;
    if (*content == kMegatronRelease) {
        name = std::string(kMegatronRelease);
        step = 0;  // Megatron loads a release checkpoint as iteration 0
    } else if (AllDigits(*content) && (step = ParseStep(*content)) >= 0) {
        std::string digits = std::to_string(step);
        name = "iter_" + std::string(digits.size() < 7 ? 7 - digits.size() : 0, '0') + digits;
        megatron_trackers_[dir] = step;
    } else {
        Problem(tracker_rel, "not an iteration number or \"release\"");
        return;
    }
    auto tracker_info = Stat(tracker_rel);
    if (!tracker_info) return;
    fs::path target = dir / name;
    bool unjudged = false;
    auto target_listing = TargetDir(target, std::string(kMegatronTracker), &unjudged);
    if (!target_listing || unjudged) return;
    Candidate c{.rel = target,
                .format = kCkptFormatMegatron,
                .priority = kPrioMegatron,
                .step = step,
                .mtime = tracker_info->mtime};
    if ((*target_listing)->entries.empty()) {
        c.problems.push_back(std::string(kMegatronTracker) + " points here but it is empty");
    }
    Add(std::move(c));
}

// DeepSpeed: `latest` holds the tag of the last save; the tag's directory holds
// *model_states.pt (one per model-parallel rank).
void Searcher::DetectDeepSpeed(const fs::path& dir, const Listing& listing) {
    if (listing.Find(kDeepSpeedTracker, Kind::kFile) == nullptr) return;
    fs::path tracker_rel = dir / kDeepSpeedTracker;
    auto tag = ReadTracker(tracker_rel);
    if (!tag) return;
    if (!IsPlainComponent(*tag)) {
        Problem(tracker_rel, "not a checkpoint tag (one plain directory name)");
        return;
    }
    auto tracker_info = Stat(tracker_rel);
    if (!tracker_info) return;
    fs::path target = dir / *tag;
    bool unjudged = false;
    auto target_listing = TargetDir(target, std::string(kDeepSpeedTracker), &unjudged);
    if (!target_listing || unjudged) return;
    Candidate c{.rel = target,
                .format = kCkptFormatDeepSpeed,
                .priority = kPrioDeepSpeed,
                .step = StepFromName(*tag),
                .mtime = tracker_info->mtime};
    int model_files = 0;
    for (const Entry& e : (*target_listing)->entries) {
        if (e.kind != Kind::kFile || !e.name.ends_with(kDeepSpeedModelSuffix)) continue;
        ++model_files;
        auto info = Stat(target / e.name);
        if (!info) {
            c.problems.push_back(e.name + " cannot be read");
        } else if (info->size == 0) {
            c.problems.push_back(e.name + " is empty");
        }
    }
    if (model_files == 0) c.problems.push_back("no *model_states.pt file");
    Add(std::move(c));
}

// PyTorch Lightning: last.ckpt, and *.ckpt files whose name carries step=N. A .ckpt is written
// in one torch.save; an empty one is a save that did not finish.
void Searcher::DetectLightning(const fs::path& dir, const Listing& listing) {
    std::vector<Candidate> stepped;
    std::optional<Candidate> last;
    for (const Entry& e : listing.entries) {
        if (e.kind != Kind::kFile || !e.name.ends_with(kLightningSuffix)) continue;
        bool is_last = e.name == kLightningLast;
        std::int64_t step = StepFromName(e.name);
        if (!is_last && step < 0) continue;
        auto info = Stat(dir / e.name);
        if (!info) continue;
        Candidate c{.rel = dir / e.name,
                    .format = kCkptFormatLightning,
                    .priority = kPrioLightning,
                    .step = is_last ? -1 : step,
                    .mtime = info->mtime,
                    .is_dir = false};
        if (info->size == 0) c.problems.push_back("empty checkpoint file");
        if (is_last) {
            last = std::move(c);
        } else {
            stepped.push_back(std::move(c));
        }
    }
    if (last && last->problems.empty()) {
        // last.ckpt is written after the top-k saves of the same step: it is at least as far as
        // any complete sibling that is not newer than it.
        for (const Candidate& s : stepped) {
            if (s.problems.empty() && s.mtime <= last->mtime) {
                last->step = std::max(last->step, s.step);
            }
        }
    }
    for (Candidate& s : stepped) Add(std::move(s));
    if (last) Add(std::move(*last));
}

// Formats recognised by what the directory itself holds: PyTorch DCP, Hugging Face Trainer and
// the generic marker.
void Searcher::DetectDirectory(const fs::path& dir, const Listing& listing) {
    fs::path name_path = dir.empty() ? root_.filename() : dir.filename();
    std::string name = name_path.string();
    std::int64_t step = StepFromName(name);

    // PyTorch Distributed Checkpoint: .distcp shards, then .metadata written last by the
    // coordinator.
    bool has_shard = std::any_of(listing.entries.begin(), listing.entries.end(), [](auto& e) {
        return e.kind == Kind::kFile && e.name.ends_with(kDcpShardSuffix) &&
               e.name.size() > kDcpShardSuffix.size();
    });
    if (has_shard) {
        Candidate c{.rel = dir, .format = kCkptFormatTorchDcp, .priority = kPrioDcp, .step = step};
        if (listing.Find(kDcpMetadata, Kind::kFile) == nullptr) {
            c.problems.push_back("*.distcp without .metadata (save not finished)");
            Add(std::move(c));
        } else if (auto info = Stat(dir / kDcpMetadata)) {
            c.mtime = info->mtime;
            if (info->size == 0) c.problems.push_back(".metadata is empty (save not finished)");
            Add(std::move(c));
        }
    }

    // Hugging Face Trainer: checkpoint-N/, with trainer_state.json written at the end of a save.
    if (name.starts_with(kHfPrefix) && AllDigits(std::string_view(name).substr(kHfPrefix.size()))) {
        Candidate c{.rel = dir, .format = kCkptFormatHfTrainer, .priority = kPrioHf, .step = step};
        if (listing.Find(kHfState, Kind::kFile) == nullptr) {
            c.problems.push_back("no trainer_state.json (save not finished)");
            Add(std::move(c));
        } else if (auto info = Stat(dir / kHfState)) {
            c.mtime = info->mtime;
            if (info->size == 0) c.problems.push_back("trainer_state.json is empty");
            Add(std::move(c));
        }
    }

    // Generic: the job marks a finished save with a marker file (its content does not matter:
    // an empty `touch` is the usual way).
    for (std::string_view marker : kMarkers) {
        if (listing.Find(marker, Kind::kFile) == nullptr) continue;
        if (auto info = Stat(dir / marker)) {
            Add(Candidate{.rel = dir,
                          .format = kCkptFormatGeneric,
                          .priority = kPrioGeneric,
                          .step = step,
                          .mtime = info->mtime});
        }
        break;
    }
}

// One candidate per path: complete only if every detector that recognised it says so, named
// after the most specific detector. Then the rules that look across candidates.
std::vector<Candidate> Searcher::Merge() {
    std::map<fs::path, Candidate> by_path;
    std::vector<fs::path> order;
    for (Candidate& c : candidates_) {
        auto it = by_path.find(c.rel);
        if (it == by_path.end()) {
            order.push_back(c.rel);
            by_path.emplace(c.rel, std::move(c));
            continue;
        }
        Candidate& kept = it->second;
        for (std::string& p : c.problems) kept.problems.push_back(std::move(p));
        if (c.priority < kept.priority) {
            kept.format = c.format;
            kept.priority = c.priority;
            kept.mtime = c.mtime;
            if (c.step >= 0) kept.step = c.step;
        } else if (kept.step < 0) {
            kept.step = c.step;
        }
    }

    // Recognised directories below the root: what is inside one belongs to it.
    std::set<fs::path> containers;
    for (const auto& [rel, c] : by_path) {
        if (c.is_dir && !rel.empty()) containers.insert(rel);
    }

    std::vector<Candidate> merged;
    for (const fs::path& rel : order) {
        Candidate& c = by_path.at(rel);
        bool inside = false;
        fs::path prefix;
        for (auto it = rel.begin(); it != rel.end(); ++it) {
            if (std::next(it) == rel.end()) break;
            prefix /= *it;
            if (containers.count(prefix) != 0) {
                inside = true;
                break;
            }
        }
        if (inside) continue;

        // Megatron: an iter_ directory past the tracked iteration is a save that was not
        // finalised, whatever else it looks like.
        auto tracker = megatron_trackers_.find(rel.parent_path());
        std::string name = rel.filename().string();
        if (c.problems.empty() && tracker != megatron_trackers_.end() &&
            name.starts_with("iter_") && StepFromName(name) > tracker->second) {
            c.problems.push_back("newer than " + std::string(kMegatronTracker) + " (" +
                                 std::to_string(tracker->second) + "): save not finalised");
        }
        merged.push_back(std::move(c));
    }
    return merged;
}

void Searcher::Choose(const std::vector<Candidate>& merged) {
    const Candidate* known = nullptr;
    const Candidate* unknown = nullptr;
    for (const Candidate& c : merged) {
        if (!c.problems.empty()) {
            std::string why;
            for (const std::string& p : c.problems) why += (why.empty() ? "" : "; ") + p;
            Problem(c.rel, why);
            continue;
        }
        if (c.step >= 0) {
            if (known == nullptr || std::tie(c.step, c.mtime, c.rel) >
                                        std::tie(known->step, known->mtime, known->rel)) {
                known = &c;
            }
        } else if (unknown == nullptr ||
                   std::tie(c.mtime, c.rel) > std::tie(unknown->mtime, unknown->rel)) {
            unknown = &c;
        }
    }
    const Candidate* best = known;
    if (unknown != nullptr && (known == nullptr || unknown->mtime > known->mtime)) best = unknown;
    if (best == nullptr) return;
    out_.newest = Checkpoint{.path = Abs(best->rel).string(),
                             .format = std::string(best->format),
                             .step = best->step,
                             .mtime = ToEpochSeconds(best->mtime)};
}

CheckpointSearch Searcher::Run() {
    std::error_code ec;
    fs::file_status st = fs::status(root_, ec);  // the root itself may be a link
    if (ec || st.type() != fs::file_type::directory) {
        if (st.type() == fs::file_type::not_found) {
            Problem({}, "no such directory");
        } else if (ec) {
            Problem({}, "cannot stat: " + ec.message());
        } else {
            Problem({}, "not a directory");
        }
        return std::move(out_);
    }
    Walk();
    for (const Dir& dir : visited_) {
        const Listing& listing = *listings_.at(dir.rel);
        DetectMegatron(dir.rel, listing);
        DetectDeepSpeed(dir.rel, listing);
        DetectLightning(dir.rel, listing);
        DetectDirectory(dir.rel, listing);
    }
    Choose(Merge());
    return std::move(out_);
}

}  // namespace

std::int64_t StepFromName(std::string_view name) {
    if (AllDigits(name)) return ParseStep(name);
    // Longer words first: "iteration" before "iter".
    static constexpr std::string_view kWords[] = {"global_step", "iteration", "checkpoint", "step",
                                                  "iter"};
    std::int64_t found = -1;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (i > 0 && IsAlpha(name[i - 1])) continue;
        for (std::string_view word : kWords) {
            if (!StartsWithCaseless(name.substr(i), word)) continue;
            std::size_t j = i + word.size();
            if (j < name.size() && (name[j] == '_' || name[j] == '-' || name[j] == '=')) ++j;
            std::size_t k = j;
            while (k < name.size() && IsDigit(name[k])) ++k;
            if (k == j) continue;
            if (std::int64_t step = ParseStep(name.substr(j, k - j)); step >= 0) found = step;
            break;
        }
    }
    return found;
}

CheckpointSearch FindNewestCheckpoint(const std::string& ckpt_dir, const CheckpointLimits& limits) {
    if (ckpt_dir.empty()) {
        CheckpointSearch out;
        out.skipped.push_back("(empty path): no checkpoint directory given");
        return out;
    }
    fs::path root = fs::path(ckpt_dir).lexically_normal();
    if (!root.has_filename() && root.has_relative_path()) root = root.parent_path();
    CheckpointLimits bounded = limits;
    bounded.max_depth = std::max(bounded.max_depth, 0);
    return Searcher(std::move(root), bounded).Run();
}

}  // namespace autoheal
