#include "autoheal/diag/scanner.h"

#include <hs/hs.h>
#include <re2/re2.h>
#include <re2/set.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "autoheal/diag/log_line.h"
#include "autoheal/diag/paste_marks.h"
#include "autoheal/diag/pattern.h"
#include "scanner_cache.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace autoheal::diag {
namespace {

// Copies what a character class adds to a pattern at `*i` where no dialect differs: any character
// inside a class (a POSIX class "[:alpha:]" whole), a class's opening ("[", "[^", and a ']' right
// after them, which is a literal). Moves `*i` to the last character copied and tracks `in_class`.
// False, copying nothing, outside a class where no class opens.
bool CopyClassSyntax(const std::string& pattern, std::size_t* i, bool* in_class, std::string* out) {
    const char c = pattern[*i];
    if (*in_class) {
        if (c == '[' && pattern.compare(*i, 2, "[:") == 0) {
            const std::size_t close = pattern.find(":]", *i + 2);
            if (close != std::string::npos) {
                out->append(pattern, *i, close + 2 - *i);
                *i = close + 1;
                return true;
            }
        }
        if (c == ']') *in_class = false;
        *out += c;
        return true;
    }
    if (c != '[') return false;
    *in_class = true;
    *out += c;
    if (*i + 1 < pattern.size() && pattern[*i + 1] == '^') *out += pattern[++*i];
    if (*i + 1 < pattern.size() && pattern[*i + 1] == ']') *out += pattern[++*i];
    return true;
}

// Hyperscan has no capture groups: named groups become plain ones. It is used with
// HS_FLAG_PREFILTER, so it may over-match (RE2 decides) but must never miss a line RE2 matches.
// So where the two dialects differ, RE2's meaning is spelled out:
//   - RE2's \s is [\t\n\f\r ], Hyperscan's also has VT: \S, and \s inside a class, are
//     written as byte sets; RE2's \v is VT alone;
//   - RE2 sees one line, its CR removed; Hyperscan the whole buffer (HS_FLAG_MULTILINE): \A is
//     ^, and \z and $ also match before a CR;
//   - a Hyperscan pattern ends at a NUL byte: NUL is written \x00, and \Q...\E byte by byte.
std::string ForHyperscan(const std::string& re2_pattern) {
    constexpr std::string_view kSpace = "\\t\\n\\f\\r\\x20";  // RE2's \s, in a class
    constexpr std::string_view kNonSpace = "\\x00-\\x08\\x0b\\x0e-\\x1f\\x21-\\xff";  // its \S
    std::string out;
    out.reserve(re2_pattern.size());
    bool in_class = false;
    for (std::size_t i = 0; i < re2_pattern.size(); ++i) {
        char c = re2_pattern[i];
        if (c == '\0') {
            out += "\\x00";
            continue;
        }
        if (c == '\\' && i + 1 < re2_pattern.size()) {
            const char e = re2_pattern[++i];
            if (e == 'Q') {  // literal up to \E: letters and digits as they are, the rest \xHH
                std::size_t end = std::min(re2_pattern.find("\\E", i + 1), re2_pattern.size());
                for (std::size_t j = i + 1; j < end; ++j) {
                    const auto b = static_cast<unsigned char>(re2_pattern[j]);
                    if (std::isalnum(b)) {
                        out += static_cast<char>(b);
                    } else {
                        out += "\\x";
                        out += "0123456789abcdef"[b >> 4];
                        out += "0123456789abcdef"[b & 15];
                    }
                }
                i = std::min(end + 1, re2_pattern.size());
            } else if (e == '\0') {
                out += "\\x00";
            } else if (e == 'S') {
                out += in_class ? std::string(kNonSpace) : "[^" + std::string(kSpace) + "]";
            } else if (e == 's' && in_class) {
                out += kSpace;
            } else if (e == 'v') {  // RE2: the VT character; Hyperscan: vertical space
                out += "\\x0b";
            } else if (e == 'A' && !in_class) {
                out += '^';
            } else if (e == 'z' && !in_class) {
                out += "(?:\\r?$)";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (CopyClassSyntax(re2_pattern, &i, &in_class, &out)) continue;
        if (c == '$') {
            out += "(?:\\r?$)";
            continue;
        }
        if (c == '(' && re2_pattern.compare(i, 4, "(?P<") == 0) {
            std::size_t close = re2_pattern.find('>', i + 4);
            if (close != std::string::npos) {
                out += '(';
                i = close;
                continue;
            }
        }
        out += c;
    }
    return out;
}

// `re2_pattern` without its line anchors (^ and \A outside a class), and whether it had any.
// pdsh, clush -L and srun --label put a label before each line ("gpu07: ", "  3: "), loggers
// their prefix: a pattern anchored to where a line starts is also matched where its text starts
// past those (Impl::Confirm), so the prefilters look for it anywhere on the line.
std::string WithoutLineAnchors(const std::string& re2_pattern, bool* had) {
    std::string out;
    out.reserve(re2_pattern.size());
    bool in_class = false;
    for (std::size_t i = 0; i < re2_pattern.size(); ++i) {
        const char c = re2_pattern[i];
        if (c == '\\' && i + 1 < re2_pattern.size()) {
            std::size_t next = i + 2;
            if (re2_pattern[i + 1] == 'Q') {  // a literal up to \E
                next = std::min(re2_pattern.find("\\E", i + 2), re2_pattern.size());
                next = std::min(next + 2, re2_pattern.size());
            } else if (re2_pattern[i + 1] == 'A' && !in_class) {
                *had = true;
                ++i;
                continue;
            }
            out.append(re2_pattern, i, next - i);
            i = next - 1;
            continue;
        }
        if (CopyClassSyntax(re2_pattern, &i, &in_class, &out)) continue;
        if (c == '^') {
            *had = true;
            continue;
        }
        out += c;
    }
    return out;
}

// Matches `re`, anchored to a line's start, where the text of `line` starts past its prefix
// (FindTextStarts: past a logger's prefix, a pdsh host, which `host` gets, or an srun --label
// task number). False when it matches at none. Blanks alone are no prefix: an indented
// "XError: ..." is a quotation.
bool MatchPastPrefix(const RE2& re, std::string_view line, const LogLine& parsed,
                     re2::StringPiece* groups, int n, std::string_view* host) {
    const TextStarts starts = FindTextStarts(line, parsed);
    for (std::size_t i = 0; i < starts.count; ++i) {
        const re2::StringPiece rest(line.data() + starts.at[i].at, line.size() - starts.at[i].at);
        if (re.Match(rest, 0, rest.size(), RE2::UNANCHORED, groups, n)) {
            *host = starts.at[i].host;
            return true;
        }
    }
    return false;
}

struct Candidate {
    unsigned id;
    std::size_t start;  // line start offset in the chunk
    std::size_t end;    // line end (exclusive, before '\n')
};

// Counts '\n' in [begin, end). Logs are mostly short lines, so this runs over every byte:
// 16 bytes at a time with SSE2 (x86-64 baseline; byte counters summed with SAD before they can
// overflow), bytewise elsewhere.
std::uint64_t CountNewlines(const char* begin, const char* end) {
    std::uint64_t n = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    const __m128i zero = _mm_setzero_si128();
    while (end - begin >= 16) {
        __m128i acc = zero;
        for (int i = 0; i < 255 && end - begin >= 16; ++i, begin += 16) {
            __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(begin));
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));  // 0xff == -1 per match
        }
        __m128i sums = _mm_sad_epu8(acc, zero);
        n += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
    }
#endif
    for (; begin < end; ++begin) n += *begin == '\n';
    return n;
}

