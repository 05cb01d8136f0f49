// libFuzzer target: the `remediation.tickets:` settings (remediation/tickets.h) and the spool
// file names derived from a ticket's dedup key. There is no ticket payload parser: payloads are
// written (JSON built by the controller) and delivered as they are, never read back.
//
// Per input: the text as YAML, through ParseTicketConfig; when it parses, TicketRetryDelay over
// the attempt counts, and SpoolFilePath for each sink with the input's lines as dedup keys and
// kinds. Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception (errors name file:line:column);
//   - an accepted sink that breaks its documented shape (a name that is not a safe word, a
//     relative spool dir or secret file, a URL whose scheme is not http(s), a relative program, a
//     timeout outside (0, 3600], two sinks of one name) or retry times out of order;
//   - a retry delay outside [retry_initial, retry_max] or shrinking as attempts grow;
//   - a spool file path outside the sink's folder, or a hidden or nested file name.
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/tickets.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;
using autoheal::fuzz::StartsWith;
namespace rem = autoheal::remediation;

namespace {

bool SafeName(const std::string& s) {
    if (s.empty() || s.size() > 64) return false;
    for (unsigned char c : s) {
        if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
    }
    return true;
}

void CheckSpoolPath(const rem::TicketSinkConfig& sink, const rem::TicketRow& ticket) {
    const std::string path = rem::SpoolFilePath(sink, ticket);
    if (!StartsWith(path, sink.dir + "/")) Fail("spool file outside its folder: " + path);
    const std::string name = path.substr(sink.dir.size() + 1);
    if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos || name.size() > 255) {
        Fail("bad spool file name for key '" + ticket.dedup_key + "': " + name);
    }
}

std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(autoheal::fuzz::AsText(data, size));
    YAML::Node node;
    try {
        node = YAML::Load(text);
    } catch (const YAML::Exception&) {
        node = YAML::Node();
    }
    auto config = rem::ParseTicketConfig(node, "autoheal.yaml", "/var/lib/autoheal");
    if (!config) {
        if (!StartsWith(config.error(), "autoheal.yaml:"))
            Fail("error without file: " + config.error());
        return 0;
    }
    const rem::TicketConfig& c = *config;
    // `sinks: []` opens no tickets (docs/admin-guide.md); without `sinks` there is the spool.
    if (c.sinks.empty() && text.find("sinks") == std::string::npos) Fail("no sinks");
    if (c.retry_initial_seconds < 1 || c.retry_max_seconds < c.retry_initial_seconds) {
        Fail("retry times out of order");
    }
    std::set<std::string> names;
    for (const auto& sink : c.sinks) {
        if (!SafeName(sink.name)) Fail("sink name '" + sink.name + "'");
        if (!names.insert(sink.name).second) Fail("two sinks named '" + sink.name + "'");
        switch (sink.type) {
            case rem::TicketSinkType::kSpool:
                if (sink.dir.empty() || sink.dir.front() != '/') Fail("spool dir " + sink.dir);
                break;
            case rem::TicketSinkType::kWebhook:
                // A URL's scheme is case-insensitive (RFC 3986 3.1); curl is held to http(s).
                if (!StartsWith(Lower(sink.url), "http://") &&
                    !StartsWith(Lower(sink.url), "https://")) {
                    Fail("webhook url " + sink.url);
                }
                if (!sink.secret_file.empty() && sink.secret_file.front() != '/') {
                    Fail("secret_file " + sink.secret_file);
                }
                break;
            case rem::TicketSinkType::kCommand:
                if (sink.argv.empty() || sink.argv.front().empty() ||
                    sink.argv.front().front() != '/') {
                    Fail("command without an absolute program");
                }
                break;
        }
        if (sink.type != rem::TicketSinkType::kSpool &&
            !(std::isfinite(sink.timeout_seconds) && sink.timeout_seconds > 0 &&
              sink.timeout_seconds <= 3600)) {
            Fail("timeout_seconds " + std::to_string(sink.timeout_seconds));
        }
    }
    std::int64_t last = 0;
    for (int attempts = 0; attempts <= 70; ++attempts) {
        const std::int64_t d = rem::TicketRetryDelay(c, attempts);
        if (d < c.retry_initial_seconds || d > c.retry_max_seconds || d < last) {
            Fail("retry delay " + std::to_string(d) + " after " + std::to_string(attempts));
        }
        last = d;
    }
    const std::vector<std::string> lines = autoheal::fuzz::Lines(text);
    for (const auto& sink : c.sinks) {
        if (sink.type != rem::TicketSinkType::kSpool) continue;
        for (std::size_t i = 0; i < lines.size() && i < 16; ++i) {
            rem::TicketRow ticket;
            ticket.id = static_cast<std::int64_t>(i);
            ticket.dedup_key = lines[i];
            ticket.kind = i % 2 == 0 ? "rma" : lines[i];
            CheckSpoolPath(sink, ticket);
        }
    }
    return 0;
}
