// Reading flight-recorder dumps (flight_recorder.h): the bytes as data (data_tree.h), then the
// keys PyTorch writes, each checked for its type; a missing or mistyped field keeps its default.
#include "autoheal/diag/flight_recorder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <thread>
#include <unordered_map>

#include "autoheal/core/files.h"

namespace autoheal::diag {
namespace {

using Kind = DataTree::Kind;
using Ref = DataTree::Ref;

// An int written as decimal text ("41", as dump_json() writes pg_status).
std::optional<std::int64_t> IntText(std::string_view s) {
    std::int64_t v = 0;
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data(), end, v);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    return v;
}

inline std::optional<std::int64_t> AsInt(const DataTree& tree, Ref r) {
    const Kind kind = tree.kind(r);
    if (kind == Kind::kInt || kind == Kind::kBool) return tree.Int(r);
    return kind == Kind::kString ? IntText(tree.Str(r)) : std::nullopt;
}

std::string AsString(const DataTree& tree, Ref r) {
    return tree.kind(r) == Kind::kString ? std::string(tree.Str(r)) : std::string();
}

// `key`'s value in `dict`, read by `read` when present.
template <typename T, typename Fn>
T Get(const DataTree& tree, Ref dict, std::string_view key, T fallback, Fn read) {
    Ref v = 0;
    return tree.Find(dict, key, &v) ? read(v) : fallback;
}

std::int64_t IntAt(const DataTree& tree, Ref dict, std::string_view key, std::int64_t fallback) {
    return Get(tree, dict, key, fallback, [&](Ref v) { return AsInt(tree, v).value_or(fallback); });
}

std::string StringAt(const DataTree& tree, Ref dict, std::string_view key) {
    return Get(tree, dict, key, std::string(), [&](Ref v) { return AsString(tree, v); });
}

// A list of ints written as "[0, 1, 2]" (pg_config's ranks) or as a list.
std::vector<int> RankList(const DataTree& tree, Ref r) {
    std::vector<int> out;
    if (tree.kind(r) == Kind::kList) {
        for (Ref item : tree.ItemsOf(r)) {
            if (auto v = AsInt(tree, item); v && *v >= 0 && *v < (1 << 30)) {
                out.push_back(static_cast<int>(*v));
            }
        }
        return out;
    }
    long long v = -1;
    bool digits = false;
    for (char c : tree.Str(r)) {
        if (c >= '0' && c <= '9') {
            v = (digits ? v : 0) * 10 + (c - '0');
            digits = true;
            if (v >= (1 << 30)) return {};
        } else if (digits) {
            out.push_back(static_cast<int>(v));
            digits = false;
        }
    }
    if (digits) out.push_back(static_cast<int>(v));
    return out;
}

// Sizes as compact text ("[[1024,1024]]"), at most three levels and 256 bytes.
void SizesText(const DataTree& tree, Ref r, int depth, std::string* out) {
    if (out->size() > 256) return;
    if (tree.kind(r) == Kind::kInt) {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, tree.Int(r)).ptr;
        out->append(digits, end);
        return;
    }
    if (tree.kind(r) != Kind::kList || depth > 3) {
        *out += "?";
        return;
    }
    *out += "[";
    const auto& items = tree.ItemsOf(r);
    for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) *out += ",";
        SizesText(tree, items[k], depth + 1, out);
    }
    *out += "]";
}

// The entry keys this reader uses.
enum class Field : std::uint8_t {
    kUnseen,  // not looked up yet
    kOther,
    kRecordId,
    kPgId,
    kProcessGroup,
    kSeq,
    kP2pSeq,
    kOpId,
    kProfilingName,
    kState,
    kCreated,
    kIsP2p,
    kInputSizes,
};

Field FieldNamed(std::string_view name) {
    static constexpr std::pair<std::string_view, Field> kFields[] = {
        {"record_id", Field::kRecordId},
        {"pg_id", Field::kPgId},
        {"process_group", Field::kProcessGroup},
        {"collective_seq_id", Field::kSeq},
        {"p2p_seq_id", Field::kP2pSeq},
        {"op_id", Field::kOpId},
        {"profiling_name", Field::kProfilingName},
        {"state", Field::kState},
        {"time_created_ns", Field::kCreated},
        {"is_p2p", Field::kIsP2p},
        {"input_sizes", Field::kInputSizes},
    };
    for (const auto& [n, f] : kFields) {
        if (n == name) return f;
    }
    return Field::kOther;
}

FrState StateNamed(std::string_view s) {
    if (s == "completed") return FrState::kCompleted;
    if (s == "started") return FrState::kStarted;
    if (s == "scheduled") return FrState::kScheduled;
    return FrState::kOther;
}

struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The entries of one tree, into one dump. A pickle memoizes the keys and repeated texts, so a
// key comes back as the same node in every entry: each node's field is looked up once.
class EntryReader {
  public:
    EntryReader(const DataTree& tree, FrDump* dump)
        : tree_(tree), dump_(*dump), fields_(tree.size(), Field::kUnseen) {}