// What scanning one chunk found. Line numbers in `items` count from 0 at the chunk's start;
// the merge adds where the chunk begins.
struct ChunkResult {
    std::vector<Evidence> items;
    std::vector<std::uint64_t> matched;  // by signature index
    std::uint64_t newlines = 0;
};

constexpr unsigned kHsFlags = HS_FLAG_PREFILTER | HS_FLAG_MULTILINE;

// Compiles `exprs` (by signature index) into one database, leaving out each expression Hyperscan
// rejects. No database when the compile fails for a reason no one expression names.
internal::HyperscanDb CompileHyperscan(const std::vector<std::string>& exprs) {
    std::vector<unsigned> candidates(exprs.size());
    for (unsigned i = 0; i < exprs.size(); ++i) candidates[i] = i;
    while (!candidates.empty()) {
        std::vector<const char*> ptrs;
        std::vector<unsigned> flags(candidates.size(), kHsFlags);
        std::vector<unsigned> ids;
        for (unsigned i = 0; i < candidates.size(); ++i) {
            ptrs.push_back(exprs[candidates[i]].c_str());
            ids.push_back(i);
        }
        hs_database_t* db = nullptr;
        hs_compile_error_t* err = nullptr;
        const hs_error_t rc =
            hs_compile_multi(ptrs.data(), flags.data(), ids.data(),
                             static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK, nullptr, &db, &err);
        if (rc == HS_SUCCESS) return {db, std::move(candidates)};
        const int bad = err != nullptr ? err->expression : -1;
        hs_free_compile_error(err);
        if (bad < 0) break;
        candidates.erase(candidates.begin() + bad);
    }
    return {};
}

}  // namespace

