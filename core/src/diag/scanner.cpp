#include "autoheal/diag/scanner.h"

#include <hs/hs.h>
#include <re2/re2.h>
#include <re2/set.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

namespace autoheal::diag {
namespace {

// Hyperscan has no capture groups: named groups become plain ones. It is used with
// HS_FLAG_PREFILTER, so it may over-match; RE2 decides.
std::string ForHyperscan(const std::string& re2_pattern) {
    std::string out;
    out.reserve(re2_pattern.size());
    for (std::size_t i = 0; i < re2_pattern.size(); ++i) {
        char c = re2_pattern[i];
        if (c == '\\' && i + 1 < re2_pattern.size()) {
            out += c;
            out += re2_pattern[++i];
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

struct Candidate {
    unsigned id;
    std::size_t start;  // line start offset in the chunk
    std::size_t end;    // line end (exclusive, before '\n')
};

}  // namespace

struct Scanner::Impl {
    ScanLimits limits;
    std::vector<SignatureDef> sigs;
    std::vector<std::unique_ptr<RE2>> regexes;             // by signature index
    std::vector<std::vector<std::string>> group_names;     // by signature index, by group
    std::vector<bool> is_context;                          // context-* signatures
    hs_database_t* db = nullptr;
    std::vector<unsigned> hs_ids;                          // hyperscan id -> signature index
    std::vector<unsigned> slow_ids;                        // signatures matched line by line
    std::unique_ptr<RE2::Set> slow_set;
    mutable std::mutex scratch_mu;                         // one scan at a time per scanner
    mutable hs_scratch_t* scratch = nullptr;

    ~Impl() {
        if (scratch != nullptr) hs_free_scratch(scratch);
        if (db != nullptr) hs_free_database(db);
    }

    void AddEvidence(unsigned sig, std::string_view line, std::size_t source,
                     std::uint64_t line_no, EvidenceSet* set,
                     std::unordered_map<unsigned, std::size_t>* counts) const;
    void ScanChunk(const char* data, std::size_t len, std::size_t source,
                   std::uint64_t first_line, EvidenceSet* set,
                   std::unordered_map<unsigned, std::size_t>* counts) const;
};

Scanner::Scanner() : impl_(std::make_unique<Impl>()) {}
Scanner::~Scanner() = default;

std::size_t Scanner::prefiltered() const { return impl_->hs_ids.size(); }
std::size_t Scanner::line_by_line() const { return impl_->slow_ids.size(); }

Result<std::shared_ptr<const Scanner>> Scanner::Build(const std::vector<SignatureDef>& sigs,
                                                      ScanLimits limits) {
    std::shared_ptr<Scanner> scanner(new Scanner());
    Impl& impl = *scanner->impl_;
    impl.limits = limits;
    impl.sigs = sigs;
    for (const SignatureDef& s : sigs) {
        auto re = std::make_unique<RE2>(s.regex, RE2::Quiet);
        if (!re->ok()) {
            return MakeError("signature " + s.name + ": regex does not compile: " + re->error());
        }
        std::vector<std::string> names(static_cast<std::size_t>(re->NumberOfCapturingGroups()) +
                                       1);
        for (const auto& [name, index] : re->NamedCapturingGroups()) {
            names[static_cast<std::size_t>(index)] = name;
        }
        impl.group_names.push_back(std::move(names));
        impl.regexes.push_back(std::move(re));
        impl.is_context.push_back(s.name.starts_with("context-"));
    }
    // Compile everything Hyperscan accepts; patterns it rejects go to the line-by-line path.
    std::vector<unsigned> candidates(sigs.size());
    for (unsigned i = 0; i < sigs.size(); ++i) candidates[i] = i;
    const bool hs_usable = hs_valid_platform() == HS_SUCCESS;
    while (hs_usable && !candidates.empty()) {
        std::vector<std::string> exprs;
        std::vector<const char*> ptrs;
        std::vector<unsigned> flags;
        std::vector<unsigned> ids;
        for (unsigned i = 0; i < candidates.size(); ++i) {
            exprs.push_back(ForHyperscan(sigs[candidates[i]].regex));
            flags.push_back(HS_FLAG_PREFILTER | HS_FLAG_MULTILINE);
            ids.push_back(i);
        }
        for (const auto& e : exprs) ptrs.push_back(e.c_str());
        hs_database_t* db = nullptr;
        hs_compile_error_t* err = nullptr;
        hs_error_t rc = hs_compile_multi(ptrs.data(), flags.data(), ids.data(),
                                         static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                                         nullptr, &db, &err);
        if (rc == HS_SUCCESS) {
            impl.db = db;
            impl.hs_ids = candidates;
            break;
        }
        int bad = err != nullptr ? err->expression : -1;
        hs_free_compile_error(err);
        if (bad < 0) break;  // not one pattern's fault: fall back to RE2 for all
        impl.slow_ids.push_back(candidates[static_cast<std::size_t>(bad)]);
        candidates.erase(candidates.begin() + bad);
    }
    if (impl.db == nullptr) {
        impl.slow_ids.clear();
        for (unsigned i = 0; i < sigs.size(); ++i) impl.slow_ids.push_back(i);
        impl.hs_ids.clear();
    } else if (hs_alloc_scratch(impl.db, &impl.scratch) != HS_SUCCESS) {
        return MakeError("hyperscan: cannot allocate scratch space");
    }
    if (!impl.slow_ids.empty()) {
        impl.slow_set = std::make_unique<RE2::Set>(RE2::DefaultOptions, RE2::UNANCHORED);
        for (unsigned id : impl.slow_ids) {
            std::string error;
            if (impl.slow_set->Add(sigs[id].regex, &error) < 0) {
                return MakeError("signature " + sigs[id].name + ": " + error);
            }
        }
        if (!impl.slow_set->Compile()) return MakeError("RE2::Set: out of memory");
    }
    return std::shared_ptr<const Scanner>(std::move(scanner));
}

void Scanner::Impl::AddEvidence(unsigned sig, std::string_view line, std::size_t source,
                                std::uint64_t line_no, EvidenceSet* set,
                                std::unordered_map<unsigned, std::size_t>* counts) const {
    const RE2& re = *regexes[sig];
    const int ngroups = re.NumberOfCapturingGroups();
    std::vector<re2::StringPiece> groups(static_cast<std::size_t>(ngroups) + 1);
    if (!re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                  groups.data(), ngroups + 1)) {
        return;  // the prefilter over-matched
    }
    std::size_t& stored = (*counts)[sig];
    const std::string& name = sigs[sig].name;
    bool found = false;
    for (auto& [s, n] : set->counts) {
        if (s == name) {
            ++n;
            found = true;
            break;
        }
    }
    if (!found) set->counts.emplace_back(name, 1);
    if (stored >= limits.per_signature_cap) return;
    ++stored;
    Evidence e;
    e.signature = name;
    e.source = source;
    e.line = line_no;
    e.text = std::string(line.substr(0, limits.max_text));
    for (std::size_t g = 1; g < groups.size(); ++g) {
        if (groups[g].data() != nullptr && !group_names[sig][g].empty()) {
            e.fields.emplace_back(group_names[sig][g], std::string(groups[g]));
        }
    }
    set->items.push_back(std::move(e));
}

void Scanner::Impl::ScanChunk(const char* data, std::size_t len, std::size_t source,
                              std::uint64_t first_line, EvidenceSet* set,
                              std::unordered_map<unsigned, std::size_t>* counts) const {
    std::vector<Candidate> found;
    if (db != nullptr) {
        struct Ctx {
            const char* data;
            std::size_t len;
            const std::vector<unsigned>* ids;
            std::vector<Candidate>* found;
        } ctx{data, len, &hs_ids, &found};
        auto on_match = [](unsigned int id, unsigned long long /*from*/, unsigned long long to,
                           unsigned int /*flags*/, void* p) -> int {
            auto* c = static_cast<Ctx*>(p);
            std::size_t pos = to > 0 ? static_cast<std::size_t>(to) - 1 : 0;
            if (pos > 0 && c->data[pos] == '\n') --pos;
            const void* nl = pos > 0 ? memrchr(c->data, '\n', pos) : nullptr;
            const std::size_t start =
                nl != nullptr
                    ? static_cast<std::size_t>(static_cast<const char*>(nl) - c->data) + 1
                    : 0;
            unsigned sig = (*c->ids)[id];
            // The same signature matching twice on one line is one candidate.
            for (auto it = c->found->rbegin(); it != c->found->rend() && it->start == start;
                 ++it) {
                if (it->id == sig) return 0;
            }
            const void* end_nl = memchr(c->data + start, '\n', c->len - start);
            std::size_t end = end_nl != nullptr
                                  ? static_cast<std::size_t>(static_cast<const char*>(end_nl) -
                                                             c->data)
                                  : c->len;
            c->found->push_back(Candidate{sig, start, end});
            return 0;
        };
        std::lock_guard<std::mutex> lock(scratch_mu);
        hs_scan(db, data, static_cast<unsigned>(len), 0, scratch, on_match, &ctx);
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
    }
    // Candidates in line order (stable for the signatures of one line).
    std::stable_sort(found.begin(), found.end(),
                     [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
    std::uint64_t line_no = first_line;
    std::size_t counted = 0;
    for (const Candidate& c : found) {
        line_no += static_cast<std::uint64_t>(std::count(data + counted, data + c.start, '\n'));
        counted = c.start;
        std::string_view line(data + c.start, c.end - c.start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        AddEvidence(c.id, line, source, line_no, set, counts);
    }
}

Result<bool> Scanner::ScanFd(int fd, const std::string& name, EvidenceSet* set) const {
    const std::size_t source = set->sources.size();
    set->sources.push_back(name);
    std::unordered_map<unsigned, std::size_t> counts;
    std::vector<char> buf(impl_->limits.chunk_bytes);
    std::size_t have = 0;
    std::uint64_t line_no = 1;
    bool eof = false;
    while (!eof || have > 0) {
        while (!eof && have < buf.size()) {
            ssize_t n = read(fd, buf.data() + have, buf.size() - have);
            if (n < 0) {
                if (errno == EINTR) continue;
                return MakeError(name + ": read failed: " + std::strerror(errno));
            }
            if (n == 0) {
                eof = true;
                break;
            }
            have += static_cast<std::size_t>(n);
            set->bytes += static_cast<std::uint64_t>(n);
        }
        if (have == 0) break;
        // Scan up to the last complete line; at EOF or when one line fills the buffer, all of it.
        const void* nl = memrchr(buf.data(), '\n', have);
        std::size_t take = nl != nullptr
                               ? static_cast<std::size_t>(static_cast<const char*>(nl) -
                                                          buf.data()) + 1
                               : have;
        if (nl == nullptr && !eof && have < buf.size()) continue;
        impl_->ScanChunk(buf.data(), take, source, line_no, set, &counts);
        const std::uint64_t newlines =
            static_cast<std::uint64_t>(std::count(buf.data(), buf.data() + take, '\n'));
        line_no += newlines;
        set->lines += newlines;
        if (take == have && (take == 0 || buf[take - 1] != '\n') && eof) set->lines += 1;
        std::memmove(buf.data(), buf.data() + take, have - take);
        have -= take;
    }
    return true;
}

void Scanner::ScanText(std::string_view text, const std::string& name, EvidenceSet* set) const {
    const std::size_t source = set->sources.size();
    set->sources.push_back(name);
    std::unordered_map<unsigned, std::size_t> counts;
    set->bytes += text.size();
    const std::uint64_t newlines =
        static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
    set->lines += newlines + ((!text.empty() && text.back() != '\n') ? 1 : 0);
    // Hyperscan takes at most 4 GiB per call; chunk on line boundaries.
    std::size_t pos = 0;
    std::uint64_t line_no = 1;
    while (pos < text.size()) {
        std::size_t take = std::min(text.size() - pos, impl_->limits.chunk_bytes);
        if (pos + take < text.size()) {
            std::size_t nl = text.rfind('\n', pos + take - 1);
            if (nl != std::string_view::npos && nl >= pos) take = nl + 1 - pos;
        }
        impl_->ScanChunk(text.data() + pos, take, source, line_no, set, &counts);
        line_no += static_cast<std::uint64_t>(
            std::count(text.begin() + static_cast<std::ptrdiff_t>(pos),
                       text.begin() + static_cast<std::ptrdiff_t>(pos + take), '\n'));
        pos += take;
    }
}

}  // namespace autoheal::diag
