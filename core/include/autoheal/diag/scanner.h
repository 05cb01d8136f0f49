// The log scanner: finds every line that matches any signature, in one pass, without a loop
// of regexes. Hyperscan scans whole buffers for all signatures at once as a prefilter; RE2
// (linear time, safe for admin-written patterns) confirms each candidate line and extracts its
// named fields. Patterns Hyperscan cannot take are matched by an RE2::Set, line by line.
// Memory is bounded: input is read in fixed-size chunks and evidence is capped per signature.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/diag/rules.h"

namespace autoheal::diag {

// Which lines of an input count as evidence. Every line is read by its prefix
// (autoheal/diag/log_line.h): driver text counts only where a record's message starts and never
// inside a name a user chose; in a kernel log, only the kernel's own records count.
enum class InputKind {
    kMixed,      // logs of any kind, as pasted (classify, the job's output)
    kKernelLog,  // a node's kernel log (/dev/kmsg, or a kern.log, journald or dmesg file)
};

// Where programs keep compiled scanners: $AUTOHEAL_CACHE_DIR when set (empty: no cache), else
// $XDG_CACHE_HOME/autoheal, else $HOME/.cache/autoheal; empty (no cache) when none is set. The
// epilogs and the agent keep theirs in `<state_dir>/cache-<euid>` instead (remediation/engine.h).
std::string DefaultScannerCacheDir(const char* autoheal_cache_dir, const char* xdg_cache_home,
                                   const char* home);

// Whether a signature's pattern is anchored to a line's start (^ or \A outside a character
// class). The scanner matches such a pattern also where a line's text starts past its prefix
// (diag/log_line.h FindTextStarts), so pdsh'd or logged tool output reads as it does bare.
bool HasLineAnchor(const std::string& pattern);

struct ScanLimits {
    std::size_t per_signature_cap = 512;  // evidence items kept per signature
    std::size_t max_text = 400;           // bytes of a line kept in Evidence::text
    std::size_t chunk_bytes = 2 << 20;    // read size; longer lines are cut
    unsigned threads = 0;                 // scanning threads for large inputs; 0 = one per
                                          // core, at most 4; 1 = scan in the caller only
};

class Scanner {
  public:
    // Compiles the signatures. Fails only when an RE2 pattern does not compile (the rule
    // loader has already checked them). With `cache_dir`, Hyperscan's database for the same
    // signatures is read from there when an earlier Build stored it, and stored there otherwise
    // (core/src/diag/scanner_cache.h); what the scanner finds is the same either way.
    static Result<std::shared_ptr<const Scanner>> Build(const std::vector<SignatureDef>& sigs,
                                                        ScanLimits limits = {},
                                                        const std::string& cache_dir = {});
    ~Scanner();
    Scanner(const Scanner&) = delete;
    Scanner& operator=(const Scanner&) = delete;

    // Scans one input read from `fd` until EOF, adding to `set`. Errors only on read failure.
    Result<bool> ScanFd(int fd, const std::string& name, EvidenceSet* set,
                        InputKind kind = InputKind::kMixed) const;
    // Same for text in memory.
    void ScanText(std::string_view text, const std::string& name, EvidenceSet* set,
                  InputKind kind = InputKind::kMixed) const;

    // How many signatures Hyperscan prefilters and how many need the line-by-line path.
    std::size_t prefiltered() const;
    std::size_t line_by_line() const;
    // Whether Hyperscan's database came from the cache folder rather than a compile.
    bool from_cache() const;

    struct Impl;  // opaque; public only so the implementation's helpers can name it

  private:
    Scanner();
    std::unique_ptr<Impl> impl_;
};

}  // namespace autoheal::diag