bool HasLineAnchor(const std::string& pattern) {
    bool had = false;
    WithoutLineAnchors(pattern, &had);
    return had;
}

struct Scanner::Impl {
    ScanLimits limits;
    std::vector<SignatureDef> sigs;
    std::vector<std::unique_ptr<RE2>> regexes;          // by signature index
    std::vector<std::vector<std::string>> group_names;  // by signature index, by group
    std::vector<bool> is_context;                       // context-* signatures
    std::vector<bool> anchored;  // has a line anchor: matched again past a line's prefix
    hs_database_t* db = nullptr;
    bool from_cache = false;         // the database was read from the cache, not compiled
    std::vector<unsigned> hs_ids;    // hyperscan id -> signature index
    std::vector<unsigned> slow_ids;  // signatures matched line by line
    std::unique_ptr<RE2::Set> slow_set;
    mutable std::mutex scratch_mu;  // guards `scratch` for the single-threaded path
    mutable hs_scratch_t* scratch = nullptr;

    ~Impl() {
        if (scratch != nullptr) hs_free_scratch(scratch);
        if (db != nullptr) hs_free_database(db);
    }

    // `full[i]`: signature i already has per_signature_cap items in the merged result, so its
    // fields need not be extracted (context-* signatures are not even counted past the cap).
    void ScanChunk(const char* data, std::size_t len, hs_scratch_t* hs_scratch,
                   const std::vector<std::atomic<bool>>& full, InputKind kind,
                   ChunkResult* out) const;
    // `parsed`: the line's prefix, read once for all the signatures that matched it.
    void Confirm(unsigned sig, std::string_view line, const LogLine& parsed, InputKind kind,
                 std::uint64_t line_no, bool full, std::vector<std::size_t>* stored,
                 ChunkResult* out) const;
};

// Merges chunk results in input order, applying the per-signature cap.
class Merger {
  public:
    Merger(const Scanner::Impl& impl, std::size_t source, EvidenceSet* set)
        : impl_(impl),
          source_(source),
          set_(set),
          matched_(impl.sigs.size(), 0),
          stored_(impl.sigs.size(), 0),
          full_(impl.sigs.size()) {}

    const std::vector<std::atomic<bool>>& full() const { return full_; }