    FrEntry Read(Ref e) {
        FrEntry out;
        for (const auto& [k, v] : tree_.MapOf(e)) {
            switch (FieldOf(k)) {
                case Field::kRecordId:
                    out.record_id = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kPgId:
                    out.pg_id = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kProcessGroup:
                    if (!tree_.ItemsOf(v).empty()) out.pg_name = TextOf(tree_.ItemsOf(v)[0]);
                    break;
                case Field::kSeq:
                    out.collective_seq_id = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kP2pSeq:
                    out.p2p_seq_id = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kOpId:
                    out.op_id = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kProfilingName:
                    out.profiling_name = TextOf(v);
                    break;
                case Field::kState:
                    out.state =
                        tree_.kind(v) == Kind::kString ? StateNamed(tree_.Str(v)) : FrState::kOther;
                    break;
                case Field::kCreated:
                    out.time_created_ns = AsInt(tree_, v).value_or(0);
                    break;
                case Field::kIsP2p:
                    out.is_p2p = AsInt(tree_, v).value_or(0) != 0;
                    break;
                case Field::kInputSizes:
                    out.input_sizes = SizesOf(v);
                    break;
                default:
                    break;
            }
        }
        return out;
    }

  private:
    Field FieldOf(Ref key) {
        if (key >= fields_.size()) return Field::kOther;
        Field& f = fields_[key];
        if (f == Field::kUnseen) {
            f = tree_.kind(key) == Kind::kString ? FieldNamed(tree_.Str(key)) : Field::kOther;
        }
        return f;
    }
    std::uint32_t TextOf(Ref r) {
        if (tree_.kind(r) != Kind::kString) return 0;
        auto [it, added] = text_ids_.try_emplace(r, 0);
        if (added) it->second = Intern(tree_.Str(r));
        return it->second;
    }
    // Most entries have the sizes of the one before: compared as text before it is looked up.
    std::uint32_t SizesOf(Ref v) {
        sizes_.clear();
        SizesText(tree_, v, 0, &sizes_);
        if (sizes_ != last_sizes_) {
            last_sizes_id_ = Intern(sizes_);
            last_sizes_ = sizes_;
        }
        return last_sizes_id_;
    }
    std::uint32_t Intern(std::string_view s) {
        if (s.empty()) return 0;
        if (auto it = ids_.find(s); it != ids_.end()) return it->second;
        const auto id = static_cast<std::uint32_t>(dump_.texts.size());
        dump_.texts.emplace_back(s);
        ids_.emplace(std::string(s), id);
        return id;
    }

    const DataTree& tree_;
    FrDump& dump_;
    std::vector<Field> fields_;                        // by node
    std::unordered_map<Ref, std::uint32_t> text_ids_;  // by node
    std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> ids_;
    std::string sizes_;
    std::string last_sizes_;
    std::uint32_t last_sizes_id_ = 0;
};

Result<FrDump> ReadDump(const DataTree& tree) {
    const Ref root = tree.root();
    if (tree.kind(root) != Kind::kDict) {
        return MakeError(ErrorCode::kInvalid, "not a flight recorder dump: not a dict");
    }
    FrDump dump;
    dump.version = StringAt(tree, root, "version");
    Ref entries = 0;
    const bool has_entries = tree.Find(root, "entries", &entries);
    if (dump.version.empty() && !has_entries) {
        return MakeError(ErrorCode::kInvalid,
                         "not a flight recorder dump: no version and no entries");
    }
    Ref config = 0;
    if (tree.Find(root, "pg_config", &config)) {
        for (const auto& [k, v] : tree.MapOf(config)) {
            FrProcessGroup pg;
            pg.name = StringAt(tree, v, "name");
            if (pg.name.empty()) pg.name = AsString(tree, k);
            pg.desc = StringAt(tree, v, "desc");
            Ref ranks = 0;
            if (tree.Find(v, "ranks", &ranks)) pg.ranks = RankList(tree, ranks);
            dump.pg_config[pg.name] = std::move(pg);
        }
    }
    Ref status = 0;
    if (tree.Find(root, "pg_status", &status)) {
        for (const auto& [k, v] : tree.MapOf(status)) {
            auto id = AsInt(tree, k);
            if (!id) continue;
            FrPgStatus s;
            s.last_enqueued = IntAt(tree, v, "last_enqueued_collective", -1);
            s.last_started = IntAt(tree, v, "last_started_collective", -1);
            s.last_completed = IntAt(tree, v, "last_completed_collective", -1);
            dump.pg_status[*id] = s;
        }
    }
    if (has_entries) {
        const auto& items = tree.ItemsOf(entries);
        const std::size_t n = std::min(items.size(), kMaxFrEntries);
        dump.entries.reserve(n);
        EntryReader reader(tree, &dump);
        for (std::size_t k = items.size() - n; k < items.size(); ++k) {
            dump.entries.push_back(reader.Read(items[k]));
        }
    }
    return dump;
}

}  // namespace

