// Node reasons autoheal sets in Slurm (drain, reboot): one formatter and one parser.
//
//   autoheal: <cause> <key=value>... [inc=<incident id>][; <note>]
//   autoheal: faulty_gpu xid=79 gpu=0000:3b:00.0 rule=xid-79-fallen-off-bus job=1234 inc=42
//   autoheal: health check=row-remap gpu=0000:3b:00.0; row remapping failed (RMA criterion)
//
// - <cause> is a catalog cause (diag/taxonomy.h): a rule's cause, `health` (a prolog check) or
//   `lemon`;
// - keys are lower-case words ([a-z_]+); values never hold whitespace or ';' (the formatter turns
//   them into '_'), so the fields end at the first ';' and the parse is unambiguous;
// - control characters in values and the note are escaped as \xHH (EscapeControl);
// - the note is free text for people, kept only when it fits: a reason is at most
//   kMaxReasonBytes, and only the note is ever shortened.
// Any reason starting with "autoheal:" is ours (ReasonIsOurs): reasons of older versions
// ("autoheal: faulty_gpu gpu=...: xid 79 ...", "autoheal: lemon: 3 unexplained ...") parse to
// their cause, with what follows the first word that is not key=value as the note.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/diag/taxonomy.h"

namespace autoheal::remediation {

inline constexpr const char* kReasonPrefix = "autoheal:";
inline constexpr std::size_t kMaxReasonBytes = 200;

struct NodeReason {
    diag::Cause cause = diag::Cause::kUnknown;
    std::vector<std::pair<std::string, std::string>> fields;  // in order; never "inc"
    std::optional<std::int64_t> incident;                     // inc=
    std::string note;

    // The value of `key`, or nullopt.
    std::optional<std::string> Field(std::string_view key) const;
};

bool ReasonIsOurs(std::string_view reason);

// Fields with an empty value are left out.
std::string FormatReason(const NodeReason& reason);

// nullopt when the reason is not ours. A cause word outside the catalog parses as `unknown`.
std::optional<NodeReason> ParseReason(std::string_view reason);

}  // namespace autoheal::remediation