    void Add(ChunkResult&& r) {
        for (Evidence& e : r.items) {
            const std::size_t sig = index_.at(e.signature);
            if (stored_[sig] >= impl_.limits.per_signature_cap) continue;
            e.line += next_line_;
            e.source = source_;
            set_->items.push_back(std::move(e));
            if (++stored_[sig] == impl_.limits.per_signature_cap) full_[sig] = true;
        }
        for (std::size_t i = 0; i < matched_.size(); ++i) matched_[i] += r.matched[i];
        next_line_ += r.newlines;
        set_->lines += r.newlines;
    }

    void Finish(bool ends_without_newline) {
        if (ends_without_newline) set_->lines += 1;
        for (std::size_t i = 0; i < matched_.size(); ++i) {
            if (matched_[i] == 0) continue;
            const std::string& name = impl_.sigs[i].name;
            auto it = std::find_if(set_->counts.begin(), set_->counts.end(),
                                   [&](const auto& c) { return c.first == name; });
            if (it != set_->counts.end()) {
                it->second += matched_[i];
            } else {
                set_->counts.emplace_back(name, matched_[i]);
            }
        }
    }

    void IndexSignatures() {
        for (std::size_t i = 0; i < impl_.sigs.size(); ++i) index_[impl_.sigs[i].name] = i;
    }

  private:
    const Scanner::Impl& impl_;
    std::size_t source_;
    EvidenceSet* set_;
    std::vector<std::uint64_t> matched_;
    std::vector<std::size_t> stored_;
    std::vector<std::atomic<bool>> full_;
    std::map<std::string, std::size_t, std::less<>> index_;
    std::uint64_t next_line_ = 1;
};

Scanner::Scanner() : impl_(std::make_unique<Impl>()) {}
Scanner::~Scanner() = default;

std::size_t Scanner::prefiltered() const { return impl_->hs_ids.size(); }
std::size_t Scanner::line_by_line() const { return impl_->slow_ids.size(); }
bool Scanner::from_cache() const { return impl_->from_cache; }

Result<std::shared_ptr<const Scanner>> Scanner::Build(const std::vector<SignatureDef>& sigs,
                                                      ScanLimits limits,
                                                      const std::string& cache_dir) {
    std::shared_ptr<Scanner> scanner(new Scanner());
    Impl& impl = *scanner->impl_;
    impl.limits = limits;
    impl.sigs = sigs;
    std::vector<std::string> loose;  // the patterns without line anchors, for the prefilters
    for (const SignatureDef& s : sigs) {
        auto re = std::make_unique<RE2>(s.regex, PatternOptions());
        if (!re->ok()) {
            return MakeError("signature " + s.name + ": regex does not compile: " + re->error());
        }
        std::vector<std::string> names(static_cast<std::size_t>(re->NumberOfCapturingGroups()) + 1);
        for (const auto& [name, index] : re->NamedCapturingGroups()) {
            names[static_cast<std::size_t>(index)] = name;
        }
        impl.group_names.push_back(std::move(names));
        impl.regexes.push_back(std::move(re));
        impl.is_context.push_back(s.name.starts_with("context-"));
        bool had = false;
        loose.push_back(WithoutLineAnchors(s.regex, &had));
        impl.anchored.push_back(had);
    }
    // Compile everything Hyperscan accepts, or read back what an earlier compile of the same
    // expressions stored; patterns it rejects go to the line-by-line path.
    std::vector<std::string> exprs;
    exprs.reserve(sigs.size());
    for (const std::string& pattern : loose) exprs.push_back(ForHyperscan(pattern));
    internal::HyperscanDb compiled;
    if (hs_valid_platform() == HS_SUCCESS) {
        const std::string key =
            cache_dir.empty() ? std::string() : internal::HyperscanCacheKey(exprs, kHsFlags);
        compiled = internal::LoadHyperscanCache(cache_dir, key, sigs.size());
        impl.from_cache = compiled.db != nullptr;
        if (!impl.from_cache) {
            compiled = CompileHyperscan(exprs);
            internal::StoreHyperscanCache(cache_dir, key, compiled);
        }
    }
    impl.db = compiled.db;
    if (impl.db != nullptr) impl.hs_ids = std::move(compiled.ids);
    for (unsigned i = 0, next = 0; i < sigs.size(); ++i) {
        if (next < impl.hs_ids.size() && impl.hs_ids[next] == i) {
            ++next;
        } else {
            impl.slow_ids.push_back(i);
        }
    }
    if (impl.db != nullptr && hs_alloc_scratch(impl.db, &impl.scratch) != HS_SUCCESS) {
        return MakeError("hyperscan: cannot allocate scratch space");
    }
    if (!impl.slow_ids.empty()) {
        impl.slow_set = std::make_unique<RE2::Set>(PatternOptions(), RE2::UNANCHORED);
        for (unsigned id : impl.slow_ids) {
            std::string error;
            if (impl.slow_set->Add(loose[id], &error) < 0) {
                return MakeError("signature " + sigs[id].name + ": " + error);
            }
        }
        if (!impl.slow_set->Compile()) return MakeError("RE2::Set: out of memory");
    }
#if defined(__GLIBC__)
    // Hyperscan's compiler frees megabytes of temporaries; give those pages back before the
    // scan's chunk buffers are allocated, so the two do not add up in the peak RSS.
    if (!impl.from_cache) malloc_trim(0);
#endif
    return std::shared_ptr<const Scanner>(std::move(scanner));
}

