#include "scanner_cache.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "autoheal/core/files.h"
#include "autoheal/diag/scanner.h"

namespace autoheal::diag::internal {
namespace {

constexpr std::string_view kMagic = "autoheal-hsdb 1\n";
constexpr std::size_t kMaxFileBytes = 64 << 20;
constexpr std::size_t kFilesKept = 8;  // rule sets in use at once: installed, last good, tests

std::string FileName(const std::string& key) {
    std::uint64_t h = 14695981039346656037ULL;  // FNV-1a: names the file; the key inside decides
    for (const unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
    char name[40];
    std::snprintf(name, sizeof name, "scanner-%016llx.hsdb", static_cast<unsigned long long>(h));
    return name;
}

template <typename T>
void Put(std::string* out, T value) {
    out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads the file's fields in order; any short read makes every later Get fail.
class Reader {
  public:
    explicit Reader(std::string_view data) : rest_(data) {}
    template <typename T>
    bool Get(T* value) {
        if (rest_.size() < sizeof(T)) return false;
        std::memcpy(value, rest_.data(), sizeof(T));
        rest_.remove_prefix(sizeof(T));
        return true;
    }
    bool Bytes(std::size_t n, std::string_view* out) {
        if (rest_.size() < n) return false;
        *out = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return true;
    }
    bool AtEnd() const { return rest_.empty(); }

  private:
    std::string_view rest_;
};

// Removes all but the newest kFilesKept cache files, never `just_written` (file times are coarse:
// files written within a few milliseconds can tie).
void Prune(const std::string& dir, const std::filesystem::path& just_written) {
    std::error_code ec;
    std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with("scanner-") || !name.ends_with(".hsdb")) continue;
        if (entry.path() == just_written) continue;
        const auto when = entry.last_write_time(ec);
        if (!ec) files.emplace_back(when, entry.path());
    }
    if (files.size() < kFilesKept) return;
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a > b; });
    for (std::size_t i = kFilesKept - 1; i < files.size(); ++i) {
        std::filesystem::remove(files[i].second, ec);
    }
}

}  // namespace

std::string HyperscanCacheKey(const std::vector<std::string>& expressions, unsigned flags) {
    hs_platform_info_t platform{};
    if (hs_populate_platform(&platform) != HS_SUCCESS) return "";
    std::string key = hs_version();
    key += '\n';
    Put(&key, platform.tune);
    Put(&key, platform.cpu_features);
    Put(&key, flags);
    for (const std::string& e : expressions) {
        Put(&key, static_cast<std::uint64_t>(e.size()));
        key += e;
    }
    return key;
}

HyperscanDb LoadHyperscanCache(const std::string& dir, const std::string& key,
                               std::size_t signatures) {
    if (dir.empty() || key.empty()) return {};
    const std::string path = dir + "/" + FileName(key);
    if (!CheckTrustedFile(path)) return {};  // missing, or not controlled by root or us
    auto text = ReadSmallFile(path, kMaxFileBytes);
    if (!text) return {};
    Reader in(*text);
    std::string_view magic;
    std::uint64_t key_len = 0;
    std::string_view stored_key;
    std::uint32_t count = 0;
    if (!in.Bytes(kMagic.size(), &magic) || magic != kMagic || !in.Get(&key_len) ||
        key_len != key.size() || !in.Bytes(key.size(), &stored_key) || stored_key != key ||
        !in.Get(&count) || count > signatures) {
        return {};
    }
    HyperscanDb out;
    for (std::uint32_t i = 0; i < count; ++i) {
        std::uint32_t id = 0;
        if (!in.Get(&id) || id >= signatures || (!out.ids.empty() && id <= out.ids.back())) {
            return {};
        }
        out.ids.push_back(id);
    }
    std::uint64_t db_len = 0;
    std::string_view bytes;
    if (!in.Get(&db_len) || !in.Bytes(db_len, &bytes) || !in.AtEnd()) return {};
    if (hs_deserialize_database(bytes.data(), bytes.size(), &out.db) != HS_SUCCESS) {
        out.db = nullptr;
        return {};
    }
    return out;
}

void StoreHyperscanCache(const std::string& dir, const std::string& key, const HyperscanDb& db) {
    if (dir.empty() || key.empty() || db.db == nullptr) return;
    char* bytes = nullptr;
    std::size_t len = 0;
    if (hs_serialize_database(db.db, &bytes, &len) != HS_SUCCESS) return;
    std::string out(kMagic);
    Put(&out, static_cast<std::uint64_t>(key.size()));
    out += key;
    Put(&out, static_cast<std::uint32_t>(db.ids.size()));
    for (const unsigned id : db.ids) Put(&out, static_cast<std::uint32_t>(id));
    Put(&out, static_cast<std::uint64_t>(len));
    out.append(bytes, len);
    std::free(bytes);  // NOLINT(cppcoreguidelines-no-malloc): hs_serialize_database's malloc
    if (out.size() > kMaxFileBytes) return;
    const std::string path = dir + "/" + FileName(key);
    if (WriteFileAtomically(path, out, 0600, 0700)) Prune(dir, path);
}

}  // namespace autoheal::diag::internal

namespace autoheal::diag {

std::string DefaultScannerCacheDir(const char* autoheal_cache_dir, const char* xdg_cache_home,
                                   const char* home) {
    if (autoheal_cache_dir != nullptr) return autoheal_cache_dir;
    // The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
    if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/') {
        return std::string(xdg_cache_home) + "/autoheal";
    }
    if (home != nullptr && home[0] == '/' && home[1] != '\0') {
        return std::string(home) + "/.cache/autoheal";
    }
    return "";
}

}  // namespace autoheal::diag
