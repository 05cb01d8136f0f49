// Ticket delivery: the sinks that carry the tickets of the incident store (rma, network) to the
// outside world, and the loop that delivers the due ones with backoff.
//
// Configured under `remediation: tickets:` in autoheal.yaml:
//   tickets:
//     retry_initial_seconds: 30   # backoff after a failed delivery, doubled each time
//     retry_max_seconds: 3600
//     sinks:                      # absent: one spool sink at <state_dir>/tickets
//       - {type: spool, name: spool, dir: /var/spool/autoheal/tickets}
//       - {type: webhook, url: https://..., secret_file: /etc/autoheal/webhook.secret,
//          timeout_seconds: 10}
//       - {type: command, argv: [/usr/local/bin/open-ticket, --queue, gpu], timeout_seconds: 30}
//
// Contracts:
// - The configuration and its parser are ticket_config.h.
// - One store ticket per (fault, sink): OpenTickets opens `<dedup_key>@<sink name>` for each
//   configured sink, so a rerun of the epilog opens nothing new, and each sink is retried on its
//   own. An explicitly empty `sinks: []` opens no ticket at all.
// - Delivery is at least once: a crash between a delivery and its record in the store delivers
//   the ticket again on the next run. The spool sink writes the same file again (one file per
//   ticket, ever); a webhook or command receives the same payload again and should dedupe on it.
// - A failed delivery is recorded (attempts + 1, last_error, next_attempt with doubling backoff
//   capped at retry_max_seconds) and retried; it is never dropped. A ticket whose sink is no
//   longer configured stays due, untouched, and is reported as skipped on every run.
// - No shell: the command sink runs argv directly (os/subprocess.h), in its own process group, with
//   the payload on stdin; after timeout_seconds the whole group is killed (a failure).
// - The webhook's secret (secret_file) must be a regular file, not a link, owned by root (or by
//   the current effective user), with no group or other permission bits; it is read at each
//   delivery and sent as "Authorization: Bearer <secret>". It never appears in a log line, an
//   error or the store. Redirects are not followed (a 3xx is a failed delivery: following one
//   would turn the POST into a GET on 301/302/303), and only http and https URLs are used.
// - Thread-compatible, like the store (one IncidentStore per thread). Several processes may
//   deliver from one store file at once; a ticket may then be delivered twice (at least once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/ticket_config.h"

namespace autoheal::remediation {

// Opens one store ticket per configured sink, with dedup key `<dedup_key>@<sink name>` and
// sink = the sink's name, and returns their ids in the order of config.sinks. A ticket that
// already exists is not opened again (its id is returned). `kind` is "rma" or "network";
// `dedup_key` must not be empty. Stops at the first store error.
Result<std::vector<std::int64_t>> OpenTickets(IncidentStore& store, std::int64_t incident_id,
                                              const std::string& kind, const std::string& dedup_key,
                                              const std::string& payload_json,
                                              const TicketConfig& config);

// The wait before the next attempt after a failed one, when `attempts` deliveries had already
// failed before it: min(retry_initial_seconds * 2^attempts, retry_max_seconds).
std::int64_t TicketRetryDelay(const TicketConfig& config, int attempts);

// Delivers one ticket through one sink, whatever the ticket's state, and returns a short
// description of where it went (for the log), or the reason it failed, starting with
// "<type> <name>: ". Does not touch the store.
Result<std::string> DeliverTicket(const TicketSinkConfig& sink, const TicketRow& ticket);

// The file the spool sink writes for a ticket: <dir>/<kind>-<name>.json, where <name> is the
// ticket's dedup key when it is made of [A-Za-z0-9._@:-] only (at most 100 characters), else a
// sanitized prefix of it followed by a hash of the whole key.
std::string SpoolFilePath(const TicketSinkConfig& sink, const TicketRow& ticket);

// Reads a webhook secret file under the rules above (regular file, no link, owner root or the
// effective user, mode 0600 or stricter, at most 4 KiB), without the trailing newline. Errors
// name the file and never contain its content.
Result<std::string> ReadWebhookSecret(const std::string& path);

struct TicketDeliverySummary {
    int delivered = 0;
    int failed = 0;   // delivery failed (recorded, retried later), or its outcome not recorded
    int skipped = 0;  // due, but its sink is not configured: left as it is
    bool budget_spent = false;  // stopped early: due tickets may be left for the next run
    // One line per failed or skipped ticket: "ticket <id> sink=<name>: <why>".
    std::vector<std::string> errors;
};

// Delivers up to `limit` due tickets (DueTickets(now, ...), oldest first) through the sinks
// named in their rows and records each outcome in the store: MarkTicketDelivered, or
// MarkTicketFailed with next_attempt = now + TicketRetryDelay(config, attempts). Tickets of
// unconfigured sinks are skipped and do not count against `limit` nor hide other due tickets.
// No delivery starts once `budget_seconds` (wall time since the call) are spent; one that has
// started runs to its sink's timeout. Fails only when the store cannot list the due tickets.
Result<TicketDeliverySummary> DeliverDueTickets(IncidentStore& store, const TicketConfig& config,
                                                std::int64_t now, int limit, double budget_seconds);

}  // namespace autoheal::remediation