void Scanner::Impl::Confirm(unsigned sig, std::string_view line, const LogLine& parsed,
                            InputKind kind, std::uint64_t line_no, bool full,
                            std::vector<std::size_t>* stored, ChunkResult* out) const {
    const RE2& re = *regexes[sig];
    const re2::StringPiece text(line.data(), line.size());
    const bool past_cap = full || (*stored)[sig] >= limits.per_signature_cap;
    // Past the cap only the count matters: no fields, only where the match is.
    const int ngroups = past_cap ? 0 : re.NumberOfCapturingGroups();
    re2::StringPiece groups_small[16];
    std::vector<re2::StringPiece> groups_big;
    re2::StringPiece* groups = groups_small;
    if (ngroups + 1 > 16) {
        groups_big.resize(static_cast<std::size_t>(ngroups) + 1);
        groups = groups_big.data();
    }
    std::string_view host;  // the pdsh host the match needed to pass, if any
    if (!re.Match(text, 0, line.size(), RE2::UNANCHORED, groups, ngroups + 1) &&
        !(anchored[sig] && MatchPastPrefix(re, line, parsed, groups, ngroups + 1, &host))) {
        return;  // the prefilter over-matched
    }
    const auto begin = static_cast<std::size_t>(groups[0].data() - line.data());
    const std::size_t end = begin + groups[0].size();
    // Where the evidence's record starts: past the words that relay it, if any.
    const std::size_t from = EvidenceStart(line, parsed, begin, end, kind == InputKind::kKernelLog);
    if (from == std::string_view::npos) return;
    if (past_cap) {
        ++out->matched[sig];
        return;
    }
    ++out->matched[sig];
    ++(*stored)[sig];
    Evidence e;
    e.signature = sigs[sig].name;
    e.line = line_no;
    e.text = std::string(line.substr(from, limits.max_text));
    for (int g = 1; g <= ngroups; ++g) {
        const std::string& name = group_names[sig][static_cast<std::size_t>(g)];
        if (groups[g].data() != nullptr && !name.empty()) {
            e.fields.emplace_back(name, std::string(groups[g]));
        }
    }
    // A record relayed behind a collector's "host | " is that host's ("mynode-066 | ERROR: nhc:
    // ... check_gpu_xid: GPU Xid errors detected: [ 3606.8] NVRM: Xid ..."): the relaying words
    // are not in the evidence's text, so the host is kept here.
    if (from > 0 && !e.Field("host") && !e.Field("node")) {
        const std::string_view collected = CollectedHost(line);
        if (!collected.empty()) e.fields.emplace_back("host", std::string(collected));
    }
    // pdsh's label is the host the line came from.
    if (!host.empty() && !e.Field("host") && !e.Field("node")) {
        e.fields.emplace_back("host", std::string(host));
    }
    out->items.push_back(std::move(e));
}