Result<FrDump> ParseFrDump(std::string_view bytes, const DataLimits& limits) {
    std::size_t first = 0;
    while (first < bytes.size() && (bytes[first] == ' ' || bytes[first] == '\n' ||
                                    bytes[first] == '\r' || bytes[first] == '\t')) {
        ++first;
    }
    if (first == bytes.size()) return MakeError(ErrorCode::kInvalid, "empty");
    auto tree = bytes[first] == '{' ? ReadJsonData(bytes, limits) : ReadPickle(bytes, limits);
    if (!tree) return tree.status();
    return ReadDump(*tree);
}

std::optional<int> FrRankFromFileName(std::string_view name) {
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.remove_suffix(5);
    if (name.size() > 7 && name.substr(name.size() - 7) == ".pickle") name.remove_suffix(7);
    std::size_t k = name.size();
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;
    const std::string_view digits = name.substr(k);
    if (digits.empty() || digits.size() > 7 || k == 0) return std::nullopt;
    return std::atoi(std::string(digits).c_str());
}

namespace {

// Names in `dir` (no . and ..), sorted; at most `max` of them.
std::vector<std::string> List(const std::string& dir, std::size_t max, bool* truncated) {
    std::vector<std::string> names;
    *truncated = false;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return names;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (names.size() == max) {
            *truncated = true;
            break;
        }
        names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

struct FolderLimits {
    std::size_t file_bytes;
    std::size_t files;
    std::uint64_t total_bytes;
};

struct DumpFile {
    std::string path;
    std::string node;  // the subfolder's name; empty at the top
    int rank = 0;
};

// The dump files of `dir` and of its subfolders one level down (lstat: links are not followed,
// pipes and other files skipped), within the file count and total size.
void ListDumps(const std::string& dir, const std::string& node, const FolderLimits& limits,
               std::uint64_t* total, std::vector<DumpFile>* files, FrFolder* out, int depth) {
    bool truncated = false;
    for (const std::string& name : List(dir, limits.files, &truncated)) {
        if (files->size() >= limits.files) {
            truncated = true;
            break;
        }
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth == 0) ListDumps(path, name, limits, total, files, out, depth + 1);
            continue;
        }
        const auto rank = FrRankFromFileName(name);
        if (!rank || !S_ISREG(st.st_mode)) continue;
        if (*total + static_cast<std::uint64_t>(st.st_size) > limits.total_bytes) {
            out->problems.push_back(path + ": past " + std::to_string(limits.total_bytes) +
                                    " bytes of dumps in all; the rest not read");
            return;
        }
        *total += static_cast<std::uint64_t>(st.st_size);
        files->push_back({path, node, *rank});
    }
    if (truncated) {
        out->problems.push_back(dir + ": more than " + std::to_string(limits.files) +
                                " files; the rest not read");
    }
}

}  // namespace

FrFolder ReadFrFolder(const std::string& path, const FrFileAccess& access,
                      std::size_t max_file_bytes, std::size_t max_files,
                      std::uint64_t max_total_bytes) {
    FrFolder out;
    std::vector<DumpFile> files;
    std::uint64_t total = 0;
    auto as_caller = [&](const std::function<void()>& fn) {
        if (access) {
            access(fn);
        } else {
            fn();
        }
    };
    as_caller([&] {
        ListDumps(path, "", FolderLimits{max_file_bytes, max_files, max_total_bytes}, &total,
                  &files, &out, 0);
    });
    // Parsed in parallel: each file is read and parsed on its own (its tree freed at once).
    std::vector<std::optional<Result<FrDump>>> parsed(files.size());
    std::vector<std::uint64_t> sizes(files.size(), 0);
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        as_caller([&] {
            for (std::size_t k; (k = next.fetch_add(1)) < files.size();) {
                auto bytes = ReadSmallFile(files[k].path, max_file_bytes);
                if (bytes) sizes[k] = bytes->size();
                parsed[k] = bytes ? ParseFrDump(*bytes) : Result<FrDump>(bytes.status());
            }
        });
    };
    const unsigned n =
        std::min<unsigned>({std::max(1u, std::thread::hardware_concurrency()), 8u,
                            static_cast<unsigned>(std::max<std::size_t>(1, files.size()))});
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    for (std::size_t k = 0; k < files.size(); ++k) {
        out.bytes += sizes[k];
        Result<FrDump>& dump = *parsed[k];
        if (!dump) {
            out.problems.push_back(files[k].path + ": " + dump.error());
            continue;
        }
        dump->rank = files[k].rank;
        if (!files[k].node.empty()) out.rank_nodes[files[k].rank] = files[k].node;
        out.dumps.push_back(std::move(*dump));
    }
    return out;
}

}  // namespace autoheal::diag
