// Compiled Hyperscan databases kept on disk (internal to the scanner). Compiling the shipped
// rules takes Hyperscan about 0.4 s of CPU; every epilog, every `autoheal classify` loads the same
// rules again, and reading a database back takes under a millisecond.
//
// A cache file is trusted like a rule file (owned by root or by this program's user, its folder
// too, neither writable by group or others) and used only when the whole key stored in it equals
// the key asked for: the Hyperscan version, the CPU features it compiled for, and every
// expression with its flags. Hyperscan checks the database's own checksum when reading it. Any
// failure is a miss: the caller compiles, as it would without a cache.
#pragma once

#include <hs/hs.h>

#include <string>
#include <vector>

namespace autoheal::diag::internal {

// What a compile produced: the database and, for each of its pattern ids, the signature index
// (signatures Hyperscan rejected are left out and matched line by line).
struct HyperscanDb {
    hs_database_t* db = nullptr;  // owned by the caller once returned
    std::vector<unsigned> ids;
};

// The key for `expressions` (Hyperscan's dialect, by signature index) compiled with `flags`.
std::string HyperscanCacheKey(const std::vector<std::string>& expressions, unsigned flags);

// The database stored under `key` in `dir`, or none (db == nullptr). Ids are checked to be
// increasing signature indexes below `signatures`.
HyperscanDb LoadHyperscanCache(const std::string& dir, const std::string& key,
                               std::size_t signatures);

// Stores `db` under `key` in `dir` (created 0700 when missing), keeping the newest few files.
// Failures are ignored: a cache that cannot be written only costs the next compile.
void StoreHyperscanCache(const std::string& dir, const std::string& key, const HyperscanDb& db);

}  // namespace autoheal::diag::internal