void Scanner::Impl::ScanChunk(const char* data, std::size_t len, hs_scratch_t* hs_scratch,
                              const std::vector<std::atomic<bool>>& full, InputKind kind,
                              ChunkResult* out) const {
    out->matched.assign(sigs.size(), 0);
    // Rules read the text as its program wrote it: quote marks, colours and a paste's common
    // indentation go first (the lines, and so their numbers, stay).
    const std::optional<std::string> clean = StripPasteMarks(std::string_view(data, len));
    if (clean) {
        data = clean->data();
        len = clean->size();
    }
    std::vector<Candidate> found;
    if (db != nullptr) {
        struct Ctx {
            const char* data;
            std::size_t len;
            const Impl* impl;
            const std::vector<std::atomic<bool>>* full;
            std::vector<Candidate>* found;
        } ctx{data, len, this, &full, &found};
        auto on_match = [](unsigned int id, unsigned long long /*from*/, unsigned long long to,
                           unsigned int /*flags*/, void* p) -> int {
            auto* c = static_cast<Ctx*>(p);
            const unsigned sig = c->impl->hs_ids[id];
            // Context signatures only feed analyzers: past the cap they are not even counted.
            if (c->impl->is_context[sig] && (*c->full)[sig].load(std::memory_order_relaxed)) {
                return 0;
            }
            std::size_t pos = to > 0 ? static_cast<std::size_t>(to) - 1 : 0;
            if (pos > 0 && c->data[pos] == '\n') --pos;
            const void* nl = pos > 0 ? memrchr(c->data, '\n', pos) : nullptr;
            const std::size_t start =
                nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - c->data) + 1
                              : 0;
            // The same signature matching twice on one line is one candidate.
            for (auto it = c->found->rbegin(); it != c->found->rend() && it->start == start; ++it) {
                if (it->id == sig) return 0;
            }
            const void* end_nl = memchr(c->data + start, '\n', c->len - start);
            const std::size_t end =
                end_nl != nullptr
                    ? static_cast<std::size_t>(static_cast<const char*>(end_nl) - c->data)
                    : c->len;
            c->found->push_back(Candidate{sig, start, end});
            return 0;
        };
        hs_scan(db, data, static_cast<unsigned>(len), 0, hs_scratch, on_match, &ctx);
    }
    if (slow_set != nullptr) {
        std::vector<int> hits;
        std::size_t pos = 0;
        while (pos < len) {
            const void* nl = memchr(data + pos, '\n', len - pos);
            std::size_t end =
                nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) : len;
            hits.clear();
            if (slow_set->Match(re2::StringPiece(data + pos, end - pos), &hits)) {
                for (int h : hits) {
                    found.push_back(Candidate{slow_ids[static_cast<std::size_t>(h)], pos, end});
                }
            }
            pos = end + 1;
        }
        // Hyperscan reports in offset order already; the line-by-line additions need sorting.
        std::stable_sort(found.begin(), found.end(),
                         [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
    }
    std::vector<std::size_t> stored(sigs.size(), 0);
    std::uint64_t line_no = 0;
    std::size_t counted = 0;
    LogLine parsed;
    std::size_t parsed_start = len;  // no line parsed yet
    for (const Candidate& c : found) {
        line_no += CountNewlines(data + counted, data + c.start);
        counted = c.start;
        std::string_view line(data + c.start, c.end - c.start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (parsed_start != c.start) {
            parsed = ParseLogLine(line);
            parsed_start = c.start;
        }
        Confirm(c.id, line, parsed, kind, line_no, full[c.id].load(std::memory_order_relaxed),
                &stored, out);
    }
    out->newlines = line_no + CountNewlines(data + counted, data + len);
}

namespace {

// Reads `fd` into whole-line chunks of at most `chunk_bytes` (a longer line is cut) and hands
// each to `sink(data, len)`. Returns false with errno set on a read error.
struct ChunkReader {
    int fd;
    std::size_t chunk_bytes;
    std::vector<char> carry;
    bool eof = false;
    std::uint64_t bytes = 0;
    char last = '\n';

    // Fills `buf` with the next chunk; returns its length (0 at the end) or -1 on error.
    long Next(std::vector<char>* buf) {
        buf->resize(chunk_bytes);
        std::size_t have = carry.size();
        if (have != 0) std::memcpy(buf->data(), carry.data(), have);  // carry.data() may be null
        carry.clear();
        while (!eof && have < buf->size()) {
            ssize_t n = read(fd, buf->data() + have, buf->size() - have);
            if (n < 0) {
                if (errno == EINTR) continue;
                return -1;
            }
            if (n == 0) {
                eof = true;
                break;
            }
            have += static_cast<std::size_t>(n);
            bytes += static_cast<std::uint64_t>(n);
        }
        if (have == 0) return 0;
        std::size_t take = have;
        if (!eof) {
            const void* nl = memrchr(buf->data(), '\n', have);
            if (nl != nullptr) {
                take = static_cast<std::size_t>(static_cast<const char*>(nl) - buf->data()) + 1;
            }
        }
        carry.assign(buf->data() + take, buf->data() + have);
        last = (*buf)[take - 1];
        return static_cast<long>(take);
    }
};

}  // namespace

Result<bool> Scanner::ScanFd(int fd, const std::string& name, EvidenceSet* set,
                             InputKind kind) const {
    const Impl& impl = *impl_;
    Merger merger(impl, set->sources.size(), set);
    merger.IndexSignatures();
    set->sources.push_back(name);
    ChunkReader reader{fd, impl.limits.chunk_bytes, {}, false, 0, '\n'};
    auto fail = [&]() -> Result<bool> {
        return MakeError(name + ": read failed: " + std::strerror(errno));
    };

    // The first chunk is scanned here; a log that fits in it (the usual epilog case) needs no
    // threads.
    std::vector<char> first;
    long len = reader.Next(&first);
    if (len < 0) return fail();
    {
        ChunkResult r;
        std::lock_guard<std::mutex> lock(impl.scratch_mu);
        impl.ScanChunk(first.data(), static_cast<std::size_t>(len), impl.scratch, merger.full(),
                       kind, &r);
        merger.Add(std::move(r));
    }
    bool ends_without_newline = len > 0 && reader.last != '\n';
    const unsigned workers = impl.limits.threads != 0
                                 ? impl.limits.threads
                                 : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    while (!reader.eof && workers == 1) {
        // Single-threaded: read, scan and merge chunk after chunk here.
        long n = reader.Next(&first);
        if (n < 0) return fail();
        if (n == 0) break;
        ChunkResult r;
        std::lock_guard<std::mutex> lock(impl.scratch_mu);
        impl.ScanChunk(first.data(), static_cast<std::size_t>(n), impl.scratch, merger.full(), kind,
                       &r);
        merger.Add(std::move(r));
        ends_without_newline = reader.last != '\n';
    }
    if (!reader.eof) {
        // Large input: worker threads scan chunks while this thread reads the next ones and
        // merges results in order. At most `workers + 1` chunks are in memory at once.
        struct Job {
            std::vector<char> data;
            std::size_t len = 0;
            ChunkResult result;
            bool done = false;
        };
        std::mutex mu;
        std::condition_variable cv;
        std::deque<std::shared_ptr<Job>> in_order;  // submitted, oldest first
        std::deque<std::shared_ptr<Job>> pending;   // not yet taken by a worker
        bool closing = false;
        std::vector<std::thread> threads;
        std::vector<hs_scratch_t*> scratches;
        for (unsigned w = 0; w < workers; ++w) {
            hs_scratch_t* s = nullptr;
            if (impl.db != nullptr && hs_clone_scratch(impl.scratch, &s) != HS_SUCCESS) break;
            scratches.push_back(s);
        }
        threads.reserve(scratches.size());
        for (hs_scratch_t* s : scratches) {
            threads.emplace_back([&, s] {
                for (;;) {
                    std::shared_ptr<Job> job;
                    {
                        std::unique_lock<std::mutex> lock(mu);
                        cv.wait(lock, [&] { return closing || !pending.empty(); });
                        if (pending.empty()) return;
                        job = pending.front();
                        pending.pop_front();
                    }
                    impl.ScanChunk(job->data.data(), job->len, s, merger.full(), kind,
                                   &job->result);
                    {
                        std::lock_guard<std::mutex> lock(mu);
                        job->done = true;
                    }
                    cv.notify_all();
                }
            });
        }
        // Buffers go back to this pool once merged: reusing them saves the page faults of a
        // fresh chunk-sized allocation per chunk (only this thread touches the pool).
        std::vector<std::vector<char>> free_buffers;
        auto merge_oldest = [&] {
            std::shared_ptr<Job> job;
            {
                std::unique_lock<std::mutex> lock(mu);
                cv.wait(lock, [&] { return in_order.front()->done; });
                job = in_order.front();
                in_order.pop_front();
            }
            merger.Add(std::move(job->result));
            free_buffers.push_back(std::move(job->data));
        };
        bool read_error = false;
        for (;;) {
            if (in_order.size() > scratches.size()) merge_oldest();
            auto job = std::make_shared<Job>();
            if (!free_buffers.empty()) {
                job->data = std::move(free_buffers.back());
                free_buffers.pop_back();
            }
            long n = reader.Next(&job->data);
            if (n < 0) {
                read_error = true;
                break;
            }
            if (n == 0) break;
            job->len = static_cast<std::size_t>(n);
            ends_without_newline = reader.last != '\n';
            {
                std::lock_guard<std::mutex> lock(mu);
                in_order.push_back(job);
                pending.push_back(job);
            }
            cv.notify_all();
        }
        while (!in_order.empty()) merge_oldest();
        {
            std::lock_guard<std::mutex> lock(mu);
            closing = true;
        }
        cv.notify_all();
        for (std::thread& t : threads) t.join();
        for (hs_scratch_t* s : scratches) {
            if (s != nullptr) hs_free_scratch(s);
        }
        if (read_error) return fail();
    }
    set->bytes += reader.bytes;
    merger.Finish(ends_without_newline);
    return true;
}

void Scanner::ScanText(std::string_view text, const std::string& name, EvidenceSet* set,
                       InputKind kind) const {
    const Impl& impl = *impl_;
    Merger merger(impl, set->sources.size(), set);
    merger.IndexSignatures();
    set->sources.push_back(name);
    set->bytes += text.size();
    // Hyperscan takes at most 4 GiB per call; chunk on line boundaries.
    std::size_t pos = 0;
    std::lock_guard<std::mutex> lock(impl.scratch_mu);
    while (pos < text.size()) {
        std::size_t take = std::min(text.size() - pos, impl.limits.chunk_bytes);
        if (pos + take < text.size()) {
            std::size_t nl = text.rfind('\n', pos + take - 1);
            if (nl != std::string_view::npos && nl >= pos) take = nl + 1 - pos;
        }
        ChunkResult r;
        impl.ScanChunk(text.data() + pos, take, impl.scratch, merger.full(), kind, &r);
        merger.Add(std::move(r));
        pos += take;
    }
    merger.Finish(!text.empty() && text.back() != '\n');
}

}  // namespace autoheal::diag
